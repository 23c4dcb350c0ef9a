//! Operator actions on held events: apply a `stale` event (post its effect
//! once, marked operator-applied), dismiss a `stale`, `rejected` or `waiting`
//! one, or skip the gap a contiguous stream waits on ([`skip_gap`]). Each
//! runs in one transaction with its audit row.

mod skip_gap;

pub use skip_gap::{SkipOutcome, SkipRequest, skip_gap};

use chrono::{DateTime, Utc};

use crate::domain::Status;
use crate::ingest::{LedgerPosting, post_to_ledger};
use crate::store::{Claimed, NewAudit, Store, StoreError, WriteTx};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Apply,
    Dismiss,
}

impl Action {
    pub fn parse(text: &str) -> Option<Action> {
        [Action::Apply, Action::Dismiss]
            .into_iter()
            .find(|action| action.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Apply => "apply",
            Action::Dismiss => "dismiss",
        }
    }

    /// The statuses this action may start from, tried in order.
    fn held_statuses(self) -> &'static [Status] {
        match self {
            Action::Apply => &[Status::Stale],
            // A waiting event an operator dismisses leaves its number free:
            // the stream waits there until the number arrives or is skipped.
            Action::Dismiss => &[Status::Stale, Status::Rejected, Status::Waiting],
        }
    }

    fn result_status(self) -> Status {
        match self {
            Action::Apply => Status::Applied,
            Action::Dismiss => Status::Dismissed,
        }
    }
}

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
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionOutcome {
    pub status: Status,
    pub previous_status: Status,
    /// The balance after an apply.
    pub balance_after_minor: Option<i64>,
}

pub struct Request<'a> {
    pub action: Action,
    pub source: &'a str,
    pub event_id: &'a str,
    pub actor: &'a str,
    pub note: Option<&'a str>,
    pub now: DateTime<Utc>,
}

pub async fn act(store: &Store, request: &Request<'_>) -> Result<ActionOutcome, OperatorError> {
    let mut tx = store.begin().await?;
    let Some((previous_status, claimed)) = claim(&mut tx, request).await? else {
        // Dropping the transaction rolls it back; nothing was written.
        let wanted = match request.action {
            Action::Apply => "stale event",
            Action::Dismiss => "stale, rejected or waiting event",
        };
        return Err(
            match tx.intent_status(request.source, request.event_id).await? {
                Some(status) => OperatorError::WrongStatus(status, wanted),
                None => OperatorError::NotFound,
            },
        );
    };
    let balance_after_minor = match request.action {
        Action::Dismiss => None,
        Action::Apply => {
            let corrupt = || {
                StoreError::Corrupt(format!(
                    "stale event {} lacks its posting",
                    request.event_id
                ))
            };
            let posting = LedgerPosting {
                intent_id: claimed.intent_id,
                source: request.source,
                event_id: request.event_id,
                account_id: claimed.account_id.as_deref().ok_or_else(corrupt)?,
                currency: claimed.currency.as_deref().ok_or_else(corrupt)?,
                amount_minor: claimed.amount_minor.ok_or_else(corrupt)?,
                object_id: claimed.object_id.as_deref(),
                operator_applied: true,
            };
            // The sequence guard is deliberately left alone: it records the
            // newest event applied in order, and this one is older.
            Some(post_to_ledger(&mut tx, &posting, request.now).await?)
        }
    };
    tx.insert_audit(&NewAudit {
        action: request.action.as_str(),
        source: request.source,
        event_id: Some(request.event_id),
        account_id: None,
        previous_status,
        actor: request.actor,
        note: request.note,
        detail: None,
        created_at: request.now,
    })
    .await?;
    tx.commit().await?;
    Ok(ActionOutcome {
        status: request.action.result_status(),
        previous_status,
        balance_after_minor,
    })
}

async fn claim(
    tx: &mut WriteTx,
    request: &Request<'_>,
) -> Result<Option<(Status, Claimed)>, StoreError> {
    for &from in request.action.held_statuses() {
        let to = request.action.result_status();
        if let Some(claimed) = tx
            .claim_intent(request.source, request.event_id, from, to)
            .await?
        {
            return Ok(Some((from, claimed)));
        }
    }
    Ok(None)
}
