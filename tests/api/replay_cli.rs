//! `hookledger replay` after a config fix: a dry run that writes nothing,
//! then every rejected event replayed in the order it arrived, with
//! progress on long runs; applied stays applied.

use crate::helpers::*;
use crate::process::hookledger;
use crate::process::run_with_config as cli;
use crate::replay::{FIXED, before_and_after};

/// A folder with a config for `app`'s database and the fixed `shop`.
fn config_dir(app: &TestApp) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::helpers::write_config(
        dir.path().join("hookledger.toml"),
        format!(
            "database_url = \"{}\"\ndata_dir = \"{}\"\n[admin]\ntoken = \"{ADMIN_TOKEN}\"\n{FIXED}",
            app.database_url,
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    dir
}

async fn the_cli_replays_every_rejected_event_in_arrival_order(backend: Backend) {
    let (wrong, fixed) = before_and_after(backend).await;
    // A credit then a debit of one account, numbered: replayed in arrival
    // order the debit is in order too, and nothing is held.
    wrong
        .send_to("shop", &credit_seq("evt_a", "acct_5", 1000, 1))
        .await;
    wrong
        .send_to("shop", &debit_seq("evt_b", "acct_5", 400, 2))
        .await;
    wrong
        .send_to("shop", &credit_seq("evt_c", "acct_6", 70, 1))
        .await;
    let dir = config_dir(&fixed);
    let (ok, dry) = cli(dir.path(), &["replay", "--status", "rejected", "--dry-run"]);
    assert!(ok, "{dry}");
    assert!(
        dry.contains("shop evt_b: a debit of $4.00 to acct_5"),
        "{dry}"
    );
    assert!(dry.contains("3 event(s): 3 would change"), "{dry}");
    assert_eq!(
        fixed.balance("acct_5", "USD").await,
        0,
        "a dry run writes nothing"
    );

    let (ok, ran) = cli(
        dir.path(),
        &[
            "replay",
            "--status",
            "rejected",
            "--note",
            "account_path fixed",
        ],
    );
    assert!(ok, "{ran}");
    let lines: Vec<&str> = ran.lines().collect();
    assert_eq!(lines[0], "shop evt_a: rejected -> applied", "{ran}");
    assert_eq!(lines[1], "shop evt_b: rejected -> applied", "{ran}");
    assert!(
        ran.contains("3 event(s): 3 changed, 0 unchanged, 0 not replayed"),
        "{ran}"
    );
    assert_eq!(fixed.balance("acct_5", "USD").await, 600);
    assert_eq!(fixed.balance("acct_6", "USD").await, 70);

    // Again: nothing is rejected any more; by name, applied stays applied.
    let (ok, again) = cli(dir.path(), &["replay", "--status", "rejected"]);
    assert!(ok && again.contains("0 event(s)"), "{again}");
    let (ok, one) = cli(
        dir.path(),
        &["replay", "--source", "shop", "--event-id", "evt_a"],
    );
    assert!(ok, "{one}");
    assert!(one.contains("not replayed: event is applied"), "{one}");
    let (ok, bad) = cli(dir.path(), &["replay", "--status", "applied"]);
    assert!(!ok && bad.contains("only rejected or ignored"), "{bad}");
    assert_eq!(fixed.balance("acct_5", "USD").await, 600);
    fixed.assert_invariants().await;
}

async fn a_long_run_says_how_far_it_is(backend: Backend) {
    let (wrong, fixed) = before_and_after(backend).await;
    for n in 0..101 {
        wrong
            .send_to("shop", &credit(&format!("evt_{n}"), "acct_7", 1))
            .await;
    }
    let dir = config_dir(&fixed);
    let output = hookledger(dir.path())
        .arg("--config")
        .arg(dir.path().join("hookledger.toml"))
        .args(["replay", "--status", "rejected"])
        .output()
        .expect("hookledger runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("replay: 100 of 101 done"), "{stderr}");
    assert_eq!(fixed.balance("acct_7", "USD").await, 101);
}

both_backends!(
    the_cli_replays_every_rejected_event_in_arrival_order,
    a_long_run_says_how_far_it_is,
);
