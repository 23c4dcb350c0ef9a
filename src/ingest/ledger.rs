//! The one place a balance moves: the balance row and its ledger entry,
//! written together inside the caller's transaction.

use chrono::{DateTime, Utc};

use crate::store::{NewPosting, StoreError, WriteTx};

/// A balance movement about to be posted, by ingest, a release or an operator.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LedgerPosting<'a> {
    pub intent_id: i64,
    pub source: &'a str,
    pub event_id: &'a str,
    pub account_id: &'a str,
    pub currency: &'a str,
    /// Signed: positive credits, negative debits.
    pub amount_minor: i64,
    pub object_id: Option<&'a str>,
    pub operator_applied: bool,
}

/// Changes the balance, writes the ledger entry and its `ledger.posted`
/// message for each destination, inside the caller's transaction. Returns
/// the balance after the posting.
/// `credits_payment` names the payment row a whole credit pays (the
/// ledger's unique key on it is the permanent one-credit-per-payment guard).
pub(crate) async fn post_to_ledger(
    tx: &mut WriteTx,
    posting: &LedgerPosting<'_>,
    credits_payment: Option<i64>,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    tx.post(&NewPosting {
        intent_id: posting.intent_id,
        credits_payment,
        source: posting.source,
        event_id: posting.event_id,
        account_id: posting.account_id,
        currency: posting.currency,
        amount_minor: posting.amount_minor,
        object_id: posting.object_id,
        operator_applied: posting.operator_applied,
        created_at: now,
    })
    .await
}
