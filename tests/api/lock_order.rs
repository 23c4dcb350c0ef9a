//! Lock order across endpoints of one scope. A credit at `stripe` that
//! releases a refund `stripe-b` recorded takes stripe-b's guard too; taken
//! after its own balance row, that formed a cycle with any posting at
//! stripe-b on the account (its guard, then the balance): a deadlock, a 503.
//! The credit now takes every guard it may need, in name order, before any
//! balance row. Forced here with a trigger that pauses stripe-b's posting
//! while it holds its guard (PostgreSQL: SQLite runs one writer at a time, so
//! it cannot interleave them).

use std::time::Duration;

use serde_json::Value;
use sqlx::{Connection, PgConnection};

use crate::fixtures::{signed, stripe_payment, stripe_refund};
use crate::helpers::{Backend, Options, STRIPE_SECRET, TestApp};

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

const PAUSE: &str = "
create function pause() returns trigger language plpgsql as $$
begin
    perform pg_advisory_xact_lock_shared(4242);
    return new;
end $$;";
/// Pauses stripe-b's credit of pi_other2 at settle's lock_payment: after it
/// took guard(stripe-b, acct_1), before it touches the balance.
const PAUSE_B: &str = "
create trigger pause_b before update on payments
for each row when (new.payment_ref = 'pi_other2') execute function pause();";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_credit_releasing_another_endpoints_refund_does_not_deadlock() {
    let Some(backend) = Backend::postgres_or_skip("lock_order") else {
        return;
    };
    let app = TestApp::spawn_with(
        backend,
        Options {
            extra_sources: SOURCES,
            ..Options::default()
        },
    )
    .await;
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
    let mut holder = PgConnection::connect(&app.database_url).await.unwrap();
    let mut observer = PgConnection::connect(&app.database_url).await.unwrap();
    sqlx::query("select pg_advisory_lock(4242)")
        .execute(&mut holder)
        .await
        .unwrap();

    let body_b = stripe_payment("evt_o2", "pi_other2", 777);
    let body_a = stripe_payment("evt_pay", PAYMENT, 1000);
    let t2 = post(&app, "stripe-b", &body_b);
    let t1 = async {
        // Only once T2 is paused (holding guard(stripe-b, acct_1)).
        for _ in 0..200 {
            let n: i64 = sqlx::query_scalar(
                "select count(*) from pg_locks where locktype='advisory' and not granted",
            )
            .fetch_one(&mut observer)
            .await
            .unwrap();
            if n > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        post(&app, "stripe", &body_a).await
    };
    let unpause = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        for _ in 0..200 {
            let n: i64 = sqlx::query_scalar(
                "select count(*) from pg_locks where locktype='transactionid' and not granted",
            )
            .fetch_one(&mut holder)
            .await
            .unwrap();
            if n > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        sqlx::query("select pg_advisory_unlock(4242)")
            .execute(&mut holder)
            .await
            .unwrap();
    };
    let (r2, r1, ()) = tokio::join!(t2, t1, unpause);
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
