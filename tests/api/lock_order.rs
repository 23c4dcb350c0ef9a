//! Lock order across endpoints of one scope. A credit at `stripe` that
//! releases a refund `stripe-b` recorded takes stripe-b's guard too; taken
//! after its own balance row, that formed a cycle with any posting at
//! stripe-b on the account (its guard, then the balance): a deadlock, a 503.
//! The credit now takes every guard it may need, in name order, before any
//! balance row. Forced here with a trigger that pauses stripe-b's posting
//! while it holds its guard (PostgreSQL: SQLite runs one writer at a time, so
//! it cannot interleave them).

use serde_json::Value;

use crate::fixtures::{signed, stripe_payment, stripe_refund};
use crate::helpers::{Backend, Options, STRIPE_SECRET, TestApp};
use crate::pause::{PAUSE, Pause};

const PAYMENT: &str = "pi_3QWpG2EbX6tfNkNn0jL1cM7d";
const B_SECRET: &str = "whsec_stripe_b_secret";
const SOURCES: &str = r#"
[[sources]]
name = "stripe-b"
kind = "stripe"
secrets = ["whsec_stripe_b_secret"]
"#;

async fn post(app: &TestApp, source: &str, body: &Value) -> (u16, String) {
    let secret = if source == "stripe" {
        STRIPE_SECRET
    } else {
        B_SECRET
    };
    let id = body["id"].as_str().unwrap();
    let r = app
        .post_signed(source, &signed("stripe", secret, body, id))
        .await;
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Pauses stripe-b's credit of pi_other2 at settle's lock_payment: after it
/// took guard(stripe-b, acct_1), before it touches the balance.
const PAUSE_B: &str = "
create trigger pause_b before update on payments
for each row when (new.payment_ref = 'pi_other2') execute function pause();";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credit_releasing_another_endpoints_refund_does_not_deadlock() {
    let Some(backend) = Backend::postgres_or_skip("lock_order") else {
        return;
    };
    let options = || Options {
        extra_sources: SOURCES,
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options()).await;
    // stripe-b has a guard on acct_1, and a refund of PAYMENT waits unmatched there.
    assert_eq!(
        post(
            &app,
            "stripe-b",
            &stripe_payment("evt_o1", "pi_other1", 5000)
        )
        .await
        .0,
        200
    );
    let (s, b) = post(
        &app,
        "stripe-b",
        &stripe_refund("evt_r1", "re_1", PAYMENT, 300),
    )
    .await;
    assert!(b.contains("unmatched"), "{s} {b}");
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_B).await.unwrap();
    let mut pause = Pause::hold(&app).await;
    // stripe-b's credit pauses holding its guard; then the credit at stripe
    // that releases the refund runs at a second instance (within one, it
    // would wait in the group writer's queue, not at a lock), and the pause
    // ends once it waits.
    let second = app.another_instance_with(&options()).await;
    let (other, crediting) = (
        stripe_payment("evt_o2", "pi_other2", 777),
        stripe_payment("evt_pay", PAYMENT, 1000),
    );
    let t2 = post(&app, "stripe-b", &other);
    let t1 = async {
        pause.until_waiting_on("advisory").await;
        pause
            .release_once_blocked(post(&second, "stripe", &crediting))
            .await
    };
    let (r2, r1) = tokio::join!(t2, t1);
    assert_eq!(
        (r1.0, r2.0),
        (200, 200),
        "a deadlock answered one of them 5xx: {r1:?} {r2:?}"
    );
    assert!(r1.1.contains(r#""released":1"#), "{r1:?}");
    app.execute_sql("drop trigger pause_b on payments")
        .await
        .unwrap();
    assert_eq!(app.balance("acct_1", "USD").await, 5000 + 777 + 1000 - 300);
    app.assert_invariants().await;
}
