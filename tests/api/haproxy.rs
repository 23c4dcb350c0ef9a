//! haproxy (Debian's package) in front of what a test runs, with the
//! shipped configs in `deploy/haproxy/`: only the listening address and the
//! servers are the test's own.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// haproxy with a shipped config (`deploy/haproxy/<config>`) listening on
/// `port` in front of `servers` (name, port on 127.0.0.1) instead of the
/// file's, with a stats socket of the test's; stopped when dropped.
pub struct Haproxy {
    child: Child,
    socket: std::path::PathBuf,
}

impl Haproxy {
    pub fn start(file: &str, dir: &Path, port: u16, servers: &[(&str, u16)]) -> Haproxy {
        let shipped = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("deploy/haproxy")
                .join(file),
        )
        .unwrap();
        let socket = dir.join("haproxy.sock");
        let mut config = String::new();
        for line in shipped.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("server ") {
                continue;
            }
            if trimmed.starts_with("bind ") {
                config.push_str(&format!("    bind 127.0.0.1:{port}\n"));
                continue;
            }
            config.push_str(line);
            config.push('\n');
            if trimmed == "global" {
                config.push_str(&format!(
                    "    stats socket {} level admin\n",
                    socket.display()
                ));
            }
        }
        for (name, port) in servers {
            config.push_str(&format!("    server {name} 127.0.0.1:{port} check\n"));
        }
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("haproxy.log")).unwrap())
            .spawn()
            .expect("haproxy runs (Debian's haproxy package)");
        Haproxy { child, socket }
    }

    /// A command on the runtime API (the stats socket), and its answer;
    /// empty if haproxy does not answer (yet).
    pub fn command(&self, command: &str) -> String {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::os::unix::net::UnixStream::connect(&self.socket) else {
            return String::new();
        };
        let mut text = String::new();
        let asked = stream.write_all(format!("{command}\n").as_bytes());
        if asked.is_err() || stream.read_to_string(&mut text).is_err() {
            return String::new();
        }
        text
    }

    /// Each server's status (`UP`, `DOWN`, `DRAIN`, `UP 1/2`...), by name.
    fn statuses(&self) -> Vec<(String, String)> {
        self.command("show stat")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let fields: Vec<&str> = l.split(',').collect();
                let (name, status) = (fields.get(1)?, fields.get(17)?);
                Some((name.to_string(), status.to_string()))
            })
            .collect()
    }

    /// Until the servers' checks have settled as `wanted` (haproxy starts
    /// every server up, and takes `fall` checks to mark one down).
    pub async fn until(&self, wanted: &[(&str, &str)]) {
        for _ in 0..300 {
            let statuses = self.statuses();
            let settled = wanted
                .iter()
                .all(|(name, status)| statuses.iter().any(|(n, s)| n == name && s == status));
            if settled {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("haproxy never saw {wanted:?}: {:?}", self.statuses());
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
