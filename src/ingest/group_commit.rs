//! Group commit. SQLite commits one transaction at a time and each commit
//! waits for its fsync (`synchronous=FULL`): one delivery per transaction
//! caps a file at a few thousand deliveries per second whatever the CPU.
//! PostgreSQL spends most of a one-event transaction's CPU on the
//! statements and the commit themselves, not on the rows. So on both,
//! deliveries queue for their process's writers; one takes every
//! delivery waiting (up to [`GROUP_MAX`]), runs them one after another in
//! one transaction, commits once, and only then answers each with its own
//! outcome. A delivery whose statement fails (a database error; a refused
//! event is an outcome, not an error) rolls the group back, is answered
//! with its error, and the others run again together without it; what
//! else can fail, and whom it fails, is below. (Savepoints would avoid the
//! re-run, at two statements more per delivery on the path that never
//! fails; each statement costs a handoff to sqlx's SQLite thread.)
//!
//! Why it is safe: every event is decided in arrival order, each seeing the
//! ones before it (a redelivery of an event earlier in the same group is a
//! duplicate, as it would be after that event's commit), by exactly the
//! statements it would run alone, or for a run of postings (plain ones,
//! payments' credits, refunds and disputes, a stream's next numbers) by the
//! same rules in memory with the run's writes set-based
//! ([`super::run_of_postings`]); and no answer leaves before the commit
//! that makes it true. A request cut off while its delivery waits
//! (a client gone, a shutdown's deadline) may be committed and unanswered:
//! its redelivery is then a duplicate with no second effect.
//!
//! A writer runs one group at a time, each in a task of its own: on
//! SQLite one writer, on PostgreSQL [`PG_WRITERS`] taking turns at the
//! queue, so that a delivery arriving while a group commits starts at once.
//! Failures, and who they fail:
//! - a delivery's own error that is not transient (a constraint, a bug):
//!   that delivery is answered with it, and the others run again together
//!   without it; where the failing statement wrote a whole run (whose
//!   delivery is not known), the group is split in halves until it is,
//!   and that delivery runs once more with each event decided alone
//!   before it is answered with the error;
//! - losing to another transaction (PostgreSQL: a deadlock or a
//!   serialization failure it ended by aborting this one, or the
//!   concurrent first delivery of one event from another instance): the
//!   same deliveries run again, up to three times. The group takes the
//!   write keys of all its events first (`store::WriteKeys`), so another
//!   group or an operator's action that shares anything with it waits, or
//!   is waited for, whole: between two writers that take keys and agree
//!   on the config, neither a deadlock nor that race happens, and this
//!   path is left for the cases `store::write::keys` lists;
//! - a transient error (the write turn or the pool timed out, SQLite busy
//!   because of another process, an I/O error at commit): every delivery
//!   of the group is answered 503 at once, never re-run one by one (each
//!   would wait out the same timeout again while the queue behind waits);
//! - a COMMIT whose outcome is unknown (its answer lost with the
//!   connection, a failover say; or PostgreSQL: no answer within the
//!   group's bound, a COMMIT waiting for a synchronous standby that is
//!   gone): transient as above, so a group is never acknowledged unless
//!   its COMMIT is known to have succeeded; the redelivery of its events
//!   is a duplicate if it did, and is applied if it did not;
//! - a panic: the answers stay with the writer, so each delivery then runs
//!   alone, and only one that panics again goes unanswered (503).
//!
//! A delivery whose requester has gone (its deadline passed while it
//! queued) is not run: nothing of it was written, and its provider retries.

use std::collections::VecDeque;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use super::keys;
use super::run_length::run_length;
use super::run_of_postings::{self, Item};
use super::{Outcome, RawDelivery, run};
use crate::domain::{NormalisedEvent, Origin};
use crate::source::Source;
use crate::store::{Store, StoreError, WriteTx};

/// PostgreSQL: groups committing at once. With one, a delivery arriving
/// while a group commits waits for that commit before its own group
/// starts; with two, the second writer takes it at once. Measured on this
/// machine (BENCHMARKS.md, 2026-12-06, third session), one / two / four /
/// eight writers: at saturation 7,365-7,387 / 7,850-7,859 / 6,751-6,892 /
/// 5,595-6,346 new events/s; at 1,000/s open loop, p95 3.0-5.2 / 1.6-2.7
/// / 1.7-3.8 / 2.4-9.3 ms. Groups that share an account, a payment or an
/// event take their write keys in one order (`store::WriteKeys`), so two
/// writers of one process wait for each other as two instances do; which
/// of two deliveries in flight at once is decided first was never
/// promised (two instances behind a balancer decide them in either order).
const PG_WRITERS: usize = 2;

