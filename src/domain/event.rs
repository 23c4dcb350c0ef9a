//! The normalised event: what every provider's payload is mapped into, and
//! what the ingest transaction consumes.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::link::{Link, Reversal};
use super::money::json_kind;
use super::text;
use super::{AccountId, AmountFormat, Currency, EventId, PositiveAmount};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Credit,
    Debit,
}

/// One verified delivery, mapped out of the provider's JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalisedEvent {
    pub event_id: EventId,
    pub event_type: String,
    /// The provider's id of the object the event is about (Stripe's
    /// `data.object.id`): refunds will use it to find the original credit.
    pub object_id: Option<String>,
    pub occurred_at: Option<DateTime<Utc>>,
    pub movement: Movement,
    /// What to store as this event's payload when it is one item of a
    /// batch (Adyen); `None` stores the delivery's body as received.
    pub payload: Option<String>,
}

impl NormalisedEvent {
    /// Holds the event as `rejected` for `reason`, whatever its type asked,
    /// keeping what was read of the movement for the operator.
    pub fn reject_as(&mut self, reason: &str) {
        let rejection = match &self.movement {
            Movement::Post(posting) => posting.reject(reason),
            Movement::Rejected(rejection) => Rejection {
                reason: reason.to_owned(),
                ..rejection.clone()
            },
            Movement::Reverse(request) => request.reject(reason),
            Movement::None => Rejection {
                reason: reason.to_owned(),
                account: None,
                currency: None,
                signed_amount: None,
                sequence: None,
            },
        };
        self.movement = Movement::Rejected(rejection);
    }

    /// Makes every text field storable on both backends and shown safely:
    /// an event type or object id with control characters or over 255 bytes
    /// is kept escaped and cut, and makes the event `rejected` naming it;
    /// a rejection reason (which may quote the payload) is escaped and
    /// bounded. The providers' mappings refuse such values themselves with
    /// the path at fault; this is the net under all of them, so a verified
    /// delivery is always stored.
    pub fn make_storable(&mut self) {
        let mut problems = Vec::new();
        if !text::is_plain(&self.event_type, MAX_TEXT_BYTES) {
            problems.push("the event type has control characters or is over 255 bytes");
            self.event_type = text::storable(&self.event_type, MAX_TEXT_BYTES);
        }
        if let Some(object) = &self.object_id
            && (object.is_empty() || !text::is_plain(object, MAX_TEXT_BYTES))
        {
            problems.push("the object id is empty, has control characters or is over 255 bytes");
            self.object_id = Some(text::storable(object, MAX_TEXT_BYTES)).filter(|o| !o.is_empty());
        }
        let paid = match &self.movement {
            Movement::Post(posting) => posting.link.paid().map(|(payment, _)| payment),
            Movement::Reverse(request) => Some(request.reversal.payment_ref.as_str()),
            _ => None,
        };
        if paid.is_some_and(|p| p.is_empty() || !text::is_plain(p, MAX_TEXT_BYTES)) {
            problems.push("the payment id is empty, has control characters or is over 255 bytes");
        }
        if !problems.is_empty() {
            let mut reason = problems.join("; ");
            if let Movement::Rejected(rejection) = &self.movement {
                reason = format!("{reason}; {}", rejection.reason);
            }
            self.reject_as(&reason);
        }
        if let Movement::Rejected(rejection) = &mut self.movement {
            rejection.reason = text::storable(&rejection.reason, text::MAX_NOTE_BYTES);
        }
    }
}

/// Longest event type, object id or payment id stored.
const MAX_TEXT_BYTES: usize = 255;

/// What the event asks of a balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Movement {
    /// The type has no balance effect.
    None,
    /// The type has a balance effect, but the fields needed for it are
    /// missing or malformed.
    Rejected(Rejection),
    /// A well-formed balance movement, subject to the sequence guard.
    Post(Posting),
    /// A refund, dispute or reinstatement of a provider payment: its account
    /// is the payment's, found when it is matched.
    Reverse(ReverseRequest),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posting {
    pub direction: Direction,
    pub account: AccountId,
    pub currency: Currency,
    pub amount: PositiveAmount,
    /// Ordering key within (source, account): higher is newer.
    pub sequence: i64,
    /// The sender numbered the event itself; false when the sequence is a
    /// timestamp the kind fell back to (contiguous ordering needs a number).
    pub explicit_sequence: bool,
    pub link: Link,
}

impl Posting {
    /// The signed effect on the balance: positive credits, negative debits.
    pub fn signed_amount(&self) -> i64 {
        signed(self.direction, self.amount.minor())
    }

    /// The same movement, held as not applicable for `reason`.
    pub fn reject(&self, reason: &str) -> Rejection {
        Rejection {
            reason: reason.to_owned(),
            account: Some(self.account.clone()),
            currency: Some(self.currency),
            signed_amount: Some(self.signed_amount()),
            sequence: Some(self.sequence),
        }
    }
}

/// A movement that cannot be applied, with whatever parts of it were valid,
/// so the operator sees as much as we know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub account: Option<AccountId>,
    pub currency: Option<Currency>,
    pub signed_amount: Option<i64>,
    pub sequence: Option<i64>,
}

