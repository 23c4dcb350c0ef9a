//! The ledger invariant check: what must hold whatever happened, on both
//! backends. None of these can be violated if every balance change goes
//! through the one transaction; the check proves it, after every test
//! scenario and on demand at `/admin/api/check`.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Store, StoreError};

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

/// The ledger chain: per (account, currency), in entry order, the running
/// sum of amounts must equal every entry's `balance_after_minor` (with
/// BALANCE_MISMATCHES, the last one is the balance). The first entry that
/// breaks it, per (account, currency). One pass over the ledger, sorted by
/// (account, currency, entry); measured in README.
const BROKEN_CHAINS: &str = "
select account_id, currency, entry_id, balance_after_minor, running_minor
from (
    select c.account_id, c.currency, c.entry_id, c.balance_after_minor, c.running_minor,
        row_number() over (partition by c.account_id, c.currency order by c.entry_id) as nth
    from (
        select account_id, currency, entry_id, balance_after_minor,
            cast(sum(amount_minor) over (
                partition by account_id, currency order by entry_id
                rows between unbounded preceding and current row) as bigint) as running_minor
        from ledger_entries
    ) as c
    where c.running_minor <> c.balance_after_minor
) as f
where nth = 1
order by account_id, currency
limit 100";

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

/// Keys stored twice: (source, event_id), and the intent key (scope,
/// event_id), reported with the scope as its `source`. The unique
/// constraints make this impossible; the check proves the constraints are in
/// place on this database.
const DUPLICATE_KEYS: &str = "
select source, event_id from intents group by source, event_id having count(*) > 1
union all
select scope, event_id from intents group by scope, event_id having count(*) > 1
union all
select source, event_id from ledger_entries group by source, event_id having count(*) > 1";

/// A parked event whose predecessors are all applied (or that the guard has
/// passed): its release was lost. While a backlog longer than
/// `release_batch` drains, the next one is in this state between two drain
/// transactions; `guard_updated_at` tells a fresh one from a stuck one.
const STUCK_RELEASES: &str = "
select i.source, i.account_id, i.event_id, i.event_sequence, g.updated_at
from intents i
join sequence_guards g on g.source = i.source and g.account_id = i.account_id
where i.status = 'waiting' and i.event_sequence <= g.last_sequence + 1
order by i.intent_id";

/// Guards that differ from the highest sequence applied or skipped on their
/// account. Both modes keep this: a guard only moves to the sequence of an
/// event applied in the same transaction, or to the end of a range an
/// operator skipped; events applied late (or by an operator) are below it.
/// After an operator's guard reset, the events applied before it no longer
/// count and the reset's value does. Accounts whose only events are parked
/// have a guard and nothing applied; they are not compared.
///
/// The applied intents of accounts never reset are read in one pass,
/// without their entries (10.3 million at 10 million stored events: 7.6 s
/// on PostgreSQL, where a probe of the resets and the entries per intent,
/// then a sort, took 21.7 s); those of reset accounts (rare: an operator's
/// action) are found by account, each with its entry, and count only if
/// made after the account's last reset.
const GUARD_MISMATCHES: &str = "
select a.source, a.account_id, g.last_sequence, a.highest
from (
    select source, account_id, max(passed) as highest
    from (
        select i.source, i.account_id, i.event_sequence as passed
        from intents i where i.status = 'applied'
            and not exists (select 1 from guard_resets r
                where r.source = i.source and r.account_id = i.account_id)
        union all
        select i.source, i.account_id, i.event_sequence as passed
        from (select source, account_id, max(after_entry_id) as after_entry_id
            from guard_resets group by source, account_id) as r
        join intents i on i.source = r.source and i.account_id = r.account_id
        left join ledger_entries l on l.intent_id = i.intent_id
        where i.status = 'applied'
            and (l.entry_id is null or l.entry_id > r.after_entry_id)
        union all
        select source, account_id, last_skipped as passed from sequence_skips
        union all
        select r.source, r.account_id, r.reset_to as passed from guard_resets r
        where r.reset_id = (select max(reset_id) from guard_resets n
            where n.source = r.source and n.account_id = r.account_id)
    ) as p
    group by source, account_id
) as a
left join sequence_guards g on g.source = a.source and g.account_id = a.account_id
where g.last_sequence is null or g.last_sequence <> a.highest
order by a.source, a.account_id";

