//! A re-keyed replay racing a delivery of the same key, forced on
//! PostgreSQL (`pause`): whichever inserts the key's intent first applies
//! it, and the other waits for that transaction, then finds the key stored
//! and changes nothing. SQLite runs one writer at a time, so there these
//! cannot interleave (`replay_rekey` runs the race on both backends).

use crate::backend::Backend;
use crate::helpers::TestApp;
use crate::pause::{PAUSE, Pause};
use crate::replay_rekey::{FIXED, instance, refund_updated, refunds_stored_ignored, replay, send};

/// Stops whichever transaction inserts `refund:re_1`'s intent, after the
/// insert: its row (and the unique key) is held, uncommitted.
const PAUSE_REFUND_INSERT: &str = "
create trigger pause_refund after insert on intents
for each row when (new.event_id = 'refund:re_1') execute function pause();";

/// The fixed instance and another, and the first (which owns the test's
/// database: kept alive).
async fn apps(test: &str) -> Option<(TestApp, TestApp, TestApp)> {
    let backend = Backend::postgres_or_skip(test)?;
    let (wrong, fixed) = refunds_stored_ignored(backend, &[("evt_r1", "re_1", 300)]).await;
    fixed.execute_sql(PAUSE).await.unwrap();
    fixed.execute_sql(PAUSE_REFUND_INSERT).await.unwrap();
    let other = instance(&fixed, FIXED).await;
    Some((fixed, other, wrong))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_waits_for_the_delivery_that_inserted_the_key() {
    let Some((fixed, other, _database)) =
        apps("rekey_interleavings::a_replay_waits_for_the_delivery_that_inserted_the_key").await
    else {
        return;
    };
    let mut pause = Pause::hold(&fixed).await;
    let update = refund_updated("evt_r1u", 0, "re_1", 300);
    let delivery = send(&other, &update);
    let replay_meanwhile = async {
        pause.until_waiting_on("advisory").await;
        // The replay must wait for the delivery's uncommitted key.
        pause.release_once_blocked(replay(&fixed, "evt_r1")).await
    };
    let (delivered, (status, replayed)) = tokio::join!(delivery, replay_meanwhile);
    assert_eq!(delivered["status"], "applied", "{delivered}");
    assert_eq!(status, reqwest::StatusCode::OK, "{replayed}");
    assert_eq!(replayed["changed"], false, "{replayed}");
    assert_eq!(replayed["replayed_as"]["duplicate"], true, "{replayed}");
    assert_eq!(fixed.balance("acct_1", "USD").await, 700);
    fixed.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_waits_for_the_replay_that_inserted_the_key() {
    let Some((fixed, other, _database)) =
        apps("rekey_interleavings::a_delivery_waits_for_the_replay_that_inserted_the_key").await
    else {
        return;
    };
    let mut pause = Pause::hold(&fixed).await;
    let replaying = replay(&fixed, "evt_r1");
    let deliver_meanwhile = async {
        pause.until_waiting_on("advisory").await;
        let update = refund_updated("evt_r1u", 0, "re_1", 300);
        pause.release_once_blocked(send(&other, &update)).await
    };
    let ((status, replayed), delivered) = tokio::join!(replaying, deliver_meanwhile);
    assert_eq!(status, reqwest::StatusCode::OK, "{replayed}");
    assert_eq!(replayed["replayed_as"]["status"], "applied", "{replayed}");
    assert_eq!(replayed["changed"], true, "{replayed}");
    assert_eq!(delivered["duplicate"], true, "{delivered}");
    assert_eq!(fixed.balance("acct_1", "USD").await, 700);
    let original = fixed.event("pay", "evt_r1").await;
    assert_eq!(original["replayed_into"], "refund:re_1");
    fixed.assert_invariants().await;
}
