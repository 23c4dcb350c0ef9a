//! The events a run holds: which postings may be in one ([`in_run`]), and
//! each new one as the run decides it ([`Run`]).

use chrono::{DateTime, Utc};

use crate::domain::{Link, Movement, NormalisedEvent, OrderingMode, Posting, SEQUENCE_FLOOR};
use crate::ingest::RawDelivery;
use crate::source::Source;
use crate::store::RowKey;

/// One event of a run, with its delivery.
pub(in crate::ingest) struct Item<'a> {
    pub source: &'a Source,
    pub event: &'a NormalisedEvent,
    pub raw: &'a RawDelivery<'a>,
}

/// The posting of an event a run may hold: a high-water source's that is
/// no reversal, or a contiguous source's numbered one (a stream links no
/// payment: the config refuses it); anything else is decided alone.
pub(in crate::ingest) fn in_run<'a>(
    source: &Source,
    event: &'a NormalisedEvent,
) -> Option<&'a Posting> {
    let Movement::Post(posting) = &event.movement else {
        return None;
    };
    let holds = match source.ordering.mode {
        OrderingMode::HighWater => !matches!(posting.link, Link::Reverses(_)),
        OrderingMode::Contiguous => posting.explicit_sequence && posting.link == Link::None,
    };
    holds.then_some(posting)
}

/// The number a contiguous `source`'s `posting` takes in its stream:
/// (source, account, sequence); `None` for a high-water source.
pub(in crate::ingest) fn stream_number<'a>(
    source: &'a Source,
    posting: &'a Posting,
) -> Option<(&'a str, &'a str, i64)> {
    (source.ordering.mode == OrderingMode::Contiguous).then(|| {
        (
            source.name.as_str(),
            posting.account.as_str(),
            posting.sequence,
        )
    })
}

/// A new event of the run: its item, its place, its intent.
pub(super) struct Run<'i, 'a> {
    pub item: &'i Item<'a>,
    pub posting: &'i Posting,
    pub index: usize,
    pub intent_id: i64,
}

impl<'i, 'a> Run<'i, 'a> {
    pub(super) fn new(item: &'i Item<'a>, index: usize, intent_id: i64) -> Self {
        let posting = in_run(item.source, item.event).expect("a run holds its postings only");
        Run {
            item,
            posting,
            index,
            intent_id,
        }
    }

    /// Its number in its stream, where its source numbers its events.
    pub(super) fn number(&self) -> Option<(&'i str, &'i str, i64)> {
        stream_number(self.item.source, self.posting)
    }

    /// Whether its source numbers its events (`contiguous`).
    pub(super) fn numbered(&self) -> bool {
        self.number().is_some()
    }

    /// The guard its stream starts from, as `high_water` and `contiguous`
    /// create a missing one.
    pub(super) fn initial_guard(&self) -> i64 {
        if self.numbered() {
            self.item.source.ordering.initial_guard()
        } else {
            SEQUENCE_FLOOR
        }
    }

    pub(super) fn now(&self) -> DateTime<Utc> {
        self.item.raw.received_at
    }

    pub(super) fn guard_key(&self) -> RowKey {
        (
            self.item.source.name.as_str().to_owned(),
            self.posting.account.as_str().to_owned(),
        )
    }

    pub(super) fn balance_key(&self) -> RowKey {
        (
            self.posting.account.as_str().to_owned(),
            self.posting.currency.code().to_owned(),
        )
    }

    /// The payment row this event credits, (scope, payment), and whether
    /// it is one part of it.
    pub(super) fn payment(&self) -> Option<((&'i str, &'i str), bool)> {
        let (payment, part) = self.posting.link.paid()?;
        Some(((self.item.source.scope.as_str(), payment), part))
    }
}
