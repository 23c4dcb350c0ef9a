//! Keeping an ordered destination's claim short. Its relay may send a
//! posting only when no earlier posting of the same account and currency is
//! undelivered; the claim checks that for every due row it walks, so behind
//! a dead letter or a failing message, one account's backlog would be
//! walked again by every claim (tools/ordered-claim-cost.py: 37 ms a claim
//! at 50,000 waiting on SQLite, where it holds the writer's turn).
//!
//! Rows that wait are flagged `behind` and leave the claim's index
//! (`outbox_due`): the relay's periodic tidy flags them, and clears the
//! flag of rows with nothing ahead any more; a delivery clears the flag of
//! the next row of its account at once, in the statement after the one that
//! records it. The flag is a hint, never the rule: the claim still checks
//! the order itself, so a wrong flag can only delay a message until the
//! next tidy. On PostgreSQL a tidy's flag can race with another relay's
//! delivery of the row ahead: the flagging statement reads the row ahead
//! as stuck (a replay re-queues it, a relay sends it and records it
//! delivered), and commits after that delivery's clear looked for a flag
//! and found none. Two statements that each start after a commit close
//! it: the tidy flags, commits, and only then clears the flags with nothing
//! ahead; the delivery clears the next row again once it has committed
//! (`clear_next_after_commit`). If the flag committed before the
//! delivery's second clear began, that clear sees it; if after, the tidy's
//! clear began after the flag, so after the delivery had committed, and
//! sees the row ahead delivered. Neither waits on the other's row locks:
//! a row not flagged in a statement's snapshot does not match its `where
//! behind`. Only rows behind a stuck message (dead, or waiting out a long
//! backoff) are flagged in the first place: a message that is moving
//! clears the next one anyway.

use super::super::write::TxConn;
use super::super::write::on_tx;
use super::super::{Store, StoreError};

/// For each delivered posting (`$1`), clears the flag of its account's
/// first undelivered posting, if that one waits (the `outbox_ordered_open`
/// index finds it in one step). Only postings: the account's `event.*`
/// messages have no number (SQLite would sort them first).
macro_rules! next_of {
    ($delivered:literal) => {
        concat!(
            "
update outbox set behind = false
where behind and outbox_id in (
    select (select q.outbox_id from outbox q
            where q.destination = d.destination and q.account_id = d.account_id
                and q.currency = d.currency and q.account_seq is not null
                and q.state <> 'delivered' and q.ordered
            order by q.account_seq limit 1)
    from outbox d
    where d.outbox_id in (",
            $delivered,
            ") and d.account_seq is not null)"
        )
    };
}

pub(super) const NEXT_POSTGRES: &str = next_of!("select unnest($1::bigint[])");
pub(super) const NEXT_SQLITE: &str = next_of!("select value from json_each($1)");

/// An earlier posting of the same account and currency is undelivered.
macro_rules! ahead {
    () => {
        "exists (select 1 from outbox p
        where p.destination = outbox.destination and p.account_id = outbox.account_id
            and p.currency = outbox.currency and p.account_seq < outbox.account_seq
            and p.state <> 'delivered' and p.ordered)"
    };
}

/// Rows flagged with nothing ahead any more (a missed clear, a flag that
/// raced with a delivery: see above).
pub(super) const UNFLAG: &str = concat!(
    "
update outbox set behind = false
where destination = $1 and state = 'pending' and behind and not ",
    ahead!()
);

/// Rows behind a message that is stuck: their account's first undelivered
/// posting is a dead letter, or waits out a backoff longer than a tidy
/// (`$2`: the next tidy's time). Rows behind a message that is moving are
/// left alone: its delivery clears the next one anyway, and flagging them
/// could race with that delivery on PostgreSQL (above). The first posting
/// is found in one step of `outbox_ordered_open`, as in `next_of!`.
pub(super) const FLAG: &str = "
update outbox set behind = true
where destination = $1 and state = 'pending' and not behind and account_seq is not null
    and leased_by is null and exists (select 1 from outbox h
        where h.outbox_id = (select q.outbox_id from outbox q
                where q.destination = outbox.destination and q.account_id = outbox.account_id
                    and q.currency = outbox.currency and q.account_seq is not null
                    and q.state <> 'delivered' and q.ordered
                order by q.account_seq limit 1)
            and h.account_seq < outbox.account_seq
            and (h.state = 'dead' or (h.leased_by is null and h.next_attempt_ms > $2)))";

/// A destination that is not (or no longer) ordered: nothing waits.
const UNFLAG_ALL: &str = "
update outbox set behind = false where destination = $1 and state = 'pending' and behind";

/// What [`Store::tidy_outbox`] changed. A row the tidy flagged and then
/// found with nothing ahead (its flag raced a delivery) counts in both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tidied {
    pub cleared: u64,
    pub flagged: u64,
}

