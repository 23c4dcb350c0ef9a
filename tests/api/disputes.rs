//! Disputes through Stripe's own payloads: a dispute takes the funds, a
//! dispute won back gives back what it took and no more, and a
//! reinstatement waits for the withdrawal it undoes.

use serde_json::json;

use crate::fixtures::{stripe_event, stripe_payment, stripe_refund};
use crate::helpers::{Backend, TestApp};
use crate::refunds::{PAYMENT, send};

async fn a_dispute_takes_the_funds_and_gives_back_only_what_it_took(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    let withdrawn = stripe_event("charge.dispute.funds_withdrawn", "evt_d1", &[]);
    assert_eq!(send(&app, "stripe", &withdrawn).await["status"], "applied");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    // A refund after it on a fully disputed payment has nothing left to take.
    let mut after = stripe_refund("evt_r1", "re_1", PAYMENT, 100);
    after["created"] = json!(1_780_405_200);
    assert_eq!(send(&app, "stripe", &after).await["status"], "rejected");
    // One from before it is late: held for a person, as late debits are.
    let before = stripe_refund("evt_r2", "re_2", PAYMENT, 100);
    assert_eq!(send(&app, "stripe", &before).await["status"], "stale");
    // Applied by an operator, it meets the same bound: nothing is left now.
    let apply = "/admin/api/events/stripe/refund:re_2/apply";
    let refused = app.admin_post(apply, "").await;
    let body =
        crate::helpers::assert_error(refused, reqwest::StatusCode::CONFLICT, "conflict").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot apply: refund of USD 1.00 exceeds"),
        "{body}"
    );
    assert_eq!(app.event("stripe", "refund:re_2").await["status"], "stale");
    let reinstated = stripe_event("charge.dispute.funds_reinstated", "evt_d2", &[]);
    let answer = send(&app, "stripe", &reinstated).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (
            Some("applied"),
            Some("dispute-reinstated:dp_1QWqA0EbX6tfNkNnJ8mB2vZx")
        )
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    // Reported again under another event id: the same dispute, a duplicate.
    let again = stripe_event("charge.dispute.funds_reinstated", "evt_d3", &[]);
    assert_eq!(send(&app, "stripe", &again).await["duplicate"], true);
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    // Now the held refund fits, and the operator's apply posts it once.
    let applied = app
        .admin_post(apply, r#"{"note": "refund confirmed"}"#)
        .await;
    assert_eq!(applied.status(), reqwest::StatusCode::OK);
    assert_eq!(app.balance("acct_1", "USD").await, 900);
    app.assert_invariants().await;
}

async fn a_reinstatement_without_its_withdrawal_gives_nothing_back(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    send(
        &app,
        "stripe",
        &stripe_refund("evt_r1", "re_1", PAYMENT, 400),
    )
    .await;
    // The payment has 400 reversed, but by a refund: a dispute never
    // withdrawn gives none of it back; the reinstatement waits, held, for
    // its withdrawal.
    let reinstated = stripe_event("charge.dispute.funds_reinstated", "evt_d2", &[]);
    assert_eq!(send(&app, "stripe", &reinstated).await["status"], "stale");
    let key = "dispute-reinstated:dp_1QWqA0EbX6tfNkNnJ8mB2vZx";
    assert_eq!(
        app.event("stripe", key).await["reason"],
        "waits for dispute-withdrawn:dp_1QWqA0EbX6tfNkNnJ8mB2vZx, which was never received"
    );
    // An operator applying it now is refused: there is nothing to give back.
    let apply = format!("/admin/api/events/stripe/{key}/apply");
    let refused = app.admin_post(&apply, "").await;
    assert_eq!(refused.status(), reqwest::StatusCode::CONFLICT);
    assert_eq!(app.balance("acct_1", "USD").await, 600);
    app.assert_invariants().await;
}

/// A withdrawal held as late, then its reinstatement: the reinstatement
/// waits for it (held, not rejected), and once an operator applies the
/// withdrawal, the reinstatement applies too: the money comes back.
async fn a_reinstatement_waits_for_a_held_withdrawal(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    send(&app, "stripe", &stripe_payment("evt_pay", PAYMENT, 1000)).await;
    // A newer payment on the account moves its guard past the dispute.
    let mut newer = stripe_payment("evt_pay2", "pi_newer", 500);
    newer["created"] = json!(1_780_500_000);
    send(&app, "stripe", &newer).await;
    let withdrawn = stripe_event("charge.dispute.funds_withdrawn", "evt_d1", &[]);
    assert_eq!(send(&app, "stripe", &withdrawn).await["status"], "stale");
    let mut reinstated = stripe_event("charge.dispute.funds_reinstated", "evt_d2", &[]);
    reinstated["created"] = json!(1_780_600_000);
    assert_eq!(send(&app, "stripe", &reinstated).await["status"], "stale");
    let key = "dispute-reinstated:dp_1QWqA0EbX6tfNkNnJ8mB2vZx";
    assert_eq!(
        app.event("stripe", key).await["reason"],
        "waits for dispute-withdrawn:dp_1QWqA0EbX6tfNkNnJ8mB2vZx, which is stale: apply that \
         first, then this"
    );
    for event in ["dispute-withdrawn:dp_1QWqA0EbX6tfNkNnJ8mB2vZx", key] {
        let apply = format!("/admin/api/events/stripe/{event}/apply");
        let answer = app.admin_post(&apply, r#"{"note": "dispute won"}"#).await;
        assert_eq!(answer.status(), reqwest::StatusCode::OK, "{event}");
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

crate::both_backends!(
    a_dispute_takes_the_funds_and_gives_back_only_what_it_took,
    a_reinstatement_without_its_withdrawal_gives_nothing_back,
    a_reinstatement_waits_for_a_held_withdrawal,
);
