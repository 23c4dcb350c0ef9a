//! Refunds and disputes. A reversal names the provider payment it reverses;
//! it is applied to the account that payment credited, never to one of its
//! own choosing, and never for more than the payment has left
//! ([`settle`](super::settle)). One that arrives before its payment is
//! credited waits as `unmatched` and is applied, in arrival order, in the
//! transaction that credits the payment ([`release_unmatched`]). Both sides
//! take the payment row's lock first (see `store/write/payments.rs`), so no
//! reversal is stranded by a credit that commits while it is in flight.

use chrono::{DateTime, Utc};

use super::order;
use super::outcome::Decided;
use super::posted::Posted;
use crate::domain::{
    AccountId, Basis, Currency, Direction, Link, NormalisedEvent, PositiveAmount, Posting,
    Reversal, ReverseRequest, SEQUENCE_FLOOR, Status,
};
use crate::source::Source;
use crate::store::{StoreError, WriteKeys, WriteTx};

/// A new reversal (its intent just inserted as `unmatched`).
pub(super) async fn decide(
    tx: &mut WriteTx,
    source: &Source,
    event: &NormalisedEvent,
    intent_id: i64,
    request: &ReverseRequest,
    now: DateTime<Utc>,
) -> Result<Decided, StoreError> {
    let payment = request.reversal.payment_ref.as_str();
    let row = tx.lock_payment(&source.scope, payment, now).await?;
    let Some(account) = row.account_id.filter(|_| row.credited_minor > 0) else {
        let reason = format!("waits for payment {payment} to be credited");
        tx.set_intent_status(intent_id, Status::Unmatched, &reason, false, now)
            .await?;
        return Ok(Decided::status(Status::Unmatched));
    };
    if let Some(named) = &request.account
        && named.as_str() != account
    {
        let reason =
            format!("names account {named}, but payment {payment} credited account {account}");
        tx.set_intent_status(intent_id, Status::Rejected, &reason, false, now)
            .await?;
        return Ok(Decided::status(Status::Rejected));
    }
    if tx.match_intent(intent_id, &account).await?.is_none() {
        return Err(StoreError::Corrupt(format!(
            "intent {intent_id} inserted as unmatched is not"
        )));
    }
    let posting = Posting {
        direction: request.direction,
        account: parse_account(&account)?,
        currency: request.currency,
        amount: request.amount,
        sequence: request.sequence,
        explicit_sequence: false,
        link: Link::Reverses(request.reversal.clone()),
    };
    let posted = Posted {
        intent_id,
        source,
        recorded_by: source.name.as_str(),
        event_id: event.event_id.as_str(),
        object_id: event.object_id.as_deref(),
        posting: &posting,
        reversal_total: (request.reversal.basis == Basis::Total).then(|| request.amount.minor()),
        now,
    };
    order::decide(tx, &posted).await
}

fn parse_account(account: &str) -> Result<AccountId, StoreError> {
    AccountId::parse(account)
        .map_err(|e| StoreError::Corrupt(format!("payments.account_id {account:?}: {e}")))
}

/// Lock order for a credit of `payment` (its row locked): every guard the
/// credit may take, on its account, in source-name order, before any balance
/// row. A credit takes its own source's guard; releasing the reversals that
/// waited for the payment takes the guards of the sources that recorded
/// them (another endpoint of the scope, say). Taken as they come (own guard,
/// balance, then another source's guard), they would form a cycle with a
/// posting at that other source (its guard, then the balance); taken up
/// front in one order, they cannot. The set is stable: recording an
/// unmatched reversal needs the payment row's lock, held here.
pub async fn lock_release_guards(
    tx: &mut WriteTx,
    scope: &str,
    payment: &str,
    own_source: &str,
    account: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let waiting = tx.unmatched(scope, payment).await?;
    let mut sources: Vec<&str> = waiting
        .iter()
        .map(|u| u.source.as_str())
        .chain([own_source])
        .collect();
    sources.sort_unstable();
    sources.dedup();
    if sources.len() > 1 {
        for source in sources {
            tx.lock_guard(source, account, SEQUENCE_FLOOR, now).await?;
        }
    }
    Ok(())
}

