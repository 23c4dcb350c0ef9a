//! A redelivery counted without a transaction, where the store offers
//! that (PostgreSQL; see `Store::count_redelivery` for why it is safe).

use super::{Outcome, RawDelivery, event_payload};
use crate::domain::NormalisedEvent;
use crate::source::Source;
use crate::store::{Store, StoreError};

/// A one-event delivery of an event already recorded, counted without a
/// transaction where the store offers that (see `count_redelivery`); `None`
/// if the event is new (or the store has no such path).
pub(super) async fn counted(
    store: &Store,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Result<Option<Outcome>, StoreError> {
    let [event] = events else {
        return Ok(None);
    };
    let (_, sha256) = event_payload(event, raw);
    let counted = store
        .count_redelivery(
            &source.scope,
            event.event_id.as_str(),
            &sha256,
            raw.received_at,
        )
        .await?;
    Ok(counted.map(|redelivered| Outcome {
        event_id: event.event_id.clone(),
        status: redelivered.status,
        duplicate: true,
        conflict: redelivered.conflict,
        late: false,
        released: 0,
        backlog: false,
    }))
}
