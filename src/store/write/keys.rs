//! The keys a write transaction serialises on, taken before anything else
//! it does, so that two writers of one PostgreSQL database never wait for
//! each other in a cycle.
//!
//! What a transaction may touch is named by three kinds of key:
//! - an account: its balances (every currency), its sequence guards (every
//!   source), its ledger entries and the intents parked on it;
//! - an event, (scope, event id): its intent row;
//! - a payment, (scope, payment ref): its payment row and the reversals
//!   waiting unmatched for it.
//!
//! Every transaction that writes more than one of those rows and may wait
//! for a row lock (a group of deliveries, a batch, a replay, an operator's
//! action, a drain step) takes the keys of what it may touch first: each
//! key is a transaction-scoped advisory lock on a 64-bit digest of it, the
//! payments' keys in one statement in digest order, then (once it knows
//! which accounts those payments were credited to) the accounts' and
//! events' keys in one statement in digest order. Two such transactions
//! thus take their keys in one global order (payments before the rest,
//! digest order within each), so one waits for the other at its first key
//! in common, holding no row lock yet; and past its keys a transaction
//! waits for no row another such transaction holds, since that one would
//! hold a key of it. So they cannot wait in a cycle: no deadlock, by
//! construction, not by PostgreSQL's detector and a re-run. Two keys with
//! one digest only serialise two transactions that did not need it.
//!
//! Why advisory locks and not the rows' own (`select ... for update` in key
//! order): what a group touches is not all known before it is decided (a
//! release posts parked events in currencies no delivery of the group
//! names, a refund posts to the account its payment was credited to), and a
//! row that does not exist yet cannot be locked without writing it. An
//! account's key covers every row of it, existing or not.
//!
//! Writers outside this order touch one row (a dismiss, the relay's
//! outbox rows) or never wait (`skip locked`: the redelivery counts, the
//! payload purge), so neither can close a cycle. The one exception is the
//! start-up rescope, which moves a whole scope's rows: run while another
//! instance serves, it can still lose to PostgreSQL's deadlock detector,
//! and start-up fails and is retried.
//!
//! SQLite runs one write transaction at a time (`BEGIN IMMEDIATE`): there
//! is nothing to order, and taking the keys does nothing.

use std::collections::{BTreeSet, HashSet};

use sha2::{Digest, Sha256};

use super::{StoreError, TxConn, WriteTx};

/// Takes the keys in `$1`, in the array's order: `unnest` yields the
/// elements in order and each row's lock is taken as the row is produced.
const LOCK_KEYS: &str = "select pg_advisory_xact_lock(k) from unnest($1::int8[]) as k";

/// The accounts the payments in `$1`, `$2` (scope, ref) were credited to.
const PAYMENT_ACCOUNTS: &str = "
select distinct account_id from payments
where (scope, payment_ref) in (select * from unnest($1::text[], $2::text[]))
    and account_id is not null";

/// What an operator's action on one stored event may touch: the event's
/// scope, account and payment.
const INTENT_KEYS: &str = "
select scope, account_id, payment_ref from intents where source = $1 and event_id = $2";

/// What one transaction may touch; [`WriteTx::lock_keys`] takes it.
#[derive(Debug, Default)]
pub struct WriteKeys {
    payments: HashSet<(String, String)>,
    rest: BTreeSet<i64>,
}

impl WriteKeys {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn account(&mut self, account_id: &str) -> &mut Self {
        self.rest.insert(digest(b'a', &[account_id]));
        self
    }

    pub fn event(&mut self, scope: &str, event_id: &str) -> &mut Self {
        self.rest.insert(digest(b'e', &[scope, event_id]));
        self
    }

    /// A payment, and with it the account it was credited to.
    pub fn payment(&mut self, scope: &str, payment_ref: &str) -> &mut Self {
        self.payments
            .insert((scope.to_owned(), payment_ref.to_owned()));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.payments.is_empty() && self.rest.is_empty()
    }

    /// The payments' keys in the order they are taken.
    fn payment_keys(&self) -> Vec<i64> {
        let sorted: BTreeSet<i64> = self
            .payments
            .iter()
            .map(|(scope, payment)| digest(b'p', &[scope, payment]))
            .collect();
        sorted.into_iter().collect()
    }
}

