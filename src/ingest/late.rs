//! A late event: its sequence is below its account's guard. Credits are
//! deltas, so applying one late changes no sum; a debit may overdraw what a
//! newer event already relied on. `on_stale` says, per effect, whether a
//! late event is applied anyway (the guard stays where it is) or held as
//! `stale` for an operator.

use super::outcome::Decided;
use super::posted::Posted;
use crate::domain::{Posting, StaleAction, Status, sequence_text};
use crate::source::Source;
use crate::store::{StoreError, WriteTx};

/// What `source`'s `on_stale` says of a late `posting`.
pub(super) fn action(source: &Source, posting: &Posting) -> StaleAction {
    source.ordering.on_stale.for_direction(posting.direction)
}

/// The reason a late `posting` applied anyway is stored with: its
/// sequence and the `guard` it is below, then `note`.
pub(super) fn applied_reason(posting: &Posting, guard: i64, note: &str) -> String {
    let explicit = posting.explicit_sequence;
    let sequence = sequence_text(posting.sequence, explicit);
    let guard = sequence_text(guard, explicit);
    format!("applied out of order: sequence {sequence} below {guard}{note}")
}

/// `note` is appended to the reason (why the number is behind the guard).
pub(super) async fn decide(
    tx: &mut WriteTx,
    posted: &Posted<'_>,
    guard: i64,
    note: &str,
) -> Result<Decided, StoreError> {
    match action(posted.source, posted.posting) {
        StaleAction::Apply => {
            let reason = applied_reason(posted.posting, guard, note);
            posted
                .set_status(tx, Status::Applied, &reason, true)
                .await?;
            posted.post(tx, true).await
        }
        StaleAction::Hold => {
            let explicit = posted.posting.explicit_sequence;
            let sequence = sequence_text(posted.posting.sequence, explicit);
            let guard = sequence_text(guard, explicit);
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
