//! An operator's action on one held event: apply a `stale` event (post its
//! effect once, marked operator-applied) or dismiss a `stale`, `rejected`,
//! `waiting` or `unmatched` one, in one transaction with its audit row.

use chrono::{DateTime, Utc};

use super::error::OperatorError;
use crate::domain::{NegativeBalance, SEQUENCE_FLOOR, Status};
use crate::ingest::settle::{Settle, SettleLink, Settled, settle};
use crate::ingest::{LedgerPosting, lock_release_guards, release_unmatched};
use crate::source::Source;
use crate::store::{Claimed, NewAudit, Store, StoreError, WriteKeys, WriteTx};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Apply,
    Dismiss,
}

impl Action {
    pub const ALL: [Action; 2] = [Action::Apply, Action::Dismiss];

    pub fn parse(text: &str) -> Option<Action> {
        Self::ALL.into_iter().find(|action| action.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Apply => "apply",
            Action::Dismiss => "dismiss",
        }
    }

    /// Whether this action may take an event in `status`.
    pub fn takes(self, status: Status) -> bool {
        self.held_statuses().contains(&status)
    }

    /// The statuses this action may start from, tried in order.
    fn held_statuses(self) -> &'static [Status] {
        match self {
            Action::Apply => &[Status::Stale],
            // A waiting event an operator dismisses leaves its number free:
            // the stream waits there until the number arrives or is skipped.
            // An unmatched refund dismissed is never applied, even if its
            // payment is credited later.
            Action::Dismiss => &[
                Status::Stale,
                Status::Rejected,
                Status::Waiting,
                Status::Unmatched,
            ],
        }
    }

    fn result_status(self) -> Status {
        match self {
            Action::Apply => Status::Applied,
            Action::Dismiss => Status::Dismissed,
        }
    }
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
    /// The source as configured, if it still is: its negative-balance
    /// policy, and what a credited payment releases.
    pub configured: Option<&'a Source>,
    pub event_id: &'a str,
    pub actor: &'a str,
    pub note: Option<&'a str>,
    /// The status the person acted on, where the form says: the action
    /// takes the event only from it, so a dismiss meant for a rejected
    /// event cannot land on what a concurrent replay made of it.
    pub seen: Option<Status>,
    /// A debit that would take the balance below zero: `Allow` when a person
    /// applies this one event (a refund the provider has paid out must be
    /// postable); the source's own policy when an action applies events the
    /// person did not each look at (a guard reset).
    pub negative_balance: NegativeBalance,
    pub now: DateTime<Utc>,
}

impl<'a> Request<'a> {
    /// The audit row of this request on its event.
    fn audit(
        &self,
        action: &'a str,
        previous_status: Status,
        detail: Option<&'a str>,
    ) -> NewAudit<'a> {
        NewAudit {
            action,
            source: self.source,
            event_id: Some(self.event_id),
            account_id: None,
            previous_status,
            actor: self.actor,
            note: self.note,
            detail,
            created_at: self.now,
        }
    }
}

