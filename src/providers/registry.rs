//! The registry of source kinds: every kind hookledger knows, and lookup by
//! config name. The only file that names every kind (the kinds import the
//! contract below them, never this), so adding a kind is its own file plus
//! one line in [`REGISTRY`].

use super::provider::Provider;
use super::{
    adyen, checkout, coinbase, generic_hmac, lemonsqueezy, mollie, paddle, paypal, paystack, polar,
    razorpay, shopify, square, standard_webhooks, stripe,
};

/// Every source kind hookledger knows, by its config name.
pub(super) static REGISTRY: &[&dyn Provider] = &[
    &stripe::Stripe,
    &standard_webhooks::StandardWebhooks,
    &paddle::Paddle,
    &adyen::Adyen,
    &paypal::PayPal,
    &generic_hmac::GenericHmac,
    &square::Square,
    &checkout::Checkout,
    &coinbase::Coinbase,
    &mollie::Mollie,
    &paystack::Paystack,
    &shopify::Shopify,
    &razorpay::Razorpay,
    &lemonsqueezy::LemonSqueezy,
    &polar::Polar,
];

pub fn provider_for(kind: &str) -> Option<&'static dyn Provider> {
    REGISTRY.iter().copied().find(|p| p.kind() == kind)
}

pub fn known_kinds() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|p| p.kind())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::JsonPath;

    #[test]
    fn registry_names_are_unique_and_resolvable() {
        let kinds: Vec<_> = known_kinds().collect();
        let mut unique = kinds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), kinds.len());
        for kind in kinds {
            assert_eq!(provider_for(kind).map(|p| p.kind()), Some(kind));
        }
        assert!(provider_for("bitcoin-by-fax").is_none());
    }

    #[test]
    fn every_rule_reads_paths_that_parse() {
        for provider in REGISTRY {
            JsonPath::parse(provider.default_account_path()).unwrap();
            for rule in provider.rules() {
                for path in [rule.payment, rule.object] {
                    assert!(path.is_empty() || JsonPath::parse(path).is_ok(), "{path}");
                }
            }
        }
    }
}
