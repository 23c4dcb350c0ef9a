//! The stored status of an event (an intent row).

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The balance effect was posted to the ledger.
    Applied,
    /// Older than the account's sequence guard: held for an operator.
    Stale,
    /// A type with no balance effect.
    Ignored,
    /// Has a balance effect that cannot be applied as it stands (no account,
    /// bad currency or amount): held for an operator.
    Rejected,
    /// An operator decided a held event will never be applied.
    Dismissed,
    /// Parked behind a gap in a contiguous stream: applied, in order, the
    /// moment its predecessors are (or an operator skips the gap).
    Waiting,
    /// A refund or dispute whose payment has not been credited yet: applied
    /// in the transaction that credits the payment.
    Unmatched,
    /// A credit of a provider payment that another event of the scope has
    /// credited already: recorded, never applied.
    DuplicateEffect,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Applied,
        Status::Stale,
        Status::Ignored,
        Status::Rejected,
        Status::Dismissed,
        Status::Waiting,
        Status::Unmatched,
        Status::DuplicateEffect,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Stale => "stale",
            Status::Ignored => "ignored",
            Status::Rejected => "rejected",
            Status::Dismissed => "dismissed",
            Status::Waiting => "waiting",
            Status::Unmatched => "unmatched",
            Status::DuplicateEffect => "duplicate_effect",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown status {0:?} (expected applied, stale, ignored, rejected, dismissed, waiting, unmatched or duplicate_effect)"
)]
pub struct UnknownStatus(pub String);

impl FromStr for Status {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Status::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_text() {
        for status in Status::ALL {
            assert_eq!(status.as_str().parse::<Status>(), Ok(status));
        }
        assert!("pending".parse::<Status>().is_err());
    }
}
