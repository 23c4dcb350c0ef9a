//! What a run read under lock (its payment rows, guards and balances), as
//! the events decided so far leave them, and the rules that decide an
//! event in memory against it.

use std::collections::{HashMap, HashSet};

use super::Run;
use super::batch::Batch;
use crate::domain::{NegativeBalance, StaleAction};
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
    balances: HashMap<RowKey, (i64, i64)>,
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
        let guards = tx.lock_run_guards(&guard_keys).await?;
        let balances = tx.lock_run_balances(&balance_keys).await?;
        Ok(State {
            payments: HashMap::new(),
            guards,
            balances: balances.rows,
            created: balances.created,
        })
    }

    /// Reads again the guard and balance of `one`, which was decided
    /// alone; its payment is decided alone from now on.
    pub(super) async fn reread(
        &mut self,
        tx: &mut WriteTx,
        one: &Run<'_, '_>,
    ) -> Result<(), StoreError> {
        let again = State::read_rows(tx, std::slice::from_ref(one)).await?;
        self.guards.extend(again.guards);
        self.created.extend(again.created);
        let key = one.balance_key();
        match again.balances.get(&key) {
            Some(&row) => self.balances.insert(key, row),
            None => self.balances.remove(&key),
        };
        self.spend_payment(one);
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
        let late = posting.sequence < guard;
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
        if amount < 0
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
