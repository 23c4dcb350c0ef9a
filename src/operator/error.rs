//! What an operator action can fail with; nothing changed when it does.

use crate::domain::Status;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("no such event")]
    NotFound,
    #[error("event is {0}; this action needs a {1}")]
    WrongStatus(Status, &'static str),
    #[error("no event is waiting for this account of this source")]
    NothingWaiting,
    #[error(
        "nothing to skip through sequence {through}: the account waits for sequence {next_expected} now; reload the gap and confirm what is missing"
    )]
    NothingToSkip { through: i64, next_expected: i64 },
    /// Applying it now would break a rule (a refund beyond what its payment
    /// has left, a balance below zero); nothing changed.
    #[error("cannot apply: {0}")]
    Refused(String),
    #[error("this account has no sequence guard: no ordered event was applied to it")]
    NoGuard,
    /// A guard reset that cannot be made as asked; nothing changed.
    #[error("cannot reset the guard: {0}")]
    GuardReset(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}
