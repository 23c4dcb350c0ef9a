//! The binary as a newcomer uses it: `hookledger` with no config file starts
//! with a demo source and prints what is needed; `hookledger send` signs and
//! delivers; generated secrets survive a restart; a bad config is one line.

use std::path::Path;

use crate::helpers::Backend;
use crate::postgres::TestDatabase;
use crate::process::{Server, hookledger};

/// The demo server: no config file in `dir`; its banner ends with a note.
fn start(dir: &Path, database_url: Option<&str>) -> Server {
    let env: Vec<(&str, &str)> = database_url
        .map(|url| ("HOOKLEDGER_DATABASE_URL", url))
        .into_iter()
        .collect();
    Server::start(dir, &env, "note")
}

/// `hookledger send --source demo` with README's flags (and the test's
/// port).
fn send_demo(server: &Server, dir: &Path, args: &[&str]) -> String {
    let output = hookledger(dir)
        .args(["send", "--source", "demo"])
        .args(["--url", &format!("{}/webhooks/demo", server.base())])
        .args(args)
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

/// README's first credit: `send --source demo --event-id <id> --sequence 1`.
fn send(server: &Server, dir: &Path, event_id: &str) -> String {
    send_demo(server, dir, &["--event-id", event_id, "--sequence", "1"])
}

async fn balance(server: &Server) -> serde_json::Value {
    let token = server.value("admin token");
    server.admin(&token, "/admin/api/accounts/acct_1").await["balances"][0]["balance_minor"].clone()
}

async fn check(server: &Server) -> serde_json::Value {
    let token = server.value("admin token");
    server.admin(&token, "/admin/api/check").await
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
    let first = send(&server, dir.path(), "msg_walkthrough");
    assert!(
        first.contains(r#""duplicate":false"#) && first.contains(r#""status":"applied""#),
        "{first}"
    );
    // The banner's "try it" line runs as printed.
    let try_it = server
        .banner
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("try it"))
        .expect("a try-it line")
        .split_whitespace()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let output = std::process::Command::new(&try_it[0])
        .args(&try_it[1..])
        .current_dir(dir.path())
        .env_clear()
        .output()
        .unwrap();
    let tried = String::from_utf8_lossy(&output.stdout);
    assert!(
        tried.contains(r#""status":"applied""#),
        "{try_it:?}: {tried}"
    );
    let again = send(&server, dir.path(), "msg_walkthrough");
    assert!(again.contains(r#""duplicate":true"#), "{again}");
    assert_eq!(
        balance(&server).await,
        3000,
        "the walkthrough's and try-it's"
    );
    // README's late debit: numbered before the newest credit, held.
    send_demo(
        &server,
        dir.path(),
        &["--event-id", "msg_2", "--sequence", "3"],
    );
    let late = send_demo(
        &server,
        dir.path(),
        &[
            "--event-id",
            "msg_3",
            "--sequence",
            "2",
            "--type",
            "balance.debit",
            "--amount",
            "500",
        ],
    );
    assert!(late.contains(r#""status":"stale""#), "{late}");
    let token = server.value("admin token");
    let held = server.admin(&token, "/admin/api/events/demo/msg_3").await;
    assert_eq!(
        held["reason"],
        "out of order: sequence 2 is below 3, already applied for this account"
    );
    assert_eq!(balance(&server).await, 4500);
    let secrets = (
        server.value("admin token"),
        server.value("demo source secret"),
    );
    drop(server);

    let restarted = start(dir.path(), database_url);
    assert_eq!(
        (
            restarted.value("admin token"),
            restarted.value("demo source secret")
        ),
        secrets
    );
    let third = send(&restarted, dir.path(), "msg_walkthrough");
    assert!(third.contains(r#""duplicate":true"#), "{third}");
    assert_eq!(balance(&restarted).await, 4500);
    assert_eq!(check(&restarted).await["ok"], true);
}

/// README's ordered walkthrough: a shuffled stream with 4 left out parks
/// what follows the gap; sending 4 releases it.
async fn the_ordered_demo_parks_and_releases(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let postgres = match &backend {
        Backend::Postgres(url) => Some(TestDatabase::create(url).await),
        Backend::Sqlite => None,
    };
    let server = start(dir.path(), postgres.as_ref().map(|p| p.url.as_str()));
    let url = format!("{}/webhooks/demo-ordered", server.base());
    assert!(
        server
            .banner
            .iter()
            .any(|l| l.contains(&url) && l.contains("contiguous")),
        "{:?}",
        server.banner
    );
    let send = |extra: &[&str]| {
        let output = hookledger(dir.path())
            .args(["send", "--source", "demo-ordered", "--url", &url])
            .args(["--account", "acct_2", "--amount", "100"])
            .args(extra)
            .output()
            .expect("send runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let stream = send(&[
        "--event-id",
        "run1",
        "--count",
        "6",
        "--shuffle",
        "--omit",
        "4",
    ]);
    assert_eq!(stream.matches("HTTP 200 OK").count(), 5, "{stream}");
    assert!(!stream.contains("run1-4 "), "{stream}");
    let token = server.value("admin token");
    let waiting = server
        .admin(&token, "/admin/api/events?status=waiting&account=acct_2")
        .await;
    let mut ids: Vec<&str> = waiting["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["run1-5", "run1-6"], "the events after the gap wait");
    let closing = send(&["--event-id", "run1-4", "--sequence", "4"]);
    assert!(closing.contains(r#""released":2"#), "{closing}");
    let account = server.admin(&token, "/admin/api/accounts/acct_2").await;
    assert_eq!(account["balances"][0]["balance_minor"], 600);
    assert_eq!(check(&server).await["ok"], true);
}

both_backends!(
    the_walkthrough_works_and_secrets_survive_a_restart,
    the_ordered_demo_parks_and_releases,
);

#[test]
fn a_bad_config_stops_start_up_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "secrets = [\"env:HOOKLEDGER_TEST_UNSET_SECRET\"]";
    let config = format!("[[sources]]\nname = \"stripe\"\nkind = \"stripe\"\n{secret}\n");
    crate::helpers::write_config(dir.path().join("hookledger.toml"), config).unwrap();
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
        "migrations applied (sqlite): 19 now; database schema 19, this binary 19: equal\n"
    );
    assert!(dir.path().join("data/hookledger.db").exists());
    let again = hookledger(dir.path()).arg("migrate").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "migrations applied (sqlite): 0 now; database schema 19, this binary 19: equal\n"
    );
}
