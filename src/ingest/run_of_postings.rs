//! A run of plain postings in one group, decided in memory and written in
//! a few set-based statements, however long the run.
//!
//! A plain posting is a high-water source's balance movement with no
//! payment link: the commonest event, and the one whose rules are few.
//! Alone, each takes four statements (intent, guard lock, posting, guard
//! advance); a run takes seven: its intents, its guards and its balances
//! read under lock, then its ledger entries, messages, balances and guards
//! written (`store::write::run`).
//!
//! Why the outcome is exactly the one by one outcome: each event is decided
//! in arrival order against the guard and balance as the events before it
//! in the run left them, by the rules `high_water` and `settle` apply to
//! such a posting: at or above the guard it is applied, the balance moves
//! and the guard rises to its sequence. Every other decision (late, held by
//! `negative_balance`, out of range) is not made here: the writes decided
//! so far are flushed, that event is decided alone by `decide_new` (its
//! intent already written, as alone), and the run goes on from what that
//! left: its own guard and balance, the only rows a plain posting decided
//! alone moves, read again. A redelivery of a stored event is counted alone;
//! plain postings change no other intent, so where in the run it is
//! counted changes nothing. A redelivery of an event earlier in the same
//! run cannot happen: the caller ends a run before a key it already holds.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use super::intent::{event_payload, new_intent};
use super::outcome::Decided;
use super::{Outcome, RawDelivery, decide_new, run};
use crate::domain::{
    Link, Movement, NegativeBalance, NormalisedEvent, OrderingMode, Posting, Status,
};
use crate::source::Source;
use crate::store::{NewLedgerEntry, RowKey, RunBalance, RunGuard, RunPosting, StoreError, WriteTx};

/// What a balance may reach (as `upsert_balance!` bounds it).
const BALANCE_LIMIT: i64 = 1 << 62;

/// One event of a run, with its delivery.
pub(super) struct Item<'a> {
    pub source: &'a Source,
    pub event: &'a NormalisedEvent,
    pub raw: &'a RawDelivery<'a>,
}

/// The run failed: at one item's own step (decided alone), or at a
/// statement of the whole run (`None`: which event it was is not known).
pub(super) struct RunFailed {
    pub item: Option<usize>,
    pub error: StoreError,
}

/// The posting of an event a run may decide; anything else is decided alone.
pub(super) fn plain<'a>(source: &Source, event: &'a NormalisedEvent) -> Option<&'a Posting> {
    match &event.movement {
        Movement::Post(posting)
            if source.ordering.mode == OrderingMode::HighWater
                && matches!(posting.link, Link::None) =>
        {
            Some(posting)
        }
        _ => None,
    }
}

