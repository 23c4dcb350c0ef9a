//! The admin in a real browser: Debian's headless chromium, driven by
//! `playwright-core` (tests/ui/flow.mjs), against the real server on both
//! backends. Screenshots of each page go to `target/ui-screenshots/`.
//!
//! Needs `node`, `/usr/bin/chromium` (or `HOOKLEDGER_CHROMIUM`) and
//! `npm ci --prefix tests/ui`; `.ci/run` installs them. Without them the
//! test is skipped with a line saying why, unless `CI` is set: then it
//! fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;

/// The flow's bound: a browser that hangs fails the test.
const WITHIN: Duration = Duration::from_secs(180);

struct Tools {
    chromium: PathBuf,
}

impl Tools {
    /// What the flow needs, or why it cannot run.
    fn find() -> Result<Tools, String> {
        let chromium = std::env::var_os("HOOKLEDGER_CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
        if !chromium.exists() {
            return Err(format!("no chromium at {}", chromium.display()));
        }
        let node = Command::new("node").arg("--version").output();
        if !node.is_ok_and(|out| out.status.success()) {
            return Err("no node on PATH".into());
        }
        if !Path::new("tests/ui/node_modules/playwright-core").exists() {
            return Err("playwright-core is not installed: npm ci --prefix tests/ui".into());
        }
        Ok(Tools { chromium })
    }
}

fn tools_or_skip(test: &str) -> Option<Tools> {
    match Tools::find() {
        Ok(tools) => Some(tools),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but {test} cannot run: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            None
        }
    }
}

async fn an_operator_resolves_a_held_event_in_a_real_browser(backend: Backend) {
    let name = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres(_) => "postgres",
    };
    let Some(tools) = tools_or_skip(&format!("ui::{name}")) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("pay_1", "cus_42", 1500, 2)).await;
    // A late refund: held as stale, for the operator to apply.
    app.send_ok(&debit_seq("refund_1", "cus_42", 300, 1)).await;
    // Another account's held event: the forged POST aims at it.
    app.send_ok(&credit_seq("pay_2", "cus_7", 500, 2)).await;
    app.send_ok(&debit_seq("late_2", "cus_7", 100, 1)).await;

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target folder")
        .join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let mut child = Command::new("node")
        .arg("tests/ui/flow.mjs")
        .env("BASE", &app.address)
        .env("TOKEN", ADMIN_TOKEN)
        .env("SHOTS", &shots)
        .env("NAME", name)
        .env("CHROMIUM", &tools.chromium)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    // Polled off the runtime: the server under test runs on it.
    let status = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return (Some(status), child.wait_with_output().unwrap());
            }
            if started.elapsed() > WITHIN {
                let _ = child.kill();
                return (None, child.wait_with_output().unwrap());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    let (status, output) = status;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "the browser flow failed ({status:?}):\n{log}"
    );
    assert!(log.contains("ui flow passed"), "{log}");
    // The database agrees with what the browser saw.
    assert_eq!(app.balance("cus_42", "USD").await, 1200);
    assert_eq!(app.event("demo", "refund_1").await["status"], "applied");
    assert_eq!(app.event("demo", "late_2").await["status"], "stale");
    for step in ["1-dashboard", "3-held-event", "4-applied", "6-signed-out"] {
        assert!(shots.join(format!("{name}-{step}.png")).exists(), "{step}");
    }
    app.assert_invariants().await;
}

both_backends!(an_operator_resolves_a_held_event_in_a_real_browser);