/// A reversal as a provider's event states it. Its account is the
/// payment's: most providers' refund objects carry no customer reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReverseRequest {
    pub direction: Direction,
    pub currency: Currency,
    /// For [`Basis::Total`], the provider's running total.
    pub amount: PositiveAmount,
    /// The account the event itself names, if any: it must be the payment's.
    pub account: Option<AccountId>,
    pub sequence: i64,
    pub reversal: Reversal,
}

impl ReverseRequest {
    /// The signed amount as stated (for a total: minus the total).
    pub fn signed_amount(&self) -> i64 {
        match self.direction {
            Direction::Credit => self.amount.minor(),
            Direction::Debit => -self.amount.minor(),
        }
    }

    pub fn reject(&self, reason: &str) -> Rejection {
        Rejection {
            reason: reason.to_owned(),
            account: self.account.clone(),
            currency: Some(self.currency),
            signed_amount: Some(self.signed_amount()),
            sequence: Some(self.sequence),
        }
    }
}

/// Sequences are bounded to +/-2^62 so that every comparison and step the
/// guards make (`guard + 1`, `sequence - 1`) stays exact in SQL on both
/// backends; real senders use counters or unix times, far below this.
pub const MAX_SEQUENCE: i64 = 1 << 62;

/// Below every sequence an event may carry: a new account's high-water
/// guard.
pub const SEQUENCE_FLOOR: i64 = -MAX_SEQUENCE - 1;

pub(super) fn bounded_sequence(sequence: Result<i64, String>) -> Result<i64, String> {
    match sequence {
        Ok(s) if !(-MAX_SEQUENCE..=MAX_SEQUENCE).contains(&s) => Err(format!(
            "sequence {s} is outside the supported range of +/-2^62"
        )),
        other => other,
    }
}

fn signed(direction: Direction, minor: i64) -> i64 {
    match direction {
        Direction::Credit => minor,
        Direction::Debit => -minor,
    }
}

/// The raw JSON fields of a movement, as a provider located them. Turning
/// them into a [`Movement`] is shared by all providers, so every provider
/// validates accounts, currencies and amounts the same way.
#[derive(Debug, Clone)]
pub struct PostingFields<'a> {
    pub direction: Direction,
    /// Where the account id was looked for, for the rejection reason.
    pub account_path: &'a str,
    pub account: Option<&'a Value>,
    pub currency: Option<&'a Value>,
    pub amount: Option<&'a Value>,
    /// The ordering key, or why the provider could not find one.
    pub sequence: Result<i64, String>,
    /// The sequence is the sender's own number, not a fallback timestamp.
    pub explicit_sequence: bool,
    pub amount_format: AmountFormat,
    /// The provider payment this credit is, if it is one, or why the id
    /// found cannot be one.
    pub payment: Result<Option<String>, String>,
    /// The credit is one part of that payment (see [`Link::PaysPart`]).
    pub part: bool,
}

/// The currency, then the amount read with that currency's exponent.
pub(super) fn currency_and_amount(
    currency: Option<&Value>,
    amount: Option<&Value>,
    format: AmountFormat,
) -> (Result<Currency, String>, Result<PositiveAmount, String>) {
    let currency = match currency {
        Some(Value::String(s)) => Currency::parse(s).map_err(|e| e.to_string()),
        None | Some(Value::Null) => Err("currency is missing".to_owned()),
        Some(other) => Err(format!(
            "currency must be a string, not {}",
            json_kind(other)
        )),
    };
    let amount = match (&currency, format) {
        (_, AmountFormat::Minor) => PositiveAmount::from_json(amount),
        (Ok(currency), format) => PositiveAmount::from_json_as(amount, format, *currency),
        // A decimal cannot be read without its currency's exponent; the
        // currency's own problem is reported.
        (Err(_), _) => return (currency, Err(String::new())),
    }
    .map_err(|e| e.to_string());
    (currency, amount)
}

impl PostingFields<'_> {
    pub fn into_movement(self) -> Movement {
        let mut problems = Vec::new();
        let account = match self.account {
            Some(Value::String(s)) => AccountId::parse(s).map_err(|e| e.to_string()),
            None | Some(Value::Null) => Err(format!("no account id at {}", self.account_path)),
            Some(other) => Err(format!(
                "account id at {} must be a string, not {}",
                self.account_path,
                json_kind(other)
            )),
        };
        let (currency, amount) =
            currency_and_amount(self.currency, self.amount, self.amount_format);
        let sequence = bounded_sequence(self.sequence);
        let payment = self.payment;
        for result in [
            payment.as_ref().err(),
            account.as_ref().err(),
            currency.as_ref().err(),
            amount.as_ref().err(),
            sequence.as_ref().err(),
        ] {
            problems.extend(result.filter(|p| !p.is_empty()).cloned());
        }
        match (payment, account, currency, amount, sequence) {
            (Ok(payment), Ok(account), Ok(currency), Ok(amount), Ok(sequence)) => {
                Movement::Post(Posting {
                    direction: self.direction,
                    account,
                    currency,
                    amount,
                    sequence,
                    explicit_sequence: self.explicit_sequence,
                    link: match payment {
                        None => Link::None,
                        Some(payment) if self.part => Link::PaysPart(payment),
                        Some(payment) => Link::Pays(payment),
                    },
                })
            }
            (_, account, currency, amount, sequence) => Movement::Rejected(Rejection {
                reason: problems.join("; "),
                account: account.ok(),
                currency: currency.ok(),
                signed_amount: amount.ok().map(|a| signed(self.direction, a.minor())),
                sequence: sequence.ok(),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
