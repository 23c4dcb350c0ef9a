//! A replay whose payload maps to another key with the current config: a
//! Stripe `refund.created` stored `ignored` under its event id while the
//! source did not map refunds maps to `refund:re_...` once it does. The
//! replay applies it under that key when the key is not stored yet, leaves
//! the original `ignored` and linked, and otherwise is a duplicate of it:
//! one debit per refund, whatever the order of replays and the refund's
//! own later events.

use reqwest::StatusCode;
use serde_json::Value;

use crate::browser::{csrf_in, login, page, post_form};
use crate::fixtures::{signed, stripe_event, stripe_payment, stripe_refund};
use crate::helpers::*;

/// Refunds unmapped: `charge.refunded` is the only debit, so a
/// `refund.created` is stored `ignored` under its event id.
const WRONG: &str = r#"
[[sources]]
name = "pay"
kind = "stripe"
scope = "pay"
secrets = ["whsec_stripe_test_secret"]
debit_types = ["charge.refunded"]
"#;

/// The fix: the kind's default debits, `refund.created` and `.updated`.
pub(crate) const FIXED: &str = r#"
[[sources]]
name = "pay"
kind = "stripe"
scope = "pay"
secrets = ["whsec_stripe_test_secret"]
"#;

pub(crate) async fn instance(app: &TestApp, config: &str) -> TestApp {
    app.another_instance_with(&Options {
        extra_sources: config,
        ..Options::default()
    })
    .await
}

/// The wrong config's instance and the fixed one, on one database, with
/// payment `pi_1` of 10.00 credited to `acct_1` and each refund of
/// `refunds` (event id, refund id, amount) stored `ignored`.
pub(crate) async fn refunds_stored_ignored(
    backend: Backend,
    refunds: &[(&str, &str, i64)],
) -> (TestApp, TestApp) {
    let wrong = TestApp::spawn_with(
        backend,
        Options {
            extra_sources: WRONG,
            ..Options::default()
        },
    )
    .await;
    let paid = send(&wrong, &stripe_payment("evt_pay", "pi_1", 1000)).await;
    assert_eq!(paid["status"], "applied", "{paid}");
    for (n, (event_id, refund_id, amount)) in (0..).zip(refunds) {
        let mut refund = stripe_refund(event_id, refund_id, "pi_1", *amount);
        refund["created"] = serde_json::json!(created(n));
        let answer = send(&wrong, &refund).await;
        assert_eq!(answer["status"], "ignored", "{answer}");
        assert_eq!(answer["event_id"], *event_id);
    }
    let fixed = instance(&wrong, FIXED).await;
    (wrong, fixed)
}

pub(crate) async fn send(app: &TestApp, body: &Value) -> Value {
    let request = signed("stripe", STRIPE_SECRET, body, "");
    json_with_status(app.post_signed("pay", &request).await, StatusCode::OK).await
}

