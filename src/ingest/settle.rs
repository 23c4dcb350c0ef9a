//! Applying one decided posting, for ingest and for an operator: the
//! payment bookkeeping a credit or a reversal needs (a payment credits once
//! per scope: a second credit of it is refused as `duplicate_effect`), the
//! negative-balance policy, then the balance and the ledger entry. A posting the rules refuse
//! (a refund larger than what its payment has left, a debit below zero under
//! `negative_balance = "hold"`) changes nothing and comes back as
//! [`Settled::Refused`], for the caller to record.

use chrono::{DateTime, Utc};

use super::{LedgerPosting, post_to_ledger};
use crate::domain::{NegativeBalance, Status, format_minor};
use crate::store::{PaymentCredit, PaymentRow, StoreError, WriteTx};

/// How the posting relates to a provider payment.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SettleLink<'a> {
    None,
    /// The credit of this payment: whole, or (`part`) one part of it.
    Pays {
        payment: &'a str,
        part: bool,
    },
    /// A reversal (debit) or reinstatement (credit) of this payment. With
    /// `total`, the provider's running total of what was refunded: the
    /// posting is the part not yet reversed.
    Reverses {
        payment: &'a str,
        total: Option<i64>,
        undoes: Option<&'a str>,
    },
}

pub(crate) struct Settle<'a> {
    /// The scope the event's payment is matched in.
    pub scope: &'a str,
    pub entry: LedgerPosting<'a>,
    pub link: SettleLink<'a>,
    pub negative_balance: NegativeBalance,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Settled {
    Posted {
        balance_after: i64,
    },
    /// Nothing changed; the event gets this status and reason.
    Refused {
        status: Status,
        reason: String,
    },
}

/// What a balance (or a payment's credited total) may reach: as balances,
/// ±2^62, so every sum stays exact on both backends.
const MAX_CREDITED: i64 = 1 << 62;
const OUT_OF_RANGE: &str = "the balance would leave the supported range (±2^62 minor units)";

fn refused(status: Status, reason: String) -> Result<Settled, StoreError> {
    Ok(Settled::Refused { status, reason })
}

/// Minor units as `USD 12.50` for reasons.
fn money(currency: &str, minor: i64) -> String {
    let exponent = crate::domain::Currency::parse(currency).map_or(0, |c| c.exponent());
    format!("{currency} {}", format_minor(minor, exponent))
}

/// Why a posting may not apply: the status its event gets, and the reason.
type Refusal = (Status, String);

/// Checks and posts. For [`SettleLink::Pays`] the caller has locked the
/// payment row; for a reversal this locks it (a no-op when the caller did).
/// Every check first, under the locks that keep it true until commit; then
/// the balance and ledger; the payment row last, once the posting is known
/// to fit.
pub(crate) async fn settle(
    tx: &mut WriteTx,
    settle: &Settle<'_>,
    now: DateTime<Utc>,
) -> Result<Settled, StoreError> {
    let entry = &settle.entry;
    let (amount, payment_row) = match check_payment(tx, settle, now).await? {
        Ok(checked) => checked,
        Err((status, reason)) => return refused(status, reason),
    };
    if let Some((status, reason)) = check_balance(tx, settle, amount).await? {
        return refused(status, reason);
    }
    let posting = LedgerPosting {
        amount_minor: amount,
        ..*entry
    };
    let payment_id = payment_row.as_ref().map(|row| row.payment_id);
    let credits_payment = match settle.link {
        SettleLink::Pays { part: false, .. } => payment_id,
        _ => None,
    };
    let balance_after = match post_to_ledger(tx, &posting, credits_payment, now).await {
        Ok(balance) => balance,
        // The balance statement matched no row and wrote nothing.
        Err(StoreError::BalanceLimit { .. }) => {
            return refused(Status::Rejected, OUT_OF_RANGE.to_owned());
        }
        Err(e) => return Err(e),
    };
    record_on_payment(tx, settle, amount, payment_id, now).await?;
    if amount != entry.amount_minor {
        tx.set_intent_amount(entry.intent_id, amount).await?;
    }
    Ok(Settled::Posted { balance_after })
}

