//! Group commit for SQLite. SQLite commits one transaction at a time and
//! each commit waits for its fsync (`synchronous=FULL`): one delivery per
//! transaction caps a file at a few thousand deliveries per second whatever
//! the CPU. Here deliveries queue for one writer task, which takes every
//! delivery waiting (up to [`GROUP_MAX`]), runs them one after another in
//! one transaction, commits once, and only then answers each with its own
//! outcome. A delivery whose statement fails (a database error; a refused
//! event is an outcome, not an error) rolls the group back, is answered
//! with its error, and the others run again together without it; what
//! else can fail, and whom it fails, is in [`super::writer`]. (Savepoints
//! would avoid the re-run, at two statements more per delivery on the path
//! that never fails; each statement costs a handoff to sqlx's SQLite
//! thread.)
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
use super::{Outcome, RawDelivery, ingest, writer};
use crate::domain::NormalisedEvent;
use crate::source::Source;
use crate::store::{Store, StoreError};

/// Deliveries committed together at most; bounds one transaction's work
/// (and so how long an operator action may wait for its turn).
pub const GROUP_MAX: usize = 128;

/// Deliveries that may wait for the writer; beyond them a request waits to
/// queue (its deadline still applies).
const QUEUE: usize = 1024;

pub(super) type Answer = Result<Vec<Outcome>, StoreError>;

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

impl Job {
    pub(super) fn into_parts(self) -> (Work, oneshot::Sender<Answer>) {
        (self.work, self.reply)
    }
}

impl Ingestor {
    /// For SQLite, starts the writer task (it ends when every clone of the
    /// returned ingestor is dropped).
    pub fn new(store: &Store) -> Self {
        match store {
            Store::Sqlite(..) => {
                let (jobs, queue) = mpsc::channel(QUEUE);
                tokio::spawn(writer::write_groups(store.clone(), queue));
                Ingestor::Grouped(jobs)
            }
            Store::Postgres(..) => Ingestor::Direct(store.clone(), Arc::default()),
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
        let work = Work {
            source: source.clone(),
            events: events.to_vec(),
            payload: raw.payload.to_vec(),
            payload_sha256: raw.payload_sha256.to_owned(),
            received_at: raw.received_at,
            signature_headers: raw.signature_headers.map(str::to_owned),
            signed_at: raw.signed_at,
            signed_event_id: raw.signed_event_id.map(str::to_owned),
        };
        jobs.send(Job { work, reply })
            .await
            .map_err(|_| writer::gone())?;
        // Dropped unanswered only if the writer is gone.
        answer.await.map_err(|_| writer::gone())?
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
