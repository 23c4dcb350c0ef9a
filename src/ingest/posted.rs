//! A posting being decided: the new intent it belongs to, and the steps
//! every ordering decision takes with it (post it through `settle`, or
//! record another status with the reason).

use chrono::{DateTime, Utc};

use super::ledger::LedgerPosting;
use super::outcome::Decided;
use super::settle::{self, Settle, SettleLink, Settled};
use crate::domain::{Link, OrderingMode, Posting, Status};
use crate::source::Source;
use crate::store::{StoreError, WriteTx};

/// A posting being decided: its intent and what it asks of a balance.
pub(crate) struct Posted<'a> {
    pub intent_id: i64,
    /// The source deciding: its ordering policy.
    pub source: &'a Source,
    /// The source the intent row belongs to, whose sequence guard and
    /// ledger entry it takes: the deciding one, or for a reversal released
    /// by a credit another source of the scope received, the one that
    /// received the reversal.
    pub recorded_by: &'a str,
    pub event_id: &'a str,
    pub object_id: Option<&'a str>,
    pub posting: &'a Posting,
    /// For a running-total reversal, the provider's total.
    pub reversal_total: Option<i64>,
    pub now: DateTime<Utc>,
}

impl Posted<'_> {
    pub(super) fn account(&self) -> &str {
        self.posting.account.as_str()
    }

    fn settle_link(&self) -> SettleLink<'_> {
        match &self.posting.link {
            Link::None => SettleLink::None,
            Link::Pays(payment) => SettleLink::Pays {
                payment,
                part: false,
            },
            Link::PaysPart(payment) => SettleLink::Pays {
                payment,
                part: true,
            },
            Link::Reverses(reversal) => SettleLink::Reverses {
                payment: &reversal.payment_ref,
                total: self.reversal_total,
                undoes: reversal.undoes.as_deref(),
            },
        }
    }

    /// Posts this event's own effect, or records why it may not: the event
    /// ends `applied`, or held (`rejected`) or `ignored` with the reason.
    /// `late` marks an event below its account's guard.
    pub(super) async fn post(&self, tx: &mut WriteTx, late: bool) -> Result<Decided, StoreError> {
        let negative_balance = match self.source.ordering.mode {
            // An ordered stream is applied as the sender numbered it.
            OrderingMode::Contiguous => crate::domain::NegativeBalance::Allow,
            OrderingMode::HighWater => self.source.negative_balance,
        };
        let settle = Settle {
            scope: &self.source.scope,
            entry: LedgerPosting {
                intent_id: self.intent_id,
                source: self.recorded_by,
                event_id: self.event_id,
                account_id: self.account(),
                currency: self.posting.currency.code(),
                amount_minor: self.posting.signed_amount(),
                object_id: self.object_id,
                operator_applied: false,
            },
            link: self.settle_link(),
            negative_balance,
        };
        match settle::settle(tx, &settle, self.now).await? {
            Settled::Posted { .. } => Ok(Decided {
                late,
                ..Decided::status(Status::Applied)
            }),
            Settled::Refused { status, reason } => {
                self.set_status(tx, status, &reason, late).await?;
                Ok(Decided {
                    late,
                    ..Decided::status(status)
                })
            }
        }
    }

    /// Corrects the new intent's status (inserted as `applied`).
    pub(super) async fn set_status(
        &self,
        tx: &mut WriteTx,
        status: Status,
        reason: &str,
        late: bool,
    ) -> Result<(), StoreError> {
        tx.set_intent_status(self.intent_id, status, reason, late, self.now)
            .await
    }

    pub(super) async fn reject(
        &self,
        tx: &mut WriteTx,
        reason: &str,
    ) -> Result<Decided, StoreError> {
        self.set_status(tx, Status::Rejected, reason, false).await?;
        Ok(Decided::status(Status::Rejected))
    }
}
