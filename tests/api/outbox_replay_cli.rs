//! `hookledger outbox replay`: re-queues only the messages its filters
//! name (`--account`, `--since`, `--status`), each sent again under its
//! own message id; a destination or status it cannot replay is refused
//! and re-queues nothing.

use std::time::Duration;

use chrono::{SecondsFormat, TimeDelta};
use hookledger::clock::Clock;

use crate::helpers::*;
use crate::outbox::{app_with, drained, http_destination};
use crate::process::run_with_config as cli;
use crate::receiver::{Answer, Receiver};

/// The ids the receiver got `event_id`'s message under, in order.
fn sent_ids(receiver: &Receiver, event_id: &str) -> Vec<String> {
    receiver
        .received()
        .into_iter()
        .filter(|r| r.body["event_id"] == event_id)
        .map(|r| r.id)
        .collect()
}

/// `billing`'s rows as (event id, state), in id order.
async fn states(app: &TestApp) -> Vec<(String, String)> {
    drained(app, "billing", Duration::from_secs(20))
        .await
        .into_iter()
        .map(|m| (m.event_id, m.state))
        .collect()
}

/// `hookledger outbox replay --destination billing ARGS...`: success, and
/// its output.
fn replay(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let command = ["outbox", "replay", "--destination", "billing"];
    cli(dir, &[&command[..], args].concat())
}

/// Four dead letters (two accounts, an hour apart) and a delivered
/// message; each replay re-sends only what its filters name, `--since`
/// counting a message written at that very time, under the id its first
/// attempt had.
async fn replay_re_queues_only_what_its_filters_name(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(500)).await;
    let destination = http_destination("billing", &receiver.url(), "max_attempts = 1");
    let app = app_with(backend, &destination).await;
    app.send_to("demo", &credit("evt_a1", "cus_a", 100)).await;
    app.send_to("demo", &credit("evt_b1", "cus_b", 200)).await;
    app.clock.advance(TimeDelta::hours(1));
    let later = app.clock.now().to_rfc3339_opts(SecondsFormat::Secs, true);
    app.send_to("demo", &credit("evt_a2", "cus_a", 300)).await;
    app.send_to("demo", &credit("evt_b2", "cus_b", 400)).await;
    drained(&app, "billing", Duration::from_secs(20)).await;
    receiver.answer_all(Answer::Status(200));
    app.send_to("demo", &credit("evt_c1", "cus_c", 500)).await;
    let dead = |id: &str| (id.to_owned(), "dead".to_owned());
    let delivered = |id: &str| (id.to_owned(), "delivered".to_owned());
    assert_eq!(
        states(&app).await,
        [
            dead("evt_a1"),
            dead("evt_b1"),
            dead("evt_a2"),
            dead("evt_b2"),
            delivered("evt_c1")
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        extra_sources: &destination,
        ..Options::default()
    };
    crate::helpers::write_config(
        dir.path().join("hookledger.toml"),
        base_config(&app.database_url, &options),
    )
    .unwrap();

    // Account and time: cus_a's dead letter of the later hour, not its
    // earlier one nor cus_b's of that hour.
    let (ok, out) = replay(dir.path(), &["--account", "cus_a", "--since", &later]);
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "re-queued 1 dead message(s) for billing");
    assert_eq!(
        states(&app).await,
        [
            dead("evt_a1"),
            dead("evt_b1"),
            delivered("evt_a2"),
            dead("evt_b2"),
            delivered("evt_c1")
        ]
    );
    // Dead ones by default: not the delivered evt_a2 and evt_c1 of that hour.
    let (ok, out) = replay(dir.path(), &["--since", &later]);
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "re-queued 1 dead message(s) for billing");
    let settled = [
        dead("evt_a1"),
        dead("evt_b1"),
        delivered("evt_a2"),
        delivered("evt_b2"),
        delivered("evt_c1"),
    ];
    assert_eq!(states(&app).await, settled);
    // Delivered ones: cus_a's delivered evt_a2, not its dead evt_a1.
    let (ok, out) = replay(dir.path(), &["--status", "delivered", "--account", "cus_a"]);
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "re-queued 1 delivered message(s) for billing");
    assert_eq!(states(&app).await, settled);

    let (ok, out) = replay(dir.path(), &["--status", "pending"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("re-queues dead or delivered messages"),
        "{out}"
    );
    let (ok, out) = cli(
        dir.path(),
        &["outbox", "replay", "--destination", "nowhere"],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains(r#"no destination "nowhere" in the config (configured: billing)"#),
        "{out}"
    );
    assert_eq!(states(&app).await, settled, "nothing re-queued");

    // Sent again under the id of the first attempt, as often as re-queued.
    for (event_id, times) in [
        ("evt_a1", 1),
        ("evt_b1", 1),
        ("evt_a2", 3),
        ("evt_b2", 2),
        ("evt_c1", 1),
    ] {
        let ids = sent_ids(&receiver, event_id);
        assert_eq!(ids.len(), times, "{event_id}: {ids:?}");
        assert!(ids.iter().all(|id| *id == ids[0]), "{event_id}: {ids:?}");
    }
    app.assert_invariants().await;
}

both_backends!(replay_re_queues_only_what_its_filters_name);
