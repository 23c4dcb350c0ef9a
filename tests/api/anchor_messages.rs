//! Anchors sent through the outbox as `audit.anchor` messages
//! (docs/operating/chains.md, "Anchors"): in parts, only to a destination
//! that lists the type, once per interval whatever the number of
//! instances, retried and dead-lettered as outbox messages are, and
//! joined again by `hookledger verify --against`.

use std::time::{Duration, Instant};

use hookledger::store::chain::{Anchor, AnchorPart};
use hookledger::store::{AnchorAttempt, FillShape, Replay};

use crate::app_config::Options;
use crate::chains::{ANCHOR_KEY, anchoring_config};
use crate::helpers::{Backend, TestApp, now};
use crate::outbox::http_destination;
use crate::process::run_with_config;
use crate::receiver::{Answer, Receiver};
use crate::samples::credit;

/// More chains than two parts hold (500 heads each): 1,101 accounts.
async fn fill_1101_chains(app: &TestApp) {
    let shape = FillShape {
        postings: 1_200,
        accounts: 1_101,
        now: now(),
        span_secs: 86_400,
        payload_days: 10,
        outbox_days: 0,
    };
    app.store()
        .fill_batch(&shape, 0, shape.postings)
        .await
        .unwrap();
    app.store().finish_fill().await.unwrap();
}