/// Applies the reversals that waited for `payment`, just credited in this
/// transaction (its row is locked). Each is decided as if it arrived now,
/// against the payment's account: in order, late (`on_stale`), or refused,
/// under the crediting source's policy (a reversal another source of the
/// scope received is decided like one of its own).
/// Returns how many were applied.
pub async fn release_unmatched(
    tx: &mut WriteTx,
    source: &Source,
    payment: &str,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let scope = source.scope.as_str();
    let waiting = tx.unmatched(scope, payment).await?;
    if waiting.is_empty() {
        return Ok(0);
    }
    let row = tx.lock_payment(scope, payment, now).await?;
    let Some(account) = row.account_id.filter(|_| row.credited_minor > 0) else {
        return Ok(0);
    };
    let mut applied = 0;
    for unmatched in waiting {
        // The same rule as for a reversal that arrives after its payment.
        if let Some(named) = unmatched.account_id.as_deref()
            && named != account
        {
            let reason =
                format!("names account {named}, but payment {payment} credited account {account}");
            tx.reject_unmatched(unmatched.intent_id, &reason, now)
                .await?;
            continue;
        }
        // None: dismissed by an operator meanwhile.
        let Some(matched) = tx.match_intent(unmatched.intent_id, &account).await? else {
            continue;
        };
        let corrupt =
            |what: &str| StoreError::Corrupt(format!("unmatched {}: {what}", unmatched.event_id));
        let direction = if matched.amount_minor < 0 {
            Direction::Debit
        } else {
            Direction::Credit
        };
        let posting = Posting {
            direction,
            account: parse_account(&account)?,
            currency: Currency::parse(&matched.currency).map_err(|_| corrupt("currency"))?,
            amount: PositiveAmount::new(matched.amount_minor.abs())
                .map_err(|_| corrupt("amount"))?,
            sequence: matched.event_sequence,
            explicit_sequence: false,
            link: Link::Reverses(Reversal {
                payment_ref: payment.to_owned(),
                basis: if matched.reversal_total.is_some() {
                    Basis::Total
                } else {
                    Basis::Each
                },
                undoes: matched.undoes.clone(),
            }),
        };
        let posted = Posted {
            intent_id: unmatched.intent_id,
            source,
            recorded_by: &unmatched.source,
            event_id: &matched.event_id,
            object_id: matched.object_id.as_deref(),
            posting: &posting,
            reversal_total: matched.reversal_total,
            now,
        };
        // A reversal's decision releases nothing in turn: no cycle back here.
        let decided = order::decide(tx, &posted).await?;
        if decided.status == Status::Applied {
            applied += 1;
        }
    }
    Ok(applied)
}

/// Applies the reversals left waiting for a payment that is credited in
/// their scope (a scope merge at start-up moved the credit in): each payment
/// in its own transaction, under the same locks and rules as the credit's
/// release. Returns how many were applied.
pub async fn release_stranded(
    store: &crate::store::Store,
    source: &Source,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut applied = 0;
    for payment in store.stranded_payments(&source.scope).await? {
        let mut tx = store.begin().await?;
        let mut keys = WriteKeys::new();
        keys.payment(&source.scope, &payment);
        tx.lock_keys(keys).await?;
        let row = tx.lock_payment(&source.scope, &payment, now).await?;
        if let Some(account) = row.account_id.as_deref() {
            lock_release_guards(
                &mut tx,
                &source.scope,
                &payment,
                source.name.as_str(),
                account,
                now,
            )
            .await?;
        }
        applied += release_unmatched(&mut tx, source, &payment, now).await?;
        tx.commit().await?;
    }
    Ok(applied)
}
