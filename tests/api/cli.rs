//! The binary as a newcomer uses it: `hookledger` with no config file starts
//! with a demo source and prints what is needed; `hookledger send` signs and
//! delivers; generated secrets survive a restart; a bad config is one line.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::helpers::Backend;
use crate::postgres::TestDatabase;

const BIN: &str = env!("CARGO_BIN_EXE_hookledger");

/// The binary with a clean environment: nothing from the developer's shell
/// (a `HOOKLEDGER_*` variable, say) can change what it does.
fn hookledger(dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command.current_dir(dir).env_clear();
    command
}

/// A running server; killed when dropped, also when a test panics.
struct Server {
    child: Child,
    banner: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `hookledger` in `dir` (no config file there) and reads its
    /// banner, failing after 60 s rather than hanging.
    fn start(dir: &Path, database_url: Option<&str>) -> Server {
        let mut command = hookledger(dir);
        command
            .env("HOOKLEDGER_LISTEN", "127.0.0.1:0")
            .env("HOOKLEDGER_WORKERS", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(url) = database_url {
            command.env("HOOKLEDGER_DATABASE_URL", url);
        }
        let mut server = Server {
            child: command.spawn().expect("binary starts"),
            banner: Vec::new(),
        };
        let stdout = BufReader::new(server.child.stdout.take().unwrap());
        let (lines, receive) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let last = line.trim_start().starts_with("note");
                if lines.send(line).is_err() || last {
                    break;
                }
            }
        });
        while let Ok(line) = receive.recv_timeout(Duration::from_secs(60)) {
            let last = line.trim_start().starts_with("note");
            server.banner.push(line);
            if last {
                return server;
            }
        }
        panic!("no complete banner within 60 s: {:?}", server.banner);
    }

    /// The value after `label` on the banner line that starts with it.
    fn value(&self, label: &str) -> String {
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

    fn base(&self) -> String {
        self.banner[0]
            .split_whitespace()
            .nth(3)
            .expect("hookledger listening on URL")
            .to_owned()
    }

    fn send(&self, dir: &Path, event_id: &str) -> String {
        let output = hookledger(dir)
            .args(["send", "--url", &format!("{}/webhooks/demo", self.base())])
            .args([
                "--secret",
                &self.value("demo source secret"),
                "--event-id",
                event_id,
            ])
            .args([
                "--account",
                "acct_1",
                "--amount",
                "1500",
                "--currency",
                "USD",
            ])
            .output()
            .expect("send runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "send failed: {stdout} {}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    async fn admin(&self, path: &str) -> serde_json::Value {
        let response = reqwest::Client::new()
            .get(format!("{}{path}", self.base()))
            .bearer_auth(self.value("admin token"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        response.json().await.unwrap()
    }

    async fn balance(&self) -> serde_json::Value {
        self.admin("/admin/api/accounts/acct_1").await["balances"][0]["balance_minor"].clone()
    }
}

async fn the_walkthrough_works_and_secrets_survive_a_restart(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let postgres = match &backend {
        Backend::Postgres(url) => Some(TestDatabase::create(url).await),
        Backend::Sqlite => None,
    };
    let database_url = postgres.as_ref().map(|p| p.url.as_str());
    let server = Server::start(dir.path(), database_url);
    assert!(dir.path().join("data/admin_token").exists());
    let first = server.send(dir.path(), "msg_walkthrough");
    assert!(
        first.contains(r#""duplicate":false"#) && first.contains(r#""status":"applied""#),
        "{first}"
    );
    let again = server.send(dir.path(), "msg_walkthrough");
    assert!(again.contains(r#""duplicate":true"#), "{again}");
    assert_eq!(server.balance().await, 1500);
    let secrets = (
        server.value("admin token"),
        server.value("demo source secret"),
    );
    drop(server);

    let restarted = Server::start(dir.path(), database_url);
    assert_eq!(
        (
            restarted.value("admin token"),
            restarted.value("demo source secret")
        ),
        secrets
    );
    let third = restarted.send(dir.path(), "msg_walkthrough");
    assert!(third.contains(r#""duplicate":true"#), "{third}");
    assert_eq!(restarted.balance().await, 1500);
    assert_eq!(restarted.admin("/admin/api/check").await["ok"], true);
}

both_backends!(the_walkthrough_works_and_secrets_survive_a_restart);

#[test]
fn a_bad_config_stops_start_up_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "secrets = [\"env:HOOKLEDGER_TEST_UNSET_SECRET\"]";
    let config = format!("[[sources]]\nname = \"stripe\"\nkind = \"stripe\"\n{secret}\n");
    std::fs::write(dir.path().join("hookledger.toml"), config).unwrap();
    let output = hookledger(dir.path()).output().unwrap();
    assert!(!output.status.success());
    assert!(!dir.path().join("data").exists(), "nothing was created");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "hookledger: config error: hookledger.toml: sources[stripe].secrets[0]: \
         environment variable HOOKLEDGER_TEST_UNSET_SECRET is not set\n"
    );
}

#[test]
fn migrate_applies_the_migrations_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let output = hookledger(dir.path()).arg("migrate").output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "migrations applied (sqlite)\n"
    );
    assert!(dir.path().join("data/hookledger.db").exists());
}
