//! Reconcile runs' state per source (docs/operating/reconcile.md): how far the
//! provider's records have been read, the last run
//! and its outcome, and the lease that keeps two instances from sweeping
//! one source at once. Times are unix milliseconds by the database's clock
//! (`Store::database_now_ms`), as the outbox's leases are.

use super::write::on_tx;
use super::{Store, StoreError, on_pool};

/// A source's reconcile state, as the admin page and `/metrics` show it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ReconcileRun {
    pub source: String,
    /// Every event visible before this time has been read.
    pub read_through_ms: Option<i64>,
    pub last_run_ms: Option<i64>,
    /// `ok`, or why the last run stopped.
    pub last_outcome: Option<String>,
    pub last_success_ms: Option<i64>,
    /// Events recovered by every run so far.
    pub recovered: i64,
}

/// How a run ended, recorded under its lease.
pub struct RunEnd<'a> {
    pub source: &'a str,
    pub owner: &'a str,
    pub now_ms: i64,
    /// When the run started: a complete run's `last_success_ms`.
    pub started_ms: i64,
    /// `Ok(Some(through))`: complete through that time (the cursor moves
    /// there); `Ok(None)`: complete, but its window started after where the
    /// next run reads from (`--since`), so the cursor stays; `Err(why)`:
    /// stopped, the cursor stays.
    pub outcome: Result<Option<i64>, &'a str>,
    pub recovered: i64,
}

const ENSURE_ROW: &str = "
insert into reconcile_runs (source) values ($1) on conflict (source) do nothing";

/// Takes (or renews) the lease if it is free, lapsed or already this
/// owner's: one conditional statement, so of two instances asking at once
/// one gets the row back (PostgreSQL re-evaluates the condition on the row
/// the first committed; SQLite runs one writer). The cursor comes back
/// with it.
const TAKE_LEASE: &str = "
update reconcile_runs set leased_by = $2, lease_until_ms = $3 + $4
where source = $1 and (leased_by is null or leased_by = $2 or lease_until_ms <= $3)
returning read_through_ms";

/// Records a run's end and frees the lease, only while this owner holds
/// it: a run whose lease lapsed and was taken records nothing (the taker
/// reads the same stretch again, and what it recovers is once per key).
const FINISH: &str = "
update reconcile_runs set leased_by = null, lease_until_ms = null, last_run_ms = $3,
    last_outcome = $4,
    read_through_ms = case when $5 then $6 else read_through_ms end,
    last_success_ms = case when $5 then $8 else last_success_ms end,
    recovered = recovered + $7
where source = $1 and leased_by = $2";

const RUNS: &str = "
select source, read_through_ms, last_run_ms, last_outcome, last_success_ms, recovered
from reconcile_runs order by source";

/// The lease a run holds: what it may read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// Where the last complete run left off; `None` before the first.
    pub read_through_ms: Option<i64>,
}

impl Store {
    /// The lease on `source`'s reconcile for `owner` until `ttl_ms` from
    /// `now_ms`, or `None` while another instance holds it.
    pub async fn take_reconcile_lease(
        &self,
        source: &str,
        owner: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Option<Lease>, StoreError> {
        // A write transaction, so that on SQLite it takes its turn with
        // the deliveries.
        let mut tx = self.begin().await?;
        on_tx!(&mut tx, conn => sqlx::query(ENSURE_ROW)
            .bind(source)
            .execute(conn)
            .await
            .map(drop))?;
        let row: Option<(Option<i64>,)> = on_tx!(&mut tx, conn => sqlx::query_as(TAKE_LEASE)
            .bind(source)
            .bind(owner)
            .bind(now_ms)
            .bind(ttl_ms)
            .fetch_optional(conn)
            .await)?;
        tx.commit().await?;
        Ok(row.map(|(read_through_ms,)| Lease { read_through_ms }))
    }

    /// Records how a run ended and frees its lease; false if the lease was
    /// no longer this owner's (nothing recorded).
    pub async fn finish_reconcile(&self, end: &RunEnd<'_>) -> Result<bool, StoreError> {
        let (ok, through, outcome) = match end.outcome {
            Ok(Some(through)) => (true, Some(through), "ok"),
            Ok(None) => (
                false,
                None,
                "ok; the cursor stays (--since started after it)",
            ),
            Err(why) => (false, None, why),
        };
        let mut tx = self.begin().await?;
        let done = on_tx!(&mut tx, conn => sqlx::query(FINISH)
            .bind(end.source)
            .bind(end.owner)
            .bind(end.now_ms)
            .bind(outcome)
            .bind(ok)
            .bind(through)
            .bind(end.recovered)
            .bind(end.started_ms)
            .execute(conn)
            .await
            .map(|done| done.rows_affected()))?;
        tx.commit().await?;
        Ok(done == 1)
    }

    /// Every source's reconcile state, by name.
    pub async fn reconcile_runs(&self) -> Result<Vec<ReconcileRun>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(RUNS).fetch_all(pool).await?))
    }
}