/// Decides and writes every item (each must be [`plain`], their keys
/// distinct); an outcome for each, in order.
pub(super) async fn decide(
    tx: &mut WriteTx,
    items: &[Item<'_>],
) -> Result<Vec<Outcome>, RunFailed> {
    let whole = |error| RunFailed { item: None, error };
    let alone = |item| {
        move |error| RunFailed {
            item: Some(item),
            error,
        }
    };
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
    let mut outcomes: Vec<Option<Outcome>> = vec![None; items.len()];
    let mut new = Vec::with_capacity(items.len());
    for (index, id) in ids.into_iter().enumerate() {
        match id {
            Some(intent_id) => new.push(Run::new(&items[index], index, intent_id)),
            None => {
                let item = &items[index];
                let counted = run(tx, item.source, item.event, item.raw).await;
                outcomes[index] = Some(counted.map_err(alone(index))?);
            }
        }
    }
    let mut state = State::read(tx, &new).await.map_err(whole)?;
    let mut posted = HashSet::new();
    let mut next = 0;
    while next < new.len() {
        let mut batch = Batch::default();
        let stop = new[next..]
            .iter()
            .position(|one| !state.apply(one, &mut batch))
            .map(|at| next + at);
        posted.extend(batch.balances.keys().cloned());
        batch.write(tx).await.map_err(whole)?;
        for one in &new[next..stop.unwrap_or(new.len())] {
            outcomes[one.index] = Some(applied(one.item.event));
        }
        let Some(at) = stop else { break };
        let one = &new[at];
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
        // What it did (a late credit applied, or nothing) to its own guard
        // and balance, the only rows such an event moves, read back.
        state.reread(tx, one).await.map_err(whole)?;
    }
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
    Ok(outcomes
        .into_iter()
        .map(|outcome| outcome.expect("every item of a run is decided"))
        .collect())
}

/// A new event of the run: its item, its place, its intent.
struct Run<'i, 'a> {
    item: &'i Item<'a>,
    posting: &'i Posting,
    index: usize,
    intent_id: i64,
}

impl<'i, 'a> Run<'i, 'a> {
    fn new(item: &'i Item<'a>, index: usize, intent_id: i64) -> Self {
        let posting = plain(item.source, item.event).expect("a run holds plain postings only");
        Run {
            item,
            posting,
            index,
            intent_id,
        }
    }

    fn now(&self) -> DateTime<Utc> {
        self.item.raw.received_at
    }

    fn guard_key(&self) -> RowKey {
        (
            self.item.source.name.as_str().to_owned(),
            self.posting.account.as_str().to_owned(),
        )
    }

    fn balance_key(&self) -> RowKey {
        (
            self.posting.account.as_str().to_owned(),
            self.posting.currency.code().to_owned(),
        )
    }
}

/// The guards and balances of the run's accounts, as the events decided
/// so far leave them.
struct State {
    guards: HashMap<RowKey, i64>,
    balances: HashMap<RowKey, (i64, i64)>,
    /// Balance rows the read created to lock them (PostgreSQL).
    created: Vec<RowKey>,
}

impl State {
    /// Locks and reads what `run` needs: guards, then balances, each in
    /// key order (see `store::write::run`).
    async fn read(tx: &mut WriteTx, run: &[Run<'_, '_>]) -> Result<Self, StoreError> {
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
            guards,
            balances: balances.rows,
            created: balances.created,
        })
    }

    /// Reads again the guard and balance of `one`, which was decided alone.
    async fn reread(&mut self, tx: &mut WriteTx, one: &Run<'_, '_>) -> Result<(), StoreError> {
        let again = State::read(tx, std::slice::from_ref(one)).await?;
        self.guards.extend(again.guards);
        self.created.extend(again.created);
        let key = one.balance_key();
        match again.balances.get(&key) {
            Some(&row) => self.balances.insert(key, row),
            None => self.balances.remove(&key),
        };
        Ok(())
    }

    /// Applies `one` in memory as `high_water` and `settle` would, adding
    /// its writes to `batch`; false for any other decision.
    fn apply<'i, 'a>(&mut self, one: &Run<'i, 'a>, batch: &mut Batch<'i>) -> bool {
        let posting = one.posting;
        let guard_key = one.guard_key();
        let Some(&guard) = self.guards.get(&guard_key) else {
            return false;
        };
        if posting.sequence < guard {
            // Late: `on_stale` decides.
            return false;
        }
        let balance_key = one.balance_key();
        let (balance, count) = self.balances.get(&balance_key).copied().unwrap_or((0, 0));
        let amount = posting.signed_amount();
        if amount < 0
            && one.item.source.negative_balance == NegativeBalance::Hold
            && balance + amount < 0
        {
            return false;
        }
        let Some(after) = balance
            .checked_add(amount)
            .filter(|after| (-BALANCE_LIMIT..=BALANCE_LIMIT).contains(after))
        else {
            return false;
        };
        let now = one.now();
        self.guards.insert(guard_key.clone(), posting.sequence);
        self.balances
            .insert(balance_key.clone(), (after, count + 1));
        let event = one.item.event;
        batch.postings.push(RunPosting {
            entry: NewLedgerEntry {
                intent_id: one.intent_id,
                credits_payment: None,
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
        batch.guards.insert(guard_key, (posting.sequence, now));
        true
    }
}

/// The writes of the events decided in memory since the last flush.
#[derive(Default)]
struct Batch<'i> {
    postings: Vec<RunPosting<'i>>,
    /// The balance after the last posting, the count, its time.
    balances: HashMap<RowKey, (i64, i64, DateTime<Utc>)>,
    guards: HashMap<RowKey, (i64, DateTime<Utc>)>,
}

impl Batch<'_> {
    async fn write(&self, tx: &mut WriteTx) -> Result<(), StoreError> {
        if self.postings.is_empty() {
            return Ok(());
        }
        let balances: Vec<_> = self
            .balances
            .iter()
            .map(
                |((account, currency), &(balance, postings, now))| RunBalance {
                    account_id: account,
                    currency,
                    balance_minor: balance,
                    postings,
                    updated_at: now,
                },
            )
            .collect();
        let guards: Vec<_> = self
            .guards
            .iter()
            .map(|((source, account), &(sequence, now))| RunGuard {
                source,
                account_id: account,
                last_sequence: sequence,
                updated_at: now,
            })
            .collect();
        tx.write_run(&self.postings, &balances, &guards, &[]).await
    }
}

fn applied(event: &NormalisedEvent) -> Outcome {
    outcome(event, Decided::status(Status::Applied))
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
