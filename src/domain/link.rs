//! How a movement relates to a provider payment. A payment's credit
//! registers the payment; a refund or dispute reverses part of it, matched
//! through the payment's provider id, and can never take back more than the
//! payment credited; a dispute won back reinstates what one reversal took.

use serde_json::Value;

use super::money::json_kind;

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
