//! A late event: its sequence is below its account's guard. Credits are
//! deltas, so applying one late changes no sum; a debit may overdraw what a
//! newer event already relied on. `on_stale` says, per effect, whether a
//! late event is applied anyway (the guard stays where it is) or held as
//! `stale` for an operator.

use super::outcome::Decided;
use super::posted::Posted;
use crate::domain::{StaleAction, Status, sequence_text};
use crate::store::{StoreError, WriteTx};

/// `note` is appended to the reason (why the number is behind the guard).
pub(super) async fn decide(
    tx: &mut WriteTx,
    posted: &Posted<'_>,
    guard: i64,
    note: &str,
) -> Result<Decided, StoreError> {
    let explicit = posted.posting.explicit_sequence;
    let sequence = sequence_text(posted.posting.sequence, explicit);
    let guard = sequence_text(guard, explicit);
    let action = posted
        .source
        .ordering
        .on_stale
        .for_direction(posted.posting.direction);
    match action {
        StaleAction::Apply => {
            let reason = format!("applied out of order: sequence {sequence} below {guard}{note}");
            posted
                .set_status(tx, Status::Applied, &reason, true)
                .await?;
            posted.post(tx, true).await
        }
        StaleAction::Hold => {
            let reason = format!(
                "out of order: sequence {sequence} is below {guard}, already applied for this account{note}"
            );
            posted.set_status(tx, Status::Stale, &reason, true).await?;
            Ok(Decided {
                late: true,
                ..Decided::status(Status::Stale)
            })
        }
    }
}
