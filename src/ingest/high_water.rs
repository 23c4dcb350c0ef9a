//! `ordering = "high-water"`: the guard is the highest sequence applied per
//! (source, account). An event at or above it applies and moves it up (equal
//! sequences are normal: two events in the same second); one below it is
//! late and goes to [`late::decide`].

use super::{Decided, Posted, late};
use crate::domain::Status;
use crate::store::{StoreError, WriteTx};

pub(super) async fn decide(tx: &mut WriteTx, posted: &Posted<'_>) -> Result<Decided, StoreError> {
    let source = posted.source.name.as_str();
    let account = posted.account();
    let in_order = tx
        .advance_guard(source, account, posted.posting.sequence, posted.now)
        .await?;
    if in_order {
        posted.apply(tx).await?;
        return Ok(Decided::status(Status::Applied));
    }
    // advance_guard left the row locked, so this reads the value it tested.
    let guard = tx
        .guard_sequence(source, account)
        .await?
        .unwrap_or_default();
    late::decide(tx, posted, guard, "").await
}
