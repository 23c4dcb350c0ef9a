//! What a run read under lock (its payment rows, guards and balances), as
//! the events decided so far leave them, and the rules that decide an
//! event in memory against it.

use std::collections::{HashMap, HashSet};

use super::Run;
use super::batch::Batch;
use crate::domain::{NegativeBalance, SEQUENCE_FLOOR, Slot, StaleAction, contiguous_slot};
use crate::ingest::late;
use crate::store::{
    NewLedgerEntry, PaymentKey, RowKey, RunCredit, RunLate, RunPayment, RunPosting, StoreError,
    WriteTx,
};

/// What a balance may reach (as `upsert_balance!` bounds it), and what a
/// payment may credit (as `settle` bounds it).
const LIMIT: i64 = 1 << 62;

pub(super) struct State {
    /// The payment rows of the run's credits, by (scope, payment).
    payments: HashMap<PaymentKey, RunPayment>,
    guards: HashMap<RowKey, i64>,
    /// Contiguous streams (source, account) whose events are decided
    /// alone: one is parked, a number is held outside the run, or one of
    /// the run's was decided alone (it may have parked or released).
    streams: HashSet<RowKey>,
    balances: HashMap<RowKey, (i64, i64)>,
    /// Every balance the run posts to, whether its row exists or not.
    balance_keys: HashSet<RowKey>,
    /// Balance rows the read created to lock them (PostgreSQL).
    pub created: Vec<RowKey>,
}

impl State {
    /// Locks and reads what `run` needs, in the lock order (see
    /// `store::write`): its payment rows (created where missing, in
    /// arrival order, as one by one would; no reversal waits for one, the
    /// caller checked), then its guards, then its balances, each of those
    /// in key order (see `store::write::run`).
    pub(super) async fn read(tx: &mut WriteTx, run: &[Run<'_, '_>]) -> Result<Self, StoreError> {
        // Each payment once, with the time of the first event that takes it.
        let mut seen = HashSet::new();
        let keys: Vec<_> = run
            .iter()
            .filter_map(|one| Some((one.payment()?.0, one.now())))
            .filter(|&(key, _)| seen.insert(key))
            .map(|((scope, payment), now)| (scope, payment, now))
            .collect();
        let payments = if keys.is_empty() {
            HashMap::new()
        } else {
            tx.lock_run_payments(&keys).await?
        };
        let mut state = State::read_rows(tx, run).await?;
        state.payments = payments;
        let numbered: Vec<_> = run.iter().filter_map(Run::number).collect();
        if !numbered.is_empty() {
            let ids: Vec<i64> = run.iter().map(|one| one.intent_id).collect();
            state.streams = tx.run_streams_busy(&numbered, &ids).await?;
        }
        Ok(state)
    }

    /// The guards and balances of `run`.
    async fn read_rows(tx: &mut WriteTx, run: &[Run<'_, '_>]) -> Result<Self, StoreError> {
        let guard_keys: Vec<_> = run
            .iter()
            .map(|one| {
                (
                    one.item.source.name.as_str(),
                    one.posting.account.as_str(),
                    one.now(),
                )
            })
            .collect();
        let balance_keys: Vec<_> = run
            .iter()
            .map(|one| {
                (
                    one.posting.account.as_str(),
                    one.posting.currency.code(),
                    one.now(),
                )
            })
            .collect();
        let initial: HashMap<&str, i64> = run
            .iter()
            .map(|one| (one.item.source.name.as_str(), one.initial_guard()))
            .collect();
        let initial = |source: &str| initial.get(source).copied().unwrap_or(SEQUENCE_FLOOR);
        let guards = tx.lock_run_guards(&guard_keys, initial).await?;
        let balances = tx.lock_run_balances(&balance_keys).await?;
        Ok(State {
            payments: HashMap::new(),
            guards,
            streams: HashSet::new(),
            balances: balances.rows,
            balance_keys: run.iter().map(Run::balance_key).collect(),
            created: balances.created,
        })
    }

    /// Reads again the guard and balance of `one`, which was decided
    /// alone; its payment is decided alone from now on. A contiguous
    /// event's release may have posted parked events in other currencies
    /// of its account: each balance of the account the run holds is read
    /// again, and its stream is decided alone from now on.
    pub(super) async fn reread(
        &mut self,
        tx: &mut WriteTx,
        one: &Run<'_, '_>,
    ) -> Result<(), StoreError> {
        let again = State::read_rows(tx, std::slice::from_ref(one)).await?;
        self.guards.extend(again.guards);
        self.created.extend(again.created);
        let mut rows = again.balances;
        let mut keys = vec![one.balance_key()];
        if one.numbered() {
            self.streams.insert(one.guard_key());
            let (account, own) = (one.posting.account.as_str(), one.posting.currency.code());
            let others: Vec<(&str, &str, _)> = self
                .balance_keys
                .iter()
                .filter(|(held, currency)| held == account && currency != own)
                .map(|(held, currency)| (held.as_str(), currency.as_str(), one.now()))
                .collect();
            if !others.is_empty() {
                let read = tx.lock_run_balances(&others).await?;
                self.created.extend(read.created);
                rows.extend(read.rows);
                keys.extend(
                    others
                        .iter()
                        .map(|&(held, currency, _)| (held.to_owned(), currency.to_owned())),
                );
            }
        }
        for key in keys {
            match rows.get(&key) {
                Some(&row) => self.balances.insert(key, row),
                None => self.balances.remove(&key),
            };
        }
        self.spend_payment(one);
        Ok(())
    }

