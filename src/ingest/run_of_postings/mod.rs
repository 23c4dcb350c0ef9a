//! A run of postings in one group, decided in memory and written in a few
//! set-based statements, however long the run.
//!
//! A run holds a high-water source's balance movements: plain postings (no
//! payment link), payments' credits (whole or a part), and reversals that
//! take money back (refunds, disputes; a reinstatement is decided outside
//! runs, see `member::in_run`): the commonest events; and a contiguous
//! source's numbered postings (a stream links no payment).
//! Alone, each takes four statements (intent, guard lock, posting, guard
//! advance), a payment's credit five more (its payment row locked twice,
//! the reversals waiting for it read twice, the row credited), and a
//! refund five more (its payment row locked twice, the intent matched,
//! whether a running total counted its payment's refunds, the row's
//! reversed total); a run takes seven however long: its intents, its
//! guards and its balances read under lock, then its ledger entries,
//! messages, balances and guards written (`store::write::run`); three more
//! where it credits payments or reverses them (whether a reversal waits
//! for one of its credits, the rows created or locked, then credited:
//! `run_payments`), two more where it reverses them (the intents matched,
//! what they took: `run_reversals`), one more where it applies late events
//! (their intents marked), one more where it holds contiguous events
//! (which of their streams have a parked event or a number held:
//! `run_streams`).
//!
//! Why the outcome is exactly the one by one outcome: each event is decided
//! in arrival order against the guard, balance and payment row as the
//! events before it in the run left them, by the rules `high_water`,
//! `late` and `settle` apply to such a posting, for a reversal those of
//! `reverse` ([`reversal`]: matched to the account its payment credited,
//! as the run read the row or as a credit earlier in the run left it), and
//! for a contiguous event `contiguous`'s next number where nothing of its
//! stream is parked and no other intent holds the number ([`state`]). A
//! run is not made where a reversal waits `unmatched` for one of its
//! credits' payments, and the caller ends a run before a credit of a
//! payment a reversal earlier in the run names: a credit would release it,
//! and a release moves rows no run reads (another source's guard, the
//! reversal's intent), so those events are decided one by one. What a run
//! does not decide in memory (a late event `on_stale` holds, a debit held
//! by `negative_balance`, out of range, a payment whose row holds a credit
//! or a reversal already, or credited earlier in the run; a reversal that
//! waits, is refused, is counted otherwise or reinstates) is decided alone
//! by `decide_new`: the writes decided so far are flushed, its intent is
//! already written (as alone), and the run goes on from what it left: its
//! payment row, its own guard and balance, the only rows such an event
//! moves (nothing waits for its payment, so it releases nothing), read
//! again; for a reversal, the guard and balance of the account its payment
//! credited, where it was matched there (which may not be the account the
//! run took it to be). A contiguous event decided alone may park, or release what was
//! parked (posting in other currencies of its account): its stream is
//! decided alone from then on, and every balance of its account the run
//! posts to is read again. A redelivery of a stored event is counted
//! alone, in arrival order with the events decided alone (a release may
//! change the intent it names); what is decided in memory changes no other
//! intent. A redelivery of an event earlier in the same run cannot happen:
//! the caller ends a run before a key it already holds, and before a
//! contiguous number it already holds (its intents are inserted first, and
//! one by one only the events before an event hold its number).

mod batch;
mod member;
mod reversal;
mod state;

use std::collections::{HashMap, HashSet};

use super::intent::{event_payload, new_intent};
use super::outcome::Decided;
use super::{Outcome, decide_new, run};
use crate::domain::{NormalisedEvent, Status};
use crate::store::{PaymentKey, RowKey, RunPayment, StoreError, WriteTx};
use batch::Batch;
use member::Run;
pub(super) use member::{Effect, Item, in_run, stream_number};
use state::State;

/// The run failed: at one item's own step (decided alone), or at a
/// statement of the whole run (`None`: which event it was is not known).
pub(super) struct RunFailed {
    pub item: Option<usize>,
    pub error: StoreError,
}

