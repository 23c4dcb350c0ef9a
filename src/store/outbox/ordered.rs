//! The `ordered` flag of outbox rows (migration 0010): which undelivered
//! postings take part in their account's order, and so sit in the index
//! (`outbox_ordered_open`) that the ordered claim, the tidy and the clear
//! after a delivery read. A posting is written with the flag of the config
//! of the instance that writes it, and a replay sets it from its own; this
//! sync makes it right for the rest: rows from before migration 0010, rows
//! of a destination whose `ordered_by_account` changed, rows written by an
//! instance that still runs the older config. A relay runs it before its
//! first claim and then with every tidy. It walks the destination's
//! undelivered rows (as the tidy does), and changes a row only when the
//! config changed, in batches of [`BATCH`] rows, each its own transaction:
//! a large backlog never holds SQLite's writer, or row locks on
//! PostgreSQL, for long.
//!
//! Each statement is a conditional update of this one column, which only
//! the posting's insert and a replay set otherwise, from a config: two
//! instances on the same config set the same value. Instances on different
//! configs disagree until the older one stops (docs/other-systems.md).

use super::super::write::on_tx;
use super::super::{Store, StoreError};

/// An ordered destination: each undelivered posting takes part. Pending
/// and dead rows apart, each through its own index (`outbox_pending`,
/// `outbox_dead`): a condition of `state <> 'delivered'` would walk the
/// delivered rows kept for retention too.
macro_rules! sync_ordered {
    ($state:literal) => {
        concat!(
            "
update outbox set ordered = true
where outbox_id in (select outbox_id from outbox
    where destination = $1 and state = '",
            $state,
            "' and not ordered and account_seq is not null
    limit $2)"
        )
    };
}
pub(super) const SYNC_ORDERED: [&str; 2] = [sync_ordered!("pending"), sync_ordered!("dead")];

/// A destination that is not (or no longer) ordered: none does (the index
/// finds them).
pub(super) const SYNC_UNORDERED: &str = "
update outbox set ordered = false
where outbox_id in (select outbox_id from outbox
    where destination = $1 and ordered and state <> 'delivered'
    limit $2)";

/// Rows changed in one transaction of the sync.
pub(super) const BATCH: i64 = 5_000;

impl Store {
    /// Sets `destination`'s undelivered rows' `ordered` flag to what its
    /// config says (`ordered`), batch by batch; the rows changed. An error
    /// leaves the batches before it done.
    pub async fn sync_ordered(&self, destination: &str, ordered: bool) -> Result<u64, StoreError> {
        let statements: &[&'static str] = match ordered {
            true => &SYNC_ORDERED,
            false => &[SYNC_UNORDERED],
        };
        let mut changed = 0;
        for sql in statements {
            loop {
                let mut tx = self.begin().await?;
                let done = on_tx!(&mut tx, conn => sqlx::query(*sql)
                    .bind(destination)
                    .bind(BATCH)
                    .execute(conn)
                    .await
                    .map(|done| done.rows_affected()))?;
                tx.commit().await?;
                changed += done;
                if done < BATCH as u64 {
                    break;
                }
            }
        }
        Ok(changed)
    }
}
