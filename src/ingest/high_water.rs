//! `ordering = "high-water"`: the guard is the highest sequence applied per
//! (source, account). An event at or above it applies and moves it up (equal
//! sequences are normal: two events in the same second); one below it is
//! late and goes to [`late::decide`]. The guard row is locked first and moved
//! only once the posting is applied: a posting [`settle`](super::settle)
//! refuses (a refund larger than its payment has left, say) leaves it where
//! it was.

use super::late;
use super::outcome::Decided;
use super::posted::Posted;
use crate::domain::{SEQUENCE_FLOOR, Status};
use crate::store::{StoreError, WriteTx};

pub(super) async fn decide(tx: &mut WriteTx, posted: &Posted<'_>) -> Result<Decided, StoreError> {
    // The guard of the source the event belongs to (see `Posted`).
    let source = posted.recorded_by;
    let account = posted.account();
    let sequence = posted.posting.sequence;
    // Locked until commit: every decision on this account waits here.
    let guard = tx
        .lock_guard(source, account, SEQUENCE_FLOOR, posted.now)
        .await?;
    if sequence < guard {
        return late::decide(tx, posted, guard, "").await;
    }
    let decided = posted.post(tx, false).await?;
    if decided.status == Status::Applied {
        tx.advance_guard(source, account, sequence, posted.now)
            .await?;
    }
    Ok(decided)
}