/// The payment checks, under the payment row's lock: what the posting may
/// post (for a running total, the part not yet reversed) and the row it
/// credits or reverses; or why it may not.
async fn check_payment(
    tx: &mut WriteTx,
    settle: &Settle<'_>,
    now: DateTime<Utc>,
) -> Result<Result<(i64, Option<PaymentRow>), Refusal>, StoreError> {
    let entry = &settle.entry;
    match settle.link {
        SettleLink::None => Ok(Ok((entry.amount_minor, None))),
        SettleLink::Pays { payment, part } => {
            let row = tx.lock_payment(settle.scope, payment, now).await?;
            Ok(check_credit(tx, entry, &row, payment, part)
                .await?
                .map(|()| (entry.amount_minor, Some(row))))
        }
        SettleLink::Reverses {
            payment,
            total,
            undoes,
        } => {
            let row = tx.lock_payment(settle.scope, payment, now).await?;
            Ok(
                check_reversal(tx, settle.scope, entry, &row, payment, total, undoes)
                    .await?
                    .map(|amount| (amount, Some(row))),
            )
        }
    }
}

/// Whether a credit may apply to its locked payment row: once per payment,
/// within range, and to the account and currency it credited before.
async fn check_credit(
    tx: &mut WriteTx,
    entry: &LedgerPosting<'_>,
    row: &PaymentRow,
    payment: &str,
    part: bool,
) -> Result<Result<(), Refusal>, StoreError> {
    if let Some(reason) = credited_before(tx, row, payment, part).await? {
        return Ok(Err((Status::DuplicateEffect, reason)));
    }
    let same = row.account_id.as_deref() == Some(entry.account_id)
        && row.currency.as_deref() == Some(entry.currency);
    if row.credited_minor.saturating_add(entry.amount_minor) > MAX_CREDITED {
        return Ok(Err((Status::Rejected, OUT_OF_RANGE.to_owned())));
    }
    if row.credited_minor > 0 && !same {
        return Ok(Err((
            Status::Rejected,
            format!(
                "payment {payment} was credited to account {} in {} before",
                row.account_id.as_deref().unwrap_or("?"),
                row.currency.as_deref().unwrap_or("?")
            ),
        )));
    }
    Ok(Ok(()))
}

/// Under `negative_balance = "hold"`, a debit that would take the balance
/// below zero is held.
async fn check_balance(
    tx: &mut WriteTx,
    settle: &Settle<'_>,
    amount: i64,
) -> Result<Option<Refusal>, StoreError> {
    if amount >= 0 || settle.negative_balance != NegativeBalance::Hold {
        return Ok(None);
    }
    let entry = &settle.entry;
    // Locked until commit, so no other posting moves it under this check;
    // an account without a balance row has 0, and a debit from 0 is
    // refused whatever commits meanwhile.
    let balance = tx
        .lock_existing_balance(entry.account_id, entry.currency)
        .await?
        .unwrap_or(0);
    if balance + amount >= 0 {
        return Ok(None);
    }
    // Held where an operator can apply it (`stale`): a refund or dispute
    // the provider has already paid out must still be postable once
    // someone decides to.
    Ok(Some((
        Status::Stale,
        format!(
            "would take the balance of {} below zero: {} less {} \
             (negative_balance = \"hold\")",
            entry.account_id,
            money(entry.currency, balance),
            money(entry.currency, -amount)
        ),
    )))
}

/// Records the posting on its payment row: the payment's credit, or what
/// a reversal took (or a reinstatement gave back).
async fn record_on_payment(
    tx: &mut WriteTx,
    settle: &Settle<'_>,
    amount: i64,
    payment_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let entry = &settle.entry;
    let recorded = match settle.link {
        SettleLink::None => true,
        SettleLink::Pays { payment, part } => {
            let credit = if part {
                PaymentCredit::Part
            } else {
                PaymentCredit::Whole {
                    intent_id: entry.intent_id,
                }
            };
            let id = payment_id.unwrap_or_default();
            tx.credit_payment(
                (id, payment),
                entry.account_id,
                entry.currency,
                amount,
                credit,
                now,
            )
            .await?
        }
        SettleLink::Reverses { payment, .. } => {
            tx.add_reversed(settle.scope, payment, -amount, now).await?
        }
    };
    if !recorded {
        // Checked above under the same lock: the rows disagree with it.
        return Err(StoreError::Corrupt(format!(
            "payment row of {} no longer admits {}",
            entry.event_id, amount
        )));
    }
    Ok(())
}

