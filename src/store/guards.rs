//! Read queries about high-water sequence guards, for the operator's
//! "reset sequence guard" and the held queue's per-account view.

use super::rows::HeldAccountRow;
use super::{Store, StoreError, on_pool};

const GUARD: &str = "
select last_sequence from sequence_guards where source = $1 and account_id = $2";

/// The guard as it would be without the event(s) that set it: the highest
/// sequence below it that moved it: applied in order (late events never
/// moved it; an operator's apply that moved it clears `late`), and since the
/// account's latest reset (its value, and what was applied after it: the
/// ledger entries past its watermark).
const HIGHEST_APPLIED_BELOW: &str = "
select max(s) from (
    select i.event_sequence as s
    from intents i
    join ledger_entries l on l.intent_id = i.intent_id
    where i.source = $1 and i.account_id = $2 and i.status = 'applied' and not i.late
        and i.event_sequence < $3
        and not exists (
            select 1 from guard_resets r
            where r.source = i.source and r.account_id = i.account_id
                and l.entry_id <= r.after_entry_id)
    union all
    select r.reset_to as s from guard_resets r
    where r.source = $1 and r.account_id = $2 and r.reset_to < $3
        and r.reset_id = (select max(n.reset_id) from guard_resets n
            where n.source = $1 and n.account_id = $2)
) as c";

/// Accounts holding at least `$1` events for an operator, most first.
const HELD_ACCOUNTS: &str = "
select source, account_id, count(*) as held,
    sum(case when status = 'stale' then 1 else 0 end) as stale,
    min(event_sequence) as lowest_sequence, max(event_sequence) as highest_sequence
from intents
where status in ('stale', 'rejected') and account_id is not null
group by source, account_id
having count(*) >= $1
order by count(*) desc, source, account_id
limit $2";

impl Store {
    /// An account's guard, if it has had an ordered event.
    pub async fn guard(&self, source: &str, account_id: &str) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = on_pool!(self, pool => sqlx::query_as(GUARD)
            .bind(source)
            .bind(account_id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(|(guard,)| guard))
    }

    pub async fn highest_applied_below(
        &self,
        source: &str,
        account_id: &str,
        below: i64,
    ) -> Result<Option<i64>, StoreError> {
        let (highest,): (Option<i64>,) = on_pool!(self, pool => sqlx::query_as(HIGHEST_APPLIED_BELOW)
            .bind(source)
            .bind(account_id)
            .bind(below)
            .fetch_one(pool)
            .await)?;
        Ok(highest)
    }

    pub async fn held_accounts(
        &self,
        at_least: i64,
        limit: i64,
    ) -> Result<Vec<HeldAccountRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(HELD_ACCOUNTS)
            .bind(at_least)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }
}
