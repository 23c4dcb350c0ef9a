//! Merging scopes at start-up keeps "one credit per payment". A source that
//! had its own scope credited a payment; a refund of it reached another
//! endpoint, in the kind's scope, and waits there (its payment row there is
//! only a lock). Merged into the kind's scope, the credit's row must replace
//! that lock: left behind, a second credit of the payment would apply in the
//! new scope and the refund would wait for ever.

use std::sync::Arc;

use hookledger::clock::ManualClock;
use hookledger::config::from_toml;
use hookledger::startup::Application;
use serde_json::{Value, json};

use crate::fixtures::{deliver_ok, signed, stripe_event, stripe_refund};
use crate::helpers::{Backend, Options, STRIPE_SECRET, TestApp, base_config, now};

const A_SECRET: &str = "whsec_stripe_a_secret";

/// stripe-a in its own scope (v1), then in the kind's (v2), crediting
/// charge.succeeded too so a second credit of the payment can be tried.
const V1: &str = r#"
[[sources]]
name = "stripe-a"
kind = "stripe"
secrets = ["whsec_stripe_a_secret"]
scope = "a-old"
"#;
const V2: &str = r#"
[[sources]]
name = "stripe-a"
kind = "stripe"
secrets = ["whsec_stripe_a_secret"]
credit_types = ["payment_intent.succeeded", "charge.succeeded"]
"#;

/// Runs config v1 on the database: the credit at stripe-a, the refund at
/// stripe.
async fn run_v1(url: String) {
    let text = base_config(
        &url,
        &Options {
            extra_sources: V1,
            ..Options::default()
        },
    );
    crate::helpers::keep_config_copy(&text);
    let config = from_toml(&text, &|_| None).unwrap();
    let app = Application::build(config, Arc::new(ManualClock::new(now())))
        .await
        .unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    let store = app.store().clone();
    tokio::spawn(app.run_until_stopped());
    let client = hookledger::tls::client();
    let post = |source: &'static str, secret: &'static str, body: Value| {
        let (client, address) = (client.clone(), address.clone());
        async move {
            let request = signed("stripe", secret, &body, body["id"].as_str().unwrap());
            let mut post = client
                .post(format!("{address}/webhooks/{source}"))
                .body(request.body.clone());
            for (name, value) in &request.headers {
                post = post.header(*name, value);
            }
            post.send().await.unwrap().text().await.unwrap()
        }
    };
    let paid = stripe_event(
        "payment_intent.succeeded",
        "evt_pay",
        &[
            ("data.object.id", json!("pi_1")),
            ("data.object.amount", json!(1000)),
            ("data.object.amount_received", json!(1000)),
        ],
    );
    let credited = post("stripe-a", A_SECRET, paid).await;
    assert!(credited.contains(r#""status":"applied""#), "{credited}");
    let waiting = post(
        "stripe",
        STRIPE_SECRET,
        stripe_refund("evt_r1", "re_1", "pi_1", 300),
    )
    .await;
    assert!(waiting.contains(r#""status":"unmatched""#), "{waiting}");
    store.close().await;
}

async fn merging_scopes_keeps_one_credit_per_payment(backend: Backend) {
    let options = Options {
        extra_sources: V2,
        ..Options::default()
    };
    let app = TestApp::spawn_prepared(backend, options, run_v1).await;
    let paid = app.event("stripe-a", "evt_pay").await;
    assert_eq!(
        (paid["scope"].as_str(), paid["status"].as_str()),
        (Some("stripe"), Some("applied"))
    );
    // The refund that waited in the kind's scope met its payment at start-up.
    assert_eq!(
        app.event("stripe", "refund:re_1").await["status"],
        "applied"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000 - 300);
    // A new refund matches at once; a second credit of the payment is not
    // applied.
    let request = signed(
        "stripe",
        A_SECRET,
        &stripe_refund("evt_r2", "re_2", "pi_1", 200),
        "evt_r2",
    );
    assert_eq!(
        deliver_ok(&app, "stripe-a", &request).await["status"],
        "applied"
    );
    let charge = stripe_event(
        "charge.succeeded",
        "evt_ch",
        &[("data.object.payment_intent", json!("pi_1"))],
    );
    let request = signed("stripe", A_SECRET, &charge, "evt_ch");
    assert_eq!(
        deliver_ok(&app, "stripe-a", &request).await["status"],
        "duplicate_effect"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000 - 300 - 200);
    app.assert_invariants().await;
}

crate::both_backends!(merging_scopes_keeps_one_credit_per_payment);
