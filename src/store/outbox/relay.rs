//! What a relay does to outbox rows: claim a batch, record each attempt's
//! outcome, hand back a lease at shutdown. Re-queueing and the purge are in
//! `requeue`, the clock leases are judged by in `clock`.
//!
//! A claim is one statement that picks the rows and moves them into the
//! claimer's lease together: `attempts` counts the attempt, `leased_by`
//! names the claim (its relay, and which of that relay's claims) and
//! `next_attempt_ms` moves past the send's deadline.
//! Nothing else marks a row in flight, so a relay that dies mid-send leaves
//! rows that any relay claims again once their lease has passed (the
//! sweep), and a failure to record an outcome cannot make a row be sent
//! again before that: never a loop.
//!
//! Rows are chosen by state and time, never by a cursor over ids: on
//! PostgreSQL an id is assigned at insert, before commit, so a row can
//! become visible after rows with larger ids. A cursor would have moved
//! past it; a claim by state sees it the moment it commits.

use super::super::write::{TxConn, on_tx};
use super::super::{Store, StoreError};
use super::OutboxRow;

/// The rows a claim may take: pending and due. For an ordered destination
/// (`$5`), a posting only if no earlier posting of its account and
/// currency is still undelivered (pending, in flight or dead): one in flight
/// per account and currency, in `account_seq` order, and a dead letter
/// blocks its account until it is replayed. Postings of one account and
/// currency are numbered under their balance row's lock, so an earlier one
/// has always committed before a later one exists. Earlier postings are
/// the `ordered` ones (in `outbox_ordered_open`), which the relay's tidy
/// makes every undelivered posting of its ordered destination before its
/// first claim ([`Store::sync_ordered`]).
macro_rules! due_ids {
    () => {
        "
    select o.outbox_id from outbox o
    where o.destination = $1 and o.state = 'pending' and not o.behind
        and o.next_attempt_ms <= $3
        and (not $5 or o.account_seq is null or not exists (
            select 1 from outbox p
            where p.destination = o.destination and p.account_id = o.account_id
                and p.currency = o.currency and p.account_seq < o.account_seq
                and p.state <> 'delivered' and p.ordered))
    order by o.outbox_id
    limit $6"
    };
}

/// The claim proper: the chosen rows (`$ids`, a subquery) move into the
/// lease, each checked again as it is updated.
macro_rules! claim_rows {
    ($ids:expr) => {
        concat!(
            "
update outbox set attempts = attempts + 1, leased_by = $2, next_attempt_ms = $4
where outbox_id in (",
            $ids,
            ")
    and state = 'pending' and not behind and next_attempt_ms <= $3
returning outbox_id, destination, message_id, message_type, source, event_id, event_status,
    reason, account_id, currency, amount_minor, balance_after_minor, account_seq, object_id,
    occurred_at, posted_at, operator_applied, attempts"
        )
    };
}

/// PostgreSQL: relays on other instances skip the rows this claim has
/// locked and take others; the outer condition is re-checked on the row
/// after its lock is taken (READ COMMITTED), so a row another claim took
/// first is not taken twice. The choice is a materialised CTE, made once:
/// as a plain `in (subquery)` PostgreSQL may scan the subquery again for
/// each row it updates, and each scan skips the rows this statement has
/// already updated (locked by itself, no longer the version it sees), so
/// one claim took every due row, past its limit (a test claims 64 of 100).
/// `materialized` needs PostgreSQL 12 or later.
const CLAIM_POSTGRES: &str = concat!(
    "
with picked as materialized (",
    due_ids!(),
    "
    for update skip locked)",
    claim_rows!("select outbox_id from picked")
);
/// SQLite: one writer at a time (the claim runs in a write transaction),
/// and its subquery is run once.
pub(super) const CLAIM_SQLITE: &str = claim_rows!(due_ids!());

/// Acknowledged by the destination, a whole batch in one statement (the
/// ids as an array on PostgreSQL, as a JSON array on SQLite), for the rows
/// still in this claim's lease (`$3` names the claim, and every claim is
/// named apart). A relay records only while its lease lasts
/// (`outbox::Relay::record`), so that is every row it sent: every relay
/// judges a lease by one clock, PostgreSQL's (`outbox::row_clock`), or on
/// SQLite its one host's. Not a row re-queued since (an operator's replay
/// clears the lease) nor claimed again: a record tried again after a commit
/// that did happen but reported an error must not mark a replay delivered
/// unsent, nor one whose resend is in flight.
const DELIVERED_POSTGRES: &str = "
update outbox set state = 'delivered', delivered_ms = $2, leased_by = null, last_error = null
where outbox_id = any($1) and leased_by = $3 and state = 'pending'
returning outbox_id";
const DELIVERED_SQLITE: &str = "
update outbox set state = 'delivered', delivered_ms = $2, leased_by = null, last_error = null
where outbox_id in (select value from json_each($1)) and leased_by = $3 and state = 'pending'
returning outbox_id";

/// Only the claim this relay made ($2, $3): a row whose lease passed and
/// that another relay claimed since is that relay's to record. (`$2` names
/// the claim alone; the attempt is checked as well.)
const FAILED: &str = "
update outbox set leased_by = null, last_error = $4, next_attempt_ms = $5,
    state = case when attempts >= $6 then 'dead' else 'pending' end
where outbox_id = $1 and leased_by = $2 and attempts = $3 and state = 'pending'";

/// Shutdown: a claim not sent is handed back, due at once (0, as a new row
/// is), its attempt not counted.
const RELEASE: &str = "
update outbox set leased_by = null, next_attempt_ms = 0, attempts = attempts - 1
where outbox_id = $1 and leased_by = $2 and attempts = $3 and state = 'pending'";

/// What [`Store::record_attempts`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// The rows marked delivered by this call.
    pub delivered_ids: Vec<i64>,
    /// Rows this call made dead letters.
    pub dead: u64,
}