/// Payments whose row disagrees with their applied ledger entries: what the
/// credits posted, what the reversals took back (minus reinstatements), and
/// that every one of those entries is on the payment's account and currency.
/// A refund can never take more than its payment credited: the table's
/// check constraint enforces it, and this proves the rows are the ledger's.
/// The applied intents are read once, each entry finding its payment by
/// key, and summed per payment before the payments are joined: no index
/// serves intents by payment whatever their status, so a join from each
/// payment to its intents read every applied intent once per payment
/// (minutes on SQLite at 35,000 payments).
const PAYMENT_MISMATCHES: &str = "
select p.scope, p.payment_ref, p.credited_minor, p.reversed_minor,
    coalesce(e.ledger_credited, 0) as ledger_credited,
    coalesce(e.ledger_reversed, 0) as ledger_reversed
from payments p
left join (
    select q.payment_id,
        cast(sum(case when i.reversal is null then l.amount_minor else 0 end) as bigint)
            as ledger_credited,
        cast(sum(case when i.reversal is null then 0 else -l.amount_minor end) as bigint)
            as ledger_reversed,
        sum(case when l.account_id <> q.account_id or l.currency <> q.currency
            then 1 else 0 end) as elsewhere
    from intents i
    join ledger_entries l on l.intent_id = i.intent_id
    join payments q on q.scope = i.scope and q.payment_ref = i.payment_ref
    where i.status = 'applied'
    group by q.payment_id
) as e on e.payment_id = p.payment_id
where p.credited_minor <> coalesce(e.ledger_credited, 0)
    or p.reversed_minor <> coalesce(e.ledger_reversed, 0)
    or coalesce(e.elsewhere, 0) > 0
order by p.scope, p.payment_ref";

/// PostgreSQL: the bound on each of the check's statements, in place of
/// the delivery's (`database.statement_timeout_ms`, 15 s by default). Ten
/// minutes, the periodic check's interval: the slowest statement took 4.4 s
/// at 1.6 million entries; a ledger where one takes longer than this has
/// outgrown a whole-ledger check run on a timer.
pub(in crate::store) const CHECK_BOUND: &str =
    "set transaction read only; set local statement_timeout = '600s'";

/// A broken ledger invariant. None of these can happen if every balance
/// change goes through the one transaction; the check proves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
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
    /// A parked event is next in line but was not released.
    StuckRelease {
        source: String,
        account_id: String,
        event_id: String,
        sequence: i64,
        /// When the guard last moved: recent while a backlog drains.
        guard_updated_at: DateTime<Utc>,
    },
    /// The sequence guard is not the highest sequence applied or skipped.
    GuardMismatch {
        source: String,
        account_id: String,
        guard: Option<i64>,
        highest_applied_or_skipped: i64,
    },
    /// An entry whose `balance_after_minor` is not the sum of its account's
    /// entries in that currency up to it (the first such, per account).
    BrokenChain {
        account_id: String,
        currency: String,
        entry_id: i64,
        balance_after_minor: i64,
        running_minor: i64,
    },
    /// A payment's credited or reversed total is not its ledger's.
    PaymentMismatch {
        scope: String,
        payment_ref: String,
        credited_minor: i64,
        reversed_minor: i64,
        ledger_credited_minor: i64,
        ledger_reversed_minor: i64,
    },
}

/// What each of the check's statements found, as their rows.
struct Found {
    mismatches: Vec<(String, String, i64, i64)>,
    chains: Vec<(String, String, i64, i64, i64)>,
    orphans: Vec<(String, String)>,
    unposted: Vec<(String, String)>,
    duplicates: Vec<(String, String)>,
    stuck: Vec<(String, String, String, i64, DateTime<Utc>)>,
    guards: Vec<(String, String, Option<i64>, i64)>,
    payments: Vec<(String, String, i64, i64, i64, i64)>,
}

/// Every row `$sql` returns on `$conn`.
macro_rules! rows {
    ($conn:expr, $sql:expr) => {
        sqlx::query_as($sql).fetch_all(&mut *$conn).await?
    };
}

/// Runs every statement of the check on `$conn` (a connection or a
/// transaction of either backend), one after another.
macro_rules! find_all {
    ($conn:expr) => {
        Found {
            mismatches: rows!($conn, BALANCE_MISMATCHES),
            chains: rows!($conn, BROKEN_CHAINS),
            orphans: rows!($conn, ORPHAN_ENTRIES),
            unposted: rows!($conn, UNPOSTED_INTENTS),
            duplicates: rows!($conn, DUPLICATE_KEYS),
            stuck: rows!($conn, STUCK_RELEASES),
            guards: rows!($conn, GUARD_MISMATCHES),
            payments: rows!($conn, PAYMENT_MISMATCHES),
        }
    };
}