/// Decides and writes every item (each [`in_run`], their keys distinct);
/// an outcome for each, in order, and how many the run decided in memory.
/// `None`, with nothing written, where a
/// reversal waits for a payment the items credit: the caller decides each
/// alone (the credit releases it, and a release moves rows the run would
/// not read again: another source's guard, other intents).
pub(super) async fn decide(
    tx: &mut WriteTx,
    items: &[Item<'_>],
) -> Result<Option<(Vec<Outcome>, usize)>, RunFailed> {
    let whole = |error| RunFailed { item: None, error };
    let payments: Vec<(&str, &str)> = items
        .iter()
        .filter_map(|item| {
            let (payment, _) = in_run(item.source, item.event)?.paid()?;
            Some((item.source.scope.as_str(), payment))
        })
        .collect();
    if !payments.is_empty() && tx.run_payments_waited_for(&payments).await.map_err(whole)? {
        return Ok(None);
    }
    let payloads: Vec<_> = items
        .iter()
        .map(|item| event_payload(item.event, item.raw))
        .collect();
    let intents: Vec<_> = items
        .iter()
        .zip(&payloads)
        .map(|(item, (body, sha256))| new_intent(item.source, item.event, item.raw, (body, sha256)))
        .collect();
    let ids = tx.insert_new_intents(&intents).await.map_err(whole)?;
    let payments = lock_payments(tx, items, &ids).await.map_err(whole)?;
    let mut outcomes: Vec<Option<Outcome>> = vec![None; items.len()];
    let mut new: Vec<Run> = Vec::with_capacity(items.len());
    let mut redelivered = Vec::new();
    for (index, id) in ids.into_iter().enumerate() {
        let item = &items[index];
        match id {
            Some(intent_id) => {
                let account = reversal_account(item, &payments, &new);
                new.push(Run::new(item, index, intent_id, account));
            }
            None => redelivered.push(index),
        }
    }
    let mut redelivered = redelivered.into_iter().peekable();
    let mut state = State::read(tx, &new, payments).await.map_err(whole)?;
    let mut posted = HashSet::new();
    let mut in_memory = 0;
    let mut next = 0;
    while next < new.len() {
        let mut batch = Batch::default();
        let stop = new[next..]
            .iter()
            .position(|one| !state.apply(one, &mut batch))
            .map(|at| next + at);
        posted.extend(batch.balances.keys().cloned());
        batch.write(tx).await.map_err(whole)?;
        in_memory += batch.applied.len();
        for &(index, late) in &batch.applied {
            outcomes[index] = Some(applied(items[index].event, late));
        }
        let Some(at) = stop else { break };
        let one = &new[at];
        count_redeliveries(tx, items, &mut redelivered, one.index, &mut outcomes).await?;
        if one.numbered() {
            state.drop_unposted(tx, one, &posted).await.map_err(whole)?;
        }
        let decided = decide_new(
            tx,
            one.item.source,
            one.item.event,
            one.intent_id,
            one.now(),
        )
        .await
        .map_err(alone(one.index))?;
        outcomes[one.index] = Some(outcome(one.item.event, decided));
        next = at + 1;
        // What it did (a credit applied late, a payment credited, or
        // nothing) to its own guard and balance, read back.
        state.reread(tx, one).await.map_err(whole)?;
    }
    count_redeliveries(tx, items, &mut redelivered, items.len(), &mut outcomes).await?;
    let unposted: Vec<RowKey> = state
        .created
        .into_iter()
        .filter(|key| !posted.contains(key))
        .collect();
    if !unposted.is_empty() {
        tx.write_run(&[], &[], &[], &unposted)
            .await
            .map_err(whole)?;
    }
    let outcomes = outcomes
        .into_iter()
        .map(|outcome| outcome.expect("every item of a run is decided"))
        .collect();
    Ok(Some((outcomes, in_memory)))
}

/// The payment rows the new events (`ids` not `None`) credit or reverse,
/// each once, created where missing and locked, in arrival order (so new
/// rows are numbered as one by one would number them; no reversal waits
/// for a payment a run credits, the caller checked). First, as one by one
/// takes a payment row before its guard and balance.
async fn lock_payments(
    tx: &mut WriteTx,
    items: &[Item<'_>],
    ids: &[Option<i64>],
) -> Result<HashMap<PaymentKey, RunPayment>, StoreError> {
    let mut seen = HashSet::new();
    let keys: Vec<_> = items
        .iter()
        .zip(ids)
        .filter(|(_, id)| id.is_some())
        .filter_map(|(item, _)| Some((item.payment_key()?, item.raw.received_at)))
        .filter(|&(key, _)| seen.insert(key))
        .map(|((scope, payment), now)| (scope, payment, now))
        .collect();
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    tx.lock_run_payments(&keys).await
}

/// The account the run takes reversal `item`'s payment to have credited:
/// the row's as read, where it holds a credit; else that of the first
/// credit of the payment in the run before it (`earlier`), by the same
/// source in the same currency, whose guard and balance the run reads
/// anyway. `None` for a posting, where neither is, or where the event
/// names another account (it is rejected alone).
fn reversal_account<'x>(
    item: &Item<'_>,
    payments: &'x HashMap<PaymentKey, RunPayment>,
    earlier: &'x [Run<'_, '_>],
) -> Option<&'x str> {
    let Some(Effect::Reverse(request)) = in_run(item.source, item.event) else {
        return None;
    };
    let (scope, payment) = item.payment_key()?;
    let read = payments
        .get(&(scope.to_owned(), payment.to_owned()))
        .and_then(RunPayment::credited_account);
    let account = read.or_else(|| {
        let credit = earlier.iter().find(|one| {
            one.payment()
                .is_some_and(|(key, _)| key == (scope, payment))
                && one.item.source.name == item.source.name
        })?;
        let posting = credit.posting()?;
        (posting.currency == request.currency).then_some(posting.account.as_str())
    })?;
    let named = request.account.as_ref();
    named
        .is_none_or(|named| named.as_str() == account)
        .then_some(account)
}

/// Counts each redelivery of `pending` (indexes into `items`, in order)
/// that came before `before`. Redeliveries are counted in arrival order
/// with the events decided alone: a contiguous one may release a parked
/// event a redelivery names, which changes the status it is answered
/// with; what a run decides in memory changes no other intent.
async fn count_redeliveries(
    tx: &mut WriteTx,
    items: &[Item<'_>],
    pending: &mut std::iter::Peekable<std::vec::IntoIter<usize>>,
    before: usize,
    outcomes: &mut [Option<Outcome>],
) -> Result<(), RunFailed> {
    while let Some(index) = pending.next_if(|&index| index < before) {
        let item = &items[index];
        let counted = run(tx, item.source, item.event, item.raw).await;
        outcomes[index] = Some(counted.map_err(alone(index))?);
    }
    Ok(())
}

/// A failure of `item`'s own statements.
fn alone(item: usize) -> impl FnOnce(StoreError) -> RunFailed {
    move |error| RunFailed {
        item: Some(item),
        error,
    }
}

fn applied(event: &NormalisedEvent, late: bool) -> Outcome {
    outcome(
        event,
        Decided {
            late,
            ..Decided::status(Status::Applied)
        },
    )
}

fn outcome(event: &NormalisedEvent, decided: Decided) -> Outcome {
    Outcome {
        event_id: event.event_id.clone(),
        status: decided.status,
        duplicate: false,
        conflict: false,
        late: decided.late,
        released: decided.released,
        backlog: decided.backlog,
    }
}
