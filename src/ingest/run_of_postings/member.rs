//! The events a run holds: which postings may be in one ([`in_run`]), and
//! each new one as the run decides it ([`Run`]).

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use crate::domain::{
    AccountId, Direction, Link, Movement, NormalisedEvent, OrderingMode, Posting, ReverseRequest,
    SEQUENCE_FLOOR,
};
use crate::ingest::RawDelivery;
use crate::source::Source;
use crate::store::RowKey;

/// One event of a run, with its delivery.
pub(in crate::ingest) struct Item<'a> {
    pub source: &'a Source,
    pub event: &'a NormalisedEvent,
    pub raw: &'a RawDelivery<'a>,
}

impl<'a> Item<'a> {
    /// The payment row it credits or reverses, (scope, payment).
    pub(super) fn payment_key(&self) -> Option<(&'a str, &'a str)> {
        let payment = in_run(self.source, self.event)?.payment_ref()?;
        Some((self.source.scope.as_str(), payment))
    }
}

/// What an event a run may hold asks for.
#[derive(Debug, Clone, Copy)]
pub(in crate::ingest) enum Effect<'a> {
    /// A high-water source's posting that is no reversal, or a contiguous
    /// source's numbered one (a stream links no payment: the config
    /// refuses it).
    Post(&'a Posting),
    /// A high-water source's reversal that takes money back (a refund, a
    /// dispute): its account is the one its payment credited.
    Reverse(&'a ReverseRequest),
}

impl<'a> Effect<'a> {
    /// The payment a credit pays (and whether in part), for a credit.
    pub(in crate::ingest) fn paid(self) -> Option<(&'a str, bool)> {
        match self {
            Effect::Post(posting) => posting.link.paid(),
            Effect::Reverse(_) => None,
        }
    }

    /// The payment it credits or reverses.
    pub(in crate::ingest) fn payment_ref(self) -> Option<&'a str> {
        match self {
            Effect::Post(posting) => Some(posting.link.paid()?.0),
            Effect::Reverse(request) => Some(&request.reversal.payment_ref),
        }
    }
}

/// What `event` asks of a run, where a run may hold it; anything else is
/// decided alone.
pub(in crate::ingest) fn in_run<'a>(
    source: &Source,
    event: &'a NormalisedEvent,
) -> Option<Effect<'a>> {
    let high_water = source.ordering.mode == OrderingMode::HighWater;
    match &event.movement {
        Movement::Post(posting) => {
            let holds = if high_water {
                !matches!(posting.link, Link::Reverses(_))
            } else {
                posting.explicit_sequence && posting.link == Link::None
            };
            holds.then_some(Effect::Post(posting))
        }
        // A reinstatement is decided alone, outside runs: its check reads
        // the intent of the reversal it undoes, which a run would have
        // inserted already where that reversal comes later in it.
        Movement::Reverse(request) => (high_water && request.direction == Direction::Debit)
            .then_some(Effect::Reverse(request)),
        Movement::None | Movement::Rejected(_) => None,
    }
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

/// A new event of the run: its item, its place, its intent, and the
/// posting the run decides it as. A posting's is its own. A reversal's is
/// one to the account its payment credited, in the currency it names,
/// where the run knows that account (from the payment's row as read, or
/// from a credit of it earlier in the run), and `None` where it does not
/// (it is then decided alone).
pub(super) struct Run<'i, 'a> {
    pub item: &'i Item<'a>,
    pub posting: Option<Cow<'i, Posting>>,
    /// For a reversal, what it asks.
    pub reversal: Option<&'i ReverseRequest>,
    pub index: usize,
    pub intent_id: i64,
}

impl<'i, 'a> Run<'i, 'a> {
    /// `account`: for a reversal, the account the run takes its payment
    /// to have credited, if it knows one.
    pub(super) fn new(
        item: &'i Item<'a>,
        index: usize,
        intent_id: i64,
        account: Option<&str>,
    ) -> Self {
        let effect = in_run(item.source, item.event).expect("a run holds its postings only");
        let (posting, reversal) = match effect {
            Effect::Post(posting) => (Some(Cow::Borrowed(posting)), None),
            Effect::Reverse(request) => {
                let posting = account
                    .and_then(|account| AccountId::parse(account).ok())
                    .map(|account| {
                        Cow::Owned(Posting {
                            direction: request.direction,
                            account,
                            currency: request.currency,
                            amount: request.amount,
                            sequence: request.sequence,
                            explicit_sequence: false,
                            link: Link::Reverses(request.reversal.clone()),
                        })
                    });
                (posting, Some(request))
            }
        };
        Run {
            item,
            posting,
            reversal,
            index,
            intent_id,
        }
    }

    pub(super) fn posting(&self) -> Option<&Posting> {
        self.posting.as_deref()
    }

    /// Its number in its stream, where its source numbers its events.
    pub(super) fn number(&self) -> Option<(&str, &str, i64)> {
        stream_number(self.item.source, self.posting()?)
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

    pub(super) fn guard_key(&self) -> Option<RowKey> {
        Some((
            self.item.source.name.as_str().to_owned(),
            self.posting()?.account.as_str().to_owned(),
        ))
    }

    pub(super) fn balance_key(&self) -> Option<RowKey> {
        let posting = self.posting()?;
        Some((
            posting.account.as_str().to_owned(),
            posting.currency.code().to_owned(),
        ))
    }

    /// The payment row this event credits, (scope, payment), and whether
    /// it is one part of it.
    pub(super) fn payment(&self) -> Option<((&'i str, &'i str), bool)> {
        let (payment, part) = in_run(self.item.source, self.item.event)?.paid()?;
        Some(((self.item.source.scope.as_str(), payment), part))
    }

    /// The payment row this event credits or reverses, (scope, payment).
    pub(super) fn payment_key(&self) -> Option<(&'i str, &'i str)> {
        self.item.payment_key()
    }
}
