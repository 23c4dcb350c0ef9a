//! A reversal decided in memory: a refund or a dispute (a debit) of a
//! payment the run's rows show credited, to the account it credited, in
//! its currency, for no more than it has left. The checks are those
//! `reverse::decide` and `settle::check_reversal` make, in their order;
//! where any of them would refuse the reversal, hold it or count it
//! otherwise (it waits `unmatched`, names another account, is in another
//! currency, reports a running total already reached, counts one refund
//! after a running total, exceeds what is left, or is a reinstatement),
//! the run decides it alone, by those statements.

use crate::domain::{Basis, Direction, Posting, ReverseRequest};
use crate::store::RunPayment;

/// What `request` posts (signed, negative) to `posting`'s account,
/// against its payment's `row` as the run leaves it; `None` where it is
/// decided alone.
pub(super) fn taken(row: &RunPayment, posting: &Posting, request: &ReverseRequest) -> Option<i64> {
    if request.direction != Direction::Debit {
        // A reinstatement: its check reads the intent it undoes.
        return None;
    }
    let account = posting.account.as_str();
    // Matched (the payment credited, to this account), as the event named.
    if row.credited_account() != Some(account)
        || request
            .account
            .as_ref()
            .is_some_and(|named| named.as_str() != account)
        || row.row.currency.as_deref() != Some(posting.currency.code())
    {
        return None;
    }
    let (credited, reversed) = (row.row.credited_minor, row.row.reversed_minor);
    let amount = match request.reversal.basis {
        // The provider's running total: what it adds, if it adds anything.
        Basis::Total => {
            let total = request.amount.minor();
            (total > reversed).then(|| reversed - total)?
        }
        // One refund on its own, where no running total counted the
        // payment's refunds.
        Basis::Each => (!row.total_reversed).then(|| -request.amount.minor())?,
    };
    (reversed.checked_sub(amount)? <= credited).then_some(amount)
}

#[cfg(test)]
mod tests {
    use super::taken;
    use crate::domain::{
        AccountId, Basis, Currency, Direction, Link, PositiveAmount, Posting, Reversal,
        ReverseRequest,
    };
    use crate::store::{PaymentRow, RunPayment};

    fn row(credited: i64, reversed: i64, total_reversed: bool) -> RunPayment {
        RunPayment {
            row: PaymentRow {
                payment_id: 1,
                account_id: Some("acct".to_owned()),
                currency: Some("USD".to_owned()),
                credited_minor: credited,
                reversed_minor: reversed,
                credited_by: Some(7),
            },
            total_reversed,
        }
    }

    fn request(direction: Direction, amount: i64, basis: Basis) -> ReverseRequest {
        ReverseRequest {
            direction,
            currency: Currency::parse("USD").unwrap(),
            amount: PositiveAmount::new(amount).unwrap(),
            account: None,
            sequence: 1,
            reversal: Reversal {
                payment_ref: "pay".to_owned(),
                basis,
                undoes: None,
            },
        }
    }

    fn posting(request: &ReverseRequest, account: &str, currency: &str) -> Posting {
        Posting {
            direction: request.direction,
            account: AccountId::parse(account).unwrap(),
            currency: Currency::parse(currency).unwrap(),
            amount: request.amount,
            sequence: request.sequence,
            explicit_sequence: false,
            link: Link::Reverses(request.reversal.clone()),
        }
    }

    fn decide(row: &RunPayment, request: &ReverseRequest) -> Option<i64> {
        taken(row, &posting(request, "acct", "USD"), request)
    }

    #[test]
    fn a_refund_takes_what_it_states_up_to_what_is_left() {
        let each = |amount| request(Direction::Debit, amount, Basis::Each);
        assert_eq!(decide(&row(1000, 0, false), &each(300)), Some(-300));
        assert_eq!(decide(&row(1000, 700, false), &each(300)), Some(-300));
        assert_eq!(decide(&row(1000, 701, false), &each(300)), None);
        // After a running total counted the payment's refunds: alone.
        assert_eq!(decide(&row(1000, 0, true), &each(300)), None);
    }

    #[test]
    fn a_running_total_takes_what_it_adds() {
        let total = |amount| request(Direction::Debit, amount, Basis::Total);
        assert_eq!(decide(&row(1000, 0, false), &total(400)), Some(-400));
        assert_eq!(decide(&row(1000, 400, true), &total(1000)), Some(-600));
        // Reached already (ignored), or beyond what was credited: alone.
        assert_eq!(decide(&row(1000, 400, true), &total(400)), None);
        assert_eq!(decide(&row(1000, 400, true), &total(1001)), None);
    }

    #[test]
    fn what_one_by_one_refuses_or_holds_is_decided_alone() {
        let refund = request(Direction::Debit, 100, Basis::Each);
        // Not credited yet (waits `unmatched`), or credited elsewhere.
        assert_eq!(decide(&row(0, 0, false), &refund), None);
        assert_eq!(
            taken(
                &row(1000, 0, false),
                &posting(&refund, "other", "USD"),
                &refund
            ),
            None
        );
        assert_eq!(
            taken(
                &row(1000, 0, false),
                &posting(&refund, "acct", "EUR"),
                &refund
            ),
            None
        );
        let named = ReverseRequest {
            account: Some(AccountId::parse("other").unwrap()),
            ..refund.clone()
        };
        assert_eq!(decide(&row(1000, 0, false), &named), None);
        // A reinstatement reads the reversal it undoes.
        let back = request(Direction::Credit, 100, Basis::Each);
        assert_eq!(decide(&row(1000, 500, false), &back), None);
    }
}