/// Why a credit of `payment` (locked in `row`) may not apply because the
/// payment has been credited already: whole by an event (named), or in
/// parts when this credit is of the whole.
async fn credited_before(
    tx: &mut WriteTx,
    row: &PaymentRow,
    payment: &str,
    part: bool,
) -> Result<Option<String>, StoreError> {
    if let Some(intent_id) = row.credited_by {
        let by = match tx.intent_name(intent_id).await? {
            Some((source, event_id)) => format!("event {event_id} (source {source})"),
            None => format!("intent {intent_id}"),
        };
        return Ok(Some(format!(
            "payment {payment} was credited by {by}; a payment credits once"
        )));
    }
    Ok((!part && row.credited_minor > 0).then(|| {
        format!("payment {payment} was credited in parts already; a payment credits once")
    }))
}

/// What a reversal may post against its locked payment row (signed), or
/// why not (the status and reason to record).
async fn check_reversal(
    tx: &mut WriteTx,
    scope: &str,
    entry: &LedgerPosting<'_>,
    row: &PaymentRow,
    payment: &str,
    total: Option<i64>,
    undoes: Option<&str>,
) -> Result<Result<i64, Refusal>, StoreError> {
    let (credited, reversed) = (row.credited_minor, row.reversed_minor);
    let reject = |reason: String| Ok(Err((Status::Rejected, reason)));
    if row.currency.as_deref() != Some(entry.currency) {
        return reject(format!(
            "payment {payment} was credited in {}, this event is in {}",
            row.currency.as_deref().unwrap_or("no currency yet"),
            entry.currency
        ));
    }
    let show = |minor| money(entry.currency, minor);
    let mut amount = entry.amount_minor;
    if let Some(total) = total {
        // The provider's running total: post what it adds.
        if total <= reversed {
            return Ok(Err((
                Status::Ignored,
                format!(
                    "payment {payment} has {} refunded already; this event reports {} in all",
                    show(reversed),
                    show(total)
                ),
            )));
        }
        amount = -(total - reversed);
    } else if amount < 0 && tx.reversed_as_total(scope, payment).await? {
        // A refund counted on its own after the provider's running total
        // counted the payment's refunds (a config that mapped
        // `charge.refunded` then, `refund.created` now, or a replay): the
        // total may hold this very refund. Held for a person, never both.
        return reject(format!(
            "payment {payment}'s refunds were counted as a running total before; this event \
             counts one refund on its own, which that total may hold already: resolve it by \
             hand"
        ));
    }
    if amount < 0 && reversed - amount > credited {
        return reject(format!(
            "refund of {} exceeds what payment {payment} has left: it credited {}, and {} \
             was refunded before",
            show(-amount),
            show(credited),
            show(reversed)
        ));
    }
    if amount > 0 {
        if let Some(held) = check_reinstatement(tx, scope, entry, undoes, amount).await? {
            return Ok(Err(held));
        }
        if amount > reversed {
            return reject(format!(
                "reinstates {} but only {} of payment {payment} was reversed",
                show(amount),
                show(reversed)
            ));
        }
    }
    Ok(Ok(amount))
}

/// A reinstatement gives back what one earlier reversal of the same payment
/// took, and no more. `None` if it may; else the status and reason: it waits
/// (`stale`, for an operator, re-checked then) while that reversal is held
/// or not yet received, and is `rejected` once that reversal can never
/// apply.
async fn check_reinstatement(
    tx: &mut WriteTx,
    scope: &str,
    entry: &LedgerPosting<'_>,
    undoes: Option<&str>,
    amount: i64,
) -> Result<Option<Refusal>, StoreError> {
    let Some(undoes) = undoes else {
        return Ok(Some((
            Status::Rejected,
            "a reinstatement must name the reversal it undoes".to_owned(),
        )));
    };
    // `applied` is final: no later change can make this read stale.
    Ok(match tx.intent_effect(scope, undoes).await? {
        Some((status, Some(taken))) if status == "applied" && taken < 0 => {
            (amount > -taken).then(|| {
                (
                    Status::Rejected,
                    format!(
                        "reinstates {} but {undoes} took {}",
                        money(entry.currency, amount),
                        money(entry.currency, -taken)
                    ),
                )
            })
        }
        Some((status, _)) if ["stale", "unmatched", "waiting"].contains(&status.as_str()) => {
            Some((
                Status::Stale,
                format!("waits for {undoes}, which is {status}: apply that first, then this"),
            ))
        }
        Some((status, _)) => Some((
            Status::Rejected,
            format!("reinstates {undoes}, which is {status} and will never be applied"),
        )),
        None => Some((
            Status::Stale,
            format!("waits for {undoes}, which was never received"),
        )),
    })
}