/// Deliveries committed together at most; bounds one transaction's work
/// (and so how long an operator action may wait for its turn).
pub const GROUP_MAX: usize = 128;

/// Events one transaction decides at most, split at deliveries (a bigger
/// delivery runs alone). On PostgreSQL each event holds up to four write
/// keys until its transaction ends (its event, account and payment, and
/// the account that payment was credited to: `store::WriteKeys`), each a
/// slot of the server's shared lock table (`max_locks_per_transaction` x
/// `max_connections`, 6,400 by default): a group takes at most some 1,000.
const GROUP_EVENTS: usize = 256;

/// How often one set of deliveries runs again after losing to another
/// transaction, before its deliveries are answered with the error.
const LOST_RERUNS: usize = 3;

/// Deliveries that may wait for the writer; beyond them a request waits to
/// queue (its deadline still applies).
const QUEUE: usize = 1024;

type Answer = Result<Vec<Outcome>, StoreError>;

/// One delivery for the writer: what it stores, owned, and where its
/// answer goes.
#[derive(Debug)]
pub struct Job {
    work: Work,
    reply: oneshot::Sender<Answer>,
}

#[derive(Debug)]
pub(super) struct Work {
    pub source: Arc<Source>,
    pub events: Vec<NormalisedEvent>,
    pub payload: Vec<u8>,
    pub payload_sha256: String,
    pub received_at: DateTime<Utc>,
    pub signature_headers: Option<String>,
    pub signed_at: Option<i64>,
    pub signed_event_id: Option<String>,
    pub origin: Origin,
}

impl Work {
    fn new(source: &Arc<Source>, events: &[NormalisedEvent], raw: &RawDelivery<'_>) -> Self {
        Work {
            source: source.clone(),
            events: events.to_vec(),
            payload: raw.payload.to_vec(),
            payload_sha256: raw.payload_sha256.to_owned(),
            received_at: raw.received_at,
            signature_headers: raw.signature_headers.map(str::to_owned),
            signed_at: raw.signed_at,
            signed_event_id: raw.signed_event_id.map(str::to_owned),
            origin: raw.origin,
        }
    }

    fn raw(&self) -> RawDelivery<'_> {
        RawDelivery {
            payload: &self.payload,
            payload_sha256: &self.payload_sha256,
            received_at: self.received_at,
            signature_headers: self.signature_headers.as_deref(),
            signed_at: self.signed_at,
            signed_event_id: self.signed_event_id.as_deref(),
            origin: self.origin,
        }
    }
}

impl Job {
    pub(super) fn into_parts(self) -> (Work, oneshot::Sender<Answer>) {
        (self.work, self.reply)
    }
}

/// Starts the writers; they end when every sender is dropped.
pub(super) fn spawn(store: &Store) -> mpsc::Sender<Job> {
    let (jobs, queue) = mpsc::channel(QUEUE);
    let queue = Arc::new(tokio::sync::Mutex::new(queue));
    for _ in 0..writers(store) {
        tokio::spawn(write_groups(store.clone(), queue.clone()));
    }
    jobs
}

/// How many groups commit at once. SQLite: one, its one write lock is
/// taken by every group anyway. PostgreSQL: [`PG_WRITERS`].
fn writers(store: &Store) -> usize {
    match store {
        Store::Sqlite(..) => 1,
        Store::Postgres(..) => PG_WRITERS,
    }
}

