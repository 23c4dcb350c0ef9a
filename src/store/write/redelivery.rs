//! Redeliveries counted in batches: one statement adds every waiting
//! redelivery to its event's counts and returns each event's status, the
//! cheap path for events this process has recently seen stored (see
//! `ingest::redelivery`).
//!
//! Why it is safe: a row is matched only by its key and the exact body it
//! stores, and is visible only once the transaction that inserted it has
//! committed, durably (that commit was synchronous), so the status answered
//! is a committed one. All the statement changes is the delivery count and
//! the last receipt time: no balance, ledger entry or status. A key that
//! matches no row (not committed, another body) is left out of the answer,
//! and that delivery takes the full transaction, which recognises it just
//! as well. Losing a batch's counts (a crash before the count's own commit
//! is flushed, on PostgreSQL, where it does not wait for the WAL flush)
//! loses counts and nothing else.
//!
//! - SQLite: the batch is its own write transaction, taken in turn with
//!   the group-committing writer, so it runs alone.
//! - PostgreSQL: the rows are locked in `intent_id` order before they are
//!   updated, so two instances counting overlapping batches cannot wait on
//!   each other in a cycle; `set_config(..., true)` lasts only for the
//!   statement's own transaction, so the connection goes back to the pool
//!   with synchronous commits.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Store, StoreError};
use crate::domain::Status;
use crate::store::rows::parse_status;

const COUNT_SQLITE: &str = "
update intents
set deliveries = deliveries + d.n, last_received_at = $2
from (select json_extract(value, '$.scope') as scope,
          json_extract(value, '$.event_id') as event_id,
          json_extract(value, '$.sha') as sha,
          json_extract(value, '$.n') as n
      from json_each($1)) as d
where intents.scope = d.scope and intents.event_id = d.event_id
    and intents.payload_sha256 = d.sha
returning intents.scope, intents.event_id, intents.status";

const COUNT_PG: &str = "
with no_flush as (select set_config('synchronous_commit', 'off', true) as setting),
batch as (
    select * from json_to_recordset(CAST($1 AS json))
        as d(scope text, event_id text, sha text, n bigint)
),
locked as (
    select i.intent_id, b.n
    from intents i
    join batch b on i.scope = b.scope and i.event_id = b.event_id and i.payload_sha256 = b.sha
    where (select setting from no_flush) = 'off'
    order by i.intent_id
    for update of i
)
update intents
set deliveries = intents.deliveries + locked.n, last_received_at = $2
from locked
where intents.intent_id = locked.intent_id
returning intents.scope, intents.event_id, intents.status";

/// One event's redeliveries in a batch, each with the body it stores.
#[derive(Debug, Clone, Serialize)]
pub struct RedeliveryCount<'a> {
    pub scope: &'a str,
    pub event_id: &'a str,
    #[serde(rename = "sha")]
    pub payload_sha256: &'a str,
    /// How many redeliveries this batch holds for it.
    #[serde(rename = "n")]
    pub deliveries: i64,
}

/// A counted event and its status now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redelivered {
    pub scope: String,
    pub event_id: String,
    pub status: Status,
}

impl Store {
    /// Counts each redelivery of `batch` (its keys distinct) on its recorded
    /// event, received by `received_at` at the latest; the events found,
    /// with their status. A key not found is not counted.
    pub async fn count_redeliveries(
        &self,
        batch: &[RedeliveryCount<'_>],
        received_at: DateTime<Utc>,
    ) -> Result<Vec<Redelivered>, StoreError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let json = serde_json::to_string(batch).expect("strings and integers serialise");
        let rows: Vec<(String, String, String)> = match self {
            Store::Sqlite(..) => {
                let mut tx = self.begin().await?;
                let rows = on_tx!(tx, conn => sqlx::query_as(COUNT_SQLITE)
                    .bind(&json)
                    .bind(received_at)
                    .fetch_all(conn)
                    .await)?;
                tx.commit().await?;
                rows
            }
            Store::Postgres(pool, _) => {
                sqlx::query_as(COUNT_PG)
                    .bind(&json)
                    .bind(received_at)
                    .fetch_all(pool)
                    .await?
            }
        };
        rows.into_iter()
            .map(|(scope, event_id, status)| {
                Ok(Redelivered {
                    scope,
                    event_id,
                    status: parse_status(&status)?,
                })
            })
            .collect()
    }
}
