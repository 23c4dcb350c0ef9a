//! One credit per provider payment: an event sent to two endpoints of one
//! provider applies once (the intent key's scope), a payment reported by
//! several event types credits once (`duplicate_effect`), and neither can
//! be got round by racing, by an operator, or by an older database.

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::browser::{login, page};
use crate::fixtures::{deliver_ok, edited, signed};
use crate::helpers::{Backend, Options, STRIPE_SECRET, TestApp, json_with_status};

const PAYMENT: &str = "pi_3QWpG2EbX6tfNkNn0jL1cM7d";
const NEW_SECRET: &str = "whsec_stripe_new_endpoint_secret";

/// The endpoint a team is moving to, with its own secret, and a source
/// whose `credit_types` name every Stripe event that reports a payment.
const SOURCES: &str = r#"
[[sources]]
name = "stripe-new"
kind = "stripe"
secrets = ["whsec_stripe_new_endpoint_secret"]

[[sources]]
name = "stripe-any"
kind = "stripe"
secrets = ["whsec_stripe_any_secret"]
scope = "stripe-any"
credit_types = ["payment_intent.succeeded", "charge.succeeded", "checkout.session.completed"]

[[sources]]
name = "stripe-hold"
kind = "stripe"
secrets = ["whsec_stripe_hold_secret"]
scope = "stripe-hold"
on_stale = "hold"
credit_types = ["payment_intent.succeeded", "charge.succeeded"]
"#;

async fn spawn(backend: Backend) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options {
            extra_sources: SOURCES,
            ..Options::default()
        },
    )
    .await
}

fn secret_of(source: &str) -> &'static str {
    match source {
        "stripe" => STRIPE_SECRET,
        "stripe-new" => NEW_SECRET,
        "stripe-any" => "whsec_stripe_any_secret",
        "stripe-hold" => "whsec_stripe_hold_secret",
        other => panic!("no secret for {other}"),
    }
}

/// A Stripe event of `name` (fixture) with its id, created `created`,
/// paying `payment`.
fn event(name: &str, event_id: &str, payment: &str, created: i64) -> Value {
    let payment_path = match name {
        "payment_intent.succeeded" => "data.object.id",
        _ => "data.object.payment_intent",
    };
    edited(
        "stripe",
        name,
        &[
            ("id", json!(event_id)),
            ("created", json!(created)),
            (payment_path, json!(payment)),
        ],
    )
}

async fn send(app: &TestApp, source: &str, body: &Value) -> Value {
    let event_id = body["id"].as_str().unwrap();
    deliver_ok(
        app,
        source,
        &signed("stripe", secret_of(source), body, event_id),
    )
    .await
}

const T: i64 = 1_780_315_200;

