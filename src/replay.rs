//! Replay: a stored, already-verified event run again through the ingest
//! path with the source's current config, after a config fix (a corrected
//! `account_path`, a type now mapped). `hookledger replay` and the event
//! page's Replay both come here.
//!
//! The signature is not checked again: it was when the delivery arrived,
//! and these are its stored bytes (a signed time is long outside any
//! tolerance by now, and the secret may have rotated since). The event is
//! mapped from those bytes, the headers its scheme read and its signed
//! time, exactly as the first delivery was, and comes out as the same
//! event id, or as one other event that moves money: then it is applied
//! under that key (`ingest::rekey`), once. Only `rejected` and `ignored`
//! events are replayed: they never posted. The transaction (see `ingest::rerun`) re-checks the status in
//! the statement that takes the event, so an applied event stays applied
//! and a held one is applied at most once.

use crate::domain::{Direction, Movement, NormalisedEvent, Status, money};
use crate::ingest::{Outcome, RawDelivery, Replay, rekey, rerun};
use crate::providers::{Ambiguity, Delivery, HeaderPairs, Verified};
use crate::source::Source;
use crate::store::{EventDetailRow, Store, StoreError};

/// The statuses a replay may start from.
pub const REPLAYABLE: [Status; 2] = [Status::Rejected, Status::Ignored];

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("no such event")]
    NotFound,
    #[error(
        "event is {0}; only a rejected or ignored event is replayed (an applied one stays applied)"
    )]
    NotReplayable(Status),
    #[error("source {0} is not configured now; nothing maps its events")]
    Unconfigured(String),
    #[error("its payload was purged (retention): there is nothing to replay")]
    Purged,
    #[error(
        "it was rejected because its signed body can be read more than one way; no config makes that safe to apply"
    )]
    Ambiguous,
    #[error(
        "the event was stored in scope {stored}, and its source's scope is {now} now: replaying it could apply an event id twice"
    )]
    ScopeChanged { stored: String, now: String },
    #[error(
        "with the current config its payload maps to {0}, not to this event nor to one other event that moves money: not replayed"
    )]
    OtherEvent(String),
    #[error(
        "it was replayed as {0} already, where its effect lives; with the current config it maps to {1}: not replayed"
    )]
    ReplayedAs(String, String),
    #[error("the event changed while this replay ran: it is {0} now; look at it again")]
    Changed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where a replay starts: a stored event as read, with its status.
pub struct Stored {
    row: EventDetailRow,
    status: Status,
}

impl Stored {
    /// The event, if it may be replayed: stored, replayable, with its
    /// payload.
    pub fn new(row: EventDetailRow) -> Result<Self, ReplayError> {
        let status: Status = row
            .event
            .status
            .parse()
            .map_err(|e| StoreError::Corrupt(format!("intents.status: {e}")))?;
        if !REPLAYABLE.contains(&status) {
            return Err(ReplayError::NotReplayable(status));
        }
        if row.payload_purged_at.is_some() {
            return Err(ReplayError::Purged);
        }
        if row
            .event
            .reason
            .as_deref()
            .is_some_and(Ambiguity::names_one)
        {
            return Err(ReplayError::Ambiguous);
        }
        Ok(Self { row, status })
    }

    pub async fn load(store: &Store, source: &str, event_id: &str) -> Result<Self, ReplayError> {
        let row = store
            .event(source, event_id)
            .await?
            .ok_or(ReplayError::NotFound)?;
        Self::new(row)
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn event_id(&self) -> &str {
        &self.row.event.event_id
    }

    fn raw(&self) -> RawDelivery<'_> {
        RawDelivery {
            payload: &self.row.payload,
            payload_sha256: &self.row.event.payload_sha256,
            received_at: self.row.event.first_received_at,
            signature_headers: self.row.signature_headers.as_deref(),
            signed_at: self.row.signed_at,
            signed_event_id: self.row.signed_event_id.as_deref(),
            origin: self.row.event.origin.parse().unwrap_or_default(),
        }
    }
}

