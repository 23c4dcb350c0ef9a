//! Read queries about contiguous streams: which accounts have parked events,
//! the numbers they wait for, and which ones the drain task must release.

use super::rows::GapRow;
use super::{Store, StoreError, on_pool};

/// Accounts with a parked event right after the guard, or one the guard
/// has passed: a release is due (a backlog beyond `release_batch`, one a
/// crash interrupted, or a source no longer contiguous). Driven by the small
/// `intents_waiting` partial index, not by the guards table.
const RELEASABLE_ACCOUNTS: &str = "
select distinct i.source, i.account_id
from intents i
join sequence_guards g on g.source = i.source and g.account_id = i.account_id
where i.status = 'waiting' and i.event_sequence <= g.last_sequence + 1
limit $1";

/// Per account with parked events (all, or one (source, account)): the guard, how many wait, the lowest and
/// highest parked numbers, and when the oldest (lowest intent id: ids, not
/// text times, order rows on SQLite) arrived.
const WAITING_ACCOUNTS: &str = "
select w.source, w.account_id, w.guard, w.waiting, w.lowest_waiting, w.highest_waiting,
    o.first_received_at as waiting_since
from (
    select i.source, i.account_id, g.last_sequence as guard, count(*) as waiting,
        min(i.event_sequence) as lowest_waiting, max(i.event_sequence) as highest_waiting,
        min(i.intent_id) as oldest_intent_id
    from intents i
    join sequence_guards g on g.source = i.source and g.account_id = i.account_id
    where i.status = 'waiting' and ($1 is null or i.source = $1)
        and ($2 is null or i.account_id = $2)
    group by i.source, i.account_id, g.last_sequence
) as w
join intents o on o.intent_id = w.oldest_intent_id
order by w.oldest_intent_id
limit $3";

const WAITING_SEQUENCES: &str = "
select event_sequence from intents
where source = $1 and account_id = $2 and status = 'waiting'
order by event_sequence
limit $3";

impl Store {
    /// (source, account) pairs with a release due, at most `limit`.
    pub async fn releasable_accounts(
        &self,
        limit: i64,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(RELEASABLE_ACCOUNTS)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    /// Accounts with parked events, oldest gap first.
    pub async fn gaps(&self, limit: i64) -> Result<Vec<GapRow>, StoreError> {
        self.waiting_accounts(None, limit).await
    }

    pub async fn gap(&self, source: &str, account_id: &str) -> Result<Option<GapRow>, StoreError> {
        Ok(self
            .waiting_accounts(Some((source, account_id)), 1)
            .await?
            .pop())
    }

    async fn waiting_accounts(
        &self,
        only: Option<(&str, &str)>,
        limit: i64,
    ) -> Result<Vec<GapRow>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(WAITING_ACCOUNTS)
            .bind(only.map(|(source, _)| source))
            .bind(only.map(|(_, account)| account))
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    /// The parked sequence numbers of one account, lowest first.
    pub async fn waiting_sequences(
        &self,
        source: &str,
        account_id: &str,
        limit: i64,
    ) -> Result<Vec<i64>, StoreError> {
        let rows: Vec<(i64,)> = on_pool!(self, pool => sqlx::query_as(WAITING_SEQUENCES)
            .bind(source)
            .bind(account_id)
            .bind(limit)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(|(s,)| s).collect())
    }
}
