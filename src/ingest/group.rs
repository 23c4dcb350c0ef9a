//! Group commit for SQLite. SQLite commits one transaction at a time and
//! each commit waits for its fsync (`synchronous=FULL`): one delivery per
//! transaction caps a file at a few thousand deliveries per second whatever
//! the CPU. Here deliveries queue for one writer task, which takes every
//! delivery waiting (up to [`GROUP_MAX`]), runs each inside its own
//! savepoint in one transaction, commits once, and only then answers each
//! with its own outcome. A delivery that fails rolls back its savepoint
//! only; if the commit fails, no delivery of the group is answered 200.
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
    let outcomes = ingest(store, source, events, raw).await?;
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
    let mut tx = match store.begin().await {
        Ok(tx) => tx,
        Err(error) => return fail_all(jobs.into_iter().map(|j| j.reply), &error),
    };
    let mut answers = Vec::with_capacity(jobs.len());
    for job in jobs {
        match run_one(&mut tx, &job).await {
            Ok(answer) => answers.push((job.reply, answer)),
            // The transaction is in an unknown state: nothing commits.
            Err(error) => {
                let replies = answers.into_iter().map(|(reply, _)| reply);
                return fail_all(replies.chain([job.reply]), &error);
            }
        }
    }
    if let Err(error) = tx.commit().await {
        return fail_all(answers.into_iter().map(|(reply, _)| reply), &error);
    }
    for (reply, answer) in answers {
        // A requester that went away learns nothing; its redelivery will.
        let _ = reply.send(answer);
    }
}

/// One delivery inside its savepoint: its own answer (outcomes, or the
/// error that rolled it back), or an error of the savepoint statements
/// themselves, which ends the group.
async fn run_one(tx: &mut WriteTx, job: &Job) -> Result<Answer, StoreError> {
    let raw = RawDelivery {
        payload: &job.payload,
        payload_sha256: &job.payload_sha256,
        received_at: job.received_at,
    };
    tx.savepoint().await?;
    let mut outcomes = Vec::with_capacity(job.events.len());
    for event in &job.events {
        match run(tx, &job.source, event, &raw).await {
            Ok(outcome) => outcomes.push(outcome),
            Err(error) => {
                tx.rollback_to_savepoint().await?;
                return Ok(Err(error));
            }
        }
    }
    tx.release_savepoint().await?;
    Ok(Ok(outcomes))
}

/// Answers every delivery of a group that did not commit with the error.
fn fail_all(replies: impl Iterator<Item = oneshot::Sender<Answer>>, error: &StoreError) {
    for reply in replies {
        let _ = reply.send(Err(error.shared()));
    }
}
