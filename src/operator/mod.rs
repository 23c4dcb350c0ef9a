//! Operator actions on held events: apply a `stale` event (post its effect
//! once, marked operator-applied), dismiss a `stale`, `rejected` or `waiting`
//! one ([`held`]), skip the gap a contiguous stream waits on
//! ([`skip_gap`]), or reset an account's sequence guard ([`reset_guard`]).
//! Each runs in one transaction with its audit row.

mod error;
mod held;
mod reset_guard;
mod skip_gap;

pub use error::OperatorError;
pub use held::{Action, ActionOutcome, Request, act};
pub use reset_guard::{
    GuardPreview, HeldReason, RESET_BATCH, ResetOutcome, ResetRequest, preview as preview_reset,
    reset as reset_guard,
};
pub use skip_gap::{SkipOutcome, SkipRequest, skip_gap};
