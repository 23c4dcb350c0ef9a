//! What hookledger tells other systems (docs/other-systems.md): the message types,
//! their stable ids, and which destinations
//! take which types.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::Status;

/// The `type` of an outbound message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageType {
    /// A balance moved: one per ledger entry.
    LedgerPosted,
    /// An event was held or parked (stale, waiting, unmatched).
    EventHeld,
    /// An operator dismissed a held event: it will never move money.
    EventDismissed,
    /// An event that has a balance effect cannot be applied as it stands.
    EventRejected,
    /// A part of an anchor of the hash chains (docs/operating/chains.md):
    /// not an event's, sent only to destinations that list it.
    AuditAnchor,
}

impl MessageType {
    /// The events' types: what a destination that lists none takes.
    pub const ALL: [MessageType; 4] = [
        MessageType::LedgerPosted,
        MessageType::EventHeld,
        MessageType::EventDismissed,
        MessageType::EventRejected,
    ];
    /// Every type a destination may list. `audit.anchor` is not in
    /// [`Self::ALL`]: its body is not an event's (`schema/anchor.v1.json`),
    /// so a consumer of events never gets one it did not ask for.
    pub const KNOWN: [MessageType; 5] = [
        MessageType::LedgerPosted,
        MessageType::EventHeld,
        MessageType::EventDismissed,
        MessageType::EventRejected,
        MessageType::AuditAnchor,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MessageType::LedgerPosted => "ledger.posted",
            MessageType::EventHeld => "event.held",
            MessageType::EventDismissed => "event.dismissed",
            MessageType::EventRejected => "event.rejected",
            MessageType::AuditAnchor => "audit.anchor",
        }
    }

    /// The message an event's new status is told by, if any. A posting is
    /// told by `ledger.posted` from the ledger itself, never from a status.
    pub fn for_status(status: Status) -> Option<Self> {
        match status {
            Status::Stale | Status::Waiting | Status::Unmatched => Some(MessageType::EventHeld),
            Status::Rejected => Some(MessageType::EventRejected),
            Status::Dismissed => Some(MessageType::EventDismissed),
            Status::Applied | Status::Ignored | Status::DuplicateEffect => None,
        }
    }

    /// The message's id: derived from the event's own identity (the
    /// source that recorded it and the provider's event id, unique together)
    /// and the type, never from a database counter. So every retry and
    /// every replay of one message carries the same id, the same event held
    /// twice (waiting, then stale) is one message, and after a restore from
    /// a backup a new event can never get the id of one the consumer saw
    /// before the restore.
    pub fn message_id(self, source: &str, event_id: &str) -> String {
        use sha2::{Digest, Sha256};
        let mut digest = Sha256::new();
        for part in ["hookledger message v1", self.as_str(), source, event_id] {
            // Length-prefixed: no two different inputs read the same.
            digest.update((part.len() as u64).to_be_bytes());
            digest.update(part.as_bytes());
        }
        format!("msg_{}", &hex::encode(digest.finalize())[..32])
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MessageType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::KNOWN
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<_> = Self::KNOWN.iter().map(|t| t.as_str()).collect();
                format!("unknown message type {s:?} (known: {})", known.join(", "))
            })
    }
}

/// One destination as the write path sees it: its name and the types it
/// takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub destination: String,
    pub types: Vec<MessageType>,
    /// In `account_seq` order per account (a failing message blocks its
    /// account).
    pub ordered: bool,
}

/// Every configured destination's route; empty when there are none, and
/// then nothing is written to the outbox.
#[derive(Debug, Clone, Default)]
pub struct Routes(Arc<[Route]>);

impl Routes {
    pub fn new(routes: Vec<Route>) -> Self {
        Self(routes.into())
    }

    /// The destinations that take `message_type`.
    pub fn taking(&self, message_type: MessageType) -> impl Iterator<Item = &str> {
        self.0
            .iter()
            .filter(move |route| route.types.contains(&message_type))
            .map(|route| route.destination.as_str())
    }

    /// Whether the destination `name` is configured here and ordered (its
    /// postings take part in their account's order).
    pub fn is_ordered(&self, name: &str) -> bool {
        self.0
            .iter()
            .any(|route| route.ordered && route.destination == name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Route> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_and_an_unknown_one_is_named() {
        for t in MessageType::KNOWN {
            assert_eq!(t.as_str().parse::<MessageType>(), Ok(t));
        }
        let error = "ledger.credited".parse::<MessageType>().unwrap_err();
        assert!(error.contains("ledger.credited") && error.contains("event.held"));
    }

    #[test]
    fn held_states_share_one_message_and_postings_have_none_by_status() {
        assert_eq!(
            MessageType::for_status(Status::Waiting),
            MessageType::for_status(Status::Stale)
        );
        assert_eq!(MessageType::for_status(Status::Applied), None);
        let held = MessageType::EventHeld.message_id("stripe", "evt_1");
        assert_eq!(held, MessageType::EventHeld.message_id("stripe", "evt_1"));
        assert_eq!(held.len(), "msg_".len() + 32);
        for other in [
            MessageType::LedgerPosted.message_id("stripe", "evt_1"),
            MessageType::EventHeld.message_id("stripe2", "evt_1"),
            MessageType::EventHeld.message_id("stripe", "evt_2"),
            // The parts are length-prefixed: moving a character across
            // the boundary is another id.
            MessageType::EventHeld.message_id("stripe_", "vt_1"),
        ] {
            assert_ne!(held, other);
        }
    }

    #[test]
    fn routes_pick_the_destinations_that_take_a_type() {
        let routes = Routes::new(vec![
            Route {
                destination: "billing".into(),
                types: vec![MessageType::LedgerPosted],
                ordered: true,
            },
            Route {
                destination: "bus".into(),
                types: MessageType::ALL.to_vec(),
                ordered: false,
            },
        ]);
        let posted: Vec<_> = routes.taking(MessageType::LedgerPosted).collect();
        assert_eq!(posted, ["billing", "bus"]);
        let held: Vec<_> = routes.taking(MessageType::EventHeld).collect();
        assert_eq!(held, ["bus"]);
        assert!(Routes::default().is_empty());
    }
}