/// The stored event as `source`'s current config maps it.
pub fn map(source: &Source, stored: &Stored) -> Result<NormalisedEvent, ReplayError> {
    let event = &stored.row.event;
    if event.scope != source.scope {
        return Err(ReplayError::ScopeChanged {
            stored: event.scope.clone(),
            now: source.scope.clone(),
        });
    }
    let headers = stored.row.signature_headers();
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let headers = HeaderPairs(&pairs);
    let body = source.provider.replay_body(&stored.row.payload);
    let delivery = Delivery {
        headers: &headers,
        body: &body,
        received_at: event.first_received_at,
    };
    // What verifying it proved then, as stored: the signed time, and the
    // event id where the scheme signs one outside the body (none for an
    // event stored before they were kept: a kind that needs it then maps
    // no id, and the replay is refused below).
    let verified = Verified {
        key_index: 0,
        timestamp: stored.row.signed_at,
        event_id: stored.row.signed_event_id.clone(),
    };
    let digest = crate::ingest::sha256_hex(&body);
    let events = crate::receive::storable_events(source, &verified, &delivery, &digest);
    let ids: Vec<String> = events
        .iter()
        .map(|e| e.event_id.as_str().to_owned())
        .collect();
    let mut events = events;
    if let Some(same) = events
        .iter()
        .position(|e| e.event_id.as_str() == event.event_id)
    {
        return Ok(events.swap_remove(same));
    }
    // One event under another key that moves money: a replay applies it
    // there (`rekey`). Not one still rejected (an event stored before its
    // headers were kept reads as `unreadable:` now: re-keying it would
    // hide it from the held queue), nor one that moves nothing.
    match (events.pop(), events.is_empty()) {
        (Some(other), true)
            if matches!(other.movement, Movement::Post(_) | Movement::Reverse(_)) =>
        {
            Ok(other)
        }
        _ => Err(ReplayError::OtherEvent(ids.join(", "))),
    }
}

/// The key a replay would apply `event` under instead of the stored
/// event's own, if the current config maps it to another.
pub fn rekeyed<'a>(stored: &Stored, event: &'a NormalisedEvent) -> Option<&'a str> {
    let key = event.event_id.as_str();
    (key != stored.event_id()).then_some(key)
}

/// What the event does as mapped now, for a person deciding to replay it:
/// "a credit of $12.00 to acct_1", "still rejected: ...".
pub fn describe(event: &NormalisedEvent) -> String {
    let effect = |direction: Direction| match direction {
        Direction::Credit => "a credit",
        Direction::Debit => "a debit",
    };
    match &event.movement {
        Movement::None => format!(
            "{} moves no money with the current config: it would stay ignored",
            event.event_type
        ),
        Movement::Rejected(rejection) => {
            format!(
                "still rejected with the current config: {}",
                rejection.reason
            )
        }
        Movement::Post(posting) => format!(
            "{} of {} to {}",
            effect(posting.direction),
            money(
                Some(posting.amount.minor()),
                Some(&posting.currency.to_string())
            ),
            posting.account.as_str()
        ),
        Movement::Reverse(request) => format!(
            "{} of {} against payment {}",
            effect(request.direction),
            money(
                Some(request.amount.minor()),
                Some(&request.currency.to_string())
            ),
            request.reversal.payment_ref
        ),
    }
}

/// Who replays, and why.
pub struct Asked<'a> {
    pub actor: &'a str,
    pub note: Option<&'a str>,
    pub now: chrono::DateTime<chrono::Utc>,
}

/// Whether `event`, as mapped now, is what is stored: still ignored, or
/// still rejected for the same reason. Replaying it would change nothing.
pub fn unchanged(stored: &Stored, event: &NormalisedEvent) -> bool {
    match (&event.movement, stored.status) {
        (Movement::None, Status::Ignored) => true,
        (Movement::Rejected(rejection), Status::Rejected) => {
            stored.row.event.reason.as_deref() == Some(rejection.reason.as_str())
        }
        _ => false,
    }
}

/// Maps the stored event again and decides it in one transaction with its
/// audit row; `None` if the current config maps it as it is stored (see
/// [`unchanged`]): nothing is written.
pub async fn replay(
    store: &Store,
    source: &Source,
    stored: &Stored,
    asked: &Asked<'_>,
) -> Result<Option<Outcome>, ReplayError> {
    let event = map(source, stored)?;
    if unchanged(stored, &event) {
        return Ok(None);
    }
    let into = rekeyed(stored, &event);
    if let Some(before) = &stored.row.replayed_into
        && into != Some(before.as_str())
    {
        return Err(ReplayError::ReplayedAs(
            before.clone(),
            event.event_id.as_str().to_owned(),
        ));
    }
    let raw = stored.raw();
    let replay = Replay {
        source,
        event: &event,
        stored: &raw,
        from: stored.status,
        actor: asked.actor,
        note: asked.note,
        now: asked.now,
    };
    let done = match into {
        Some(_) => rekey(store, &replay, stored.event_id()).await?,
        None => rerun(store, &replay).await?,
    };
    match done {
        Some(outcome) => Ok(Some(outcome)),
        // Another action took it first; say where it is now.
        None => {
            let event = &stored.row.event;
            let now = store.event(&event.source, &event.event_id).await?;
            Err(ReplayError::Changed(
                now.map_or_else(|| "gone".to_owned(), |row| row.event.status),
            ))
        }
    }
}