/// A key's lock id: the first 8 bytes of SHA-256 over its kind and its
/// parts, each part length-prefixed so that no two keys share an input.
/// Stable across versions and instances, which must agree on it.
fn digest(kind: u8, parts: &[&str]) -> i64 {
    let mut hash = Sha256::new();
    hash.update([kind]);
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let bytes: [u8; 8] = hash.finalize()[..8]
        .try_into()
        .expect("SHA-256 is 32 bytes");
    i64::from_be_bytes(bytes)
}

impl WriteTx {
    /// Takes `keys`, as the transaction's first statements (see the module
    /// doc). Held until it ends.
    pub async fn lock_keys(&mut self, mut keys: WriteKeys) -> Result<(), StoreError> {
        let TxConn::Postgres(tx) = &mut self.conn else {
            return Ok(());
        };
        if keys.is_empty() {
            return Ok(());
        }
        if !keys.payments.is_empty() {
            lock(tx, &keys.payment_keys()).await?;
            // Read under the payments' keys: no writer that follows this
            // order credits one of them meanwhile.
            let (scopes, refs): (Vec<&str>, Vec<&str>) = keys
                .payments
                .iter()
                .map(|(scope, payment)| (scope.as_str(), payment.as_str()))
                .unzip();
            let accounts: Vec<(String,)> = sqlx::query_as(PAYMENT_ACCOUNTS)
                .bind(scopes)
                .bind(refs)
                .fetch_all(&mut **tx)
                .await?;
            for (account,) in accounts {
                keys.account(&account);
            }
        }
        let rest: Vec<i64> = keys.rest.into_iter().collect();
        lock(tx, &rest).await
    }
}

impl WriteTx {
    /// Takes one account's key: for a step on that account alone (a drain,
    /// a guard reset, a skip).
    pub async fn lock_account_key(&mut self, account_id: &str) -> Result<(), StoreError> {
        let mut keys = WriteKeys::new();
        keys.account(account_id);
        self.lock_keys(keys).await
    }

    /// Takes the keys of the stored event `event_id` of `source` (and of
    /// `more`): a plain read first, which takes no lock, then the keys.
    /// Nothing if the event is not stored; the action then finds nothing.
    pub async fn lock_intent_keys(
        &mut self,
        source: &str,
        event_id: &str,
        mut more: WriteKeys,
    ) -> Result<(), StoreError> {
        let TxConn::Postgres(tx) = &mut self.conn else {
            return Ok(());
        };
        let row: Option<(String, Option<String>, Option<String>)> = sqlx::query_as(INTENT_KEYS)
            .bind(source)
            .bind(event_id)
            .fetch_optional(&mut **tx)
            .await?;
        if let Some((scope, account, payment)) = row {
            more.event(&scope, event_id);
            if let Some(account) = account {
                more.account(&account);
            }
            if let Some(payment) = payment {
                more.payment(&scope, &payment);
            }
        }
        self.lock_keys(more).await
    }
}

async fn lock(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    sorted: &[i64],
) -> Result<(), StoreError> {
    if sorted.is_empty() {
        return Ok(());
    }
    sqlx::query(LOCK_KEYS)
        .bind(sorted)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{WriteKeys, digest};

    #[test]
    fn kinds_and_parts_never_share_a_digest() {
        // The same text as an account, an event's parts or a payment's.
        let account = digest(b'a', &["ab"]);
        assert_ne!(account, digest(b'e', &["ab"]));
        assert_ne!(digest(b'e', &["a", "b"]), digest(b'e', &["ab", ""]));
        assert_ne!(digest(b'e', &["a", "b"]), digest(b'p', &["a", "b"]));
        // And it is a pure function of them: every instance agrees.
        assert_eq!(account, digest(b'a', &["ab"]));
    }

    #[test]
    fn keys_are_taken_once_each_in_digest_order() {
        let mut keys = WriteKeys::new();
        keys.account("acct_2")
            .event("stripe", "evt_1")
            .account("acct_1")
            .account("acct_2")
            .payment("stripe", "pi_2")
            .payment("stripe", "pi_1")
            .payment("stripe", "pi_2");
        let rest: Vec<i64> = keys.rest.iter().copied().collect();
        assert_eq!(rest.len(), 3, "acct_2 once");
        assert!(rest.windows(2).all(|pair| pair[0] < pair[1]), "{rest:?}");
        let payments = keys.payment_keys();
        assert_eq!(payments.len(), 2, "pi_2 once");
        assert!(payments[0] < payments[1], "{payments:?}");
    }
}
