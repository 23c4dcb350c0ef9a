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
//! next tidy. Such a delay can happen on PostgreSQL: a tidy that flags a
//! row, committing just after another relay's delivery of the row ahead
//! looked for flagged rows to clear and found none.

use super::super::write::TxConn;
use super::super::write::on_tx;
use super::super::{Store, StoreError};

/// For each delivered posting (`$1`), clears the flag of its account's
/// first undelivered posting, if that one waits (the `outbox_open_by_account`
/// index finds it in one step).
macro_rules! next_of {
    ($delivered:literal) => {
        concat!(
            "
update outbox set behind = false
where behind and outbox_id in (
    select (select q.outbox_id from outbox q
            where q.destination = d.destination and q.account_id = d.account_id
                and q.currency = d.currency and q.state <> 'delivered'
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
            and p.state <> 'delivered')"
    };
}

/// Rows flagged with nothing ahead any more (a missed clear, see above).
const UNFLAG: &str = concat!(
    "
update outbox set behind = false
where destination = $1 and state = 'pending' and behind and not ",
    ahead!()
);

/// Rows with something ahead: out of the claim's way until it is delivered.
const FLAG: &str = concat!(
    "
update outbox set behind = true
where destination = $1 and state = 'pending' and not behind and account_seq is not null
    and leased_by is null and ",
    ahead!()
);

/// What [`Store::tidy_ordered`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tidied {
    pub cleared: u64,
    pub flagged: u64,
}

impl Store {
    /// An ordered destination's tidy: clears the flag of rows with nothing
    /// ahead, then flags the rows that wait. Each is one statement walking
    /// the destination's pending rows once.
    pub async fn tidy_ordered(&self, destination: &str) -> Result<Tidied, StoreError> {
        let mut tx = self.begin().await?;
        let mut changed = [0u64; 2];
        for (sql, count) in [UNFLAG, FLAG].into_iter().zip(changed.iter_mut()) {
            *count = on_tx!(&mut tx, conn => sqlx::query(sql)
                .bind(destination)
                .execute(conn)
                .await
                .map(|done| done.rows_affected()))?;
        }
        tx.commit().await?;
        Ok(Tidied {
            cleared: changed[0],
            flagged: changed[1],
        })
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
