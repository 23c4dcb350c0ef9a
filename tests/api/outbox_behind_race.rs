//! PostgreSQL only: a tidy flagging a row while another relay delivers the
//! message ahead of it. The tidy's flagging statement reads the message
//! ahead as dead; meanwhile it is replayed, claimed and delivered, and that
//! delivery's clear finds no flag yet. The row must not then wait for the
//! next tidy, whichever commits first: the tidy clears what has nothing
//! ahead after its flags are committed, and the delivery clears the next
//! row again after it has committed. Triggers pause the flagging statement
//! at the row it flags (`pause`) and the delivery's transaction before it
//! commits, so the interleavings are forced, not hoped for. SQLite runs one
//! write transaction at a time: they cannot happen there.

use std::time::Duration;

use hookledger::store::{Replay, Store, Tidied};
use sqlx::{Connection, PgConnection};

use crate::helpers::{Backend, TestApp};
use crate::outbox_behind::{
    DESTINATION, claim, names, ordered_store, post, record, record_failing, tidy,
};
use crate::pause::{PAUSE, Pause};

/// Pauses the statement that flags a row, at that row.
const PAUSE_FLAGS: &str = "
create trigger pause_flag before update on outbox
for each row when (new.behind and not old.behind) execute function pause()";

/// Pauses a transaction recording a failed attempt (after its deliveries
/// and their clear) on a second key, held apart from `pause`'s.
const PAUSE_FAILURES: &str = "
create function pause_failure() returns trigger language plpgsql as $$
begin
    perform pg_advisory_xact_lock_shared(4343);
    return new;
end $$;
create trigger pause_failure before update on outbox
for each row when (new.last_error is not null and old.last_error is null)
execute function pause_failure();";

/// How long a step may take before the test calls it stuck.
const STEP: Duration = Duration::from_secs(20);

/// The ordered destination's store, with a_1 dead and a_2 behind it.
async fn a_dead_letter_ahead(app: &TestApp) -> Store {
    let store = ordered_store(app).await;
    post(&store, "a", 1).await;
    post(&store, "a", 2).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1"]);
    record(&store, &rows, &["a_1"], true).await;
    store
}

async fn install(app: &TestApp, triggers: &[&'static str]) {
    let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
    for &sql in triggers {
        sqlx::raw_sql(sql).execute(&pool).await.unwrap();
    }
}

async fn replay_dead(store: &Store) {
    let replay = Replay {
        destination: DESTINATION.into(),
        state: "dead".into(),
        since: None,
        account_id: None,
    };
    assert_eq!(store.replay_outbox(&replay).await.unwrap(), 1);
}

/// The tidy, started in the background and paused at the row it flags.
async fn paused_tidy(store: &Store, pause: &mut Pause) -> tokio::task::JoinHandle<Tidied> {
    let tidying = tokio::spawn({
        let store = store.clone();
        async move { tidy(&store, true).await }
    });
    // It has read a_1 as dead and is flagging a_2.
    pause.until_waiting_on("advisory").await;
    tidying
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flag_racing_the_delivery_ahead_does_not_hold_the_row() {
    let Some(backend) = Backend::postgres_or_skip(
        "outbox_behind_race::a_flag_racing_the_delivery_ahead_does_not_hold_the_row",
    ) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let store = a_dead_letter_ahead(&app).await;
    install(&app, &[PAUSE, PAUSE_FLAGS]).await;
    let mut pause = Pause::hold(&app).await;
    let tidying = paused_tidy(&store, &mut pause).await;

    replay_dead(&store).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1"], "a_2 waits for a_1");
    // Its clear finds a_2 unflagged, without waiting for the tidy's lock.
    let recorded = tokio::time::timeout(STEP, record(&store, &rows, &[], true)).await;
    assert!(recorded.is_ok(), "the delivery waited on the paused tidy");

    pause.release().await;
    let tidied = tokio::time::timeout(STEP, tidying).await.unwrap().unwrap();
    // Flagged on a stale read, then cleared by the tidy itself.
    assert_eq!(
        tidied,
        Tidied {
            cleared: 1,
            flagged: 1
        }
    );
    assert_eq!(
        names(&claim(&store).await),
        ["a_2"],
        "a_2 goes out now, not at the next tidy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flag_committed_before_the_delivery_ahead_does_not_hold_the_row() {
    // The flag commits, and the tidy's clear runs, while a_1's delivery is
    // recorded but not yet committed: the tidy's clear still sees a_1
    // undelivered, so only the delivery's own clear after its commit can
    // free a_2.
    let Some(backend) = Backend::postgres_or_skip(
        "outbox_behind_race::a_flag_committed_before_the_delivery_ahead_does_not_hold_the_row",
    ) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let store = a_dead_letter_ahead(&app).await;
    post(&store, "b", 1).await;
    install(&app, &[PAUSE, PAUSE_FLAGS, PAUSE_FAILURES]).await;
    let mut pause = Pause::hold(&app).await;
    let mut failures = PgConnection::connect(&app.database_url).await.unwrap();
    sqlx::query("select pg_advisory_lock(4343)")
        .execute(&mut failures)
        .await
        .unwrap();
    let tidying = paused_tidy(&store, &mut pause).await;

    replay_dead(&store).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1", "b_1"]);
    // a_1 delivered and its next cleared (nothing flagged yet); b_1's
    // failure pauses the transaction before it commits.
    let recording = tokio::spawn({
        let store = store.clone();
        async move { record_failing(&store, &rows, &["b_1"], 25, true).await }
    });
    pause.until_waiting("advisory", 2).await;
    assert_eq!(pause.waiting_on("advisory").await, 2, "both paused");

    pause.release().await;
    let tidied = tokio::time::timeout(STEP, tidying).await.unwrap().unwrap();
    assert_eq!(
        tidied,
        Tidied {
            cleared: 0,
            flagged: 1
        },
        "a_1's delivery is not committed yet: a_2 stays flagged"
    );
    sqlx::query("select pg_advisory_unlock(4343)")
        .execute(&mut failures)
        .await
        .unwrap();
    tokio::time::timeout(STEP, recording)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        names(&claim(&store).await),
        ["a_2"],
        "a_2 goes out now, not at the next tidy"
    );
}
