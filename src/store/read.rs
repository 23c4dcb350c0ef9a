//! Read queries for the admin API and page.
//! Pagination is keyset on integer ids, newest first: SQLite stores times as
//! text, so ids, not times, define the order.

use base64::Engine;
use chrono::{DateTime, Timelike, Utc};

use super::rows::{AuditRow, BalanceRow, EventDetailRow, EventRow, LedgerEntryRow};
use super::{Store, StoreError, on_pool};
use crate::domain::{Origin, Status};

/// The columns of [`EventRow`], as a literal so queries stay `&'static str`.
macro_rules! event_columns {
    () => {
        "intent_id, source, scope, event_id, event_type, status, reason, account_id, currency, \
         amount_minor, object_id, payment_ref, event_sequence as sequence, occurred_at, \
         deliveries, conflicts, payload_sha256, first_received_at, last_received_at, late, origin"
    };
}

/// The events list: only the filters given become conditions (see
/// [`list_events_sql`]); `before` is the keyset cursor (an `intent_id`).
const LIST_EVENTS_HEAD: &str = concat!("select ", event_columns!(), " from intents");

/// The sources stored, found by hopping through `intents_by_source` one
/// source at a time (a handful of index probes, not a scan): an event id
/// searched without its source becomes a probe of the unique (source,
/// event_id) index per source, where `event_id = $n` alone would read the
/// whole table on both backends (neither has an index led by the event
/// id, and one more index on the insert path is not worth a search).
const STORED_SOURCES: &str = "with recursive stored_sources(source) as (
    select (select source from intents order by source limit 1)
    union all
    select (select i.source from intents i where i.source > stored_sources.source
        order by i.source limit 1)
    from stored_sources where stored_sources.source is not null
) ";

/// The oldest events (up to `$1`) whose status is one of those named:
/// the oldest of each status first, each an ordered walk of
/// `intents_by_status` that stops at the limit, then the oldest of those.
/// One read of all the statuses sorted by id read every held event (73 ms
/// on PostgreSQL with 10,000 held, BENCHMARKS.md 2026-12-06).
macro_rules! oldest_with_status {
    ($first:literal $(, $rest:literal)*) => {
        concat!(
            "select ",
            event_columns!(),
            " from intents where intent_id in (",
            oldest_ids!($first),
            $(" union all ", oldest_ids!($rest),)*
            ") order by intent_id limit $1"
        )
    };
}

/// The ids of the oldest events (up to `$1`) of one status.
macro_rules! oldest_ids {
    ($status:literal) => {
        concat!(
            "select intent_id from (select intent_id from intents where status = '",
            $status,
            "' order by intent_id limit $1) as held_",
            $status
        )
    };
}

/// Held events, oldest first: the operator's queue.
const HELD_EVENTS: &str = oldest_with_status!("stale", "rejected");

/// Everything a person may resolve, oldest first: stale, rejected, and
/// waiting (which only a dismiss or a skipped gap resolves).
const HELD_QUEUE: &str = oldest_with_status!("stale", "rejected", "waiting");

/// With, for a `duplicate_effect`, the event that credited its payment.
const EVENT_DETAIL: &str = concat!(
    "select ",
    event_columns!(),
    ", payload, payload_purged_at, signature_headers, signed_at, signed_event_id, conflict_sha256,
    replayed_into, replayed_from,
    (select c.source from payments p join intents c on c.intent_id = p.credited_by
     where intents.status = 'duplicate_effect' and p.scope = intents.scope
         and p.payment_ref = intents.payment_ref) as credited_by_source,
    (select c.event_id from payments p join intents c on c.intent_id = p.credited_by
     where intents.status = 'duplicate_effect' and p.scope = intents.scope
         and p.payment_ref = intents.payment_ref) as credited_by_event
from intents where source = $1 and event_id = $2"
);

/// Whether an intent is stored under the key (scope, event_id).
const INTENT_STORED: &str = "
select count(*) from intents where scope = $1 and event_id = $2";

const ACCOUNT_BALANCES: &str = "
select account_id, currency, balance_minor, updated_at
from balances where account_id = $1 order by currency";

const LIST_BALANCES: &str = "
select account_id, currency, balance_minor, updated_at
from balances order by account_id, currency limit $1";

const ACCOUNT_ENTRIES: &str = "
select entry_id, source, event_id, account_id, currency, amount_minor, balance_after_minor,
    account_seq, object_id, operator_applied, created_at
