//! What ingest answers per event ([`Outcome`]), and what an ordering
//! decision did with a posting on the way ([`Decided`]).

use crate::domain::{EventId, Status};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub event_id: EventId,
    pub status: Status,
    pub duplicate: bool,
    /// A redelivery whose body differs from the stored one.
    pub conflict: bool,
    /// The event arrived below its account's sequence guard.
    pub late: bool,
    /// Parked events this delivery released and applied after its own.
    pub released: u64,
    /// The release stopped at its per-transaction bound with more parked
    /// events ready: the drain task must go on.
    pub backlog: bool,
}

/// What an ordering decision did with a posting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Decided {
    pub status: Status,
    pub late: bool,
    pub released: u64,
    pub backlog: bool,
}

impl Decided {
    pub(super) fn status(status: Status) -> Self {
        Self {
            status,
            late: false,
            released: 0,
            backlog: false,
        }
    }
}
