//! The raw fields of a refund, dispute or reinstatement, as a provider
//! located them, turned into a [`Movement`]: a reversal request, or a
//! rejection naming every problem, validated as postings are.

use serde_json::Value;

use super::event::{bounded_sequence, currency_and_amount};
use super::link::{Basis, Reversal, payment_ref};
use super::money::json_kind;
use super::{AccountId, AmountFormat, Direction, Movement, Rejection, ReverseRequest};

/// The raw fields of a reversal, as a provider located them.
pub struct ReversalFields<'a> {
    pub direction: Direction,
    pub payment_path: &'a str,
    pub payment: Option<&'a Value>,
    pub basis: Basis,
    pub undoes: Option<String>,
    pub account: Option<&'a Value>,
    pub currency: Option<&'a Value>,
    pub amount: Option<&'a Value>,
    pub amount_format: AmountFormat,
    pub sequence: Result<i64, String>,
}

impl ReversalFields<'_> {
    pub fn into_movement(self) -> Movement {
        let mut problems = Vec::new();
        let payment = payment_ref(self.payment, self.payment_path);
        let account = match self.account {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => AccountId::parse(s).map(Some).map_err(|e| e.to_string()),
            Some(other) => Err(format!(
                "account id must be a string, not {}",
                json_kind(other)
            )),
        };
        let (currency, amount) =
            currency_and_amount(self.currency, self.amount, self.amount_format);
        let sequence = bounded_sequence(self.sequence);
        for problem in [
            payment.as_ref().err(),
            account.as_ref().err(),
            currency.as_ref().err(),
            amount.as_ref().err(),
            sequence.as_ref().err(),
        ] {
            problems.extend(problem.cloned());
        }
        match (payment, account, currency, amount, sequence) {
            (Ok(payment_ref), Ok(account), Ok(currency), Ok(amount), Ok(sequence)) => {
                Movement::Reverse(ReverseRequest {
                    direction: self.direction,
                    currency,
                    amount,
                    account,
                    sequence,
                    reversal: Reversal {
                        payment_ref,
                        basis: self.basis,
                        undoes: self.undoes,
                    },
                })
            }
            (_, account, currency, amount, sequence) => {
                let direction = self.direction;
                Movement::Rejected(Rejection {
                    reason: problems.join("; "),
                    account: account.ok().flatten(),
                    currency: currency.ok(),
                    signed_amount: amount.ok().map(|a| match direction {
                        Direction::Credit => a.minor(),
                        Direction::Debit => -a.minor(),
                    }),
                    sequence: sequence.ok(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::Movement;

    fn fields<'a>(
        payment: &'a Value,
        amount: &'a Value,
        currency: &'a Value,
    ) -> ReversalFields<'a> {
        ReversalFields {
            direction: Direction::Debit,
            payment_path: "data.object.payment_intent",
            payment: Some(payment),
            basis: Basis::Each,
            undoes: None,
            account: None,
            currency: Some(currency),
            amount: Some(amount),
            amount_format: AmountFormat::Decimal,
            sequence: Ok(5),
        }
    }

    #[test]
    fn a_reversal_names_its_payment_and_amount() {
        let (p, a, c) = (json!("pi_1"), json!("12.50"), json!("EUR"));
        let Movement::Reverse(request) = fields(&p, &a, &c).into_movement() else {
            panic!("a reversal");
        };
        assert_eq!(request.reversal.payment_ref, "pi_1");
        assert_eq!(request.signed_amount(), -1250);
        assert_eq!(request.account, None);
    }

    #[test]
    fn numeric_payment_ids_are_text_and_problems_are_named() {
        assert_eq!(
            payment_ref(Some(&json!(450789469)), "order_id"),
            Ok("450789469".into())
        );
        let (p, a, c) = (Value::Null, json!("12.505"), json!("EUR"));
        let Movement::Rejected(rejection) = fields(&p, &a, &c).into_movement() else {
            panic!("a rejection");
        };
        assert_eq!(
            rejection.reason,
            "no payment id at data.object.payment_intent; amount \"12.505\" has more decimal \
             places than EUR has (2)"
        );
    }
}
