//! What a run read under lock (its payment rows, guards and balances), as
//! the events decided so far leave them, and the rules that decide an
//! event in memory against it.

use std::collections::{HashMap, HashSet};

use super::Run;
use super::batch::Batch;
use super::reversal;
use crate::domain::{
    Basis, NegativeBalance, Posting, SEQUENCE_FLOOR, Slot, StaleAction, contiguous_slot,
};
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
    /// Locks and reads what `run` needs after its payment rows (`payments`,
    /// locked first: [`lock_payments`]), in the lock order (see
    /// `store::write`): its guards, then its balances, each in key order
    /// (see `store::write::run`).
    pub(super) async fn read(
        tx: &mut WriteTx,
        run: &[Run<'_, '_>],
        payments: HashMap<PaymentKey, RunPayment>,
    ) -> Result<Self, StoreError> {
        let mut state = State::read_rows(tx, run).await?;
        state.payments = payments;
        let numbered: Vec<_> = run.iter().filter_map(Run::number).collect();
        if !numbered.is_empty() {
            let ids: Vec<i64> = run.iter().map(|one| one.intent_id).collect();
            state.streams = tx.run_streams_busy(&numbered, &ids).await?;
        }
        Ok(state)
    }

    /// The payment row `key` names, as the run leaves it.
    pub(super) fn payment(&self, key: (&str, &str)) -> Option<&RunPayment> {
        self.payments.get(&(key.0.to_owned(), key.1.to_owned()))
    }

    /// The guards and balances of `run` (of each event whose posting the
    /// run knows).
    async fn read_rows(tx: &mut WriteTx, run: &[Run<'_, '_>]) -> Result<Self, StoreError> {
        let known = || run.iter().filter_map(|one| Some((one, one.posting()?)));
        let guard_keys: Vec<_> = known()
            .map(|(one, posting)| {
                (
                    one.item.source.name.as_str(),
                    posting.account.as_str(),
                    one.now(),
                )
            })
            .collect();
        let balance_keys: Vec<_> = known()
            .map(|(one, posting)| (posting.account.as_str(), posting.currency.code(), one.now()))
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
            balance_keys: run.iter().filter_map(Run::balance_key).collect(),
            created: balances.created,
        })
    }

    /// Reads again what `one`, decided alone, may have moved: its payment
    /// row, its guard and its balance. A contiguous event's release may
    /// have posted parked events in other currencies of its account: each
    /// balance of the account the run holds is read again, and its stream
    /// is decided alone from now on.
    pub(super) async fn reread(
        &mut self,
        tx: &mut WriteTx,
        one: &Run<'_, '_>,
    ) -> Result<(), StoreError> {
        if let Some((scope, payment)) = one.payment_key() {
            let read = tx.lock_run_payments(&[(scope, payment, one.now())]).await?;
            self.payments.extend(read);
        }
        if one.reversal.is_some() {
            return self.reread_matched(tx, one).await;
        }
        let Some(posting) = one.posting() else {
            return Ok(());
        };
        let again = State::read_rows(tx, std::slice::from_ref(one)).await?;
        self.guards.extend(again.guards);
        self.created.extend(again.created);
        let mut rows = again.balances;
        let mut keys: Vec<RowKey> = one.balance_key().into_iter().collect();
        if let Some(guard_key) = one.guard_key().filter(|_| one.numbered()) {
            self.streams.insert(guard_key);
            let (account, own) = (posting.account.as_str(), posting.currency.code());
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
        self.set_balances(keys, &rows);
        Ok(())
    }

    /// [`State::reread`] for a reversal: it moved a guard and a balance only
    /// where its payment was credited and it names no other account (then
    /// it was matched to the account the payment credited, as
    /// `ingest::reverse` matches one, and decided there), which may not be
    /// the account the run took it to be (a credit of the payment earlier
    /// in the run, held, and another, to another account, applied). Of
    /// those, the ones the run holds are read again; the guard exists (the
    /// decision locked it), so the read creates none.
    async fn reread_matched(
        &mut self,
        tx: &mut WriteTx,
        one: &Run<'_, '_>,
    ) -> Result<(), StoreError> {
        let (Some(request), Some(key)) = (one.reversal, one.payment_key()) else {
            return Ok(());
        };
        let Some(account) = self.payment(key).and_then(RunPayment::credited_account) else {
            return Ok(());
        };
        if request
            .account
            .as_ref()
            .is_some_and(|named| named.as_str() != account)
        {
            return Ok(());
        }
        let account = account.to_owned();
        let (source, currency, now) = (
            one.item.source.name.as_str(),
            request.currency.code(),
            one.now(),
        );
        if self
            .guards
            .contains_key(&(source.to_owned(), account.clone()))
        {
            let guards = tx
                .lock_run_guards(&[(source, account.as_str(), now)], |_| SEQUENCE_FLOOR)
                .await?;
            self.guards.extend(guards);
        }
        let balance_key = (account.clone(), currency.to_owned());
        if self.balance_keys.contains(&balance_key) {
            let read = tx
                .lock_run_balances(&[(account.as_str(), currency, now)])
                .await?;
            self.created.extend(read.created);
            self.set_balances([balance_key], &read.rows);
        }
        Ok(())
    }

    /// The balances of `keys` as `rows` holds them (a missing row: none).
    fn set_balances(
        &mut self,
        keys: impl IntoIterator<Item = RowKey>,
        rows: &HashMap<RowKey, (i64, i64)>,
    ) {
        for key in keys {
            match rows.get(&key) {
                Some(&row) => self.balances.insert(key, row),
                None => self.balances.remove(&key),
            };
        }
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
        let Some(account) = one.posting().map(|posting| posting.account.as_str()) else {
            return Ok(());
        };
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

    /// Applies `one` in memory as `high_water` (with `late`),
    /// `contiguous`'s next number, `settle` and for a reversal `reverse`
    /// would, adding its writes to `batch`; false for any other decision.
    pub(super) fn apply<'r>(&mut self, one: &'r Run<'_, '_>, batch: &mut Batch<'r>) -> bool {
        // A reversal whose account the run does not know: decided alone.
        let (Some(posting), Some(guard_key)) = (one.posting(), one.guard_key()) else {
            return false;
        };
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
        let Some((amount, on_payment)) = self.on_payment(one, posting) else {
            return false;
        };
        let balance_key = (
            posting.account.as_str().to_owned(),
            posting.currency.code().to_owned(),
        );
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
        let credits_payment = self.record_on_payment(one, posting, amount, on_payment, batch);
        batch.applied.push((one.index, late));
        self.balances
            .insert(balance_key.clone(), (after, count + 1));
        let event = one.item.event;
        batch.postings.push(RunPosting {
            entry: NewLedgerEntry {
                intent_id: one.intent_id,
                credits_payment,
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

    /// What `one` posts and does to its payment row, where the run may
    /// decide that in memory: a posting of no payment; a payment's credit,
    /// only as the first thing its row records; a reversal, as
    /// [`reversal::taken`] admits it.
    fn on_payment(&self, one: &Run<'_, '_>, posting: &Posting) -> Option<(i64, OnPayment)> {
        if let Some(request) = one.reversal {
            let row = self.payment(one.payment_key()?)?;
            let amount = reversal::taken(row, posting, request)?;
            let total = request.reversal.basis == Basis::Total;
            return Some((amount, OnPayment::Reverse(row.row.payment_id, total)));
        }
        let amount = posting.signed_amount();
        let Some((key, part)) = one.payment() else {
            return Some((amount, OnPayment::None));
        };
        let row = self.payment(key)?;
        (row.fresh() && amount <= LIMIT)
            .then_some((amount, OnPayment::Credit(row.row.payment_id, part)))
    }

    /// Records `one`'s posting of `amount` on its payment row, in memory
    /// and in `batch`; the payment the entry credits whole, if it does.
    fn record_on_payment<'r>(
        &mut self,
        one: &'r Run<'_, '_>,
        posting: &'r Posting,
        amount: i64,
        on_payment: OnPayment,
        batch: &mut Batch<'r>,
    ) -> Option<i64> {
        let row = one.payment_key().and_then(|(scope, payment)| {
            self.payments
                .get_mut(&(scope.to_owned(), payment.to_owned()))
        });
        let (account, currency) = (posting.account.as_str(), posting.currency.code());
        match (on_payment, row) {
            (OnPayment::Credit(payment_id, part), Some(row)) => {
                let credited_by = (!part).then_some(one.intent_id);
                row.row.account_id = Some(account.to_owned());
                row.row.currency = Some(currency.to_owned());
                row.row.credited_minor = amount;
                row.row.credited_by = credited_by;
                batch.credits.push(RunCredit {
                    payment_id,
                    account_id: account,
                    currency,
                    amount_minor: amount,
                    credited_by,
                    updated_at: one.now(),
                });
                credited_by.map(|_| payment_id)
            }
            (OnPayment::Reverse(payment_id, total), Some(row)) => {
                row.row.reversed_minor -= amount;
                row.total_reversed |= total;
                batch.reversal(one.intent_id, account, payment_id, amount, one.now());
                None
            }
            // A posting of no payment (`on_payment` found a credit's or a
            // reversal's row under this same key).
            _ => None,
        }
    }
}

/// What a posting the run applies does to its payment row: nothing, a
/// credit (of the row's `payment_id`; a part of it?) or a reversal (by
/// a running total?).
#[derive(Clone, Copy)]
enum OnPayment {
    None,
    Credit(i64, bool),
    Reverse(i64, bool),
}
