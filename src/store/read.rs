//! Read queries for the admin API and page, and the ledger invariant check.
//! Pagination is keyset on integer ids, newest first: SQLite stores times as
//! text, so ids, not times, define the order.

use serde::Serialize;

use super::rows::{AuditRow, BalanceRow, EventDetailRow, EventRow, LedgerEntryRow};
use super::{Store, StoreError, on_pool};
use crate::domain::Status;

/// The columns of [`EventRow`], as a literal so queries stay `&'static str`.
macro_rules! event_columns {
    () => {
        "intent_id, source, event_id, event_type, status, reason, account_id, currency, \
         amount_minor, object_id, event_sequence as sequence, occurred_at, deliveries, conflicts, \
         payload_sha256, first_received_at, last_received_at"
    };
}

/// Optional filters are `$n is null or ...` so the statement text is fixed
/// and prepared once; `before` is the keyset cursor (an `intent_id`).
const LIST_EVENTS: &str = concat!(
    "select ",
    event_columns!(),
    " from intents
where ($1 is null or source = $1)
  and ($2 is null or status = $2)
  and ($3 is null or account_id = $3)
  and ($4 is null or intent_id < $4)
order by intent_id desc
limit $5"
);

/// Held events, oldest first: the operator's queue.
const HELD_EVENTS: &str = concat!(
    "select ",
    event_columns!(),
    " from intents where status in ('stale', 'rejected') order by intent_id limit $1"
);

const EVENT_DETAIL: &str = concat!(
    "select ",
    event_columns!(),
    ", payload from intents where source = $1 and event_id = $2"
);

const ACCOUNT_BALANCES: &str = "
select account_id, currency, balance_minor, updated_at
from balances where account_id = $1 order by currency";

const LIST_BALANCES: &str = "
select account_id, currency, balance_minor, updated_at
from balances order by account_id, currency limit $1";

const ACCOUNT_ENTRIES: &str = "
select entry_id, source, event_id, account_id, currency, amount_minor, balance_after_minor,
    object_id, operator_applied, created_at
from ledger_entries
where account_id = $1 and ($2 is null or entry_id < $2)
order by entry_id desc
limit $3";

const EVENT_AUDIT: &str = "
select audit_id, action, source, event_id, previous_status, actor, note, created_at
from audit_log where source = $1 and event_id = $2 order by audit_id";

/// Every (account, currency) whose balance is not the sum of its ledger.
/// `cast` because PostgreSQL's sum(bigint) is numeric.
const BALANCE_MISMATCHES: &str = "
select account_id, currency,
    cast(sum(balance) as bigint) as balance_minor,
    cast(sum(entry) as bigint) as ledger_minor
from (
    select account_id, currency, balance_minor as balance, 0 as entry from balances
    union all
    select account_id, currency, 0 as balance, amount_minor as entry from ledger_entries
) as t
group by account_id, currency
having sum(balance) <> sum(entry)
order by account_id, currency";

/// Ledger entries whose intent is missing, not applied, or disagrees
/// (`is distinct from`: a NULL on the intent side is a disagreement too).
const ORPHAN_ENTRIES: &str = "
select l.source, l.event_id from ledger_entries l
left join intents i on i.intent_id = l.intent_id
where i.intent_id is null or i.status <> 'applied'
    or i.source <> l.source or i.event_id <> l.event_id
    or i.account_id is distinct from l.account_id
    or i.currency is distinct from l.currency
    or i.amount_minor is distinct from l.amount_minor
order by l.entry_id";

/// Applied intents without their ledger entry.
const UNPOSTED_INTENTS: &str = "
select i.source, i.event_id from intents i
left join ledger_entries l on l.intent_id = i.intent_id
where i.status = 'applied' and l.entry_id is null
order by i.intent_id";

/// Keys stored twice. The unique constraints make this impossible; the check
/// proves the constraints are in place on this database.
const DUPLICATE_KEYS: &str = "
select source, event_id from intents group by source, event_id having count(*) > 1
union all
select source, event_id from ledger_entries group by source, event_id having count(*) > 1";

