//! The keys a write transaction serialises on, taken before anything else
//! it does, so that two writers of one PostgreSQL database never wait for
//! each other in a cycle.
//!
//! What a transaction may touch is named by three kinds of key:
//! - an account: its balances (every currency), its sequence guards (every
//!   source), its ledger entries and the intents parked on it;
//! - an event, (scope, event id): its intent row (two deliveries of one
//!   event may name different accounts: two sources sharing a scope, a
//!   body that changed);
//! - a payment, (scope, payment ref): its payment row and the reversals
//!   waiting unmatched for it.
//!
//! Every transaction that writes more than one of those rows and may wait
//! for a row lock (a group of deliveries, a batch, a replay, an operator's
//! apply, skip or guard reset, a drain step) takes the keys of what it may
//! touch first. Each key is a transaction-scoped advisory lock on a 64-bit
//! digest of it. In order:
//! 1. a plain read (no lock) of what the named events are stored with
//!    (their account and payment: a redelivery touches its stored row,
//!    which a release or a refund's match reaches under those keys);
//! 2. the payments' keys, in one statement in digest order;
//! 3. a read of the accounts those payments were credited to (under their
//!    keys, so no credit sets one meanwhile);
//! 4. the accounts' and events' keys, in one statement in digest order.
//!
//! Two such transactions thus take their keys in one global order
//! (payments before the rest, digest order within each), so one waits for
//! the other at its first key in common, holding no row lock yet; and past
//! its keys a transaction waits for no row another such transaction holds,
//! since that one would hold a key of it. So they cannot wait in a cycle:
//! no deadlock, by construction, not by PostgreSQL's detector and a
//! re-run. Two keys with one digest only serialise two transactions that
//! did not need it.
//!
//! What that rests on, and where it does not hold (PostgreSQL's detector
//! then ends one transaction with 40P01, and the group writer runs its
//! group again):
//! - what an event is stored with changes only under its key: a replay
//!   that rewrites it with another account or payment, committed between
//!   another transaction's read (1) and its keys (4), leaves that one
//!   touching rows it holds no key of;
//! - every instance computes the same keys: one of an older version takes
//!   none, and two that give one source different scopes (a rolling
//!   deploy that changes `scope`) name different events and payments;
//! - writers outside this order touch one row (a dismiss, the relay's
//!   outbox rows) or never wait (`skip locked`: the redelivery counts, the
//!   payload purge), except two that move many rows: the start-up rescope
//!   and `hookledger outbox move`.
//!
//! Why advisory locks and not the rows' own (`select ... for update` in key
//! order): what a group touches is not all known before it is decided (a
//! release posts parked events in currencies no delivery of the group
//! names, a refund posts to the account its payment was credited to), and a
//! row that does not exist yet cannot be locked without writing it. An
//! account's key covers every row of it, existing or not.
//!
//! Each key is a slot of PostgreSQL's shared lock table until the
//! transaction ends; `ingest::group_commit` bounds a group's events so
//! that a few instances' groups fit its default size.
//!
//! SQLite runs one write transaction at a time (`BEGIN IMMEDIATE`): there
//! is nothing to order, and taking the keys does nothing.

use std::collections::{BTreeSet, HashSet};

use sha2::{Digest, Sha256};

use super::{StoreError, TxConn, WriteTx};

/// Takes the keys in `$1`, in the array's order: `unnest` yields the
/// elements in order and each row's lock is taken as the row is produced.
const LOCK_KEYS: &str = "select pg_advisory_xact_lock(k) from unnest($1::int8[]) as k";

/// The accounts and payments the stored events in `$1`, `$2` (scope, event
/// id) were decided with: a redelivery touches its stored row, which the
/// paths that settle other events (a release, a refund's match) take under
/// those keys, whatever the delivery maps to now.
const STORED_KEYS: &str = "
select scope, account_id, payment_ref from intents
where (scope, event_id) in (select * from unnest($1::text[], $2::text[]))
    and (account_id is not null or payment_ref is not null)";

