//! The binary as a newcomer uses it: `hookledger` with no config file starts
//! with a demo source and prints what is needed; `hookledger send` signs and
//! delivers; generated secrets survive a restart; a bad config is one line.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::helpers::Backend;
use crate::postgres::TestDatabase;

const BIN: &str = env!("CARGO_BIN_EXE_hookledger");

struct Server {
    child: Child,
    base: String,
    token: String,
    demo_secret: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value after `label` on the banner line that starts with it.
fn banner_value(lines: &[String], label: &str) -> String {
    let line = lines
        .iter()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} in {lines:?}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// Starts `hookledger` in `dir` (no config file there) and reads its banner.
fn start(dir: &Path, database_url: Option<&str>) -> Server {
    let mut command = Command::new(BIN);
    command
        .current_dir(dir)
        .env("HOOKLEDGER_LISTEN", "127.0.0.1:0")
        .env("HOOKLEDGER_WORKERS", "1")
        .env_remove("HOOKLEDGER_CONFIG")
        .env_remove("HOOKLEDGER_ADMIN_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    match database_url {
        Some(url) => command.env("HOOKLEDGER_DATABASE_URL", url),
        None => command.env_remove("HOOKLEDGER_DATABASE_URL"),
    };
    let mut child = command.spawn().expect("binary starts");
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let lines: Vec<String> = stdout
        .lines()
        .map_while(Result::ok)
        .take_while(|l| !l.trim_start().starts_with("note"))
        .collect();
    let listening = lines.first().cloned().unwrap_or_default();
    let base = listening
        .split_whitespace()
        .nth(3)
        .unwrap_or_else(|| panic!("no banner: {lines:?}"))
        .to_owned();
    Server {
        base,
        token: banner_value(&lines, "admin token"),
        demo_secret: banner_value(&lines, "demo source secret"),
        child,
    }
}

fn send(server: &Server, event_id: &str) -> (bool, String) {
    let output = Command::new(BIN)
        .args([
            "send",
            "--url",
            &format!("{}/webhooks/demo", server.base),
            "--secret",
            &server.demo_secret,
        ])
        .args([
            "--account",
            "acct_1",
            "--amount",
            "1500",
            "--currency",
            "USD",
            "--event-id",
            event_id,
        ])
        .output()
        .expect("send runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

async fn balance(server: &Server) -> serde_json::Value {
    let response = reqwest::Client::new()
        .get(format!("{}/admin/api/accounts/acct_1", server.base))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = response.json().await.unwrap();
    body["balances"][0]["balance_minor"].clone()
}

async fn the_walkthrough_works_and_secrets_survive_a_restart(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let postgres = match &backend {
        Backend::Postgres(url) => Some(TestDatabase::create(url).await),
        Backend::Sqlite => None,
    };
    let database_url = postgres.as_ref().map(|p| p.url.as_str());
    let server = start(dir.path(), database_url);
    assert!(dir.path().join("data/admin_token").exists());
    let (ok, first) = send(&server, "msg_walkthrough");
    assert!(ok, "{first}");
    assert!(
        first.contains(r#""duplicate":false"#) && first.contains(r#""status":"applied""#),
        "{first}"
    );
    let (ok, again) = send(&server, "msg_walkthrough");
    assert!(ok && again.contains(r#""duplicate":true"#), "{again}");
    assert_eq!(balance(&server).await, 1500);
    let (token, secret) = (server.token.clone(), server.demo_secret.clone());
    drop(server);

    let restarted = start(dir.path(), database_url);
    assert_eq!(
        (restarted.token.as_str(), restarted.demo_secret.as_str()),
        (token.as_str(), secret.as_str())
    );
    let (ok, third) = send(&restarted, "msg_walkthrough");
    assert!(ok && third.contains(r#""duplicate":true"#), "{third}");
    assert_eq!(balance(&restarted).await, 1500);
}

async fn a_bad_config_stops_start_up_with_one_line(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookledger.toml");
    std::fs::write(&config, "[[sources]]\nname = \"stripe\"\nkind = \"stripe\"\nsecrets = [\"env:HOOKLEDGER_TEST_UNSET_SECRET\"]\n").unwrap();
    let url = match backend {
        Backend::Sqlite => "sqlite://data/x.db".to_owned(),
        Backend::Postgres(url) => url,
    };
    let output = Command::new(BIN)
        .current_dir(dir.path())
        .env("HOOKLEDGER_DATABASE_URL", url)
        .env_remove("HOOKLEDGER_TEST_UNSET_SECRET")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        "hookledger: config error: hookledger.toml: sources[stripe].secrets[0]: environment variable HOOKLEDGER_TEST_UNSET_SECRET is not set"
    );
}

both_backends!(
    the_walkthrough_works_and_secrets_survive_a_restart,
    a_bad_config_stops_start_up_with_one_line
);
