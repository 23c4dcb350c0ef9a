//! `hookledger outbox move` against an ordered destination (PostgreSQL, a
//! trigger pausing the move): a dead letter still holds its account while
//! the move runs, and a row a relay still on the old config holds under a
//! live lease stays where it is.

use std::time::Duration;

use chrono::Utc;

use crate::helpers::{Backend, TestApp};
use crate::outbox_behind::{DESTINATION, claim, names, ordered_store, post, record};
use crate::pause::{PAUSE, Pause};

const NEW: &str = "ordered-v2";

const PAUSE_DEAD_MOVE: &str = "
create trigger pause_dead_move before update on outbox
for each row when (old.state = 'dead' and new.destination <> old.destination)
execute function pause()";

async fn setup() -> Option<(TestApp, hookledger::store::Store)> {
    let backend = Backend::postgres_or_skip("outbox_move_races")?;
    let app = TestApp::spawn(backend).await;
    let store = ordered_store(&app).await;
    Some((app, store))
}

async fn claim_new(store: &hookledger::store::Store, name: &str) -> Vec<String> {
    let now = Utc::now().timestamp_millis();
    let rows = store
        .claim_outbox(NEW, true, name, now, now + 60_000, 64)
        .await
        .unwrap();
    names(&rows)
}

/// a_1 is dead, a_2 waits behind it. Paused in the middle of the move, the
/// new destination's claim takes nothing: the dead letter moves before the
/// pending message (in the other order, a_2 was claimed past it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_letter_still_blocks_its_account_during_a_move() {
    let Some((app, store)) = setup().await else {
        return;
    };
    post(&store, "a", 1).await;
    post(&store, "a", 2).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1"]);
    record(&store, &rows, &["a_1"], true).await; // a_1 dead
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_DEAD_MOVE).await.unwrap();
    let mut pause = Pause::hold(&app).await;
    let moving = tokio::spawn({
        let store = store.clone();
        async move { store.move_outbox(DESTINATION, NEW, true).await.unwrap() }
    });
    pause.until_waiting_on("advisory").await;
    let taken = claim_new(&store, "new-relay").await;
    pause.release().await;
    let moved = tokio::time::timeout(Duration::from_secs(20), moving)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(moved.moved, 2);
    assert!(
        taken.is_empty(),
        "claimed {taken:?} while a_1 (dead) was not moved yet"
    );
}

/// A relay of an instance still on the old config holds a_1 (sending it):
/// the move leaves it, so the new destination's relay does not send it
/// again at once (nor the next message beside it) and the first relay's
/// acknowledgement is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_move_leaves_a_row_under_a_live_lease() {
    let Some((_app, store)) = setup().await else {
        return;
    };
    post(&store, "a", 1).await;
    let rows = claim(&store).await; // old instance's relay: in flight, leased 60 s
    assert_eq!(names(&rows), ["a_1"]);
    let done = store.move_outbox(DESTINATION, NEW, true).await.unwrap();
    assert_eq!((done.moved, done.dropped), (0, 0));
    let taken = claim_new(&store, "new-relay").await;
    assert!(
        taken.is_empty(),
        "{taken:?} claimed again while the old relay's lease runs"
    );
    record(&store, &rows, &[], true).await;
    let old = store.outbox_messages(DESTINATION, 0, 10).await.unwrap();
    assert_eq!(old[0].state, "delivered");
}