from ledger_entries
where account_id = $1 and ($2 is null or entry_id < $2)
order by entry_id desc
limit $3";

/// The entry an event posted (at most one: unique on source and event id).
const EVENT_ENTRY: &str = "
select entry_id, source, event_id, account_id, currency, amount_minor, balance_after_minor,
    account_seq, object_id, operator_applied, created_at
from ledger_entries where source = $1 and event_id = $2";

/// The parked events of one account, in the order they will be applied.
const WAITING_EVENTS: &str = concat!(
    "select ",
    event_columns!(),
    " from intents where source = $1 and account_id = $2 and status = 'waiting'
order by event_sequence
limit $3"
);

/// The stale events of one account above a sequence, in the order a guard
/// reset would apply them.
const STALE_ABOVE: &str = concat!(
    "select ",
    event_columns!(),
    " from intents where source = $1 and account_id = $2 and event_sequence > $3
    and status = 'stale'
order by event_sequence, intent_id
limit $4"
);

const EVENT_AUDIT: &str = "
select audit_id, action, source, event_id, account_id, previous_status, actor, note, detail,
    created_at
from audit_log where source = $1 and event_id = $2 order by audit_id";

/// Account-level actions (skip gap) on one account of one source.
const ACCOUNT_AUDIT: &str = "
select audit_id, action, source, event_id, account_id, previous_status, actor, note, detail,
    created_at
from audit_log where source = $1 and account_id = $2 order by audit_id desc limit $3";

/// The audit log, newest first, by actor if given; `$2` is the keyset
/// cursor (an `audit_id`).
const AUDIT_LOG: &str = "
select audit_id, action, source, event_id, account_id, previous_status, actor, note, detail,
    created_at
from audit_log
where ($1 is null or actor = $1) and ($2 is null or audit_id < $2)
order by audit_id desc limit $3";

#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub source: Option<String>,
    pub status: Option<Status>,
    pub account_id: Option<String>,
    pub event_type: Option<String>,
    /// The provider's event id, exactly.
    pub event_id: Option<String>,
    /// Delivered by webhook, or found by a reconcile run.
    pub origin: Option<Origin>,
    /// First received at or after this (whole seconds: SQLite compares the
    /// stored RFC 3339 text, exact at that precision).
    pub received_from: Option<DateTime<Utc>>,
    /// First received before this (whole seconds).
    pub received_before: Option<DateTime<Utc>>,
    pub before: Option<i64>,
    pub limit: i64,
}

/// The statement for the filters present, numbered in the order
/// [`Store::list_events`] binds them. Each combination is its own statement,
/// planned for what it filters on: one fixed `$n is null or ...` statement
/// would get a single generic plan on PostgreSQL that serves no filter well.
fn list_events_sql(filter: &EventFilter) -> String {
    let by_id_alone = filter.event_id.is_some() && filter.source.is_none();
    let (with, event_id) = match by_id_alone {
        true => (
            STORED_SOURCES,
            "source in (select source from stored_sources) and event_id = ",
        ),
        false => ("", "event_id = "),
    };
    let present = [
        ("source = ", filter.source.is_some()),
        ("status = ", filter.status.is_some()),
        ("account_id = ", filter.account_id.is_some()),
        ("event_type = ", filter.event_type.is_some()),
        (event_id, filter.event_id.is_some()),
        ("origin = ", filter.origin.is_some()),
        ("first_received_at >= ", filter.received_from.is_some()),
        ("first_received_at < ", filter.received_before.is_some()),
        ("intent_id < ", filter.before.is_some()),
    ];
    let conditions: Vec<String> = present
        .iter()
        .filter(|(_, given)| *given)
        .enumerate()
        .map(|(i, (condition, _))| format!("{condition}${}", i + 1))
        .collect();
    let limit = conditions.len() + 1;
    let filters = if conditions.is_empty() {
        String::new()
    } else {
        format!(" where {}", conditions.join(" and "))
    };
    format!("{with}{LIST_EVENTS_HEAD}{filters} order by intent_id desc limit ${limit}")
}

impl Store {
    /// Whether the key (scope, event id) is stored.
    pub async fn intent_stored(&self, scope: &str, event_id: &str) -> Result<bool, StoreError> {
        let (count,): (i64,) = on_pool!(self, pool => sqlx::query_as(INTENT_STORED)
            .bind(scope)
            .bind(event_id)
            .fetch_one(pool)
            .await?);
        Ok(count > 0)
    }
}

