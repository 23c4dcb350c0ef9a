//! PostgreSQL's cheap path for a redelivery: counted in one statement, in
//! its own implicit transaction, without waiting for the WAL flush.
//!
//! Why it is safe: the row it updates is visible only once the transaction
//! that inserted it committed, and that commit was synchronous (flushed
//! before it became visible), so the status answered is durable. All this
//! statement changes is the delivery count, the conflict count and the last
//! receipt time; a crash may lose that one update, and with it a count, and
//! nothing else: no balance, ledger entry or status. `set_config(...,
//! true)` is local to the statement's own transaction, so the connection
//! goes back to the pool with synchronous commits, and a cancelled request
//! cannot leave it otherwise. A concurrent first delivery of the same event
//! holds its row uncommitted, invisible here: this matches no row and the
//! delivery takes the full transaction, whose insert waits for the first
//! one, as before. The update takes the row's lock, as the full path's
//! `on conflict do update` does.
//!
//! SQLite gets no such path: its writes go through the group-committing
//! writer, where a redelivery shares the group's one fsync.

use chrono::{DateTime, Utc};

use super::rows::parse_status;
use super::{Store, StoreError};
use crate::domain::Status;

const COUNT_REDELIVERY: &str = "
with no_flush as (select set_config('synchronous_commit', 'off', true) as setting)
update intents
set deliveries = deliveries + 1,
    conflicts = conflicts + case when payload_sha256 = $3 then 0 else 1 end,
    conflict_sha256 = case when payload_sha256 = $3 then conflict_sha256 else $3 end,
    last_received_at = $4
where scope = $1 and event_id = $2 and (select setting from no_flush) = 'off'
returning status, payload_sha256";

/// A redelivery counted on its recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redelivered {
    pub status: Status,
    /// The body differs from the stored one.
    pub conflict: bool,
}

impl Store {
    /// Counts a redelivery of (scope, event_id) if the event is recorded;
    /// `None` if it is not (or on SQLite): the delivery then takes the full
    /// transaction.
    pub async fn count_redelivery(
        &self,
        scope: &str,
        event_id: &str,
        payload_sha256: &str,
        received_at: DateTime<Utc>,
    ) -> Result<Option<Redelivered>, StoreError> {
        let Store::Postgres(pool, _) = self else {
            return Ok(None);
        };
        let row: Option<(String, String)> = sqlx::query_as(COUNT_REDELIVERY)
            .bind(scope)
            .bind(event_id)
            .bind(payload_sha256)
            .bind(received_at)
            .fetch_optional(pool)
            .await?;
        row.map(|(status, stored)| {
            Ok(Redelivered {
                status: parse_status(&status)?,
                conflict: stored != payload_sha256,
            })
        })
        .transpose()
    }
}
