//! Money going out, through Stripe's own payloads: a refund or dispute is
//! matched to the payment it reverses, its account is the payment's, the
//! refunds of one payment can never take more than it credited, a refund
//! that arrives first waits and is applied with its payment, and a dispute
//! won back gives back what it took and no more.

use futures::future::join_all;
use serde_json::{Value, json};

use crate::fixtures::{deliver_ok, signed, stripe_event, stripe_payment, stripe_refund};
use crate::helpers::{Backend, Options, STRIPE_SECRET, TestApp};

pub(crate) const PAYMENT: &str = "pi_3QWpG2EbX6tfNkNn0jL1cM7d";

pub(crate) async fn send(app: &TestApp, source: &str, body: &Value) -> Value {
    let event_id = body["id"].as_str().unwrap();
    deliver_ok(
        app,
        source,
        &signed("stripe", STRIPE_SECRET, body, event_id),
    )
    .await
}

async fn refunds_are_matched_to_their_payment_and_bounded_by_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    assert_eq!(
        send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await["status"],
        "applied"
    );
    let first = send(
        &app,
        "stripe",
        &stripe_refund("evt_r1", "re_1", PAYMENT, 300),
    )
    .await;
    assert_eq!(
        (first["status"].as_str(), first["event_id"].as_str()),
        (Some("applied"), Some("refund:re_1"))
    );
    // The same refund reported again by refund.updated debits nothing more.
    let updated = stripe_event(
        "refund.updated",
        "evt_r1_updated",
        &[
            ("data.object.id", json!("re_1")),
            ("data.object.payment_intent", json!(PAYMENT)),
            ("data.object.amount", json!(300)),
        ],
    );
    let again = send(&app, "stripe", &updated).await;
    assert_eq!(
        (again["status"].as_str(), again["duplicate"].as_bool()),
        (Some("applied"), Some(true))
    );
    // Partial refunds add up to what the payment credited, and no further.
    send(
        &app,
        "stripe",
        &stripe_refund("evt_r2", "re_2", PAYMENT, 500),
    )
    .await;
    assert_eq!(app.balance("acct_1", "USD").await, 200);
    let excess = send(
        &app,
        "stripe",
        &stripe_refund("evt_r3", "re_3", PAYMENT, 300),
    )
    .await;
    assert_eq!(excess["status"], "rejected");
    let stored = app.event("stripe", "refund:re_3").await;
    assert_eq!(
        stored["reason"],
        format!(
            "refund of USD 3.00 exceeds what payment {PAYMENT} has left: it credited USD 10.00, \
             and USD 8.00 was refunded before"
        )
    );
    assert_eq!(app.balance("acct_1", "USD").await, 200);
    let entries = app.entries("acct_1").await;
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0]["amount_minor"], -500);
    app.assert_invariants().await;
}

async fn a_refund_that_arrives_first_waits_for_its_payment(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let early = send(
        &app,
        "stripe",
        &stripe_refund("evt_r1", "re_1", PAYMENT, 300),
    )
    .await;
    assert_eq!(early["status"], "unmatched");
    let stored = app.event("stripe", "refund:re_1").await;
    assert_eq!(
        stored["account_id"],
        Value::Null,
        "its account is the payment's"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    // Redelivered while it waits: a duplicate.
    let again = send(
        &app,
        "stripe",
        &stripe_refund("evt_r1", "re_1", PAYMENT, 300),
    )
    .await;
    assert_eq!(again["duplicate"], true);
    let paid = send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    assert_eq!(
        (paid["status"].as_str(), paid["released"].as_u64()),
        (Some("applied"), Some(1))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 700);
    let refund = app.event("stripe", "refund:re_1").await;
    assert_eq!(
        (refund["status"].as_str(), refund["account_id"].as_str()),
        (Some("applied"), Some("acct_1"))
    );
    app.assert_invariants().await;
}

async fn a_refund_of_an_unknown_payment_waits_and_can_be_dismissed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    send(
        &app,
        "stripe",
        &stripe_refund("evt_r1", "re_1", "pi_never", 300),
    )
    .await;
    let held = crate::helpers::json_with_status(
        app.admin_get("/admin/api/events?status=unmatched").await,
        reqwest::StatusCode::OK,
    )
    .await;
    assert_eq!(held["events"][0]["event_id"], "refund:re_1");
    let dismissed = app
        .admin_post(
            "/admin/api/events/stripe/refund:re_1/dismiss",
            r#"{"note": "paid before hookledger"}"#,
        )
        .await;
    assert_eq!(dismissed.status(), reqwest::StatusCode::OK);
    // A dismissed refund stays dismissed when its payment arrives.
    send(&app, "stripe", &stripe_payment("evt_pay", "pi_never", 1000)).await;
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    assert_eq!(
        app.event("stripe", "refund:re_1").await["status"],
        "dismissed"
    );
    app.assert_invariants().await;
}