impl Store {
    /// A destination's tidy. Ordered: flags the rows behind a stuck
    /// message (`next_tidy_ms`: when the next tidy runs), commits, then
    /// clears the flag of rows with nothing ahead (in that order: see the
    /// module's doc); each statement walks the destination's pending rows
    /// once. Not ordered: clears every flag (left by a config that ordered
    /// it).
    pub async fn tidy_outbox(
        &self,
        destination: &str,
        ordered: bool,
        next_tidy_ms: i64,
    ) -> Result<Tidied, StoreError> {
        // The clear runs even when the flagging failed: it only frees rows.
        let flagged = match ordered {
            true => self.tidy_step(FLAG, destination, Some(next_tidy_ms)).await,
            false => Ok(0),
        };
        let clear = if ordered { UNFLAG } else { UNFLAG_ALL };
        let cleared = self.tidy_step(clear, destination, None).await?;
        Ok(Tidied {
            cleared,
            flagged: flagged?,
        })
    }

    /// One statement of the tidy in its own transaction: the rows changed.
    /// Only the flagging statement has a `$2` (`next_tidy_ms`).
    async fn tidy_step(
        &self,
        sql: &'static str,
        destination: &str,
        next_tidy_ms: Option<i64>,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let changed = on_tx!(&mut tx, conn => {
            let query = sqlx::query(sql).bind(destination);
            match next_tidy_ms {
                Some(next) => query.bind(next).execute(conn).await,
                None => query.execute(conn).await,
            }
        }
        .map(|done| done.rows_affected()))?;
        tx.commit().await?;
        Ok(changed)
    }
}

impl Store {
    /// PostgreSQL: the clear of [`clear_next`] once more, after the
    /// deliveries (`ids`) committed, for a tidy's flag that committed in
    /// between (see the module's doc). A failure leaves the row to the next
    /// tidy. SQLite runs one writer at a time: nothing commits in between.
    pub(super) async fn clear_next_after_commit(&self, ids: &[i64]) {
        if let Store::Postgres(pool, ..) = self {
            let cleared = sqlx::query(NEXT_POSTGRES).bind(ids).execute(pool).await;
            if let Err(error) = cleared {
                tracing::debug!("outbox: clear after delivery failed, the tidy covers it: {error}");
            }
        }
    }
}

/// Clears the flag of the next posting of each delivered one's account
/// (`ids`), inside the transaction that recorded the deliveries.
pub(super) async fn clear_next(conn: &mut TxConn, ids: &[i64]) -> Result<(), StoreError> {
    match conn {
        TxConn::Sqlite(conn, _) => {
            let ids = serde_json::to_string(ids).expect("integers serialise");
            sqlx::query(NEXT_SQLITE)
                .bind(ids)
                .execute(&mut **conn)
                .await?;
        }
        TxConn::Postgres(conn) => {
            sqlx::query(NEXT_POSTGRES)
                .bind(ids)
                .execute(&mut **conn)
                .await?;
        }
    }
    Ok(())
}