/// Through a writer, in the next group.
pub(super) async fn submit(
    jobs: &mpsc::Sender<Job>,
    source: &Arc<Source>,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Answer {
    let (reply, answer) = oneshot::channel();
    let work = Work::new(source, events, raw);
    jobs.send(Job { work, reply }).await.map_err(|_| gone())?;
    // Dropped unanswered only if the writer is gone.
    answer.await.map_err(|_| gone())?
}

fn gone() -> StoreError {
    StoreError::Unavailable(sqlx::Error::PoolClosed)
}

/// One writer: takes every delivery queued (up to [`GROUP_MAX`]) once the
/// queue is its turn, commits them, answers them, again. While it commits,
/// the next writer waits at the queue and takes what arrives meanwhile.
async fn write_groups(store: Store, queue: Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>) {
    let mut group = Vec::with_capacity(GROUP_MAX);
    loop {
        let taken = queue.lock().await.recv_many(&mut group, GROUP_MAX).await;
        if taken == 0 {
            break;
        }
        let (works, replies): (Vec<Work>, Vec<_>) = group
            .drain(..)
            .map(Job::into_parts)
            .filter(|(_, reply)| !reply.is_closed())
            .unzip();
        if works.is_empty() {
            continue;
        }
        let works = Arc::new(works);
        let answers = match tokio::spawn(commit_group(store.clone(), works.clone())).await {
            Ok((answers, _)) => answers,
            Err(panic) => {
                tracing::error!("a group commit panicked, running its deliveries alone: {panic}");
                let mut answers = Vec::with_capacity(works.len());
                for index in 0..works.len() {
                    let alone = tokio::spawn(commit_one(store.clone(), works.clone(), index));
                    answers.push(alone.await.unwrap_or_else(|_| Err(gone())));
                }
                answers
            }
        };
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A requester that went away meanwhile learns nothing; its
            // redelivery will (a duplicate if this committed).
            let _ = reply.send(answer);
        }
    }
}

/// Why a group did not commit: the position (in the group as run) of the
/// delivery whose statement failed, if it was one's alone.
struct Failed {
    at: Option<usize>,
    error: StoreError,
}

/// Commits as many of `works` as can be, in order: an answer for each.
/// A delivery whose own statement fails is answered with its error and the
/// others run again without it. A set-based statement that fails (one of a
/// run of postings: which delivery's row it was is not known) splits the
/// deliveries in halves, the first committed (or split again) before the
/// second runs, so that what commits is still in arrival order. Also its
/// counts ([`GroupCounts`]).
async fn commit_group(store: Store, works: Arc<Vec<Work>>) -> (Vec<Answer>, GroupCounts) {
    let mut answers: Vec<Option<Answer>> = works.iter().map(|_| None).collect();
    let mut counts = GroupCounts::default();
    let mut parts = within(works.iter().map(|work| work.events.len()), GROUP_EVENTS);
    while let Some(mut pending) = parts.pop_front() {
        let mut lost = 0;
        let mut runs = true;
        while !pending.is_empty() {
            match bounded(&store, run_together(&store, &works, &pending, runs)).await {
                // Another transaction won (PostgreSQL: another instance's
                // group, an operator, a reconcile run): it has committed
                // or gone on, so the same deliveries run again, and wait
                // for it this time. A few times at most.
                Err(Failed { error, .. })
                    if lost < LOST_RERUNS
                        && (error.lost_first_delivery_race()
                            || error.lost_to_another_transaction()) =>
                {
                    lost += 1;
                    tracing::debug!(
                        "a group lost to another transaction, running it again: {error}"
                    );
                }
                Ok(run) => {
                    counts.decided_in_memory += run.in_memory;
                    for (&index, outcomes) in pending.iter().zip(run.outcomes) {
                        answers[index] = Some(Ok(outcomes));
                    }
                    break;
                }
                Err(Failed {
                    at: Some(position),
                    error,
                }) if !error.is_transient() => {
                    answers[pending.remove(position)] = Some(Err(error));
                }
                Err(Failed { at: None, error }) if !error.is_transient() && pending.len() > 1 => {
                    counts.set_based_failures += 1;
                    tracing::debug!("a group's set-based statement failed, splitting it: {error}");
                    parts.push_front(pending.split_off(pending.len() / 2));
                }
                Err(Failed { at: None, error }) if !error.is_transient() && runs => {
                    // The one delivery again with every event decided
                    // alone, the statements it would run by itself.
                    counts.set_based_failures += 1;
                    tracing::debug!("a delivery's run failed, deciding its events alone: {error}");
                    runs = false;
                }
                Err(Failed { at: None, error }) if !error.is_transient() => {
                    answers[pending.remove(0)] = Some(Err(error));
                }
                Err(Failed { error, .. }) => {
                    // A server that refused the write leaves the pool.
                    store.recycle_after_refusal();
                    // Transient: everything not yet committed is answered
                    // with it, none waits it out again.
                    for index in pending.drain(..).chain(parts.drain(..).flatten()) {
                        answers[index] = Some(Err(error.shared()));
                    }
                }
            }
        }
    }
    let answers = answers
        .into_iter()
        .map(|answer| answer.unwrap_or_else(|| Err(gone())))
        .collect();
    (answers, counts)
}

