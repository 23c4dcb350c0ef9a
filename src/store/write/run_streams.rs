//! The contiguous streams of a run of postings (`ingest::run_of_postings`):
//! which of its (source, account) pairs a run may not decide in memory.
//!
//! A run applies a contiguous event in memory only where it is the next
//! number and nothing else is in its way: no event of the stream is parked
//! (`waiting`: applying the next number would release it), and no intent
//! outside the run holds its number (one by one, the holder check rejects
//! it: a parked event that got the number first, or one applied above a
//! guard moved back, which no operator action does to a stream). One
//! statement answers both for the whole run. Its reads need no row lock: the run reads them after it locked the
//! streams' guard rows (`lock_run_guards`), and every park and every new
//! holder of a number is written under its stream's guard lock (see
//! `SEQUENCE_HOLDER`'s callers), so none appears until the run commits; an
//! operator's dismiss only takes a parked event away (the run then decides
//! that stream alone, as a stream with one parked would be: the same
//! answers, since the dismissed event was not the next number). SQLite runs
//! one writer.

use std::collections::HashSet;

use sqlx::QueryBuilder;

use super::run::{RowKey, per_statement};
use super::{StoreError, TxConn, WriteTx};

/// The pairs of `unnest`ed (source, account, sequence) with a parked event,
/// or whose sequence an intent other than the run's (`$4`) holds, as
/// `SEQUENCE_HOLDER` finds one (the `intents_waiting` and
/// `intents_sequenced` indexes serve them).
const BUSY_PG: &str = "
select distinct k.source, k.account_id
from unnest($1::text[], $2::text[], $3::int8[]) as k(source, account_id, sequence)
where exists (
        select 1 from intents i
        where i.source = k.source and i.account_id = k.account_id and i.status = 'waiting')
    or exists (
        select 1 from intents i
        where i.source = k.source and i.account_id = k.account_id
            and i.event_sequence = k.sequence and i.status in ('applied', 'waiting', 'stale')
            and i.intent_id <> all($4::int8[]))";

/// SQLite's: a `values` list's columns are named column1, column2, ...;
/// the run's intent ids follow the list.
const BUSY_SQLITE: &str = "
select distinct k.column1, k.column2 from (";
const BUSY_SQLITE_WHERE: &str = ") as k
where exists (
        select 1 from intents i
        where i.source = k.column1 and i.account_id = k.column2 and i.status = 'waiting')
    or exists (
        select 1 from intents i
        where i.source = k.column1 and i.account_id = k.column2
            and i.event_sequence = k.column3 and i.status in ('applied', 'waiting', 'stale')
            and i.intent_id not in (";

impl WriteTx {
    /// Of `streams` (source, account, the sequence a run event takes), the
    /// (source, account) pairs with a parked event, or with one of those
    /// sequences held by an intent not in `run` (the run's new intents).
    pub async fn run_streams_busy(
        &mut self,
        streams: &[(&str, &str, i64)],
        run: &[i64],
    ) -> Result<HashSet<RowKey>, StoreError> {
        if streams.is_empty() {
            return Ok(HashSet::new());
        }
        let mut busy = HashSet::new();
        match &mut self.conn {
            TxConn::Postgres(tx) => {
                let rows: Vec<RowKey> = sqlx::query_as(BUSY_PG)
                    .bind(streams.iter().map(|s| s.0).collect::<Vec<_>>())
                    .bind(streams.iter().map(|s| s.1).collect::<Vec<_>>())
                    .bind(streams.iter().map(|s| s.2).collect::<Vec<_>>())
                    .bind(run)
                    // Planned for its arrays each time, as `keys`' look-ups:
                    // a generic plan may scan intents for the subqueries.
                    .persistent(false)
                    .fetch_all(&mut **tx)
                    .await?;
                busy.extend(rows);
            }
            TxConn::Sqlite(tx, _) => {
                // Each statement binds every run intent once, and its share
                // of the streams three binds each (a run is a group's events
                // at most: far below the limit).
                let room = per_statement(1).saturating_sub(run.len()) / 3;
                for chunk in streams.chunks(room.max(1)) {
                    let mut query = QueryBuilder::new(BUSY_SQLITE);
                    query.push_values(chunk, |mut row, (source, account, sequence)| {
                        row.push_bind(*source)
                            .push_bind(*account)
                            .push_bind(*sequence);
                    });
                    query.push(BUSY_SQLITE_WHERE);
                    let mut ids = query.separated(", ");
                    for id in run {
                        ids.push_bind(*id);
                    }
                    // `not in ()` is valid SQLite, and true.
                    ids.push_unseparated("))");
                    let rows: Vec<RowKey> = query
                        .build_query_as()
                        .persistent(false)
                        .fetch_all(&mut **tx)
                        .await?;
                    busy.extend(rows);
                }
            }
        }
        Ok(busy)
    }
}

/// SQLite's plan of the streams' read: both halves find their intents by
/// index (`intents_waiting` for the parked, `intents_sequenced` for a
/// number's holder), never by walking the intents table, however many
/// streams and run intents are bound.
#[cfg(test)]
mod plans {
    use super::{BUSY_SQLITE, BUSY_SQLITE_WHERE};
    use crate::store::plans::{migrated, plan, scans_a_table};

    #[tokio::test]
    async fn the_streams_read_searches_the_intents_indexes() {
        let sql = format!("{BUSY_SQLITE}values (?, ?, ?), (?, ?, ?){BUSY_SQLITE_WHERE}?, ?))");
        let plan = plan(&migrated().await, &sql).await;
        assert!(
            plan.contains("INDEX intents_waiting (source=? AND account_id=?)"),
            "{plan}"
        );
        assert!(
            plan.contains(
                "USING INDEX intents_sequenced (source=? AND account_id=? AND event_sequence=?)"
            ),
            "{plan}"
        );
        assert!(!scans_a_table(&plan), "{plan}");
    }
}
