//! A third party's broker (tansu for Kafka, moto for SQS) as a child
//! process on a port of its own, its output in a log file that a failing
//! test prints; killed when dropped (also when a test panics). The port
//! is held from when the test chooses it until the broker starts
//! ([`HeldPort`]).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port on 127.0.0.1 for a broker that a test starts later: bound, but
/// not listening (a connection to it is refused, as by a broker that is
/// down), until the broker starts on it. A port only chosen free and let
/// go could meanwhile be given to a test running beside, whose program
/// then listens there: the broker started later fails to bind it, while
/// the wait for the port finds the other program's. (Found while chasing
/// the Kafka chaos test's stall in CI on 2026-12-06, which happened once
/// more with the port held: a race closed, not that stall's cause.)
pub struct HeldPort {
    socket: tokio::net::TcpSocket,
    pub port: u16,
}

impl HeldPort {
    pub fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(([127, 0, 0, 1], 0).into()).unwrap();
        let port = socket.local_addr().unwrap().port();
        HeldPort { socket, port }
    }
}

pub struct BrokerProcess {
    child: Child,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl BrokerProcess {
    /// Starts `program args...` (`{port}` in an argument is the port,
    /// let go just before) and waits until it accepts connections there.
    pub async fn start(program: &str, args: &[&str], held: HeldPort, env: &[(&str, &str)]) -> Self {
        let port = held.port;
        drop(held.socket);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("broker.log");
        let output = std::fs::File::create(&log).unwrap();
        let child = Command::new(program)
            .args(args.iter().map(|a| a.replace("{port}", &port.to_string())))
            .envs(env.iter().copied())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(output.try_clone().unwrap())
            .stderr(output)
            .spawn()
            .unwrap_or_else(|e| panic!("{program} starts: {e}"));
        let mut broker = BrokerProcess {
            child,
            port,
            log,
            _dir: dir,
        };
        let started = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if let Ok(Some(status)) = broker.child.try_wait() {
                panic!("{program} ended ({status}): {}", broker.output());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{program} is not listening on {port} after 60 s: {}",
                broker.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Ok(Some(status)) = broker.child.try_wait() {
            panic!("{program} ended ({status}): {}", broker.output());
        }
        broker
    }

    /// What it has printed so far.
    pub fn output(&mut self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
