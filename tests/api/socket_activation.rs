//! A restart under socket activation, with at-least-once senders: systemd
//! holds the listening socket, hookledger takes it (`LISTEN_FDS`), and at
//! SIGTERM the process drains and exits while the socket stays open, so
//! connections made meanwhile wait in its backlog for the next process
//! instead of being refused.
//!
//! systemd's part is played by `systemd-socket-activate` (Debian's systemd
//! package), which binds the socket, waits for the first connection and
//! execs its command with the socket as fd 3; that command is a shell loop
//! standing for the service manager's `Restart=always`: it keeps fd 3 open
//! and starts `hookledger serve` again each time one exits, with
//! `LISTEN_PID` naming the new process as systemd would.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::at_least_once::{Load, Target, assert_exact};
use crate::helpers::Backend;
use crate::localstripe::free_port;

const BIN: &str = env!("CARGO_BIN_EXE_hookledger");

/// The service manager: `$1` the folder, `$2` the binary. Run `n` writes
/// its pid to `run-n.pid`, its banner to `run-n.out`, its log to
/// `run-n.log` and its exit status to `run-n.exit`; a file `stop` ends
/// the loop.
const SUPERVISOR: &str = r#"
n=0
while [ ! -e "$1/stop" ]; do
  n=$((n + 1))
  sh -c 'echo $$ > "$1/run-$2.pid"; LISTEN_PID=$$ exec "$3" serve' run "$1" "$n" "$2" \
    > "$1/run-$n.out" 2> "$1/run-$n.log"
  echo $? > "$1/run-$n.exit"
done
"#;

/// The socket's holder and the processes it starts; stopped when dropped.
struct Supervised {
    dir: PathBuf,
    holder: Child,
}

impl Supervised {
    fn start(dir: &Path, port: u16, database_url: &str) -> Supervised {
        let holder = Command::new("systemd-socket-activate")
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg(format!("--listen=127.0.0.1:{port}"))
            .arg(format!("--setenv=HOOKLEDGER_DATABASE_URL={database_url}"))
            .args([
                "--setenv=HOOKLEDGER_DRAIN_SECS=1",
                "--setenv=HOOKLEDGER_WORKERS=2",
                "--",
                "/bin/sh",
                "-c",
                SUPERVISOR,
                "supervisor",
            ])
            .arg(dir)
            .arg(BIN)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("supervisor.log")).unwrap())
            .spawn()
            .expect("systemd-socket-activate runs (Debian's systemd package)");
        Supervised {
            dir: dir.to_owned(),
            holder,
        }
    }

    fn file(&self, name: String) -> Option<String> {
        std::fs::read_to_string(self.dir.join(name)).ok()
    }

    /// The file `name` once `complete` says it is written, failing after
    /// `within` with what `what` says.
    async fn until(
        &self,
        name: String,
        complete: impl Fn(&str) -> bool,
        within: Duration,
        what: impl Fn() -> String,
    ) -> String {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(text) = self.file(name.clone()).filter(|t| complete(t)) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{}", what());
    }

    /// Run `n`'s pid, once it has started.
    async fn pid(&self, n: u32) -> String {
        let line = |t: &str| t.ends_with('\n');
        let pid = self.until(
            format!("run-{n}.pid"),
            line,
            Duration::from_secs(30),
            || format!("run {n} did not start"),
        );
        pid.await.trim().to_owned()
    }

    /// Run `n`'s banner, once it is serving.
    async fn banner(&self, n: u32) -> String {
        let serving = |t: &str| t.lines().any(|l| l.trim_start().starts_with("note"));
        let what = || {
            let log = self.file(format!("run-{n}.log"));
            format!("run {n} did not serve: {log:?}")
        };
        self.until(
            format!("run-{n}.out"),
            serving,
            Duration::from_secs(30),
            what,
        )
        .await
    }

    /// Run `n`'s exit status, once it has exited.
    async fn exit(&self, n: u32) -> String {
        let line = |t: &str| t.ends_with('\n');
        let code = self.until(
            format!("run-{n}.exit"),
            line,
            Duration::from_secs(60),
            || format!("run {n} did not exit"),
        );
        code.await.trim().to_owned()
    }

    fn terminate(pid: &str) {
        let status = Command::new("kill").args(["-TERM", pid]).status().unwrap();
        assert!(status.success(), "SIGTERM sent to {pid}");
    }

    /// Ends the loop after run `n`, and waits for the holder to exit.
    async fn stop(mut self, n: u32) {
        std::fs::write(self.dir.join("stop"), "").unwrap();
        Self::terminate(&self.pid(n).await);
        assert_eq!(self.exit(n).await, "0", "run {n} exits 0");
        for _ in 0..200 {
            if self.holder.try_wait().unwrap().is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the socket's holder did not exit");
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("stop"), "");
        for n in 1..10 {
            if let Some(pid) = self.file(format!("run-{n}.pid")) {
                let _ = Command::new("kill")
                    .args(["-KILL", pid.trim()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// The first connection starts run 1 (systemd starts a socket-activated
/// service when its socket is first used): it waits in the backlog and is
/// answered once the process serves.
async fn first_answer(base: &str) -> reqwest::Response {
    for _ in 0..100 {
        match hookledger::tls::client()
            .get(format!("{base}/healthz"))
            .send()
            .await
        {
            Ok(response) => return response,
            // Until systemd-socket-activate has bound the socket.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    panic!("nothing answered on {base}");
}

async fn a_restart_refuses_no_connection_and_loses_no_delivery(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (database_url, _database) =
        crate::postgres::database_for(&backend, &dir.path().join("data/hookledger.db")).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let supervised = Supervised::start(dir.path(), port, &database_url);
    assert_eq!(first_answer(&base).await.status(), 200);
    let banner = supervised.banner(1).await;
    assert!(
        banner.contains("passed by systemd (socket activation)"),
        "{banner}"
    );
    assert!(banner.starts_with(&format!("hookledger listening on {base}")));
    let secret = std::fs::read_to_string(dir.path().join("data/demo_secret")).unwrap();
    let load = Load::start(&Target::new(&base, &secret), "restart", 16, 20);
    load.until_acknowledged(100, Duration::from_secs(60)).await;

    let before = load.answers();
    let restarted = Instant::now();
    Supervised::terminate(&supervised.pid(1).await);
    assert_eq!(supervised.exit(1).await, "0", "run 1 exits 0");
    supervised.banner(2).await;
    let restart = restarted.elapsed();
    load.until_acknowledged(100, Duration::from_secs(60)).await;
    let tally = load.finish().await;
    let log = supervised.file("run-1.log".to_owned()).unwrap();
    assert!(log.contains("draining"), "{log}");
    supervised.stop(2).await;

    let answers = tally.answers;
    eprintln!(
        "socket activation ({}): restart (SIGTERM to the next banner) {} ms; before it \
         {before}; in all {answers}",
        backend.label(),
        restart.as_millis()
    );
    assert_eq!(answers.refused, 0, "no connection refused: {answers}");
    // Nor anything else but a 2xx: the connections accepted before the
    // stop are served, the later ones wait for the next process.
    assert_eq!(answers.ok, answers.attempts(), "{answers}");
    let store = crate::postgres::side_store(&database_url).await;
    assert_exact(&store, &tally).await;
}

crate::both_backends!(a_restart_refuses_no_connection_and_loses_no_delivery);
