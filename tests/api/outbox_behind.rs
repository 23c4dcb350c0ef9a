//! An ordered destination's rows that wait behind a stuck message of their
//! account leave the claim's way (`behind`, flagged by the relay's tidy)
//! and come back when that message is delivered or replayed, at the next
//! tidy when a clear was missed, and at once when the destination is no
//! longer ordered. Run on a store of the test's own,
//! for a destination the app does not have, so that no relay of the app's
//! claims the rows.

use chrono::Utc;
use hookledger::store::{Attempted, OutboxRow, Replay, Store, Tidied};

use crate::helpers::*;
use crate::outbox::{http_destination, side_store_routing};

pub(crate) const DESTINATION: &str = "ordered";

/// A committed posting of `account` numbered `seq`, with its message.
pub(crate) async fn post(store: &Store, account: &str, seq: i64) {
    let event_id = format!("{account}_{seq}");
    let tx = crate::outbox_postgres::posting_of(store, &event_id, account, Some(seq)).await;
    tx.commit().await.unwrap();
}

pub(crate) async fn tidy(store: &Store, ordered: bool) -> Tidied {
    let next_ms = Utc::now().timestamp_millis() + 10_000;
    store
        .tidy_outbox(DESTINATION, ordered, next_ms)
        .await
        .unwrap()
}

/// A dead `event.held` message of `account`: unnumbered, as every
/// `event.*` message is (SQLite sorts its missing number first).
async fn held_message(app: &TestApp, account: &str) {
    let sql = format!(
        "insert into outbox (destination, message_id, message_type, intent_id, source, \
             event_id, event_status, account_id, currency, posted_at, operator_applied, \
             state, attempts, next_attempt_ms, created_at) \
         values ('{DESTINATION}', 'held-{account}', 'event.held', 0, 'demo', 'held', \
             'stale', '{account}', 'USD', '2026-06-01T12:00:00Z', false, 'dead', 1, 0, \
             '2026-06-01T12:00:00Z')"
    );
    let sql = sqlx::AssertSqlSafe(sql);
    if app.database_url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
    } else {
        let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
}

/// What one ordered claim takes, as `account_seq` names.
pub(crate) async fn claim(store: &Store) -> Vec<OutboxRow> {
    claim_as(store, "relay").await
}

/// The same, for the claim named `name`.
async fn claim_as(store: &Store, name: &str) -> Vec<OutboxRow> {
    let now = Utc::now().timestamp_millis();
    store
        .claim_outbox(DESTINATION, true, name, now, now + 60_000, 64)
        .await
        .unwrap()
}

/// `account_seq`, or `held` for the unnumbered message.
pub(crate) fn names(rows: &[OutboxRow]) -> Vec<String> {
    rows.iter()
        .map(|row| {
            let account = row.account_id.as_deref().unwrap();
            match row.account_seq {
                Some(seq) => format!("{account}_{seq}"),
                None => format!("{account}_held"),
            }
        })
        .collect()
}

/// Records each row's outcome: delivered, or `dead` (a failure on its last
/// attempt); `ordered` as the destination's relay would say.
pub(crate) async fn record(store: &Store, rows: &[OutboxRow], dead: &[&str], ordered: bool) {
    record_failing(store, rows, dead, 1, ordered).await
}

/// Records every row of the claim named `name` delivered; how many it
/// marked.
async fn record_as(store: &Store, name: &str, rows: &[OutboxRow]) -> u64 {
    let outcomes: Vec<(&OutboxRow, Attempted)> =
        rows.iter().map(|row| (row, Attempted::Delivered)).collect();
    let recorded = store.record_attempts(name, &outcomes, true, Utc::now().timestamp_millis());
    recorded.await.unwrap().delivered()
}

/// The same, a failure dead after `max_attempts`, else retried in an hour.
pub(crate) async fn record_failing(
    store: &Store,
    rows: &[OutboxRow],
    failed: &[&str],
    max_attempts: i64,
    ordered: bool,
) {
    let all = names(rows);
    let outcomes: Vec<(&OutboxRow, Attempted)> = rows
        .iter()
        .zip(&all)
        .map(|(row, name)| {
            let outcome = if failed.contains(&name.as_str()) {
                Attempted::Failed {
                    error: "answered HTTP 500".into(),
                    retry_in: std::time::Duration::from_secs(3_600),
                    max_attempts,
                }
            } else {
                Attempted::Delivered
            };
            (row, outcome)
        })
        .collect();
    store
        .record_attempts("relay", &outcomes, ordered, Utc::now().timestamp_millis())
        .await
        .unwrap();
}

/// A store of `app`'s database that routes postings to the ordered
/// [`DESTINATION`] (nothing listens at its URL: the tests claim and record
/// by hand).
pub(crate) async fn ordered_store(app: &TestApp) -> Store {
    let ordered = http_destination(
        DESTINATION,
        "http://127.0.0.1:9",
        "ordered_by_account = true",
    );
    side_store_routing(app, &ordered).await.0
}