impl Store {
    pub async fn list_events(&self, filter: &EventFilter) -> Result<Vec<EventRow>, StoreError> {
        let sql = list_events_sql(filter);
        let second = |at: DateTime<Utc>| at.with_nanosecond(0).unwrap_or(at);
        Ok(on_pool!(self, pool => {
            // Bound in list_events_sql's order, each only when present. The
            // text is ours alone: fixed conditions and numbered parameters,
            // never a value.
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()));
            for text in [
                filter.source.as_deref(),
                filter.status.map(Status::as_str),
                filter.account_id.as_deref(),
                filter.event_type.as_deref(),
                filter.event_id.as_deref(),
                filter.origin.map(Origin::as_str),
            ]
            .into_iter()
            .flatten()
            {
                query = query.bind(text);
            }
            for at in [filter.received_from, filter.received_before].into_iter().flatten() {
                query = query.bind(second(at));
            }
            if let Some(before) = filter.before {
                query = query.bind(before);
            }
            query.bind(filter.limit).fetch_all(pool).await
        })?)
    }

    pub async fn held_queue(&self, limit: i64) -> Result<Vec<EventRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(HELD_QUEUE).bind(limit).fetch_all(pool).await)?)
    }

    pub async fn held_events(&self, limit: i64) -> Result<Vec<EventRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(HELD_EVENTS).bind(limit).fetch_all(pool).await)?)
    }

    pub async fn event(
        &self,
        source: &str,
        event_id: &str,
    ) -> Result<Option<EventDetailRow>, StoreError> {
        let row: Option<EventDetailRow> = on_pool!(self, pool => sqlx::query_as(EVENT_DETAIL)
            .bind(source)
            .bind(event_id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(|mut row| {
            if row.payload_text().is_none() {
                row.payload_base64 =
                    Some(base64::engine::general_purpose::STANDARD.encode(&row.payload));
            }
            row
        }))
    }

    pub async fn audit_log(
        &self,
        actor: Option<&str>,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<AuditRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(AUDIT_LOG)
            .bind(actor)
            .bind(before)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    pub async fn event_entry(
        &self,
        source: &str,
        event_id: &str,
    ) -> Result<Option<LedgerEntryRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(EVENT_ENTRY)
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

    pub async fn waiting_events(
        &self,
        source: &str,
        account_id: &str,
        limit: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(WAITING_EVENTS)
            .bind(source)
            .bind(account_id)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    pub async fn stale_above(
        &self,
        source: &str,
        account_id: &str,
        sequence: i64,
        limit: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(STALE_ABOVE)
            .bind(source)
            .bind(account_id)
            .bind(sequence)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    /// The newest account-level audit rows first.
    pub async fn account_audit(
        &self,
        source: &str,
        account_id: &str,
        limit: i64,
    ) -> Result<Vec<AuditRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(ACCOUNT_AUDIT)
            .bind(source)
            .bind(account_id)
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
}

#[cfg(test)]
mod tests {
    use super::{ACCOUNT_ENTRIES, EventFilter, HELD_EVENTS, HELD_QUEUE, list_events_sql};
    use crate::store::plans::{migrated, plan, scans_a_table};

    /// The admin's reads at 10 million stored events (BENCHMARKS): each
    /// walks an index, never the whole intents or ledger table.
    #[tokio::test]
    async fn the_admins_reads_walk_indexes() {
        let pool = migrated().await;
        let filter = |f: EventFilter| list_events_sql(&EventFilter { limit: 50, ..f });
        let by_id = filter(EventFilter {
            event_id: Some("evt".into()),
            ..EventFilter::default()
        });
        let by_account = filter(EventFilter {
            account_id: Some("acct".into()),
            ..EventFilter::default()
        });
        for sql in [
            by_id.as_str(),
            by_account.as_str(),
            HELD_QUEUE,
            HELD_EVENTS,
            ACCOUNT_ENTRIES,
        ] {
            let plan = plan(&pool, sql).await;
            assert!(!scans_a_table(&plan), "{sql}\n{plan}");
        }
        // An id alone probes the unique (source, event_id) key per source.
        let plan = plan(&pool, &by_id).await;
        assert!(plan.contains("(source=? AND event_id=?)"), "{plan}");
    }
}
