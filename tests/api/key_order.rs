//! Two groups on one PostgreSQL database naming the same accounts in
//! opposite orders (two instances' group writers): the second waits for
//! the first at its write keys (`store::WriteKeys`), taken before any row,
//! so the two never hold one row each and wait for the other's.
//!
//! Forced: the first group is paused at its first balance write, holding
//! its keys and some rows; the second must then be waiting on a key, not
//! on a row. Each group's events are payment credits, which are decided
//! one by one in arrival order (a run of plain postings locks its rows in
//! key order anyway). Without the keys, the second group locks account y's
//! rows, then waits for x's guard, which the first holds; released, the
//! first wants y's: a deadlock, ended by PostgreSQL aborting one.
//!
//! PostgreSQL only: SQLite runs one write transaction at a time.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use hookledger::domain::{
    AccountId, Currency, Direction, EventId, Link, Movement, NormalisedEvent, PositiveAmount,
    Posting,
};
use hookledger::ingest::commit_together;
use hookledger::receive::sha256_hex;
use hookledger::source::Source;
use hookledger::store::WriteKeys;
use sqlx::{Connection, PgConnection};

use crate::helpers::{Backend, Options, TestApp, credit};
use crate::pause::{PAUSE, Pause};

/// Pauses whoever writes account x's balance first.
const PAUSE_X_BALANCE: &str = "
create trigger pause_x before update on balances
for each row when (new.account_id = 'acct_x') execute function pause();";

fn payment_credit(event_id: &str, account: &str, payment: &str, amount: i64) -> NormalisedEvent {
    NormalisedEvent {
        event_id: EventId::parse(event_id).unwrap(),
        event_type: "payment.succeeded".to_owned(),
        object_id: Some(payment.to_owned()),
        occurred_at: Some(Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).unwrap()),
        movement: Movement::Post(Posting {
            direction: Direction::Credit,
            account: AccountId::parse(account).unwrap(),
            currency: Currency::parse("USD").unwrap(),
            amount: PositiveAmount::new(amount).unwrap(),
            sequence: 1,
            explicit_sequence: false,
            link: Link::Pays(payment.to_owned()),
        }),
        payload: None,
    }
}

fn demo(app: &TestApp) -> Arc<Source> {
    let text = crate::app_config::base_config(&app.database_url, &Options::default());
    let config = hookledger::config::from_toml(&text, &|_| None).expect("the test config loads");
    let demo = config
        .sources
        .into_iter()
        .find(|source| source.name.as_str() == "demo")
        .expect("the demo source");
    Arc::new(demo)
}

