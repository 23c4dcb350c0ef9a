//! Group commit for SQLite. SQLite commits one transaction at a time and
//! each commit waits for its fsync (`synchronous=FULL`): one delivery per
//! transaction caps a file at a few thousand deliveries per second whatever
//! the CPU. Here deliveries queue for one writer task, which takes every
//! delivery waiting (up to [`GROUP_MAX`]), runs them one after another in
//! one transaction, commits once, and only then answers each with its own
//! outcome. If any delivery fails (a database error; a refused event is an
//! outcome, not an error), or the commit does, the group is rolled back
//! whole and each of its deliveries runs again alone, in a transaction of
//! its own, so that one failing delivery fails alone. (Savepoints would
//! avoid the re-run, at two statements more per delivery on the path that
//! never fails; each statement costs a handoff to sqlx's SQLite thread.)
//!
//! Why it is safe: every delivery's statements are exactly those it would
//! run alone, in arrival order, each seeing the ones before it (a
//! redelivery of an event earlier in the same group is a duplicate, as it
//! would be after that event's commit); and no answer leaves before the
//! commit that makes it true. A request cut off while its delivery waits
//! (a client gone, a shutdown's deadline) may be committed and unanswered:
//! its redelivery is then a duplicate with no second effect.
//!
//! PostgreSQL runs deliveries in parallel transactions instead (many
//! writers at once; each commit's WAL flush is already shared by the
//! server's own group commit).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use super::redelivery::{self, Recent};
use super::{Outcome, RawDelivery, ingest, run};
use crate::domain::NormalisedEvent;
use crate::source::Source;
use crate::store::{Store, StoreError, WriteTx};

/// Deliveries committed together at most; bounds one transaction's work
/// (and so how long an operator action may wait for its turn).
pub const GROUP_MAX: usize = 128;

/// Deliveries that may wait for the writer; beyond them a request waits to
/// queue (its deadline still applies).
const QUEUE: usize = 1024;

type Answer = Result<Vec<Outcome>, StoreError>;

/// One delivery for the writer, owned.
#[derive(Debug)]
pub struct Job {
    source: Arc<Source>,
    events: Vec<NormalisedEvent>,
    payload: Vec<u8>,
    payload_sha256: String,
    received_at: DateTime<Utc>,
    reply: oneshot::Sender<Answer>,
}

/// Where deliveries are stored: directly, one transaction each, or through
/// SQLite's group-committing writer.
#[derive(Debug, Clone)]
pub enum Ingestor {
    /// One transaction per delivery, with the events recently stored here
    /// (for the cheap redelivery path).
    Direct(Store, Arc<Recent>),
    Grouped(mpsc::Sender<Job>),
}

impl Ingestor {
    /// For SQLite, starts the writer task (it ends when every clone of the
    /// returned ingestor is dropped).
    pub fn new(store: &Store) -> Self {
        match store {
            Store::Sqlite(..) => {
                let (jobs, queue) = mpsc::channel(QUEUE);
                tokio::spawn(write_groups(store.clone(), queue));
                Ingestor::Grouped(jobs)
            }
            Store::Postgres(_) => Ingestor::Direct(store.clone(), Arc::default()),
        }
    }

    /// Stores and decides every event of one delivery, committed before
    /// this returns.
    pub async fn ingest(
        &self,
        source: &Arc<Source>,
        events: &[NormalisedEvent],
        raw: &RawDelivery<'_>,
    ) -> Answer {
        let jobs = match self {
            Ingestor::Direct(store, recent) => {
                return ingest_direct(store, recent, source, events, raw).await;
            }
            Ingestor::Grouped(jobs) => jobs,
        };
        let (reply, answer) = oneshot::channel();
        let job = Job {
            source: source.clone(),
            events: events.to_vec(),
            payload: raw.payload.to_vec(),
            payload_sha256: raw.payload_sha256.to_owned(),
            received_at: raw.received_at,
            reply,
        };
        let gone = || StoreError::Unavailable(sqlx::Error::PoolClosed);
        jobs.send(job).await.map_err(|_| gone())?;
        // Dropped unanswered only if the group's task panicked: nothing of
        // it was committed.
        answer.await.map_err(|_| gone())?
    }
}

/// One transaction for the delivery, unless it is a redelivery of an event
/// recently stored here and the store counts it in one statement.
async fn ingest_direct(
    store: &Store,
    recent: &Recent,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Answer {
    if let Some(outcome) = redelivery::counted(store, recent, source, events, raw).await? {
        return Ok(vec![outcome]);
    }
    let outcomes = match ingest(store, source, events, raw).await {
        // Once: the winner has committed (see the error's doc).
        Err(error) if error.lost_first_delivery_race() => {
            ingest(store, source, events, raw).await?
        }
        answer => answer?,
    };
    for outcome in &outcomes {
        recent.remember(&source.scope, outcome.event_id.as_str());
    }
    Ok(outcomes)
}

/// The writer: one group at a time, each in a task of its own so that a
/// panic fails that group's deliveries (unanswered: 503) and not the
/// writer.
async fn write_groups(store: Store, mut queue: mpsc::Receiver<Job>) {
    let mut group = Vec::with_capacity(GROUP_MAX);
    while queue.recv_many(&mut group, GROUP_MAX).await > 0 {
        let jobs = std::mem::take(&mut group);
        if let Err(panic) = tokio::spawn(commit_group(store.clone(), jobs)).await {
            tracing::error!("a group commit failed unexpectedly: {panic}");
        }
    }
}

async fn commit_group(store: Store, jobs: Vec<Job>) {
    match run_together(&store, &jobs).await {
        Ok(answers) => {
            for (job, outcomes) in jobs.into_iter().zip(answers) {
                // A requester that went away learns nothing; its redelivery
                // will.
                let _ = job.reply.send(Ok(outcomes));
            }
        }
        // A delivery or the commit failed, and nothing of the group was
        // kept: each delivery runs again alone and gets its own answer.
        Err(_) if jobs.len() > 1 => {
            for job in jobs {
                let answer = run_together(&store, std::slice::from_ref(&job)).await;
                let _ = job
                    .reply
                    .send(answer.map(|mut one| one.pop().unwrap_or_default()));
            }
        }
        Err(error) => {
            if let Some(job) = jobs.into_iter().next() {
                let _ = job.reply.send(Err(error));
            }
        }
    }
}

/// Runs every delivery of `jobs` in one transaction and commits it: the
/// outcomes of each, or the first error, and then nothing was kept.
async fn run_together(store: &Store, jobs: &[Job]) -> Result<Vec<Vec<Outcome>>, StoreError> {
    let mut tx = store.begin().await?;
    match run_all(&mut tx, jobs).await {
        Ok(answers) => {
            tx.commit().await?;
            Ok(answers)
        }
        Err(error) => {
            // Explicit, so the write lock is free before the next turn.
            let _ = tx.rollback().await;
            Err(error)
        }
    }
}

async fn run_all(tx: &mut WriteTx, jobs: &[Job]) -> Result<Vec<Vec<Outcome>>, StoreError> {
    let mut answers = Vec::with_capacity(jobs.len());
    for job in jobs {
        let raw = RawDelivery {
            payload: &job.payload,
            payload_sha256: &job.payload_sha256,
            received_at: job.received_at,
        };
        let mut outcomes = Vec::with_capacity(job.events.len());
        for event in &job.events {
            outcomes.push(run(tx, &job.source, event, &raw).await?);
        }
        answers.push(outcomes);
    }
    Ok(answers)
}
