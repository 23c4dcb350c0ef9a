//! The `ordered` flag of outbox rows (migration 0010): which undelivered
//! postings take part in their account's order, and so sit in the index
//! (`outbox_ordered_open`) that the ordered claim, the tidy and the clear
//! after a delivery read. A posting is written with the flag of the config
//! of the instance that writes it, and a replay sets it again; this sync
//! makes it right for the rest: rows from before migration 0010, rows of a
//! destination whose `ordered_by_account` changed, rows written by an
//! instance that still runs the older config. A relay runs it before its
//! first claim and then with every tidy. It walks the destination's
//! undelivered rows once (as the tidy does), and changes a row only when
//! the config changed.
//!
//! Race-free on both backends: one statement per direction, each a
//! conditional update of a single column that no other statement sets
//! except a replay, which sets it to the same value from the same config.

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
where destination = $1 and state = '",
            $state,
            "' and not ordered and account_seq is not null"
        )
    };
}
pub(super) const SYNC_ORDERED: [&str; 2] = [sync_ordered!("pending"), sync_ordered!("dead")];

/// A destination that is not (or no longer) ordered: none does (the index
/// finds them).
pub(super) const SYNC_UNORDERED: &str = "
update outbox set ordered = false
where destination = $1 and ordered and state <> 'delivered'";

impl Store {
    /// Sets `destination`'s undelivered rows' `ordered` flag to what its
    /// config says (`ordered`); the rows changed.
    pub async fn sync_ordered(&self, destination: &str, ordered: bool) -> Result<u64, StoreError> {
        let statements: &[&str] = match ordered {
            true => &SYNC_ORDERED,
            false => &[SYNC_UNORDERED],
        };
        let mut tx = self.begin().await?;
        let mut changed = 0;
        for sql in statements {
            changed += on_tx!(&mut tx, conn => sqlx::query(*sql)
                .bind(destination)
                .execute(conn)
                .await
                .map(|done| done.rows_affected()))?;
        }
        tx.commit().await?;
        Ok(changed)
    }
}