/// What the deliveries of one transaction came to: their outcomes, and how
/// many events its runs decided in memory.
struct Run {
    outcomes: Vec<Vec<Outcome>>,
    in_memory: usize,
}

/// How a group was committed, for the tests that hold it to one by one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCounts {
    /// How many times one of its set-based statements failed, and the
    /// group was split or a delivery run again with its events alone.
    pub set_based_failures: usize,
    /// Events its runs decided in memory (in the transactions that
    /// committed).
    pub decided_in_memory: usize,
}

/// The deliveries (by their events' counts) in parts of at most `budget`
/// events each, in order; a delivery of more is a part of its own.
fn within(counts: impl Iterator<Item = usize>, budget: usize) -> VecDeque<Vec<usize>> {
    let mut parts = VecDeque::new();
    let (mut part, mut events) = (Vec::new(), 0);
    for (index, count) in counts.enumerate() {
        if !part.is_empty() && events + count > budget {
            parts.push_back(std::mem::take(&mut part));
            events = 0;
        }
        part.push(index);
        events += count;
    }
    if !part.is_empty() {
        parts.push_back(part);
    }
    parts
}

async fn commit_one(store: Store, works: Arc<Vec<Work>>, index: usize) -> Answer {
    match bounded(&store, run_together(&store, &works, &[index], false)).await {
        Ok(mut run) => Ok(run.outcomes.pop().unwrap_or_default()),
        Err(failed) => Err(failed.error),
    }
}

/// `run` within the store's bound on a group (PostgreSQL, `store::
/// WriteBound`). Past it the run is dropped, which closes its connection
/// (`store::write`): whatever it had not committed rolls back, and if its
/// COMMIT had been sent, whether it took effect is unknown. Either way its
/// deliveries are answered 503, never 200, and their redeliveries find
/// them committed (duplicates) or not (applied then).
async fn bounded(
    store: &Store,
    run: impl std::future::Future<Output = Result<Run, Failed>>,
) -> Result<Run, Failed> {
    let Some(bound) = store.write_bound() else {
        return run.await;
    };
    tokio::time::timeout(bound, run).await.unwrap_or_else(|_| {
        Err(Failed {
            at: None,
            error: StoreError::OutcomeUnknown(format!(
                "a group did not end within {} ms; its connection is closed",
                bound.as_millis()
            )),
        })
    })
}

/// Runs the deliveries `pending` (indexes into `works`) in one transaction
/// and commits it: the outcomes of each, or why not, and then nothing was
/// kept. Without `runs`, every event is decided alone.
async fn run_together(
    store: &Store,
    works: &[Work],
    pending: &[usize],
    runs: bool,
) -> Result<Run, Failed> {
    let whole = |error| Failed { at: None, error };
    let mut tx = store.begin().await.map_err(whole)?;
    // Everything the group may touch, before it touches anything.
    if tx.takes_keys() {
        let keys = keys::of_events(pending.iter().flat_map(|&index| {
            let work = &works[index];
            work.events
                .iter()
                .map(|event| (work.source.scope.as_str(), event))
        }));
        tx.lock_keys(keys).await.map_err(whole)?;
    }
    let run_min = if runs { RUN_MIN } else { usize::MAX };
    match run_all(&mut tx, works, pending, run_min).await {
        Ok(run) => {
            tx.commit().await.map_err(whole)?;
            Ok(run)
        }
        Err(failed) => {
            // Explicit, so the write lock is free before the next turn.
            let _ = tx.rollback().await;
            Err(failed)
        }
    }
}