async fn one_event_sent_to_two_endpoints_applies_once(backend: Backend) {
    let app = spawn(backend).await;
    let paid = event("payment_intent.succeeded", "evt_pay", PAYMENT, T);
    let first = send(&app, "stripe", &paid).await;
    assert_eq!(
        (first["status"].as_str(), first["duplicate"].as_bool()),
        (Some("applied"), Some(false))
    );
    // Stripe sends the same event, same id, to the second endpoint, signed
    // with that endpoint's secret.
    let second = send(&app, "stripe-new", &paid).await;
    assert_eq!(
        (second["status"].as_str(), second["duplicate"].as_bool()),
        (Some("applied"), Some(true))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    let stored = app.event("stripe", "evt_pay").await;
    assert_eq!(
        (stored["scope"].as_str(), stored["deliveries"].as_i64()),
        (Some("stripe"), Some(2))
    );
    // Its refund, arriving only at the new endpoint, finds the payment.
    let refund = edited(
        "stripe",
        "refund.created",
        &[
            ("id", json!("evt_refund")),
            ("data.object.id", json!("re_1")),
            ("data.object.payment_intent", json!(PAYMENT)),
            ("data.object.amount", json!(400)),
        ],
    );
    assert_eq!(send(&app, "stripe-new", &refund).await["status"], "applied");
    assert_eq!(
        send(&app, "stripe", &refund).await["duplicate"],
        true,
        "and is one refund for both endpoints"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 600);
    app.assert_invariants().await;
}

async fn a_payment_credits_once_whichever_types_report_it(backend: Backend) {
    let app = spawn(backend).await;
    let charge = send(
        &app,
        "stripe-any",
        &event("charge.succeeded", "evt_charge", PAYMENT, T),
    )
    .await;
    assert_eq!(charge["status"], "applied");
    for (name, id) in [
        ("payment_intent.succeeded", "evt_pi"),
        ("checkout.session.completed", "evt_session"),
    ] {
        let again = send(&app, "stripe-any", &event(name, id, PAYMENT, T + 1)).await;
        assert_eq!(
            (again["status"].as_str(), again["duplicate"].as_bool()),
            (Some("duplicate_effect"), Some(false)),
            "{name}"
        );
        // A redelivery of it is a plain duplicate.
        let redelivered = send(&app, "stripe-any", &event(name, id, PAYMENT, T + 1)).await;
        assert_eq!(redelivered["duplicate"], true, "{name}");
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    assert_eq!(app.entries("acct_1").await.len(), 1);

    let stored = app.event("stripe-any", "evt_pi").await;
    assert_eq!(
        (
            stored["reason"].as_str(),
            stored["credited_by_event"].as_str(),
            stored["payment_ref"].as_str(),
        ),
        (
            Some(
                format!(
                    "payment {PAYMENT} was credited by event evt_charge (source stripe-any); \
                     a payment credits once"
                )
                .as_str()
            ),
            Some("evt_charge"),
            Some(PAYMENT)
        )
    );
    let cookie = login(&app).await;
    let html = page(&app, "/admin/events/stripe-any/evt_pi", &cookie).await;
    assert!(
        html.contains(
            r#"<a href="/admin/event?source=stripe-any&#38;id=evt_charge" class="credited-by id">evt_charge</a>"#
        ),
        "the event page links the event that credited the payment: {html}"
    );
    let listed = json_with_status(
        app.admin_get("/admin/api/events?status=duplicate_effect")
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed["events"].as_array().map(Vec::len), Some(2));
    app.assert_invariants().await;
    // Behind the statement that decides, the ledger's own key: a second
    // entry crediting the payment whole cannot be written at all.
    let second = app
        .execute_sql(
            "insert into ledger_entries (intent_id, source, event_id, account_id, currency,
                amount_minor, balance_after_minor, operator_applied, created_at, credits_payment,
                account_seq)
             select i.intent_id, i.source, i.event_id, 'acct_1', 'USD', 1000, 2000, false,
                i.first_received_at, p.payment_id, 99
             from intents i join payments p on p.scope = i.scope and p.payment_ref = i.payment_ref
             where i.event_id = 'evt_pi'",
        )
        .await
        .expect_err("a second whole credit of one payment is refused");
    assert!(
        second.to_string().to_lowercase().contains("unique"),
        "{second}"
    );
}

async fn concurrent_credits_of_one_payment_apply_once(backend: Backend) {
    let app = spawn(backend).await;
    let bodies: Vec<Value> = (0..16)
        .map(|i| {
            let name = if i % 2 == 0 {
                "charge.succeeded"
            } else {
                "payment_intent.succeeded"
            };
            event(name, &format!("evt_{i}"), PAYMENT, T + i)
        })
        .collect();
    let answers = join_all(bodies.iter().map(|b| send(&app, "stripe-any", b))).await;
    let applied = answers.iter().filter(|a| a["status"] == "applied").count();
    let duplicates = answers
        .iter()
        .filter(|a| a["status"] == "duplicate_effect")
        .count();
    assert_eq!((applied, duplicates), (1, 15), "{answers:?}");
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

async fn a_held_credit_of_a_payment_credited_since_stays_held(backend: Backend) {
    let app = spawn(backend).await;
    // Another payment moves the account's guard past T.
    let other = event("payment_intent.succeeded", "evt_other", "pi_other", T + 10);
    assert_eq!(send(&app, "stripe-hold", &other).await["status"], "applied");
    let late = event("payment_intent.succeeded", "evt_late", PAYMENT, T);
    assert_eq!(send(&app, "stripe-hold", &late).await["status"], "stale");
    // The payment is credited meanwhile, through its charge.
    let charge = event("charge.succeeded", "evt_charge", PAYMENT, T + 20);
    assert_eq!(
        send(&app, "stripe-hold", &charge).await["status"],
        "applied"
    );
    let refused = app
        .admin_post(
            "/admin/api/events/stripe-hold/evt_late/apply",
            r#"{"note": "looks paid"}"#,
        )
        .await;
    assert_eq!(refused.status(), StatusCode::CONFLICT);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("was credited by event evt_charge")),
        "{body}"
    );
    assert_eq!(
        app.event("stripe-hold", "evt_late").await["status"],
        "stale"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 2000);
    app.assert_invariants().await;
}

async fn an_explicit_scope_keeps_a_source_apart(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Options {
            extra_sources: r#"
[[sources]]
name = "stripe-new"
kind = "stripe"
secrets = ["whsec_stripe_new_endpoint_secret"]
scope = "second-account"
"#,
            ..Options::default()
        },
    )
    .await;
    // Two Stripe accounts a team keeps apart on purpose: the same id in
    // each is each account's own event.
    let paid = event("payment_intent.succeeded", "evt_pay", PAYMENT, T);
    assert_eq!(send(&app, "stripe", &paid).await["status"], "applied");
    let other = send(&app, "stripe-new", &paid).await;
    assert_eq!(
        (other["status"].as_str(), other["duplicate"].as_bool()),
        (Some("applied"), Some(false))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 2000);
    app.assert_invariants().await;
}

both_backends!(
    one_event_sent_to_two_endpoints_applies_once,
    a_payment_credits_once_whichever_types_report_it,
    concurrent_credits_of_one_payment_apply_once,
    a_held_credit_of_a_payment_credited_since_stays_held,
    an_explicit_scope_keeps_a_source_apart,
);