pub(crate) async fn replay(app: &TestApp, event_id: &str) -> (StatusCode, Value) {
    let response = app
        .admin_post(
            &format!("/admin/api/event/replay?source=pay&id={event_id}"),
            r#"{"note": "refunds mapped now"}"#,
        )
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// When the `n`th refund was created (Stripe's `created`, the sequence
/// the high-water policy orders by): after the payment, in order, so no
/// debit is held as late.
fn created(n: i64) -> i64 {
    1_780_318_800 + 10 * n
}

/// A `refund.updated` of the `n`th refund, `refund_id` (still succeeded),
/// after its `refund.created`.
pub(crate) fn refund_updated(event_id: &str, n: i64, refund_id: &str, amount: i64) -> Value {
    stripe_event(
        "refund.updated",
        event_id,
        &[
            ("created", serde_json::json!(created(n) + 5)),
            ("data.object.id", serde_json::json!(refund_id)),
            ("data.object.payment_intent", serde_json::json!("pi_1")),
            ("data.object.amount", serde_json::json!(amount)),
        ],
    )
}

async fn an_ignored_refund_replays_under_its_refund_key_once(backend: Backend) {
    let (_wrong, fixed) = refunds_stored_ignored(backend, &[("evt_r1", "re_1", 300)]).await;
    assert_eq!(fixed.balance("acct_1", "USD").await, 1000);

    let (status, answer) = replay(&fixed, "evt_r1").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["changed"], true, "{answer}");
    assert_eq!(answer["previous_status"], "ignored");
    assert_eq!(answer["status"], "ignored", "the original moves nothing");
    assert_eq!(answer["replayed_as"]["event_id"], "refund:re_1");
    assert_eq!(answer["replayed_as"]["status"], "applied");
    assert_eq!(answer["replayed_as"]["duplicate"], false);
    assert_eq!(fixed.balance("acct_1", "USD").await, 700);

    // Linked both ways, the original ignored with why.
    let original = fixed.event("pay", "evt_r1").await;
    assert_eq!(original["status"], "ignored");
    assert_eq!(original["replayed_into"], "refund:re_1");
    assert!(
        original["reason"]
            .as_str()
            .unwrap()
            .contains("replayed as refund:re_1"),
        "{original}"
    );
    let refund = fixed.event("pay", "refund:re_1").await;
    assert_eq!(refund["status"], "applied");
    assert_eq!(refund["replayed_from"], "evt_r1");
    assert_eq!(refund["payment_ref"], "pi_1");
    let audit = &original["audit"][0];
    assert_eq!(audit["action"], "replay");
    assert!(
        audit["detail"].as_str().unwrap().contains("as refund:re_1"),
        "{audit}"
    );
    let cookie = login(&fixed).await;
    let html = page(&fixed, "/admin/event?source=pay&id=evt_r1", &cookie).await;
    assert!(
        html.contains(r#"class="replayed-into">refund:re_1</a>"#),
        "{html}"
    );
    let html = page(&fixed, "/admin/event?source=pay&id=refund%3Are_1", &cookie).await;
    assert!(
        html.contains(r#"class="replayed-from">evt_r1</a>"#),
        "{html}"
    );

    // Again: a duplicate of the key, nothing changes.
    let (status, again) = replay(&fixed, "evt_r1").await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["changed"], false, "{again}");
    assert_eq!(again["replayed_as"]["duplicate"], true, "{again}");
    assert_eq!(again["replayed_as"]["status"], "applied");
    let refund = fixed.event("pay", "refund:re_1").await;
    assert_eq!(refund["deliveries"], 1, "a replay is no redelivery");
    // The refund's later event is a redelivery of the same key.
    let updated = send(&fixed, &refund_updated("evt_r1u", 0, "re_1", 300)).await;
    assert_eq!(updated["duplicate"], true, "{updated}");
    assert_eq!(fixed.balance("acct_1", "USD").await, 700);
    assert_eq!(fixed.entries("acct_1").await.len(), 2);
    fixed.assert_invariants().await;
}

async fn a_refund_stored_under_its_key_already_makes_the_replay_a_duplicate(backend: Backend) {
    let (_wrong, fixed) = refunds_stored_ignored(backend, &[("evt_r1", "re_1", 300)]).await;
    // After the fix, Stripe's next event of the refund applied it.
    let updated = send(&fixed, &refund_updated("evt_r1u", 0, "re_1", 300)).await;
    assert_eq!(updated["status"], "applied", "{updated}");
    let (status, answer) = replay(&fixed, "evt_r1").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["changed"], false, "{answer}");
    assert_eq!(answer["replayed_as"]["event_id"], "refund:re_1");
    assert_eq!(answer["replayed_as"]["duplicate"], true);
    let original = fixed.event("pay", "evt_r1").await;
    assert_eq!(original["replayed_into"], Value::Null, "nothing written");
    assert_eq!(original["audit"], serde_json::json!([]));
    // From the page: it says the key is stored already, not that the
    // config maps the event as it is stored.
    let cookie = login(&fixed).await;
    let path = "/admin/event?source=pay&id=evt_r1";
    let before = page(&fixed, path, &cookie).await;
    assert!(
        before.contains("maps to another key, refund:re_1"),
        "{before}"
    );
    let fields = [
        ("csrf", csrf_in(&before)),
        ("note", "refunds mapped now".to_owned()),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let action = "/admin/event/replay?source=pay&id=evt_r1";
    let done = post_form(&fixed, action, &cookie, Some(&fixed.address), &fields).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let location = done.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.ends_with("done=replay_duplicate"), "{location}");
    let after = page(&fixed, &location, &cookie).await;
    assert!(after.contains("which is stored already"), "{after}");
    assert_eq!(fixed.balance("acct_1", "USD").await, 700);
    fixed.assert_invariants().await;
}

async fn one_refund_replayed_at_once_from_two_instances_debits_once(backend: Backend) {
    let refunds = [
        ("evt_a", "re_a", 100),
        ("evt_b", "re_b", 200),
        ("evt_c", "re_c", 300),
    ];
    let (_wrong, fixed) = refunds_stored_ignored(backend, &refunds).await;
    let other = instance(&fixed, FIXED).await;
    // Each refund four times at once, two from each instance; the refunds
    // one after another, in the order they were created (a debit older
    // than one applied would be held as late, which is not this test).
    let mut answers = Vec::new();
    for (event_id, _, _) in &refunds {
        let tasks = [&fixed, &other, &fixed, &other].map(|app| replay(app, event_id));
        answers.extend(futures::future::join_all(tasks).await);
    }
    for (status, answer) in &answers {
        // A loser sees the key stored (a duplicate), or the original
        // taken by the winner (409, changed meanwhile).
        assert!(
            *status == StatusCode::OK || *status == StatusCode::CONFLICT,
            "{status} {answer}"
        );
    }
    let changed = answers
        .iter()
        .filter(|(_, answer)| answer["changed"] == true)
        .count();
    assert_eq!(changed, 3, "{answers:?}");
    assert_eq!(fixed.balance("acct_1", "USD").await, 400);
    assert_eq!(fixed.entries("acct_1").await.len(), 4);
    for (event_id, refund_id, _) in &refunds {
        let original = fixed.event("pay", event_id).await;
        assert_eq!(original["replayed_into"], format!("refund:{refund_id}"));
        assert_eq!(original["audit"].as_array().unwrap().len(), 1, "{original}");
    }
    fixed.assert_invariants().await;
}

