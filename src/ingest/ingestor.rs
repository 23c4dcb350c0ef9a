//! Where deliveries are stored: through the group-committing writer
//! ([`super::group_commit`]), on both backends. A redelivery of an event
//! recently stored here is counted in a batch instead
//! ([`super::redelivery`]).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::group_commit::{self, Job};
use super::redelivery::{self, Recent, Recounter};
use super::{Outcome, RawDelivery, ingest};
use crate::domain::NormalisedEvent;
use crate::source::Source;
use crate::store::{Store, StoreError};

/// Where deliveries are stored: the group-committing writer; and the cheap
/// path for redeliveries of events recently stored here.
#[derive(Debug, Clone)]
pub struct Ingestor {
    writer: mpsc::Sender<Job>,
    recent: Arc<Recent>,
    recounter: Recounter,
}

impl Ingestor {
    /// Starts the redelivery counter and the writer task (each ends when
    /// every clone of the returned ingestor is dropped).
    pub fn new(store: &Store) -> Self {
        Ingestor {
            writer: group_commit::spawn(store),
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
        let outcomes = group_commit::submit(&self.writer, source, events, raw).await?;
        redelivery::remember(&self.recent, source, events, raw, &outcomes);
        Ok(outcomes)
    }
}

/// One transaction for the delivery, outside the writer (a reconcile run's
/// events), within the store's bound as a group is (`group_commit`).
pub async fn ingest_direct(
    store: &Store,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Result<Vec<Outcome>, StoreError> {
    let once = || async {
        let Some(bound) = store.write_bound() else {
            return ingest(store, source, events, raw).await;
        };
        tokio::time::timeout(bound, ingest(store, source, events, raw))
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::OutcomeUnknown(format!(
                    "a delivery's transaction did not end within {} ms; its connection is closed",
                    bound.as_millis()
                )))
            })
    };
    match once().await {
        // Once: the winner has committed (see the error's doc).
        Err(error) if error.lost_first_delivery_race() => once().await,
        answer => answer,
    }
}
