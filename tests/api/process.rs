//! The real `hookledger` binary as a child process: started with a clean
//! environment, its start-up banner read, killed when dropped (also when a
//! test panics, and with SIGKILL when a test wants a crash).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_hookledger");

/// The binary with a clean environment: nothing from the developer's shell
/// (a `HOOKLEDGER_*` variable, say) can change what it does.
pub fn hookledger(dir: &Path) -> Command {
    binary(Path::new(BIN), dir)
}

/// `path` (this build's binary, or another release's) as [`hookledger`].
fn binary(path: &Path, dir: &Path) -> Command {
    let mut command = Command::new(path);
    command.current_dir(dir).env_clear();
    command
}

/// Runs `hookledger --config DIR/hookledger.toml ARGS...` in `dir` to the
/// end: whether it succeeded, and its stdout (the log, a PostgreSQL notice
/// say, goes to stderr), with stderr appended after a marker on failure.
pub fn run_with_config(dir: &Path, args: &[&str]) -> (bool, String) {
    let output = hookledger(dir)
        .arg("--config")
        .arg(dir.join("hookledger.toml"))
        .args(args)
        .output()
        .expect("hookledger runs");
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        text.push_str("\n--- stderr\n");
        text.push_str(&String::from_utf8_lossy(&output.stderr));
    }
    (output.status.success(), text)
}

/// A running server.
pub struct Server {
    child: Child,
    pub banner: Vec<String>,
    /// Where its stderr (the log) goes.
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Server {
    /// Starts `hookledger` in `dir` with `env` on port 0 and reads its banner
    /// up to the line starting with `last`, failing after 60 s rather than
    /// hanging.
    pub fn start(dir: &Path, env: &[(&str, &str)], last: &'static str) -> Server {
        Self::start_with(dir, &[], env, last)
    }

    /// The same with command-line `args` (a subcommand, say).
    pub fn start_with(
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        last: &'static str,
    ) -> Server {
        Self::start_command(hookledger(dir), dir, args, env, last)
    }

    /// [`Server::start`] of another release's binary at `path`.
    pub fn start_binary(
        path: &Path,
        dir: &Path,
        env: &[(&str, &str)],
        last: &'static str,
    ) -> Server {
        Self::start_command(binary(path, dir), dir, &[], env, last)
    }

    fn start_command(
        mut command: Command,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        last: &'static str,
    ) -> Server {
        let log = dir.join("hookledger.log");
        command
            .args(args)
            .env("HOOKLEDGER_LISTEN", "127.0.0.1:0")
            .env("HOOKLEDGER_WORKERS", "1")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(File::create(&log).expect("log file"));
        let mut server = Server {
            child: command.spawn().expect("binary starts"),
            banner: Vec::new(),
            log,
        };
        let stdout = BufReader::new(server.child.stdout.take().unwrap());
        let (lines, receive) = mpsc::channel();
        let is_last = move |line: &str| line.trim_start().starts_with(last);
        // Reads on after the banner, so the server's stdout never closes
        // under it.
        std::thread::spawn(move || {
            let mut open = true;
            for line in stdout.lines().map_while(Result::ok) {
                if open {
                    let done = is_last(&line);
                    open = lines.send(line).is_ok() && !done;
                }
            }
        });
        while let Ok(line) = receive.recv_timeout(Duration::from_secs(60)) {
            let done = is_last(&line);
            server.banner.push(line);
            if done {
                return server;
            }
        }
        panic!(
            "no complete banner within 60 s: {:?}; its log: {}",
            server.banner,
            server.log()
        );
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `signal` (`TERM`: what a supervisor sends to stop it; `INT`:
    /// Ctrl-C).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "SIG{signal} sent");
    }

    /// Its exit status, once it has exited, waiting at most `within`.
    pub fn exit_status(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("child status") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// SIGKILL: no shutdown, no chance to finish anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The value after `label` on the banner line that starts with it.
    pub fn value(&self, label: &str) -> String {
        let line = self
            .banner
            .iter()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} in {:?}", self.banner));
        line.trim_start()[label.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        self.banner[0]
            .split_whitespace()
            .nth(3)
            .expect("hookledger listening on URL")
            .to_owned()
    }

    /// GETs an admin API path with `token`, expecting 200.
    pub async fn admin(&self, token: &str, path: &str) -> serde_json::Value {
        let response = hookledger::tls::client()
            .get(format!("{}{path}", self.base()))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        response.json().await.unwrap()
    }
}

/// The demo server (no config file) in `dir` on `backend`, with `env`: on
/// PostgreSQL in a database of its own, kept while the returned guard
/// lives.
pub async fn demo_on(
    backend: &crate::helpers::Backend,
    dir: &Path,
    env: &[(&str, &str)],
) -> (Server, Option<crate::postgres::TestDatabase>) {
    let postgres = match backend {
        crate::helpers::Backend::Postgres(url) => {
            Some(crate::postgres::TestDatabase::create(url).await)
        }
        crate::helpers::Backend::Sqlite => None,
    };
    let mut env = env.to_vec();
    if let Some(database) = &postgres {
        env.push(("HOOKLEDGER_DATABASE_URL", database.url.as_str()));
    }
    (Server::start(dir, &env, "note"), postgres)
}