/// Every event of the deliveries, in arrival order: runs of postings
/// together ([`run_of_postings`]), every other event alone.
async fn run_all(
    tx: &mut WriteTx,
    works: &[Work],
    pending: &[usize],
    run_min: usize,
) -> Result<Run, Failed> {
    let raws: Vec<RawDelivery<'_>> = pending.iter().map(|&index| works[index].raw()).collect();
    // (position in `pending`, event), in arrival order.
    let events: Vec<(usize, &NormalisedEvent)> = pending
        .iter()
        .enumerate()
        .flat_map(|(position, &index)| works[index].events.iter().map(move |e| (position, e)))
        .collect();
    let source = |position: usize| works[pending[position]].source.as_ref();
    let mut outcomes: Vec<Vec<Outcome>> = pending
        .iter()
        .map(|&index| Vec::with_capacity(works[index].events.len()))
        .collect();
    let mut in_memory = 0;
    let mut next = 0;
    while next < events.len() {
        let length = run_length(&events[next..], source);
        if length >= run_min {
            let run = &events[next..next + length];
            let items: Vec<Item<'_>> = run
                .iter()
                .map(|&(position, event)| Item {
                    source: source(position),
                    event,
                    raw: &raws[position],
                })
                .collect();
            let decided = run_of_postings::decide(tx, &items)
                .await
                .map_err(|failed| Failed {
                    at: failed.item.map(|item| run[item].0),
                    error: failed.error,
                })?;
            if let Some((decided, counted)) = decided {
                in_memory += counted;
                for (&(position, _), outcome) in run.iter().zip(decided) {
                    outcomes[position].push(outcome);
                }
                next += length;
                continue;
            }
            // A reversal waits for one of the run's payments: every event
            // of it alone.
            for _ in 0..length {
                let (position, event) = events[next];
                outcomes[position]
                    .push(alone(tx, source(position), event, &raws[position], position).await?);
                next += 1;
            }
        } else {
            let (position, event) = events[next];
            outcomes[position]
                .push(alone(tx, source(position), event, &raws[position], position).await?);
            next += 1;
        }
    }
    Ok(Run {
        outcomes,
        in_memory,
    })
}

/// One event decided alone, by the statements it would run by itself; a
/// failure is the delivery's own.
async fn alone(
    tx: &mut WriteTx,
    source: &Source,
    event: &NormalisedEvent,
    raw: &RawDelivery<'_>,
    position: usize,
) -> Result<Outcome, Failed> {
    run(tx, source, event, raw).await.map_err(|error| Failed {
        at: Some(position),
        error,
    })
}

/// Shorter runs are decided alone: a run's seven statements cost more than
/// one event's four.
const RUN_MIN: usize = 2;

/// Commits `deliveries` in order as the writer commits one group (split
/// only where a delivery fails): an answer for each. What the tests hold
/// to the same deliveries committed one by one.
pub async fn commit_together(
    store: &Store,
    deliveries: &[(Arc<Source>, Vec<NormalisedEvent>, RawDelivery<'_>)],
) -> Vec<Answer> {
    commit_together_counted(store, deliveries).await.0
}

/// [`commit_together`], and its counts: how many times one of the group's
/// set-based statements failed and the group was split or run alone (none,
/// where a run's decisions in memory agree with the rows: a disagreement
/// shows as a key the run's writes break, caught and run again, so the
/// answers alone would not show it), and how many events its runs decided
/// in memory (so a test knows the path it holds to one by one was taken).
pub async fn commit_together_counted(
    store: &Store,
    deliveries: &[(Arc<Source>, Vec<NormalisedEvent>, RawDelivery<'_>)],
) -> (Vec<Answer>, GroupCounts) {
    let works = deliveries
        .iter()
        .map(|(source, events, raw)| Work::new(source, events, raw))
        .collect();
    commit_group(store.clone(), Arc::new(works)).await
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn parts_keep_to_the_event_budget_at_delivery_boundaries() {
        let parts = |counts: &[usize]| -> Vec<Vec<usize>> {
            within(counts.iter().copied(), 10).into_iter().collect()
        };
        assert_eq!(parts(&[1; 4]), [vec![0, 1, 2, 3]]);
        assert_eq!(parts(&[4, 6, 1]), [vec![0, 1], vec![2]]);
        // A delivery larger than the budget is one part, alone.
        assert_eq!(parts(&[3, 25, 2]), [vec![0], vec![1], vec![2]]);
        assert_eq!(parts(&[10, 10]), [vec![0], vec![1]]);
        assert!(parts(&[]).is_empty());
    }
}
