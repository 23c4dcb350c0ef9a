//! The oldest pending message's age counts a re-queued message from its
//! replay, not from when it was first written: replaying last week's
//! messages does not show a week-old backlog. A message waiting since it
//! was written still counts from then.

use std::time::Duration;

use chrono::Utc;
use hookledger::store::Replay;

use crate::helpers::*;
use crate::outbox::{app_with, drained, http_destination};
use crate::receiver::{Answer, Receiver};

async fn a_replayed_message_waits_since_its_replay(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = app_with(backend, &http_destination("billing", &receiver.url(), "")).await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    let delivered = drained(&app, "billing", Duration::from_secs(20)).await;
    // Written at the test clock's time, months before the real one.
    let written = delivered[0].created_at;
    assert!(
        Utc::now() - written > chrono::TimeDelta::days(1),
        "{written}"
    );

    receiver.answer_all(Answer::Status(500));
    let replay = Replay {
        destination: "billing".into(),
        state: "delivered".into(),
        since: None,
        account_id: None,
    };
    assert_eq!(app.store().replay_outbox(&replay).await.unwrap(), 1);
    let stats = app.store().outbox_stats("billing").await.unwrap();
    assert_eq!(stats.pending, 1);
    let oldest = stats.oldest_pending_at.unwrap();
    let waited = Utc::now() - oldest;
    assert!(
        waited >= chrono::TimeDelta::zero() && waited < chrono::TimeDelta::minutes(1),
        "a message replayed just now shows as pending since {oldest}"
    );

    // One never sent, written at the test clock's time: the oldest again.
    app.send_ok(&credit("evt_2", "cus_1", 100)).await;
    let stats = app.store().outbox_stats("billing").await.unwrap();
    assert_eq!(stats.pending, 2);
    let messages = app.store().outbox_messages("billing", 0, 10).await.unwrap();
    assert_eq!(stats.oldest_pending_at, Some(messages[1].created_at));
}

both_backends!(a_replayed_message_waits_since_its_replay);