    /// Before `one`, a contiguous event, is decided alone: the balance rows
    /// the read created for its account (PostgreSQL, to lock them) that
    /// nothing has posted to yet are deleted. One by one they do not
    /// exist, and its release may create one at zero that one by one
    /// keeps; [`State::reread`] creates again those still missing.
    pub(super) async fn drop_unposted(
        &mut self,
        tx: &mut WriteTx,
        one: &Run<'_, '_>,
        posted: &HashSet<RowKey>,
    ) -> Result<(), StoreError> {
        let account = one.posting.account.as_str();
        let (dropped, kept): (Vec<RowKey>, Vec<RowKey>) = self
            .created
            .drain(..)
            .partition(|key| key.0 == account && !posted.contains(key));
        self.created = kept;
        if !dropped.is_empty() {
            tx.write_run(&[], &[], &[], &dropped).await?;
        }
        Ok(())
    }

    /// `one`'s payment row no longer holds nothing.
    fn spend_payment(&mut self, one: &Run<'_, '_>) {
        if let Some(((scope, payment), _)) = one.payment()
            && let Some(row) = self
                .payments
                .get_mut(&(scope.to_owned(), payment.to_owned()))
        {
            row.fresh = false;
        }
    }

    /// Applies `one` in memory as `high_water` (with `late`) and `settle`
    /// would, adding its writes to `batch`; false for any other decision.
    pub(super) fn apply<'i, 'a>(&mut self, one: &Run<'i, 'a>, batch: &mut Batch<'i>) -> bool {
        let posting = one.posting;
        let guard_key = one.guard_key();
        let Some(&guard) = self.guards.get(&guard_key) else {
            return false;
        };
        let numbered = one.numbered();
        if numbered
            && (self.streams.contains(&guard_key)
                || contiguous_slot(guard, posting.sequence) != Slot::Next)
        {
            // Parked, late, a release, a number held: decided alone.
            return false;
        }
        let late = !numbered && posting.sequence < guard;
        if late && late::action(one.item.source, posting) != StaleAction::Apply {
            // Held as `stale`: decided alone.
            return false;
        }
        let amount = posting.signed_amount();
        // A payment's credit: only the first thing its row records.
        let payment = match one.payment() {
            None => None,
            Some(((scope, payment), part)) => {
                match self.payments.get(&(scope.to_owned(), payment.to_owned())) {
                    Some(row) if row.fresh && amount <= LIMIT => Some((row.payment_id, part)),
                    _ => return false,
                }
            }
        };
        let balance_key = one.balance_key();
        let (balance, count) = self.balances.get(&balance_key).copied().unwrap_or((0, 0));
        // A stream is applied as the sender numbered it (`Posted::post`).
        if amount < 0
            && !numbered
            && one.item.source.negative_balance == NegativeBalance::Hold
            && balance + amount < 0
        {
            return false;
        }
        let Some(after) = balance
            .checked_add(amount)
            .filter(|after| (-LIMIT..=LIMIT).contains(after))
        else {
            return false;
        };
        let now = one.now();
        if late {
            // The guard stays where it is; the intent says why.
            batch.late.push(RunLate {
                intent_id: one.intent_id,
                reason: late::applied_reason(posting, guard, ""),
            });
        } else {
            self.guards.insert(guard_key.clone(), posting.sequence);
            batch.guards.insert(guard_key, (posting.sequence, now));
        }
        if let Some((payment_id, part)) = payment {
            self.spend_payment(one);
            batch.credits.push(RunCredit {
                payment_id,
                account_id: posting.account.as_str(),
                currency: posting.currency.code(),
                amount_minor: amount,
                credited_by: (!part).then_some(one.intent_id),
                updated_at: now,
            });
        }
        batch.applied.push((one.index, late));
        self.balances
            .insert(balance_key.clone(), (after, count + 1));
        let event = one.item.event;
        batch.postings.push(RunPosting {
            entry: NewLedgerEntry {
                intent_id: one.intent_id,
                credits_payment: payment
                    .filter(|&(_, part)| !part)
                    .map(|(payment_id, _)| payment_id),
                source: one.item.source.name.as_str(),
                event_id: event.event_id.as_str(),
                account_id: posting.account.as_str(),
                currency: posting.currency.code(),
                amount_minor: amount,
                balance_after_minor: after,
                account_seq: count + 1,
                object_id: event.object_id.as_deref(),
                operator_applied: false,
                created_at: now,
            },
            occurred_at: event.occurred_at,
        });
        batch.balances.insert(balance_key, (after, count + 1, now));
        true
    }
}
