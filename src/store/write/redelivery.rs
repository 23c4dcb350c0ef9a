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
//! matches no row (not committed, another body, or on PostgreSQL a row
//! another transaction holds locked) is left out of the answer, and that
//! delivery takes the full transaction, which recognises it just as well.
//! Counts are all that can go wrong: a crash can lose a batch's (on
//! PostgreSQL its commit does not wait for the WAL flush), and a batch that
//! fails after its commit (a connection lost before the answer) sends its
//! deliveries down the full path, which counts them again.
//!
//! - SQLite: the batch is its own write transaction, taken in turn with
//!   the group-committing writer, so it runs alone.
//! - PostgreSQL: rows another transaction holds are skipped (`skip
//!   locked`), so the batch never waits on a lock and no lock order can
//!   make it part of a deadlock (a release locks several intents in
//!   sequence order); `set_config(..., true)` lasts only for the
//!   statement's own transaction, so the connection goes back to the pool
//!   with synchronous commits.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::{Store, StoreError};
use crate::domain::Status;
use crate::store::rows::parse_status;

const COUNT_SQLITE: &str = "
update intents
set deliveries = deliveries + d.n, last_received_at = max(last_received_at, d.at)
from (select json_extract(value, '$.scope') as scope,
          json_extract(value, '$.event_id') as event_id,
          json_extract(value, '$.sha') as sha,
          json_extract(value, '$.n') as n,
          json_extract(value, '$.at') as at
      from json_each($1)) as d
where intents.scope = d.scope and intents.event_id = d.event_id
    and intents.payload_sha256 = d.sha
returning intents.scope, intents.event_id, intents.payload_sha256, intents.status";

const COUNT_PG: &str = "
with no_flush as (select set_config('synchronous_commit', 'off', true) as setting),
batch as (
    select * from json_to_recordset(CAST($1 AS json))
        as d(scope text, event_id text, sha text, n bigint, at timestamptz)
),
locked as (
    select i.intent_id, b.n, b.at
    from intents i
    join batch b on i.scope = b.scope and i.event_id = b.event_id and i.payload_sha256 = b.sha
    where (select setting from no_flush) = 'off'
    for update of i skip locked
)
update intents
set deliveries = intents.deliveries + locked.n,
    last_received_at = greatest(intents.last_received_at, locked.at)
from locked
where intents.intent_id = locked.intent_id
returning intents.scope, intents.event_id, intents.payload_sha256, intents.status";

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
    /// When the latest of them was received, as sqlx writes a time on
    /// SQLite (RFC 3339, which PostgreSQL reads too).
    #[serde(rename = "at")]
    pub received_at: String,
}

/// A counted event, the body it stores, and its status now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redelivered {
    pub scope: String,
    pub event_id: String,
    pub payload_sha256: String,
    pub status: Status,
}

/// A receipt time as `RedeliveryCount` carries it.
pub fn received_at_text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

impl Store {
    /// Counts each redelivery of `batch` (its keys distinct) on its recorded
    /// event; the events found, with their status. A key not found is not
    /// counted.
    pub async fn count_redeliveries(
        &self,
        batch: &[RedeliveryCount<'_>],
    ) -> Result<Vec<Redelivered>, StoreError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let json = serde_json::to_string(batch).expect("strings and integers serialise");
        let rows: Vec<(String, String, String, String)> = match self {
            Store::Sqlite(..) => {
                let mut tx = self.begin().await?;
                let rows = on_tx!(tx, conn => sqlx::query_as(COUNT_SQLITE)
                    .bind(&json)
                    .fetch_all(conn)
                    .await)?;
                tx.commit().await?;
                rows
            }
            Store::Postgres(pool, ..) => {
                sqlx::query_as(COUNT_PG).bind(&json).fetch_all(pool).await?
            }
        };
        rows.into_iter()
            .map(|(scope, event_id, payload_sha256, status)| {
                Ok(Redelivered {
                    scope,
                    event_id,
                    payload_sha256,
                    status: parse_status(&status)?,
                })
            })
            .collect()
    }
}