pub async fn act(store: &Store, request: &Request<'_>) -> Result<ActionOutcome, OperatorError> {
    let mut tx = store.begin().await?;
    // An apply posts, and takes the event's keys first; a dismiss changes
    // the one intent row, waits for nothing else and so needs none
    // (`store::WriteKeys`): a release under way meets it as it goes.
    if request.action == Action::Apply {
        tx.lock_intent_keys(request.source, request.event_id, WriteKeys::new())
            .await?;
    }
    let Some((previous_status, claimed)) = claim(&mut tx, request).await? else {
        // Dropping the transaction rolls it back; nothing was written.
        let wanted = match request.action {
            Action::Apply => "stale event",
            Action::Dismiss => "stale, rejected, waiting or unmatched event",
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
        Action::Apply => match apply(&mut tx, request, &claimed).await {
            Ok(balance_after) => Some(balance_after),
            Err(OperatorError::Refused(reason)) => {
                // Nothing of the attempt stays (the event is still held),
                // but that it was made, by whom and why it was refused does.
                tx.rollback().await?;
                audit_refusal(store, request, previous_status, &reason).await?;
                return Err(OperatorError::Refused(reason));
            }
            Err(other) => return Err(other),
        },
    };
    tx.insert_audit(&request.audit(request.action.as_str(), previous_status, None))
        .await?;
    tx.commit().await?;
    Ok(ActionOutcome {
        status: request.action.result_status(),
        previous_status,
        balance_after_minor,
    })
}

/// Records a refused apply in its own transaction: action `apply_refused`,
/// the reason as its detail.
async fn audit_refusal(
    store: &Store,
    request: &Request<'_>,
    previous_status: Status,
    reason: &str,
) -> Result<(), StoreError> {
    let mut tx = store.begin().await?;
    tx.insert_audit(&request.audit("apply_refused", previous_status, Some(reason)))
        .await?;
    tx.commit().await
}

/// Posts a claimed stale event once, marked operator-applied, with the
/// same checks ingest makes (but `negative_balance`: a person decided);
/// refused, the whole action rolls back. The sequence guard records the
/// newest event applied: a late event leaves it alone, and one held for
/// another reason that is newer moves it up.
async fn apply(
    tx: &mut WriteTx,
    request: &Request<'_>,
    claimed: &Claimed,
) -> Result<i64, OperatorError> {
    let corrupt = || {
        StoreError::Corrupt(format!(
            "stale event {} lacks its posting",
            request.event_id
        ))
    };
    let account_id = claimed.account_id.as_deref().ok_or_else(corrupt)?;
    let link = match (&claimed.payment_ref, &claimed.reversal) {
        (None, _) => SettleLink::None,
        (Some(payment), None) => SettleLink::Pays {
            payment,
            part: claimed.partial,
        },
        (Some(payment), Some(_)) => SettleLink::Reverses {
            payment,
            total: claimed.reversal_total,
            undoes: claimed.undoes.as_deref(),
        },
    };
    let posting = Settle {
        scope: &claimed.scope,
        entry: LedgerPosting {
            intent_id: claimed.intent_id,
            source: request.source,
            event_id: request.event_id,
            account_id,
            currency: claimed.currency.as_deref().ok_or_else(corrupt)?,
            amount_minor: claimed.amount_minor.ok_or_else(corrupt)?,
            object_id: claimed.object_id.as_deref(),
            operator_applied: true,
        },
        link,
        // See Request::negative_balance. Every other check always holds.
        negative_balance: request.negative_balance,
    };
    // Lock order as in ingest: payment -> guards -> balance.
    if let SettleLink::Pays { payment, .. } | SettleLink::Reverses { payment, .. } = link {
        tx.lock_payment(&claimed.scope, payment, request.now)
            .await?;
    }
    if let SettleLink::Pays { payment, .. } = link {
        lock_release_guards(
            tx,
            &claimed.scope,
            payment,
            request.source,
            account_id,
            request.now,
        )
        .await?;
    }
    let guard = tx
        .lock_guard(request.source, account_id, SEQUENCE_FLOOR, request.now)
        .await?;
    match settle(tx, &posting, request.now).await? {
        Settled::Posted { balance_after } => {
            // An event held for another reason than lateness (a reversal
            // that waited, a balance it would have overdrawn) may be newer
            // than the guard: the guard follows it, as it would have.
            if let Some(sequence) = claimed.event_sequence
                && sequence > guard
            {
                tx.advance_guard(request.source, account_id, sequence, request.now)
                    .await?;
                // It moved the guard: in order from now on (what a guard
                // reset's suggestion counts).
                tx.mark_in_order(claimed.intent_id).await?;
            }
            if let (SettleLink::Pays { payment, .. }, Some(source)) = (link, request.configured) {
                release_unmatched(tx, source, payment, request.now).await?;
            }
            Ok(balance_after)
        }
        Settled::Refused { reason, .. } => Err(OperatorError::Refused(reason)),
    }
}

async fn claim(
    tx: &mut WriteTx,
    request: &Request<'_>,
) -> Result<Option<(Status, Claimed)>, StoreError> {
    let statuses = request.action.held_statuses();
    for &from in statuses
        .iter()
        .filter(|&&status| request.seen.is_none_or(|seen| seen == status))
    {
        let to = request.action.result_status();
        if let Some(claimed) = tx
            .claim_intent(request.source, request.event_id, (from, to), request.now)
            .await?
        {
            return Ok(Some((from, claimed)));
        }
    }
    Ok(None)
}