async fn a_refund_in_another_currency_is_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    let mut eur = stripe_refund("evt_r1", "re_1", PAYMENT, 300);
    eur["data"]["object"]["currency"] = json!("eur");
    assert_eq!(send(&app, "stripe", &eur).await["status"], "rejected");
    assert_eq!(
        app.event("stripe", "refund:re_1").await["reason"],
        format!("payment {PAYMENT} was credited in USD, this event is in EUR")
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

/// A refund that arrives first naming another account than its payment's
/// is refused when the payment comes, as it would be after it.
async fn an_early_refund_naming_another_account_is_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let mut early = stripe_refund("evt_r1", "re_1", PAYMENT, 300);
    early["data"]["object"]["metadata"] = json!({"account_id": "acct_other"});
    assert_eq!(send(&app, "stripe", &early).await["status"], "unmatched");
    let paid = send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    assert_eq!(paid["status"], "applied");
    let stored = app.event("stripe", "refund:re_1").await;
    assert_eq!(
        (stored["status"].as_str(), stored["reason"].as_str()),
        (
            Some("rejected"),
            Some(
                format!("names account acct_other, but payment {PAYMENT} credited account acct_1")
                    .as_str()
            )
        )
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    assert_eq!(app.balance("acct_other", "USD").await, 0);
    app.assert_invariants().await;
}

/// The check compares every payment row with its ledger entries, account
/// and currency included.
async fn the_check_reports_a_payment_row_that_disagrees(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    app.execute_sql("update payments set account_id = 'acct_9'")
        .await
        .unwrap();
    let violations = app.store().check_invariants().await.unwrap();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        format!("{violations:?}").contains("PaymentMismatch"),
        "{violations:?}"
    );
}

const RUNNING_TOTAL_SOURCE: &str = r#"
[[sources]]
name = "stripe-legacy"
kind = "stripe"
secrets = ["whsec_stripe_test_secret"]
debit_types = ["charge.refunded"]
"#;

async fn running_refund_totals_debit_only_what_is_new(backend: Backend) {
    let options = Options {
        extra_sources: RUNNING_TOTAL_SOURCE,
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    send(
        &app,
        "stripe-legacy",
        &stripe_payment("evt_pay", PAYMENT, 1000),
    )
    .await;
    let refunded = |event_id: &str, total: i64| {
        stripe_event(
            "charge.refunded",
            event_id,
            &[("data.object.amount_refunded", json!(total))],
        )
    };
    send(&app, "stripe-legacy", &refunded("evt_c1", 300)).await;
    assert_eq!(app.balance("acct_1", "USD").await, 700);
    send(&app, "stripe-legacy", &refunded("evt_c2", 500)).await;
    assert_eq!(app.balance("acct_1", "USD").await, 500);
    // An older total delivered late adds nothing.
    let stale = send(&app, "stripe-legacy", &refunded("evt_c0", 300)).await;
    assert_eq!(stale["status"], "ignored");
    let entries = app.entries("acct_1").await;
    assert_eq!(
        entries
            .iter()
            .map(|e| e["amount_minor"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [-200, -300, 1000]
    );
    // Refund types are not mapped on this source: no double debit.
    let per_refund = send(
        &app,
        "stripe-legacy",
        &stripe_refund("evt_r1", "re_1", PAYMENT, 200),
    )
    .await;
    assert_eq!(per_refund["status"], "ignored");
    let too_much = send(&app, "stripe-legacy", &refunded("evt_c3", 1100)).await;
    assert_eq!(too_much["status"], "rejected");
    assert_eq!(app.balance("acct_1", "USD").await, 500);
    app.assert_invariants().await;
}

/// Twenty refunds of 100 at once on a payment of 1000: exactly ten apply,
/// whichever ten, and the payment is refunded exactly in full.
async fn concurrent_refunds_never_take_more_than_the_payment(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    let refunds: Vec<Value> = (0..20)
        .map(|i| stripe_refund(&format!("evt_r{i}"), &format!("re_{i}"), PAYMENT, 100))
        .collect();
    let answers = join_all(refunds.iter().map(|r| send(&app, "stripe", r))).await;
    let applied = answers.iter().filter(|a| a["status"] == "applied").count();
    let rejected = answers.iter().filter(|a| a["status"] == "rejected").count();
    assert_eq!((applied, rejected), (10, 10));
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

/// A payment and its refunds all at once, in any order, many times over:
/// every refund is applied exactly once, none is left waiting.
async fn refunds_racing_their_payment_are_never_stranded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for round in 0..5 {
        let payment_id = format!("pi_race_{round}");
        let mut bodies = vec![stripe_payment(
            &format!("evt_pay_{round}"),
            &payment_id,
            1000,
        )];
        bodies.extend((0..4).map(|i| {
            stripe_refund(
                &format!("evt_r_{round}_{i}"),
                &format!("re_{round}_{i}"),
                &payment_id,
                100 + i,
            )
        }));
        let bodies: Vec<Value> = if round % 2 == 0 {
            bodies
        } else {
            bodies.into_iter().rev().collect()
        };
        join_all(bodies.iter().map(|b| send(&app, "stripe", b))).await;
    }
    let unmatched = crate::helpers::json_with_status(
        app.admin_get("/admin/api/events?status=unmatched").await,
        reqwest::StatusCode::OK,
    )
    .await;
    assert_eq!(unmatched["events"], json!([]), "no refund left waiting");
    // Each round: 1000 in, 100 + 101 + 102 + 103 out.
    assert_eq!(app.balance("acct_1", "USD").await, 5 * (1000 - 406));
    app.assert_invariants().await;
}

both_backends!(
    refunds_are_matched_to_their_payment_and_bounded_by_it,
    a_refund_that_arrives_first_waits_for_its_payment,
    a_refund_of_an_unknown_payment_waits_and_can_be_dismissed,
    a_refund_in_another_currency_is_rejected,
    running_refund_totals_debit_only_what_is_new,
    concurrent_refunds_never_take_more_than_the_payment,
    refunds_racing_their_payment_are_never_stranded,
    an_early_refund_naming_another_account_is_rejected,
    the_check_reports_a_payment_row_that_disagrees,
);