impl Recorded {
    /// How many rows this call marked delivered.
    pub fn delivered(&self) -> u64 {
        self.delivered_ids.len() as u64
    }
}

/// How one claimed row's attempt ended.
#[derive(Debug, Clone)]
pub enum Attempted {
    Delivered,
    /// Retried `retry_in` after the outcome is recorded, or dead once
    /// `attempts` reaches `max_attempts`.
    Failed {
        error: String,
        retry_in: std::time::Duration,
        max_attempts: i64,
    },
    /// Not sent (shutdown): due again at once.
    Released,
}

impl Store {
    /// Claims up to `limit` due rows of `destination` for the claim named
    /// `claim`, leased until `lease_until_ms`; in id order. The name is
    /// what records the claim's outcomes ([`Store::record_attempts`]): a
    /// relay gives each of its claims a name of its own.
    pub async fn claim_outbox(
        &self,
        destination: &str,
        ordered: bool,
        claim: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: i64,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let mut tx = self.begin().await?;
        let sql = match self {
            Store::Sqlite(..) => CLAIM_SQLITE,
            Store::Postgres(..) => CLAIM_POSTGRES,
        };
        let mut rows: Vec<OutboxRow> = on_tx!(&mut tx, conn => sqlx::query_as(sql)
            .bind(destination)
            .bind(claim)
            .bind(now_ms)
            .bind(lease_until_ms)
            .bind(ordered)
            .bind(limit)
            .fetch_all(conn)
            .await)?;
        tx.commit().await?;
        rows.sort_unstable_by_key(|row| row.outbox_id);
        Ok(rows)
    }

    /// Records the outcome of each attempt of the claim named `claim`, in one
    /// transaction; what it changed (a row another relay recorded first,
    /// or took over after the lease passed, is not counted). For an
    /// `ordered` destination, the next posting of each delivered one's
    /// account is cleared to go (see `behind`). `now_ms`: by the clock the
    /// leases are judged by (`outbox::row_clock`).
    pub async fn record_attempts(
        &self,
        claim: &str,
        outcomes: &[(&OutboxRow, Attempted)],
        ordered: bool,
        now_ms: i64,
    ) -> Result<Recorded, StoreError> {
        let mut recorded = Recorded::default();
        let mut tx = self.begin().await?;
        let delivered: Vec<i64> = outcomes
            .iter()
            .filter(|(_, outcome)| matches!(outcome, Attempted::Delivered))
            .map(|(row, _)| row.outbox_id)
            .collect();
        if !delivered.is_empty() {
            let marked: Vec<(i64,)> = match &mut tx.conn {
                TxConn::Sqlite(conn, _) => {
                    let ids = serde_json::to_string(&delivered).expect("integers serialise");
                    sqlx::query_as(DELIVERED_SQLITE)
                        .bind(ids)
                        .bind(now_ms)
                        .bind(claim)
                        .fetch_all(&mut **conn)
                        .await?
                }
                TxConn::Postgres(conn) => {
                    sqlx::query_as(DELIVERED_POSTGRES)
                        .bind(&delivered)
                        .bind(now_ms)
                        .bind(claim)
                        .fetch_all(&mut **conn)
                        .await?
                }
            };
            recorded.delivered_ids = marked.into_iter().map(|(id,)| id).collect();
            if ordered && !recorded.delivered_ids.is_empty() {
                super::behind::clear_next(&mut tx.conn, &recorded.delivered_ids).await?;
            }
        }
        for (row, outcome) in outcomes {
            let changed = on_tx!(&mut tx, conn => match outcome {
                Attempted::Delivered => continue,
                Attempted::Failed {
                    error,
                    retry_in,
                    max_attempts,
                } => {
                    // From this try's clock: a record tried again does not
                    // shorten the wait.
                    let retry_in = i64::try_from(retry_in.as_millis()).unwrap_or(i64::MAX);
                    sqlx::query(FAILED)
                        .bind(row.outbox_id)
                        .bind(claim)
                        .bind(row.attempts)
                        .bind(error.as_str())
                        .bind(now_ms.saturating_add(retry_in))
                        .bind(*max_attempts)
                        .execute(conn)
                        .await
                }
                Attempted::Released => {
                    sqlx::query(RELEASE)
                        .bind(row.outbox_id)
                        .bind(claim)
                        .bind(row.attempts)
                        .execute(conn)
                        .await
                }
            }
            .map(|done| done.rows_affected() > 0))?;
            // FAILED's own rule: the last attempt makes the row dead.
            if let Attempted::Failed { max_attempts, .. } = outcome
                && changed
                && row.attempts >= *max_attempts
            {
                recorded.dead += 1;
            }
        }
        tx.commit().await?;
        if ordered && !recorded.delivered_ids.is_empty() {
            self.clear_next_after_commit(&recorded.delivered_ids).await;
        }
        Ok(recorded)
    }
}
