//! Where deliveries are stored: PostgreSQL runs each delivery in its own
//! transaction, in parallel (each commit's WAL flush is already shared by
//! the server's own group commit); SQLite runs them through the
//! group-committing writer ([`super::group_commit`]). On both, a
//! redelivery of an event recently stored here is counted in a batch
//! instead ([`super::redelivery`]).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::group_commit::{self, Job};
use super::redelivery::{self, Recent, Recounter};
use super::{Outcome, RawDelivery, ingest};
use crate::domain::NormalisedEvent;
use crate::source::Source;
use crate::store::{Store, StoreError};

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

impl Ingestor {
    /// Starts the redelivery counter and, for SQLite, the writer task (each
    /// ends when every clone of the returned ingestor is dropped).
    pub fn new(store: &Store) -> Self {
        let writer = match store {
            Store::Sqlite(..) => Some(group_commit::spawn(store)),
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
    ) -> Result<Vec<Outcome>, StoreError> {
        let recounted = redelivery::counted(&self.recent, &self.recounter, source, events, raw);
        if let Some(outcome) = recounted.await {
            return Ok(vec![outcome]);
        }
        let outcomes = match &self.writer {
            None => ingest_direct(&self.store, source, events, raw).await?,
            Some(jobs) => group_commit::submit(jobs, source, events, raw).await?,
        };
        redelivery::remember(&self.recent, source, events, raw, &outcomes);
        Ok(outcomes)
    }
}

/// One transaction for the delivery.
pub async fn ingest_direct(
    store: &Store,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Result<Vec<Outcome>, StoreError> {
    match ingest(store, source, events, raw).await {
        // Once: the winner has committed (see the error's doc).
        Err(error) if error.lost_first_delivery_race() => ingest(store, source, events, raw).await,
        answer => answer,
    }
}
