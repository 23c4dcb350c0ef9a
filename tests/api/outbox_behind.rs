//! An ordered destination's rows that wait behind an earlier message of
//! their account leave the claim's way (`behind`, flagged by the relay's
//! tidy) and come back when that message is delivered or replayed, or at
//! the next tidy when a clear was missed. Run on a store of the test's own,
//! for a destination the app does not have, so that no relay of the app's
//! claims the rows.

use chrono::Utc;
use hookledger::store::{
    Attempted, IntentUpsert, NewLedgerEntry, OutboxRow, Replay, Store, Tidied,
};

use crate::helpers::*;
use crate::outbox::http_destination;

const DESTINATION: &str = "ordered";

/// A committed posting of `account` numbered `seq`, with its message.
async fn post(store: &Store, account: &str, seq: i64) {
    let event_id = format!("{account}_{seq}");
    let mut tx = store.begin().await.unwrap();
    let intent = crate::posting_statement::applied_intent(&event_id, account, 100, seq);
    let IntentUpsert::Inserted { intent_id } = tx.insert_intent(&intent).await.unwrap() else {
        panic!("a new event");
    };
    let entry = NewLedgerEntry {
        intent_id,
        credits_payment: None,
        source: "demo",
        event_id: &event_id,
        account_id: account,
        currency: "USD",
        amount_minor: 100,
        balance_after_minor: 100 * seq,
        account_seq: seq,
        object_id: None,
        operator_applied: false,
        created_at: Utc::now(),
    };
    tx.enqueue_posting(&entry).await.unwrap();
    tx.commit().await.unwrap();
}

/// What one ordered claim takes, as `account_seq` names.
async fn claim(store: &Store) -> Vec<OutboxRow> {
    let now = Utc::now().timestamp_millis();
    store
        .claim_outbox(DESTINATION, true, "relay", now, now + 60_000, 64)
        .await
        .unwrap()
}

fn names(rows: &[OutboxRow]) -> Vec<String> {
    rows.iter()
        .map(|row| {
            format!(
                "{}_{}",
                row.account_id.as_deref().unwrap(),
                row.account_seq.unwrap()
            )
        })
        .collect()
}

/// Records each row's outcome: delivered, or `dead` (a failure on its last
/// attempt); `ordered` as the destination's relay would say.
async fn record(store: &Store, rows: &[OutboxRow], dead: &[&str], ordered: bool) {
    let all = names(rows);
    let outcomes: Vec<(&OutboxRow, Attempted)> = rows
        .iter()
        .zip(&all)
        .map(|(row, name)| {
            let outcome = if dead.contains(&name.as_str()) {
                Attempted::Failed {
                    error: "answered HTTP 500".into(),
                    next_attempt_ms: 0,
                    max_attempts: 1,
                }
            } else {
                Attempted::Delivered
            };
            (row, outcome)
        })
        .collect();
    store
        .record_attempts("relay", &outcomes, ordered, Utc::now())
        .await
        .unwrap();
}

both_backends!(a_blocked_backlog_leaves_the_claim_and_comes_back_in_order);

async fn a_blocked_backlog_leaves_the_claim_and_comes_back_in_order(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let text = format!(
        "[admin]\ntoken = \"{ADMIN_TOKEN}\"\n{}",
        http_destination(
            DESTINATION,
            "http://127.0.0.1:9",
            "ordered_by_account = true"
        )
    );
    let config = hookledger::config::from_toml(&text, &|_| None).unwrap();
    let store = crate::postgres::side_store(&app.database_url)
        .await
        .with_routes(hookledger::config::routes(&config.destinations));
    for seq in 1..=4 {
        post(&store, "a", seq).await;
    }
    post(&store, "b", 1).await;

    // a_1 dies: a_2..a_4 wait behind it, b flows.
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1", "b_1"]);
    record(&store, &rows, &["a_1"], true).await;
    let tidied = store.tidy_ordered(DESTINATION).await.unwrap();
    assert_eq!(
        tidied,
        Tidied {
            cleared: 0,
            flagged: 3
        }
    );
    assert_eq!(
        store.tidy_ordered(DESTINATION).await.unwrap(),
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
    assert_eq!(store.replay_outbox(&replay, Utc::now()).await.unwrap(), 1);
    for seq in 1..=4 {
        let rows = claim(&store).await;
        assert_eq!(names(&rows), [format!("a_{seq}")]);
        record(&store, &rows, &[], true).await;
    }
    assert!(claim(&store).await.is_empty());

    // A clear missed (recorded as if unordered): the next tidy clears it.
    post(&store, "c", 1).await;
    post(&store, "c", 2).await;
    let tidied = store.tidy_ordered(DESTINATION).await.unwrap();
    assert_eq!(tidied.flagged, 1);
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["c_1"]);
    record(&store, &rows, &[], false).await;
    assert!(claim(&store).await.is_empty(), "c_2 is still flagged");
    let tidied = store.tidy_ordered(DESTINATION).await.unwrap();
    assert_eq!(
        tidied,
        Tidied {
            cleared: 1,
            flagged: 0
        }
    );
    assert_eq!(names(&claim(&store).await), ["c_2"]);
}