#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub source: Option<String>,
    pub status: Option<Status>,
    pub account_id: Option<String>,
    pub before: Option<i64>,
    pub limit: i64,
}

/// A broken ledger invariant. None of these can happen if every balance
/// change goes through the one transaction; the check proves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Violation {
    BalanceMismatch {
        account_id: String,
        currency: String,
        balance_minor: i64,
        ledger_minor: i64,
    },
    EntryWithoutAppliedIntent {
        source: String,
        event_id: String,
    },
    AppliedIntentWithoutEntry {
        source: String,
        event_id: String,
    },
    DuplicateKey {
        source: String,
        event_id: String,
    },
}

impl Store {
    pub async fn list_events(&self, filter: &EventFilter) -> Result<Vec<EventRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(LIST_EVENTS)
            .bind(filter.source.as_deref())
            .bind(filter.status.map(Status::as_str))
            .bind(filter.account_id.as_deref())
            .bind(filter.before)
            .bind(filter.limit)
            .fetch_all(pool)
            .await)?)
    }

    pub async fn held_events(&self, limit: i64) -> Result<Vec<EventRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(HELD_EVENTS).bind(limit).fetch_all(pool).await)?)
    }

    pub async fn event(
        &self,
        source: &str,
        event_id: &str,
    ) -> Result<Option<EventDetailRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(EVENT_DETAIL)
            .bind(source)
            .bind(event_id)
            .fetch_optional(pool)
            .await)?)
    }

    pub async fn account_balances(&self, account_id: &str) -> Result<Vec<BalanceRow>, StoreError> {
        Ok(
            on_pool!(self, pool => sqlx::query_as(ACCOUNT_BALANCES).bind(account_id).fetch_all(pool).await)?,
        )
    }

    pub async fn list_balances(&self, limit: i64) -> Result<Vec<BalanceRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(LIST_BALANCES).bind(limit).fetch_all(pool).await)?)
    }

    pub async fn account_entries(
        &self,
        account_id: &str,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<LedgerEntryRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(ACCOUNT_ENTRIES)
            .bind(account_id)
            .bind(before)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    pub async fn event_audit(
        &self,
        source: &str,
        event_id: &str,
    ) -> Result<Vec<AuditRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(EVENT_AUDIT)
            .bind(source)
            .bind(event_id)
            .fetch_all(pool)
            .await)?)
    }

    /// Checks that balance = sum of ledger for every (account, currency), that
    /// ledger entries and applied intents correspond one to one, and that no
    /// (source, event_id) is stored twice.
    pub async fn check_invariants(&self) -> Result<Vec<Violation>, StoreError> {
        let mismatches: Vec<(String, String, i64, i64)> =
            on_pool!(self, pool => sqlx::query_as(BALANCE_MISMATCHES).fetch_all(pool).await)?;
        let orphans: Vec<(String, String)> =
            on_pool!(self, pool => sqlx::query_as(ORPHAN_ENTRIES).fetch_all(pool).await)?;
        let duplicates: Vec<(String, String)> =
            on_pool!(self, pool => sqlx::query_as(DUPLICATE_KEYS).fetch_all(pool).await)?;
        let unposted: Vec<(String, String)> =
            on_pool!(self, pool => sqlx::query_as(UNPOSTED_INTENTS).fetch_all(pool).await)?;
        let mismatches =
            mismatches
                .into_iter()
                .map(|(account_id, currency, balance_minor, ledger_minor)| {
                    Violation::BalanceMismatch {
                        account_id,
                        currency,
                        balance_minor,
                        ledger_minor,
                    }
                });
        let orphans = orphans
            .into_iter()
            .map(|(source, event_id)| Violation::EntryWithoutAppliedIntent { source, event_id });
        let unposted = unposted
            .into_iter()
            .map(|(source, event_id)| Violation::AppliedIntentWithoutEntry { source, event_id });
        let duplicates = duplicates
            .into_iter()
            .map(|(source, event_id)| Violation::DuplicateKey { source, event_id });
        Ok(mismatches
            .chain(orphans)
            .chain(unposted)
            .chain(duplicates)
            .collect())
    }
}
