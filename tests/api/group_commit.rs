//! Deliveries committed together (SQLite's group commit; one transaction
//! each on PostgreSQL) stay independent: one that fails inside the group
//! is rolled back alone, the others commit and are answered 200, and
//! nothing is answered before its commit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::join_all;
use reqwest::StatusCode;

use crate::helpers::{Backend, Options, TestApp, credit};

/// A trigger that fails the insert of event `poison`, so that its delivery
/// errors half-way through its statements.
const POISON_SQLITE: &str = "
create trigger poison before insert on intents when new.event_id = 'poison'
begin select raise(abort, 'poisoned for the test'); end;";
const POISON_POSTGRES: &str = "
create function poison() returns trigger language plpgsql as $$
begin
  if new.event_id = 'poison' then raise exception 'poisoned for the test'; end if;
  return new;
end $$;
create trigger poison before insert on intents for each row execute function poison();";
const CURE_SQLITE: &str = "drop trigger poison";
const CURE_POSTGRES: &str = "drop trigger poison on intents";

async fn one_failing_delivery_leaves_the_rest_of_its_group_committed(backend: Backend) {
    let postgres = matches!(backend, Backend::Postgres(_));
    let app = TestApp::spawn(backend).await;
    let (poison, cure) = if postgres {
        (POISON_POSTGRES, CURE_POSTGRES)
    } else {
        (POISON_SQLITE, CURE_SQLITE)
    };
    app.execute_sql(poison).await.unwrap();
    // Holding a write transaction makes SQLite's writer wait for its turn
    // while the deliveries queue: they are then committed as a group.
    let held = app.store().begin().await.unwrap();
    let mut samples = Vec::new();
    for n in 0..12 {
        samples.push(credit(&format!("good_{n}"), "acct_g", 100 + n));
        if n == 5 {
            samples.push(credit("poison", "acct_g", 1_000_000));
        }
    }
    let answered = AtomicUsize::new(0);
    let sends = join_all(samples.iter().map(|sample| async {
        let answer = app.send(sample).await;
        answered.fetch_add(1, Ordering::SeqCst);
        let status = answer.status();
        (status, answer.text().await.unwrap())
    }));
    let release = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let early = answered.load(Ordering::SeqCst);
        held.rollback().await.unwrap();
        early
    };
    let (answers, early) = tokio::join!(sends, release);
    if !postgres {
        assert_eq!(early, 0, "answered while the writer waited for its turn");
    }
    let (poisoned, good): (Vec<_>, Vec<_>) = answers
        .iter()
        .partition(|(_, text)| !text.contains("good_"));
    assert_eq!(poisoned.len(), 1, "{answers:?}");
    assert_eq!(
        poisoned[0].0,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{answers:?}"
    );
    for (status, text) in &good {
        assert_eq!(*status, StatusCode::OK, "{text}");
        assert!(text.contains("\"applied\""), "{text}");
    }
    let expected: i64 = (0..12).map(|n| 100 + n).sum();
    assert_eq!(app.balance("acct_g", "USD").await, expected);
    let events = app.events().await;
    assert!(
        events.iter().all(|e| e["event_id"] != "poison"),
        "the failed delivery left a row"
    );
    app.assert_invariants().await;
    // Nothing of it was kept: its redelivery applies once.
    app.execute_sql(cure).await.unwrap();
    let answer = app.send_ok(&credit("poison", "acct_g", 1_000_000)).await;
    assert_eq!(answer["status"], "applied");
    assert_eq!(answer["duplicate"], false);
    assert_eq!(app.balance("acct_g", "USD").await, expected + 1_000_000);
    app.assert_invariants().await;
}

/// SQLite: a group that cannot get the write turn within the busy timeout
/// (another writer holds it) is answered 503 at once, every delivery of
/// it: none is re-run alone to wait out the same timeout again. Once the
/// turn is free, the redeliveries apply once. PostgreSQL has no turn: the
/// same deliveries apply while the other transaction is open.
async fn a_group_that_cannot_get_its_turn_is_refused_whole(backend: Backend) {
    let postgres = matches!(backend, Backend::Postgres(_));
    let options = Options {
        database: "busy_timeout_ms = 300",
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let samples: Vec<_> = (0..6)
        .map(|n| credit(&format!("turn_{n}"), "acct_t", 10 + n))
        .collect();
    let held = app.store().begin().await.unwrap();
    let sends = join_all(samples.iter().map(|sample| async {
        let answer = app.send(sample).await;
        answer.status()
    }));
    let release = async {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        held.rollback().await.unwrap();
    };
    let (statuses, ()) = tokio::join!(sends, release);
    let expected = if postgres {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    assert!(statuses.iter().all(|s| *s == expected), "{statuses:?}");
    for sample in &samples {
        let answer = app.send_ok(sample).await;
        assert_eq!(answer["status"], "applied");
        assert_eq!(answer["duplicate"], postgres, "{answer}");
    }
    let total: i64 = samples.iter().map(|s| s.amount_minor).sum();
    assert_eq!(app.balance("acct_t", "USD").await, total);
    app.assert_invariants().await;
}

crate::both_backends!(
    one_failing_delivery_leaves_the_rest_of_its_group_committed,
    a_group_that_cannot_get_its_turn_is_refused_whole,
);
