//! Domain types: validated identifiers, money and the normalised event that
//! every provider maps its payload into. Parse, don't validate: a value of one
//! of these types is known to be well formed.

mod currency;
mod event;
mod figures;
mod ids;
mod link;
mod message;
mod money;
mod ordering;
mod origin;
mod reversal_fields;
mod shown;
mod status;
pub mod text;

pub use currency::{Currency, CurrencyError};
pub use event::{
    Direction, MAX_SEQUENCE, Movement, NormalisedEvent, Posting, PostingFields, Rejection,
    ReverseRequest, SEQUENCE_FLOOR,
};
pub use figures::{HELD_STATUSES, HeldCount, OutboxStats, PoolUsage, Replication};
pub use ids::{AccountId, EventId, IdError, SourceName};
pub use link::{Basis, Link, Reversal, payment_ref};
pub use message::{MessageType, Route, Routes};
pub use money::{
    AmountError, AmountFormat, MAX_AMOUNT_MINOR, PositiveAmount, format_minor, parse_decimal,
};
pub use ordering::{
    DEFAULT_GAP_TIMEOUT_SECS, DEFAULT_RELEASE_BATCH, NegativeBalance, OnStale, OrderingMode,
    OrderingPolicy, Ranges, Slot, StaleAction, contiguous_slot, missing_ranges, sequence_text,
};
pub use origin::Origin;
pub use reversal_fields::ReversalFields;
pub use shown::{minor_units, money};
pub use status::Status;
