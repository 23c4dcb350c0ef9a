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
//! server's own group commit). On both, a redelivery of an event recently
//! stored here is counted in a batch instead ([`super::redelivery`]).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use super::redelivery::{self, Recent, Recounter};
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

/// Where deliveries are stored: directly, one transaction each
/// (PostgreSQL), or through SQLite's group-committing writer; and the
/// cheap path for redeliveries of events recently stored here.
#[derive(Debug, Clone)]
pub struct Ingestor {
    store: Store,
    /// SQLite's writer; none on PostgreSQL.
    writer: Option<mpsc::Sender<Job>>,
    recent: Arc<Recent>,
    recounter: Recounter,
}

impl Job {
    pub(super) fn into_parts(self) -> (Work, oneshot::Sender<Answer>) {
        (self.work, self.reply)
    }
}

impl Ingestor {
    /// Starts the redelivery counter and, for SQLite, the writer task (each
    /// ends when every clone of the returned ingestor is dropped).
    pub fn new(store: &Store) -> Self {
        let writer = match store {
            Store::Sqlite(..) => {
                let (jobs, queue) = mpsc::channel(QUEUE);
                tokio::spawn(writer::write_groups(store.clone(), queue));
                Some(jobs)
            }
            Store::Postgres(..) => None,
        };
        Ingestor {
            store: store.clone(),
            writer,
            recent: Arc::default(),
            recounter: Recounter::spawn(store.clone()),
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
        let recounted = redelivery::counted(&self.recent, &self.recounter, source, events, raw);
        if let Some(outcome) = recounted.await {
            return Ok(vec![outcome]);
        }
        let outcomes = match &self.writer {
            None => ingest_direct(&self.store, source, events, raw).await?,
            Some(jobs) => ingest_grouped(jobs, source, events, raw).await?,
        };
        redelivery::remember(&self.recent, source, events, raw, &outcomes);
        Ok(outcomes)
    }
}

/// Through SQLite's writer, in the next group.
async fn ingest_grouped(
    jobs: &mpsc::Sender<Job>,
    source: &Arc<Source>,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Answer {
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

/// One transaction for the delivery.
async fn ingest_direct(
    store: &Store,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Answer {
    match ingest(store, source, events, raw).await {
        // Once: the winner has committed (see the error's doc).
        Err(error) if error.lost_first_delivery_race() => ingest(store, source, events, raw).await,
        answer => answer,
    }
}
