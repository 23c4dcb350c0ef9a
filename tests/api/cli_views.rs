//! `hookledger events` and `hookledger accounts ACCOUNT`: the admin's views
//! in a terminal, against the same database a server wrote.

use crate::helpers::*;
use crate::process::run_with_config as run;

async fn the_terminal_shows_events_and_an_account(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("pay_1", "cus_42", 1500, 2)).await;
    app.send_ok(&debit_seq("refund_1", "cus_42", 300, 1)).await;
    app.send_ok(&credit("pay_other", "cus_7", 900)).await;
    let dir = tempfile::tempdir().unwrap();
    crate::helpers::write_config(
        dir.path().join("hookledger.toml"),
        format!(
            "database_url = \"{}\"\ndata_dir = \"{}\"\n[admin]\ntoken = \"{ADMIN_TOKEN}\"\n",
            app.database_url,
            dir.path().join("data").display()
        ),
    )
    .unwrap();

    let (ok, events) = run(dir.path(), &["events", "--account", "cus_42"]);
    assert!(ok, "{events}");
    let lines: Vec<&str> = events.lines().collect();
    assert!(lines[0].starts_with("received (UTC)"), "{events}");
    assert_eq!(lines.len(), 3, "a header and two events: {events}");
    assert!(
        lines[1].contains("refund_1") && lines[1].contains("-$3.00") && lines[1].contains("stale")
    );
    assert!(lines[1].contains("out of order"), "{events}");
    assert!(
        lines[2].contains("pay_1") && lines[2].contains("$15.00") && lines[2].contains("applied")
    );

    let (ok, stale) = run(dir.path(), &["events", "--status", "stale"]);
    assert!(ok && stale.lines().count() == 2, "{stale}");
    let (ok, bad) = run(dir.path(), &["events", "--status", "lost"]);
    assert!(!ok && bad.contains("lost"), "{bad}");

    let (ok, account) = run(dir.path(), &["accounts", "cus_42"]);
    assert!(ok, "{account}");
    assert!(account.contains("account cus_42"), "{account}");
    assert!(account.contains("  USD $15.00"), "{account}");
    let ledger = &account[account.find("ledger (newest first)").unwrap()..];
    assert_eq!(
        ledger.lines().count(),
        3,
        "a title, a header, one posting: {ledger}"
    );
    assert!(ledger.contains("pay_1"), "{ledger}");
    assert!(!account.contains("pay_other"), "{account}");
    let (ok, nobody) = run(dir.path(), &["accounts", "cus_nobody"]);
    assert!(ok && nobody.contains("nothing was ever posted"), "{nobody}");
}

both_backends!(the_terminal_shows_events_and_an_account);