both_backends!(
    a_blocked_backlog_leaves_the_claim_and_comes_back_in_order,
    a_record_tried_again_after_a_replay_leaves_the_replay_to_be_sent,
);

/// A relay's record that committed but reported an error is tried again
/// (`Relay::record`); if an operator replayed the delivered message in
/// between, the second try must leave the replay to be sent, and a third,
/// later still, must leave the replay's own claim alone while its resend
/// is in flight.
async fn a_record_tried_again_after_a_replay_leaves_the_replay_to_be_sent(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let store = ordered_store(&app).await;
    post(&store, "a", 1).await;
    let first = claim_as(&store, "relay/1").await;
    assert_eq!(names(&first), ["a_1"]);
    assert_eq!(record_as(&store, "relay/1", &first).await, 1);
    let replay = Replay {
        destination: DESTINATION.to_owned(),
        state: "delivered".to_owned(),
        since: None,
        account_id: None,
    };
    assert_eq!(store.replay_outbox(&replay).await.unwrap(), 1);
    // The same outcome recorded a second time, as the relay's retry does.
    assert_eq!(record_as(&store, "relay/1", &first).await, 0);
    let again = claim_as(&store, "relay/2").await;
    assert_eq!(names(&again), ["a_1"], "the replay is still due");
    assert_eq!(again[0].attempts, 1, "{again:?}");
    // The first claim's retry, once more, while the replay is in flight.
    assert_eq!(record_as(&store, "relay/1", &first).await, 0);
    let messages = store.outbox_messages(DESTINATION, 0, 10).await.unwrap();
    assert_eq!(messages[0].state, "pending", "the resend is in flight");
    assert_eq!(record_as(&store, "relay/2", &again).await, 1);
    assert!(claim(&store).await.is_empty());
}

async fn a_blocked_backlog_leaves_the_claim_and_comes_back_in_order(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let store = ordered_store(&app).await;
    for seq in 1..=4 {
        post(&store, "a", seq).await;
    }
    post(&store, "b", 1).await;
    // An account's unnumbered message never stands in for its next posting.
    held_message(&app, "a").await;

    // a_1 dies: a_2..a_4 wait behind it, b flows.
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1", "b_1"]);
    record(&store, &rows, &["a_1"], true).await;
    let tidied = tidy(&store, true).await;
    assert_eq!(
        tidied,
        Tidied {
            cleared: 0,
            flagged: 3
        }
    );
    assert_eq!(
        tidy(&store, true).await,
        Tidied::default(),
        "a second tidy has nothing to do"
    );
    post(&store, "b", 2).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["b_2"]);
    record(&store, &rows, &[], true).await;
    assert!(claim(&store).await.is_empty());

    // The dead letter replayed: a drains in order, each delivery clearing
    // the next.
    let replay = Replay {
        destination: DESTINATION.into(),
        state: "dead".into(),
        since: None,
        account_id: None,
    };
    assert_eq!(store.replay_outbox(&replay).await.unwrap(), 2);
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1", "a_held"]);
    // The held message dies again: still undelivered, it must not stand in
    // for a_2 when a_1's delivery clears the next.
    record(&store, &rows, &["a_held"], true).await;
    for seq in 2..=4 {
        let rows = claim(&store).await;
        assert_eq!(names(&rows), [format!("a_{seq}")]);
        record(&store, &rows, &[], true).await;
    }
    assert!(claim(&store).await.is_empty());

    // c_1 fails with a long backoff: c_2 waits. Its retry, due early here,
    // is then recorded delivered as an unordered relay would (a clear
    // missed): the next tidy clears c_2.
    post(&store, "c", 1).await;
    post(&store, "c", 2).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["c_1"]);
    record_failing(&store, &rows, &["c_1"], 25, true).await;
    assert_eq!(tidy(&store, true).await.flagged, 1);
    let due = "update outbox set next_attempt_ms = 0 where event_id = 'c_1'";
    app.execute_sql(due).await.unwrap();
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["c_1"]);
    record(&store, &rows, &[], false).await;
    assert!(claim(&store).await.is_empty(), "c_2 is still flagged");
    assert_eq!(
        tidy(&store, true).await,
        Tidied {
            cleared: 1,
            flagged: 0
        }
    );
    assert_eq!(names(&claim(&store).await), ["c_2"]);

    // The destination no longer ordered: every flag goes at once.
    post(&store, "d", 1).await;
    post(&store, "d", 2).await;
    let rows = claim(&store).await;
    // (c_2 is in flight since the claim above.)
    assert_eq!(names(&rows), ["d_1"]);
    record_failing(&store, &rows, &["d_1"], 25, true).await;
    assert_eq!(tidy(&store, true).await.flagged, 1);
    assert_eq!(
        tidy(&store, false).await,
        Tidied {
            cleared: 1,
            flagged: 0
        }
    );
    let now = Utc::now().timestamp_millis();
    let unordered = store
        .claim_outbox(DESTINATION, false, "relay", now, now + 60_000, 64)
        .await
        .unwrap();
    assert_eq!(names(&unordered), ["d_2"]);
}