async fn a_replay_racing_the_refunds_next_event_debits_once(backend: Backend) {
    let refunds: Vec<(String, String, i64)> = (0..6)
        .map(|n| (format!("evt_{n}"), format!("re_{n}"), 100))
        .collect();
    let borrowed: Vec<(&str, &str, i64)> = refunds
        .iter()
        .map(|(e, r, a)| (e.as_str(), r.as_str(), *a))
        .collect();
    let (_wrong, fixed) = refunds_stored_ignored(backend, &borrowed).await;
    let other = instance(&fixed, FIXED).await;
    for (n, (event_id, refund_id, amount)) in (0..).zip(&borrowed) {
        let update = refund_updated(&format!("{event_id}_u"), n, refund_id, *amount);
        let (replayed, delivered) = tokio::join!(replay(&fixed, event_id), send(&other, &update));
        assert_eq!(replayed.0, StatusCode::OK, "{replayed:?}");
        // Exactly one of the two applied the refund.
        let replay_applied = replayed.1["replayed_as"]["status"] == "applied"
            && replayed.1["replayed_as"]["duplicate"] == false;
        let delivery_applied = delivered["status"] == "applied" && delivered["duplicate"] != true;
        assert!(
            replay_applied != delivery_applied,
            "{replayed:?} {delivered}"
        );
    }
    assert_eq!(fixed.balance("acct_1", "USD").await, 400);
    assert_eq!(fixed.entries("acct_1").await.len(), 7);
    fixed.assert_invariants().await;
}

/// Under the old config `charge.refunded` counted the payment's refunds
/// as a running total (300); the refund it holds, replayed as its own key,
/// must not take the 300 back a second time: it is held for a person.
async fn a_refund_a_running_total_counted_is_not_debited_again(backend: Backend) {
    let (wrong, fixed) = refunds_stored_ignored(backend, &[("evt_r1", "re_1", 300)]).await;
    let total = stripe_event(
        "charge.refunded",
        "evt_total",
        &[
            ("created", serde_json::json!(created(0) - 1)),
            ("data.object.payment_intent", serde_json::json!("pi_1")),
            ("data.object.amount_refunded", serde_json::json!(300)),
        ],
    );
    assert_eq!(send(&wrong, &total).await["status"], "applied");
    assert_eq!(fixed.balance("acct_1", "USD").await, 700);
    let (status, answer) = replay(&fixed, "evt_r1").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["replayed_as"]["status"], "rejected", "{answer}");
    let held = fixed.event("pay", "refund:re_1").await;
    assert!(
        held["reason"].as_str().unwrap().contains("running total"),
        "{held}"
    );
    // Live as well: the refund's next event after the fix changes nothing.
    let updated = send(&fixed, &refund_updated("evt_r1u", 1, "re_1", 300)).await;
    assert_eq!(updated["duplicate"], true, "{updated}");
    let other = stripe_refund("evt_r2", "re_2", "pi_1", 100);
    let other = send(&fixed, &other).await;
    assert_eq!(other["status"], "rejected", "{other}");
    assert_eq!(fixed.balance("acct_1", "USD").await, 700);
    fixed.assert_invariants().await;
}

/// An event stored before headers were kept (Standard Webhooks' id is its
/// `webhook-id` header) reads as `unreadable:` now: never re-keyed, so it
/// stays in the held queue as it was.
async fn an_event_stored_without_its_headers_is_not_re_keyed(backend: Backend) {
    let (wrong, fixed) = crate::replay::before_and_after(backend).await;
    let answer = wrong
        .send_to("shop", &credit("evt_old", "acct_1", 500))
        .await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    fixed
        .execute_sql(
            "update intents set signature_headers = null, signed_event_id = null \
             where event_id = 'evt_old'",
        )
        .await
        .unwrap();
    let (status, refused) = crate::replay::replay_api(&fixed, "evt_old").await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("not replayed"),
        "{refused}"
    );
    let original = fixed.event("shop", "evt_old").await;
    assert_eq!(original["status"], "rejected");
    assert_eq!(original["replayed_into"], Value::Null);
    let events = json_with_status(fixed.admin_get("/admin/api/events").await, StatusCode::OK).await;
    assert_eq!(events["events"].as_array().unwrap().len(), 1, "{events}");
    assert_eq!(fixed.balance("acct_1", "USD").await, 0);
}

both_backends!(
    a_refund_a_running_total_counted_is_not_debited_again,
    an_event_stored_without_its_headers_is_not_re_keyed,
    an_ignored_refund_replays_under_its_refund_key_once,
    a_refund_stored_under_its_key_already_makes_the_replay_a_duplicate,
    one_refund_replayed_at_once_from_two_instances_debits_once,
    a_replay_racing_the_refunds_next_event_debits_once,
);
