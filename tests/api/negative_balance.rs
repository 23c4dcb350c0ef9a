//! `negative_balance`: a debit that would take a balance below zero is held
//! (as `stale`, for an operator who may apply it) with the balance it would
//! leave (the default, `hold`), or applied (`allow`). Checked under the balance row's lock, so concurrent
//! debits cannot both pass on the same funds.

use futures::future::join_all;

use crate::helpers::{Backend, Options, TestApp, credit_seq, debit_seq};

const OVERDRAFT_SOURCE: &str = r#"
[[sources]]
name = "overdraft"
kind = "standard-webhooks"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
negative_balance = "allow"
"#;

async fn a_debit_below_zero_is_held_unless_the_source_allows_it(backend: Backend) {
    let options = Options {
        extra_sources: OVERDRAFT_SOURCE,
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    app.send_ok(&credit_seq("c1", "acct_1", 500, 1)).await;
    let answer = app.send_ok(&debit_seq("d1", "acct_1", 800, 2)).await;
    assert_eq!(answer["status"], "stale");
    assert_eq!(
        app.event("demo", "d1").await["reason"],
        "would take the balance of acct_1 below zero: USD 5.00 less USD 8.00 \
         (negative_balance = \"hold\")"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 500);
    // A held debit does not move the guard: a debit after the credit but
    // before the refused one is not late.
    let fits = app.send_ok(&debit_seq("d0", "acct_1", 500, 2)).await;
    assert_eq!(fits["status"], "applied");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    // A person may still post it (a refund the provider already paid out):
    // the operator's apply overrides the policy, once.
    let applied = app
        .admin_post("/admin/api/events/demo/d1/apply", r#"{"note": "paid out"}"#)
        .await;
    assert_eq!(applied.status(), reqwest::StatusCode::OK);
    assert_eq!(app.balance("acct_1", "USD").await, -800);

    let overdraft = app
        .send_to("overdraft", &debit_seq("d2", "acct_2", 800, 1))
        .await;
    assert_eq!(overdraft["status"], "applied");
    assert_eq!(app.balance("acct_2", "USD").await, -800);
    app.assert_invariants().await;
}

/// Ten debits of 100 at once against a balance of 500: exactly five apply.
async fn concurrent_debits_cannot_overdraw(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("c1", "acct_1", 500, 1)).await;
    let debits: Vec<_> = (0..10)
        .map(|i| debit_seq(&format!("d{i}"), "acct_1", 100, 2))
        .collect();
    let answers = join_all(debits.iter().map(|d| app.send_ok(d))).await;
    let applied = answers.iter().filter(|a| a["status"] == "applied").count();
    assert_eq!(applied, 5);
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

both_backends!(
    a_debit_below_zero_is_held_unless_the_source_allows_it,
    concurrent_debits_cannot_overdraw,
);
