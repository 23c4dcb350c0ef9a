//! Balance rows: posted in place by one conditional statement, and locked up
//! front when one transaction posts several currencies of an account.

use chrono::{DateTime, Utc};

use super::{StoreError, WriteTx};

/// Adds the signed amount in place (never read-modify-write from Rust); the
/// row lock taken by the update serialises concurrent postings to one
/// balance. The bound of +/-2^62 keeps every sum representable: with at most
/// 10^15 per event the addition itself cannot overflow, and SQLite, which
/// would silently turn an overflowing integer into a float, never gets near
/// it. Out of range returns no row (the statement succeeds): the caller
/// gets `BalanceLimit` and holds the event, with the transaction usable.
/// `postings` counts the balance's ledger entries under the same row lock:
/// the count it returns is the posting's gapless `account_seq`; the link of
/// the entry before it (its chain's head, `store::chain`) is read with it,
/// by the ledger's unique key, under that lock.
macro_rules! upsert_balance {
    () => {
        "
insert into balances (account_id, currency, balance_minor, updated_at, postings)
values ($1, $2, $3, $4, 1)
on conflict (account_id, currency) do update
set balance_minor = balances.balance_minor + excluded.balance_minor,
    updated_at = excluded.updated_at,
    postings = balances.postings + 1
where balances.balance_minor + excluded.balance_minor
    between -4611686018427387904 and 4611686018427387904
returning balance_minor, postings"
    };
}

/// Also the first part of the ceiling's one-statement posting
/// (`store::ceiling`), whose parameters continue from `$5`: keep these four
/// as they are.
pub(in crate::store) use upsert_balance;

/// The link of the last entry of balance row `b` (`store::chain`), by
/// the ledger's unique key; `$offset` entries before the last.
macro_rules! last_link {
    () => {
        last_link!("b", "")
    };
    ($b:literal, $offset:literal) => {
        concat!(
            "(select e.entry_hash from ledger_entries e where e.account_id = ",
            $b,
            ".account_id and e.currency = ",
            $b,
            ".currency and e.account_seq = ",
            $b,
            ".postings",
            $offset,
            ")"
        )
    };
}
pub(super) use last_link;

/// The balance's statement, and the link of the entry before the one it
/// numbers.
const UPSERT_BALANCE: &str = concat!(upsert_balance!(), ", ", last_link!("balances", " - 1"));

/// Locks an account's balance row for a currency (creating it at zero), for
/// a transaction that will post several currencies: see `lock_balances`.
const LOCK_BALANCE: &str = "
insert into balances (account_id, currency, balance_minor, updated_at)
values ($1, $2, 0, $3)
on conflict (account_id, currency) do update
set balance_minor = balances.balance_minor
returning balance_minor";

/// Locks an existing balance row and reads it (no row: nothing to lock, the
/// balance is zero).
const LOCK_EXISTING_BALANCE: &str = "
update balances set balance_minor = balance_minor
where account_id = $1 and currency = $2
returning balance_minor";

impl WriteTx {
    /// Adds `amount_minor` (signed) to the balance; returns the new balance
    /// and the posting's number among the balance's postings, and notes
    /// the head of its chain before it.
    pub async fn upsert_balance(
        &mut self,
        account_id: &str,
        currency: &str,
        amount_minor: i64,
        now: DateTime<Utc>,
    ) -> Result<(i64, i64), StoreError> {
        let row: Option<(i64, i64, Option<Vec<u8>>)> = on_tx!(self, conn => sqlx::query_as(UPSERT_BALANCE)
            .bind(account_id)
            .bind(currency)
            .bind(amount_minor)
            .bind(now)
            .fetch_optional(conn)
            .await)?;
        let (balance, postings, head) = row.ok_or_else(|| StoreError::BalanceLimit {
            account_id: account_id.to_owned(),
            currency: currency.to_owned(),
        })?;
        let key = (account_id.to_owned(), currency.to_owned());
        self.saw_head(key, postings - 1, head);
        Ok((balance, postings))
    }

    /// Locks the account's balance rows for `currencies` in sorted order,
    /// before a transaction posts to more than one of them. Every other
    /// transaction posts to one balance row only, so with this order no two
    /// transactions can wait on each other's balance rows in a cycle. SQLite
    /// runs one writer at a time and needs none of it, but the statement is
    /// the same for both.
    pub async fn lock_balances(
        &mut self,
        account_id: &str,
        currencies: &[&str],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut sorted = currencies.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() < 2 {
            return Ok(());
        }
        for currency in sorted {
            on_tx!(self, conn => sqlx::query(LOCK_BALANCE)
                .bind(account_id)
                .bind(currency)
                .bind(now)
                .execute(conn)
                .await
                .map(drop))?;
        }
        Ok(())
    }

    /// Locks the balance row for `currency` and returns it, if the account
    /// has one.
    pub async fn lock_existing_balance(
        &mut self,
        account_id: &str,
        currency: &str,
    ) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(LOCK_EXISTING_BALANCE)
            .bind(account_id)
            .bind(currency)
            .fetch_optional(conn)
            .await)?;
        Ok(row.map(|(balance,)| balance))
    }
}
