//! The admin in a real browser: Debian's headless chromium, driven by
//! `playwright-core` (tests/ui/flow.mjs), against the real server on both
//! backends, seeded with ids as long as real ones: every page must fit a
//! 390 px phone without breaking an id. Screenshots of each page, at 1280
//! and 390 px, go to `target/ui-screenshots/`.
//!
//! Needs `node`, `/usr/bin/chromium` (or `HOOKLEDGER_CHROMIUM`) and
//! `npm ci --prefix tests/ui`; `.ci/run` installs them. Without them the
//! test is skipped with a line saying why, unless `CI` is set: then it
//! fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hookledger::providers::Sample;
use reqwest::StatusCode;

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

/// Ids as long as real ones, so that a page too wide for a phone shows: a
/// customer id with a suffix, as some integrations build them, and event
/// ids near the 255-byte limit.
const ACCOUNT: &str = "cus_4242424242424242_5fc872b50b61";
const OTHER_ACCOUNT: &str = "cus_7777777777777777_0a1b2c3d4e5f";

struct Ids {
    refund: String,
    late: String,
    dismissed: String,
    stripe: String,
}

impl Ids {
    fn new() -> Ids {
        // 250 bytes: hex after a readable prefix, no break opportunity.
        let long = |prefix: &str| {
            let mut id = format!("{prefix}_{}", "5fc872b50b61a9e3".repeat(16));
            id.truncate(250);
            id
        };
        Ids {
            refund: long("refund_1"),
            late: long("late_2"),
            dismissed: long("late_3"),
            stripe: long("evt_1"),
        }
    }

    /// What the flow reads from `IDS`.
    fn to_json(&self) -> String {
        serde_json::json!({
            "account": ACCOUNT,
            "otherAccount": OTHER_ACCOUNT,
            "refund": self.refund,
            "late": self.late,
            "dismissed": self.dismissed,
            "stripe": self.stripe,
        })
        .to_string()
    }
}

/// Something on every admin page the flow visits: held events, a Stripe
/// event (its signature header), a gap, a verification failure.
async fn seed(app: &TestApp, ids: &Ids) {
    app.send_ok(&credit_seq("pay_1", ACCOUNT, 1500, 2)).await;
    // A late refund: held as stale, for the operator to apply.
    app.send_ok(&debit_seq(&ids.refund, ACCOUNT, 300, 1)).await;
    // Another account's held events: the forged POST aims at the first,
    // the held queue dismisses the second.
    app.send_ok(&credit_seq("pay_2", OTHER_ACCOUNT, 500, 2))
        .await;
    app.send_ok(&debit_seq(&ids.late, OTHER_ACCOUNT, 100, 1))
        .await;
    app.send_ok(&debit_seq(&ids.dismissed, OTHER_ACCOUNT, 50, 1))
        .await;
    let stripe = Sample {
        currency: "usd".into(),
        ..credit(&ids.stripe, OTHER_ACCOUNT, 700)
    };
    let response = app
        .deliver("stripe", "stripe", STRIPE_SECRET, &stripe)
        .await;
    json_with_status(response, StatusCode::OK).await;
    // Sequence 2 never comes: 3 waits behind a gap.
    app.send_to("ledger", &credit_seq("seq_1", OTHER_ACCOUNT, 100, 1))
        .await;
    app.send_to("ledger", &credit_seq("seq_3", OTHER_ACCOUNT, 100, 3))
        .await;
    let forged = app
        .deliver(
            "demo",
            "standard-webhooks",
            ROTATED_OUT_SECRET,
            &credit("forged", ACCOUNT, 1),
        )
        .await;
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
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
    let ids = Ids::new();
    seed(&app, &ids).await;

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
        .env("IDS", ids.to_json())
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
    // The width of each page on a phone, for --nocapture.
    println!("{log}");
    // The database agrees with what the browser saw.
    assert_eq!(app.balance(ACCOUNT, "USD").await, 1200);
    assert_eq!(app.event("demo", &ids.refund).await["status"], "applied");
    assert_eq!(app.event("demo", &ids.late).await["status"], "stale");
    assert_eq!(
        app.event("demo", &ids.dismissed).await["status"],
        "dismissed"
    );
    for step in ["1-dashboard", "3-held-event", "5-account", "15-signed-out"] {
        for shot in [
            format!("{name}-{step}.png"),
            format!("{name}-{step}-390.png"),
        ] {
            assert!(shots.join(&shot).exists(), "{shot}");
        }
    }
    app.assert_invariants().await;
}

both_backends!(an_operator_resolves_a_held_event_in_a_real_browser);