impl Found {
    /// The rows as violations, in the order of [`Found`]'s fields.
    fn into_violations(self) -> Vec<Violation> {
        let mismatches = self.mismatches.into_iter().map(
            |(account_id, currency, balance_minor, ledger_minor)| Violation::BalanceMismatch {
                account_id,
                currency,
                balance_minor,
                ledger_minor,
            },
        );
        let chains = self.chains.into_iter().map(
            |(account_id, currency, entry_id, balance_after_minor, running_minor)| {
                Violation::BrokenChain {
                    account_id,
                    currency,
                    entry_id,
                    balance_after_minor,
                    running_minor,
                }
            },
        );
        let orphans = self
            .orphans
            .into_iter()
            .map(|(source, event_id)| Violation::EntryWithoutAppliedIntent { source, event_id });
        let unposted = self
            .unposted
            .into_iter()
            .map(|(source, event_id)| Violation::AppliedIntentWithoutEntry { source, event_id });
        let duplicates = self
            .duplicates
            .into_iter()
            .map(|(source, event_id)| Violation::DuplicateKey { source, event_id });
        let stuck = self.stuck.into_iter().map(
            |(source, account_id, event_id, sequence, guard_updated_at)| Violation::StuckRelease {
                source,
                account_id,
                event_id,
                sequence,
                guard_updated_at,
            },
        );
        let guards = self.guards.into_iter().map(
            |(source, account_id, guard, highest_applied_or_skipped)| Violation::GuardMismatch {
                source,
                account_id,
                guard,
                highest_applied_or_skipped,
            },
        );
        let payments = self.payments.into_iter().map(
            |(scope, payment_ref, credited, reversed, ledger_credited, ledger_reversed)| {
                Violation::PaymentMismatch {
                    scope,
                    payment_ref,
                    credited_minor: credited,
                    reversed_minor: reversed,
                    ledger_credited_minor: ledger_credited,
                    ledger_reversed_minor: ledger_reversed,
                }
            },
        );
        mismatches
            .chain(chains)
            .chain(orphans)
            .chain(unposted)
            .chain(duplicates)
            .chain(stuck)
            .chain(guards)
            .chain(payments)
            .collect()
    }
}

impl Store {
    /// Checks that balance = sum of ledger for every (account, currency), that
    /// each entry's balance after is the running sum in entry order, that
    /// ledger entries and applied intents correspond one to one, that no
    /// (source, event_id) is stored twice, that no parked event was left
    /// behind by a release, that every guard is the highest sequence
    /// applied or skipped on its account, and that every payment's totals
    /// are its ledger's.
    pub async fn check_invariants(&self) -> Result<Vec<Violation>, StoreError> {
        // Every statement reads the whole ledger: linear in its size, tens
        // of seconds at 10 million entries (BENCHMARKS.md), past the bound
        // a delivery's statement gets. So the check runs on one connection
        // of its own, on PostgreSQL in a read-only transaction with its
        // own bound (`set local`: given back with the connection, whatever
        // happens to this task). READ COMMITTED, so each statement reads
        // its own snapshot and none holds one for the whole check. SQLite
        // bounds no statement; a transaction there would hold one
        // snapshot, and the log behind it, for the whole check.
        let found = match self {
            Store::Sqlite(pool, ..) => {
                let mut conn = pool.acquire().await?;
                find_all!(conn)
            }
            Store::Postgres(pool, ..) => {
                let mut tx = pool.begin().await?;
                sqlx::raw_sql(CHECK_BOUND).execute(&mut *tx).await?;
                let found = find_all!(tx);
                tx.commit().await?;
                found
            }
        };
        Ok(found.into_violations())
    }
}

#[cfg(test)]
mod tests {
    use super::PAYMENT_MISMATCHES;
    use crate::store::plans::{migrated, plan};

    /// The payments' check reads the applied intents once, each entry's
    /// payment by its key, never every applied intent for each payment.
    #[tokio::test]
    async fn the_payments_check_reads_each_intent_once() {
        let plan = plan(&migrated().await, PAYMENT_MISMATCHES).await;
        let intents: Vec<&str> = plan.lines().filter(|l| l.contains(" i ")).collect();
        assert_eq!(intents.len(), 1, "{plan}");
        assert!(!intents[0].contains("LEFT-JOIN"), "{plan}");
        assert!(plan.contains("SEARCH q USING INDEX"), "{plan}");
    }
}