/// Commits `events` as one group, each its own delivery, in order: each
/// one's status.
async fn group(
    store: hookledger::store::Store,
    source: Arc<Source>,
    events: Vec<NormalisedEvent>,
) -> Vec<String> {
    let bodies: Vec<Vec<u8>> = events
        .iter()
        .map(|event| format!("{{\"id\":\"{}\"}}", event.event_id.as_str()).into_bytes())
        .collect();
    let digests: Vec<String> = bodies.iter().map(|body| sha256_hex(body)).collect();
    let deliveries: Vec<_> = events
        .into_iter()
        .zip(bodies.iter().zip(&digests))
        .map(|(event, (body, digest))| {
            let raw = crate::direct::webhook(body, digest, Utc::now());
            (source.clone(), vec![event], raw)
        })
        .collect();
    commit_together(&store, &deliveries)
        .await
        .into_iter()
        .map(|answer| answer.unwrap()[0].status.as_str().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_groups_in_opposite_orders_wait_at_their_keys() {
    let Some(backend) =
        Backend::postgres_or_skip("key_order::two_groups_in_opposite_orders_wait_at_their_keys")
    else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    // Both balance rows exist, so each group's writes to them are updates.
    app.send_ok(&credit("pre_x", "acct_x", 1)).await;
    app.send_ok(&credit("pre_y", "acct_y", 1)).await;
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_X_BALANCE).await.unwrap();
    let source = demo(&app);
    let mut pause = Pause::hold(&app).await;

    let first = tokio::spawn(group(
        app.store().clone(),
        source.clone(),
        vec![
            payment_credit("g1_x", "acct_x", "pay_1", 10),
            payment_credit("g1_y", "acct_y", "pay_2", 20),
        ],
    ));
    pause.until_waiting_on("advisory").await;
    let second = tokio::spawn(group(
        app.store().clone(),
        source,
        vec![
            payment_credit("g2_y", "acct_y", "pay_3", 300),
            payment_credit("g2_x", "acct_x", "pay_4", 400),
        ],
    ));
    // The second waits at a key of the first's, having locked no row.
    pause.until_waiting("key", 1).await;
    assert_eq!(
        pause.waiting_on("transactionid").await,
        0,
        "the second group waits for a row the first holds"
    );
    pause.release().await;

    assert_eq!(first.await.unwrap(), ["applied", "applied"]);
    assert_eq!(second.await.unwrap(), ["applied", "applied"]);
    assert_eq!(app.balance("acct_x", "USD").await, 411);
    assert_eq!(app.balance("acct_y", "USD").await, 321);
    app.assert_invariants().await;
    assert_eq!(crate::postgres::deadlocks(&app).await, 0);
}

/// The keys of one statement are taken in digest order, one at a time:
/// with the middle one held elsewhere, the first is granted, the middle
/// waited for, and the last not yet asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_are_taken_in_order_one_at_a_time() {
    let Some(backend) =
        Backend::postgres_or_skip("key_order::keys_are_taken_in_order_one_at_a_time")
    else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let accounts = ["k_a", "k_b", "k_c", "k_d", "k_e"];
    let mut ids: Vec<i64> = accounts
        .iter()
        .map(|a| WriteKeys::account_lock_id(a))
        .collect();
    ids.sort_unstable();
    let middle = ids[2];
    let mut holder = PgConnection::connect(&app.database_url).await.unwrap();
    sqlx::query("select pg_advisory_lock($1)")
        .bind(middle)
        .execute(&mut holder)
        .await
        .unwrap();
    let store = app.store().clone();
    let taking = tokio::spawn(async move {
        let mut tx = store.begin().await.unwrap();
        let mut keys = WriteKeys::new();
        for account in accounts {
            keys.account(account);
        }
        tx.lock_keys(keys).await.unwrap();
        tx.commit().await.unwrap();
    });
    let mut observer = PgConnection::connect(&app.database_url).await.unwrap();
    let mut seen = (Vec::new(), Vec::new());
    for _ in 0..200 {
        // (granted, waiting) keys of the backends other than the holder.
        let rows: Vec<(i64, bool)> = sqlx::query_as(
            "select (l.classid::int8 << 32) | l.objid::int8, l.granted
             from pg_locks l join pg_stat_activity a on a.pid = l.pid
             where a.datname = current_database() and l.locktype = 'advisory'
                 and l.objsubid = 1 and l.pid <> $1",
        )
        .bind(holder_pid(&mut holder).await)
        .fetch_all(&mut observer)
        .await
        .unwrap();
        let granted: Vec<i64> = rows.iter().filter(|r| r.1).map(|r| r.0).collect();
        let waiting: Vec<i64> = rows.iter().filter(|r| !r.1).map(|r| r.0).collect();
        seen = (granted, waiting);
        if !seen.1.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (mut granted, waiting) = seen;
    granted.sort_unstable();
    assert_eq!(granted, ids[..2], "the keys before the held one, granted");
    assert_eq!(
        waiting,
        [middle],
        "waiting for the held one, the rest not asked"
    );
    sqlx::query("select pg_advisory_unlock($1)")
        .bind(middle)
        .execute(&mut holder)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), taking)
        .await
        .unwrap()
        .unwrap();
}

async fn holder_pid(holder: &mut PgConnection) -> i32 {
    sqlx::query_scalar("select pg_backend_pid()")
        .fetch_one(holder)
        .await
        .unwrap()
}
