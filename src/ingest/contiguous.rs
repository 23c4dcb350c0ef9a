//! `ordering = "contiguous"`: the sender numbers each account's events
//! `first_sequence`, +1, +2, ... without gaps, and every event is applied in
//! exactly that order without a person. Under the account's guard row lock:
//! - the next number applies, and in the same transaction every event parked
//!   behind it that is now contiguous is released ([`release`]);
//! - a later number is parked (`waiting`), stored with its effect;
//! - a number another event already holds is `rejected`, naming that event;
//! - an earlier free number (one an operator skipped) is late: `on_stale`.

use super::late;
use super::outcome::Decided;
use super::posted::Posted;
use super::release::{self, Gaps, Release};
use crate::domain::{Slot, Status, contiguous_slot};
use crate::store::{StoreError, WriteTx};

pub(super) async fn decide(tx: &mut WriteTx, posted: &Posted<'_>) -> Result<Decided, StoreError> {
    let policy = &posted.source.ordering;
    let sequence = posted.posting.sequence;
    if !posted.posting.explicit_sequence {
        return posted
            .reject(
                tx,
                "contiguous ordering needs the sender's own sequence number in the event \
                 (data.sequence); this one has none",
            )
            .await;
    }
    let source = posted.source.name.as_str();
    let account = posted.account();
    // Taken before any decision, by every path, so that a park and the
    // release that must see it are serialised (see store/write/ordering.rs).
    let guard = tx
        .lock_guard(source, account, policy.initial_guard(), posted.now)
        .await?;
    // Checked for the next number too: while a long backlog drains, the
    // parked event that got this number first is still waiting.
    if let Some(holder) = tx
        .sequence_holder(source, account, sequence, posted.intent_id)
        .await?
    {
        let reason = format!("sequence {sequence} is already used by event {holder}");
        return posted.reject(tx, &reason).await;
    }
    match contiguous_slot(guard, sequence) {
        Slot::Next => {
            let release = Release {
                source,
                account_id: account,
                on_stale: policy.on_stale,
                budget: policy.release_batch,
                gaps: Gaps::Wait,
                now: posted.now,
            };
            let own_currency = Some(posted.posting.currency.code());
            let prepared = release::prepare(tx, &release, sequence, own_currency).await?;
            let own = posted.post(tx, false).await?;
            if own.status != Status::Applied {
                // Not applied (its balance would leave the supported range):
                // the number stays free and the stream waits there.
                return Ok(own);
            }
            let released = release::run(tx, &release, &prepared).await?;
            tx.set_guard(source, account, released.guard, posted.now)
                .await?;
            Ok(Decided {
                released: released.applied,
                backlog: released.budget_used_up,
                ..Decided::status(Status::Applied)
            })
        }
        Slot::Ahead => {
            let reason =
                format!("parked until every number below {sequence} is applied or skipped");
            posted
                .set_status(tx, Status::Waiting, &reason, false)
                .await?;
            Ok(Decided::status(Status::Waiting))
        }
        Slot::Behind if sequence < policy.first_sequence => {
            let reason = format!(
                "sequence {sequence} is below first_sequence {}",
                policy.first_sequence
            );
            posted.reject(tx, &reason).await
        }
        Slot::Behind => {
            let note = match tx.skipped_by(source, account, sequence).await? {
                Some(audit_id) => {
                    format!(" (an operator skipped sequence {sequence}: audit {audit_id})")
                }
                None => String::new(),
            };
            late::decide(tx, posted, guard, &note).await
        }
    }
}