/// The accounts the payments in `$1`, `$2` (scope, ref) were credited to.
const PAYMENT_ACCOUNTS: &str = "
select distinct account_id from payments
where (scope, payment_ref) in (select * from unnest($1::text[], $2::text[]))
    and account_id is not null";

/// The scope of a source's stored event, for an operator's action on it.
const INTENT_SCOPE: &str = "select scope from intents where source = $1 and event_id = $2";

/// What one transaction may touch; [`WriteTx::lock_keys`] takes it.
#[derive(Debug, Default)]
pub struct WriteKeys {
    /// (scope, event id) of the events named, for their stored keys.
    events: Vec<(String, String)>,
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

    /// An event, and with it the account and payment it is stored with.
    pub fn event(&mut self, scope: &str, event_id: &str) -> &mut Self {
        if self.rest.insert(digest(b'e', &[scope, event_id])) {
            self.events.push((scope.to_owned(), event_id.to_owned()));
        }
        self
    }

    /// A payment, and with it the account it was credited to.
    pub fn payment(&mut self, scope: &str, payment_ref: &str) -> &mut Self {
        self.payments
            .insert((scope.to_owned(), payment_ref.to_owned()));
        self
    }

    /// The advisory lock id of an account's key, as `pg_locks` shows it
    /// (`classid` the high 32 bits, `objid` the low, `objsubid` 1).
    pub fn account_lock_id(account_id: &str) -> i64 {
        digest(b'a', &[account_id])
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
    /// Whether this backend takes keys at all (PostgreSQL): where not,
    /// a caller need not name them.
    pub fn takes_keys(&self) -> bool {
        matches!(self.conn, TxConn::Postgres(_))
    }

    /// Takes `keys`, as the transaction's first statements (see the module
    /// doc). Held until it ends.
    pub async fn lock_keys(&mut self, mut keys: WriteKeys) -> Result<(), StoreError> {
        let TxConn::Postgres(tx) = &mut self.conn else {
            return Ok(());
        };
        if keys.is_empty() {
            return Ok(());
        }
        if !keys.events.is_empty() {
            // A plain read, before any key: what a stored event names
            // changes only under its own key (a replay), see the module doc.
            let (scopes, ids): (Vec<&str>, Vec<&str>) = keys
                .events
                .iter()
                .map(|(scope, id)| (scope.as_str(), id.as_str()))
                .unzip();
            // Planned for each group with its own keys, never from a
            // cached generic plan: one made while `intents` was empty is a
            // hash join over a scan of the whole table, kept as the table
            // grows (it halved the rate in the benchmark).
            let stored: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(STORED_KEYS)
                .bind(scopes)
                .bind(ids)
                .persistent(false)
                .fetch_all(&mut **tx)
                .await?;
            for (scope, account, payment) in stored {
                if let Some(account) = account {
                    keys.account(&account);
                }
                if let Some(payment) = payment {
                    keys.payment(&scope, &payment);
                }
            }
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
            // Planned each time, as the stored events' read above.
            let accounts: Vec<(String,)> = sqlx::query_as(PAYMENT_ACCOUNTS)
                .bind(scopes)
                .bind(refs)
                .persistent(false)
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
    /// `more`): its scope read first (a plain read, no lock), then its keys
    /// and what it is stored with. Nothing more if the event is not
    /// stored; the action then finds nothing.
    pub async fn lock_intent_keys(
        &mut self,
        source: &str,
        event_id: &str,
        mut more: WriteKeys,
    ) -> Result<(), StoreError> {
        let TxConn::Postgres(tx) = &mut self.conn else {
            return Ok(());
        };
        let scope: Option<(String,)> = sqlx::query_as(INTENT_SCOPE)
            .bind(source)
            .bind(event_id)
            .fetch_optional(&mut **tx)
            .await?;
        if let Some((scope,)) = scope {
            more.event(&scope, event_id);
        }
        self.lock_keys(more).await
    }
}

async fn lock(tx: &mut sqlx::PgConnection, sorted: &[i64]) -> Result<(), StoreError> {
    if sorted.is_empty() {
        return Ok(());
    }
    sqlx::query(LOCK_KEYS).bind(sorted).execute(tx).await?;
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
