//! How a movement relates to a provider payment. A payment's credit
//! registers the payment; a refund or dispute reverses part of it, matched
//! through the payment's provider id, and can never take back more than the
//! payment credited; a dispute won back reinstates what one reversal took.

use serde_json::Value;

use super::money::json_kind;
use super::{AccountId, AmountFormat, Currency, Direction, PositiveAmount, Rejection};

/// Provider payment ids are stored and compared as given, bounded like ids.
const MAX_REF_BYTES: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// A movement of its own (a top-up, a manual adjustment).
    None,
    /// A credit that is the provider payment with this id: it credits the
    /// payment whole, at most once per scope.
    Pays(String),
    /// A credit of one part of the payment with this id, for a provider
    /// that captures a payment in parts (Checkout.com): each part credits
    /// once, by its own intent key, and refunds match the payment.
    PaysPart(String),
    /// A debit (refund, dispute) or a credit (reinstatement) against the
    /// payment's credit.
    Reverses(Reversal),
}

impl Link {
    /// The payment a credit pays, and whether it is one part of it.
    pub fn paid(&self) -> Option<(&str, bool)> {
        match self {
            Link::Pays(payment) => Some((payment, false)),
            Link::PaysPart(payment) => Some((payment, true)),
            Link::None | Link::Reverses(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reversal {
    /// The provider id of the payment reversed.
    pub payment_ref: String,
    pub basis: Basis,
    /// For a reinstatement: the event id (same source) of the reversal it
    /// undoes; it can give back at most what that one took.
    pub undoes: Option<String>,
}

/// How the provider states a reversal's amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// This refund's own amount (Stripe `refund.*`, Shopify, Adyen ...).
    Each,
    /// Everything refunded on the payment so far (Stripe `charge.refunded`
    /// `amount_refunded`, Polar and Lemon Squeezy `refunded_amount`): the
    /// posting is the part not yet reversed.
    Total,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Each => "each",
            Basis::Total => "total",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "each" => Some(Basis::Each),
            "total" => Some(Basis::Total),
            _ => None,
        }
    }
}

/// A reversal as a provider's event states it. Its account is the
/// payment's: most providers' refund objects carry no customer reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReverseRequest {
    pub direction: Direction,
    pub currency: Currency,
    /// For [`Basis::Total`], the provider's running total.
    pub amount: PositiveAmount,
    /// The account the event itself names, if any: it must be the payment's.
    pub account: Option<AccountId>,
    pub sequence: i64,
    pub reversal: Reversal,
}

impl ReverseRequest {
    /// The signed amount as stated (for a total: minus the total).
    pub fn signed_amount(&self) -> i64 {
        match self.direction {
            Direction::Credit => self.amount.minor(),
            Direction::Debit => -self.amount.minor(),
        }
    }

    pub fn reject(&self, reason: &str) -> Rejection {
        Rejection {
            reason: reason.to_owned(),
            account: self.account.clone(),
            currency: Some(self.currency),
            signed_amount: Some(self.signed_amount()),
            sequence: Some(self.sequence),
        }
    }
}

/// A payment id out of JSON: a non-empty string (or an integer, as Shopify
/// and Adyen ids are) of at most 255 bytes.
pub fn payment_ref(value: Option<&Value>, path: &str) -> Result<String, String> {
    let text = match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        None | Some(Value::Null) => return Err(format!("no payment id at {path}")),
        Some(other) => {
            return Err(format!(
                "payment id at {path} must be a string, not {}",
                json_kind(other)
            ));
        }
    };
    if text.is_empty() || text.len() > MAX_REF_BYTES || text.chars().any(char::is_control) {
        return Err(format!(
            "payment id at {path} must be 1-255 characters without control characters"
        ));
    }
    Ok(text)
}

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
    pub fn into_movement(self) -> super::Movement {
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
            super::event::currency_and_amount(self.currency, self.amount, self.amount_format);
        let sequence = super::event::bounded_sequence(self.sequence);
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
                super::Movement::Reverse(ReverseRequest {
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
                super::Movement::Rejected(Rejection {
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
