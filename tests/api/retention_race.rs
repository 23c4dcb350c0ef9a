//! The payload purge and a redelivery of the same old event, at once
//! (PostgreSQL): the redelivery makes the event recent again, and the
//! purge, meeting the event locked by it, skips it without waiting (a purge
//! that waited for a row lock could close a cycle of waits with a group
//! redelivering two old events) and leaves it whole.

use std::time::Duration;

use hookledger::clock::Clock;
use reqwest::StatusCode;

use crate::helpers::{Backend, TestApp, credit_seq, json_with_status};
use crate::pause::{PAUSE, Pause};
use crate::samples::body_of;

/// Pauses the redelivery's update of the intent, its row lock taken.
const PAUSE_REDELIVERY: &str = "
create trigger pause_redelivery before update on intents
for each row when (new.last_received_at > old.last_received_at) execute function pause()";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_payload_received_again_while_the_purge_runs_stays() {
    let Some(backend) = Backend::postgres_or_skip("retention_race::a_payload_received_again")
    else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let credit = body_of(&credit_seq("msg_1", "acct_1", 1500, 1));
    let answer = app.deliver_body("demo", "msg_1", &credit).await;
    assert_eq!(
        json_with_status(answer, StatusCode::OK).await["status"],
        "applied"
    );
    // Last received ten days ago: due for the purge.
    app.execute_sql("update intents set last_received_at = last_received_at - interval '10 days'")
        .await
        .unwrap();
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_REDELIVERY).await.unwrap();
    let mut pause = Pause::hold(&app).await;
    let redelivery = app.deliver_body("demo", "msg_1", &credit);
    let redelivered = async {
        let answer = redelivery.await;
        json_with_status(answer, StatusCode::OK).await
    };
    let purging = async {
        pause.until_waiting_on("advisory").await;
        let now = app.clock.now();
        let cutoff = now - chrono::TimeDelta::days(1);
        let purge = app.store().purge_payloads(cutoff, 500, now);
        // Answered while the redelivery still holds the row: it never
        // waited.
        let purged = tokio::time::timeout(Duration::from_secs(5), purge)
            .await
            .expect("the purge waited for the redelivery's row lock")
            .unwrap();
        pause.release().await;
        purged
    };
    let (answer, purged) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(redelivered, purging)
    })
    .await
    .unwrap();
    assert_eq!(answer["duplicate"], true, "{answer}");
    let event = app.event("demo", "msg_1").await;
    assert_eq!(
        (purged, event["payload_purged_at"].is_null()),
        (0, true),
        "the purge emptied an event received again while it ran: {event}"
    );
    assert_eq!(event["payload"].as_str().unwrap().as_bytes(), &credit[..]);
}
