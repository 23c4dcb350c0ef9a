//! What the events API answers: the types its handlers serialise, which
//! the OpenAPI contract (`admin::openapi`) describes.

use serde::Serialize;
use utoipa::ToSchema;

use crate::admin::action::Replayed;
use crate::domain::Status;
use crate::operator::ActionOutcome;
use crate::store::{AuditRow, EventDetailRow, EventRow};

/// A page of events, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<EventRow>,
    /// Pass as `before` for the next page; none on the last.
    pub next_before: Option<i64>,
}

/// One event with its payload and every operator action on it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventDetail {
    #[serde(flatten)]
    pub event: EventDetailRow,
    pub audit: Vec<AuditRow>,
}

/// What an action on an event did: a replay, or an apply or dismiss.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ActionAnswer {
    Replayed(ReplayAnswer),
    Acted(ActAnswer),
}

/// A replay with the current config.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayAnswer {
    pub source: String,
    pub event_id: String,
    pub previous_status: Status,
    pub status: Status,
    pub changed: bool,
    /// Where the current config maps the payload to another event id.
    pub replayed_as: Option<ReplayedAs>,
}

/// The event a replay applied the payload under.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayedAs {
    pub event_id: String,
    pub status: Status,
    /// It was stored already: nothing changed.
    pub duplicate: bool,
}

/// An apply or a dismiss.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActAnswer {
    pub source: String,
    pub event_id: String,
    pub status: Status,
    pub previous_status: Status,
    /// The balance after an apply.
    pub balance_after_minor: Option<i64>,
}

impl ReplayAnswer {
    pub fn new(source: String, event_id: String, replayed: Replayed) -> Self {
        Self {
            source,
            event_id,
            previous_status: replayed.previous_status,
            status: replayed.status,
            changed: replayed.changed,
            replayed_as: replayed
                .replayed_as
                .map(|(event_id, status, duplicate)| ReplayedAs {
                    event_id,
                    status,
                    duplicate,
                }),
        }
    }
}

impl ActAnswer {
    pub fn new(source: String, event_id: String, outcome: ActionOutcome) -> Self {
        Self {
            source,
            event_id,
            status: outcome.status,
            previous_status: outcome.previous_status,
            balance_after_minor: outcome.balance_after_minor,
        }
    }
}
