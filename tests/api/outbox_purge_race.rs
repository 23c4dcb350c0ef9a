//! The retention purge and an operator's replay of the same delivered row,
//! at once (PostgreSQL, READ COMMITTED): the re-queued row stays.

use std::time::Duration;

use chrono::Utc;

use crate::helpers::{Backend, TestApp};
use crate::outbox_behind::{DESTINATION, claim, names, ordered_store, post, record};
use crate::pause::{PAUSE, Pause};

const PAUSE_REPLAY: &str = "
create trigger pause_replay before update on outbox
for each row when (old.state = 'delivered' and new.state = 'pending') execute function pause()";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replayed_row_survives_a_concurrent_purge() {
    let Some(backend) =
        Backend::postgres_or_skip("outbox_purge_race::a_replayed_row_survives_a_concurrent_purge")
    else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let store = ordered_store(&app).await;
    post(&store, "a", 1).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1"]);
    record(&store, &rows, &[], true).await;
    // Delivered long ago: due for the purge.
    app.execute_sql("update outbox set delivered_ms = 1000")
        .await
        .unwrap();
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_REPLAY).await.unwrap();
    let mut pause = Pause::hold(&app).await;
    let (id, message_id) = (rows[0].outbox_id, rows[0].message_id.clone());
    let replaying = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .replay_message(id, DESTINATION, &message_id, "operator", Utc::now())
                .await
                .unwrap()
        }
    });
    pause.until_waiting_on("advisory").await;
    let purging = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .purge_delivered(Utc::now().timestamp_millis(), 500)
                .await
                .unwrap()
        }
    });
    pause.until_waiting_on("transactionid").await;
    pause.release().await;
    assert!(
        tokio::time::timeout(Duration::from_secs(20), replaying)
            .await
            .unwrap()
            .unwrap()
    );
    let purged = tokio::time::timeout(Duration::from_secs(20), purging)
        .await
        .unwrap()
        .unwrap();
    let left = store.outbox_messages(DESTINATION, 0, 10).await.unwrap();
    let states: Vec<_> = left.iter().map(|m| m.state.as_str()).collect();
    assert_eq!(
        (purged, states),
        (0, vec!["pending"]),
        "the operator's replay was audited, then the purge deleted the re-queued row"
    );
}