/// Waits until `receiver` accepted `count` requests; panics after 40 s
/// (a relay sends anchors at its tidy, every 10 s).
async fn accepted(receiver: &Receiver, count: usize) -> Vec<serde_json::Value> {
    let started = Instant::now();
    loop {
        let accepted = receiver.accepted();
        if accepted.len() >= count {
            return accepted.into_iter().map(|r| r.body).collect();
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "{} of {count} anchor parts arrived",
            accepted.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An instance with `[anchors]` sends its start-up anchor to the
/// destination that lists `audit.anchor`, in three parts (the one refused
/// first sent again at the relay's next tidy), and nothing of
/// it to the one that lists no type (every event type); the parts, saved
/// as files, are what `verify --against` takes, and it refuses two of the
/// three.
async fn an_anchor_reaches_the_destination_that_lists_it_in_parts(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    fill_1101_chains(&app).await;
    // The first part sent is refused once: sent again after its backoff.
    let anchors = Receiver::start(&[Answer::Status(503)], Answer::Status(200)).await;
    let events = Receiver::start(&[], Answer::Status(200)).await;
    let destinations = format!(
        "{}{}",
        http_destination("anchors", &anchors.url(), "events = [\"audit.anchor\"]"),
        http_destination("events", &events.url(), "")
    );
    let _anchoring = app
        .another_instance_with(&Options {
            top_level: &format!("[anchors]\nkey = \"{ANCHOR_KEY}\""),
            extra_sources: &destinations,
            ..Options::default()
        })
        .await;
    let bodies = accepted(&anchors, 3).await;
    let parts: Vec<AnchorPart> = bodies
        .iter()
        .map(|body| serde_json::from_value(body.clone()).unwrap())
        .collect();
    let mut numbers: Vec<usize> = parts.iter().map(|p| p.part).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, [0, 1, 2], "{bodies:?}");
    assert!(
        parts
            .iter()
            .all(|p| p.parts == 3 && p.message_type == "audit.anchor")
    );
    let received_ids: Vec<String> = anchors.accepted().into_iter().map(|r| r.id).collect();
    for part in &parts {
        assert!(
            received_ids.contains(&part.id),
            "{} {received_ids:?}",
            part.id
        );
    }
    let anchor = Anchor::join(parts.clone()).unwrap();
    assert_eq!(anchor.check(Some(ANCHOR_KEY.as_bytes())), Ok(()));
    assert_eq!(anchor.ledger.len(), 1_101);
    assert_eq!(app.store().check_anchor(&anchor).await.unwrap(), []);
    assert!(
        events
            .received()
            .iter()
            .all(|r| r.body["type"] != "audit.anchor"),
        "{:?}",
        events.received()
    );
    let (pending, delivered, dead) = app.store().anchor_message_counts("anchors").await.unwrap();
    assert_eq!((pending, delivered, dead), (0, 3, 0));
    let received = anchors.received();
    assert_eq!(received.len(), 4, "one part twice: {received:?}");
    assert_eq!(received[0].answered, Answer::Status(503));
    assert!(received[1..].iter().any(|r| r.id == received[0].id));
    assert_eq!(
        app.store().anchor_message_counts("events").await.unwrap(),
        (0, 0, 0)
    );

    // The parts as a consumer saves them, given to `verify --against`.
    let dir = anchoring_config(&app);
    // Named by their part's number: the last file given is part 2.
    let mut files: Vec<String> = bodies
        .iter()
        .map(|body| {
            let file = dir.path().join(format!("part-{}.json", body["part"]));
            std::fs::write(&file, serde_json::to_vec(body).unwrap()).unwrap();
            file.to_str().unwrap().to_owned()
        })
        .collect();
    files.sort();
    let mut args = vec!["verify", "--against"];
    args.extend(files.iter().map(String::as_str));
    let (ok, said) = run_with_config(dir.path(), &args);
    assert!(ok, "{said}");
    let (ok, said) = run_with_config(dir.path(), &args[..4]);
    assert!(!ok, "{said}");
    assert!(said.contains("2 of its 3 parts"), "{said}");
}

/// The anchors' rows through the store: one anchor per destination and
/// interval whoever queues it; a claim leases its parts; a failed part is
/// due again at its backoff and dead at its last attempt; a part handed
/// back at shutdown keeps its attempt; retention purges delivered parts.
async fn anchor_parts_are_queued_once_and_retried_until_delivered_or_dead(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for account in ["acct_1", "acct_2", "acct_3"] {
        app.send_ok(&credit(&format!("{account}_c"), account, 100))
            .await;
    }
    let store = app.store();
    let key = ANCHOR_KEY.as_bytes();
    let parts = store.anchor(now(), Some(key)).await.unwrap().parts(2);
    assert_eq!(parts.len(), 2);
    let at = now().timestamp_millis();
    let queued = store
        .queue_anchor(&parts, &["a", "b"], 7, at)
        .await
        .unwrap();
    assert_eq!(queued, ["a", "b"]);
    // Another instance's anchor of the same interval: nothing queued.
    let later = store
        .anchor(now() + chrono::Duration::seconds(5), Some(key))
        .await
        .unwrap()
        .parts(2);
    assert_ne!(later[0].id, parts[0].id);
    let again = store.queue_anchor(&later, &["a"], 7, at).await.unwrap();
    assert!(again.is_empty(), "{again:?}");

    let lease = at + 60_000;
    let claimed = store
        .claim_anchor_messages("a", "c1", at, lease, 16)
        .await
        .unwrap();
    let ids: Vec<&str> = claimed.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids, [parts[0].id.as_str(), parts[1].id.as_str()]);
    let body: AnchorPart = serde_json::from_str(&claimed[1].body).unwrap();
    assert_eq!(body, parts[1]);
    assert!(claimed.iter().all(|m| m.attempts == 1));
    let leased = store.claim_anchor_messages("a", "c2", at, lease, 16).await;
    assert!(
        leased.unwrap().is_empty(),
        "leased parts are not claimed twice"
    );

    let failed = AnchorAttempt::Failed {
        error: "503".into(),
        next_attempt_ms: at + 1_000,
        max_attempts: 2,
    };
    let (first, second) = (claimed[0].anchor_message_id, claimed[1].anchor_message_id);
    assert!(
        store
            .record_anchor_attempt(first, "c1", &failed, at)
            .await
            .unwrap()
    );
    let delivered = AnchorAttempt::Delivered;
    assert!(
        store
            .record_anchor_attempt(second, "c1", &delivered, at)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_anchor_attempt(second, "c1", &delivered, at)
            .await
            .unwrap(),
        "recorded once"
    );
    let early = store
        .claim_anchor_messages("a", "c3", at + 999, lease, 16)
        .await;
    assert!(early.unwrap().is_empty(), "not due before its backoff");
    let retried = store
        .claim_anchor_messages("a", "c3", at + 1_000, lease, 16)
        .await
        .unwrap();
    assert_eq!(retried.len(), 1);
    assert_eq!(
        (retried[0].anchor_message_id, retried[0].attempts),
        (first, 2)
    );
    assert!(
        !store
            .record_anchor_attempt(first, "c1", &failed, at)
            .await
            .unwrap(),
        "c1's claim is over"
    );
    assert!(
        store
            .record_anchor_attempt(first, "c3", &failed, at)
            .await
            .unwrap()
    );
    assert_eq!(store.anchor_message_counts("a").await.unwrap(), (0, 1, 1));
    // A dead part is the destination's dead letter, as a message is, and
    // the replay of its dead letters sends it again (not one of an
    // account's: a part has none).
    assert_eq!(store.outbox_stats("a").await.unwrap().dead, 1);
    let replay = |account_id: Option<&str>| Replay {
        destination: "a".into(),
        state: "dead".into(),
        since: None,
        account_id: account_id.map(str::to_owned),
    };
    assert_eq!(
        store.replay_outbox(&replay(Some("acct_1"))).await.unwrap(),
        0
    );
    assert_eq!(store.replay_outbox(&replay(None)).await.unwrap(), 1);
    assert_eq!(store.outbox_stats("a").await.unwrap().dead, 0);
    let replayed = store
        .claim_anchor_messages("a", "c6", at, lease, 16)
        .await
        .unwrap();
    let replayed: Vec<(i64, i64)> = replayed
        .iter()
        .map(|m| (m.anchor_message_id, m.attempts))
        .collect();
    assert_eq!(replayed, [(first, 1)]);
    assert!(
        store
            .record_anchor_attempt(first, "c6", &failed, at)
            .await
            .unwrap()
    );

    let shut = store
        .claim_anchor_messages("b", "c4", at, lease, 1)
        .await
        .unwrap();
    assert_eq!(shut.len(), 1);
    let released = AnchorAttempt::Released;
    assert!(
        store
            .record_anchor_attempt(shut[0].anchor_message_id, "c4", &released, at)
            .await
            .unwrap()
    );
    let again = store
        .claim_anchor_messages("b", "c5", at, lease, 1)
        .await
        .unwrap();
    assert_eq!(
        (again[0].anchor_message_id, again[0].attempts),
        (shut[0].anchor_message_id, 1)
    );

    let purged = store.purge_delivered(at + 1, 100).await.unwrap();
    assert_eq!(purged, 1, "the delivered part");
    assert_eq!(store.anchor_message_counts("a").await.unwrap(), (1, 0, 0));
}

crate::both_backends!(
    an_anchor_reaches_the_destination_that_lists_it_in_parts,
    anchor_parts_are_queued_once_and_retried_until_delivered_or_dead,
);
