//! Source kinds. Each provider module is pure (no I/O, no actix, no sqlx):
//! it verifies a delivery's signature over the raw bytes, maps the provider's
//! JSON into [`NormalisedEvent`](crate::domain::NormalisedEvent)s through its
//! [`Rule`]s, and can sign a sample event the way the provider would (for
//! `hookledger send` and the tests).
//!
//! The layers inside, each importing only those below it: the kinds'
//! shared values (`verification`, `mapping`, `delivery`) and helpers
//! (`fields`, `header_tag`, `rules`), the contract (`provider`), the kinds
//! themselves (one file each), and the `registry` that names them all.
//! Adding a provider is one new file here plus one line in the registry.

mod adyen;
mod checkout;
mod coinbase;
mod delivery;
mod fields;
pub mod generic_hmac;
mod header_tag;
pub(crate) mod hmac_sha256;
mod json_path;
mod lemonsqueezy;
mod mapping;
mod mollie;
mod paddle;
mod paypal;
mod paystack;
mod polar;
mod provider;
mod razorpay;
mod registry;
mod rules;
mod shopify;
mod square;
mod standard_webhooks;
mod strict_json;
mod stripe;
pub mod stripe_thin;
#[cfg(test)]
mod tamper_tests;
#[cfg(test)]
mod testing;
mod verification;

pub use delivery::{Delivery, HeaderPairs, HeaderSource, RecordingHeaders};
pub use json_path::{JsonPath, JsonPathError};
pub use mapping::{MapError, Mapping, parse_json};
pub use provider::{
    KindSettings, Provider, ReconcileApi, Sample, SettingsError, SignedParts, Unsigned,
    VerifyPolicy,
};
pub use registry::{known_kinds, provider_for};
pub use rules::{
    Amount, Condition, Effect, EventView, Key, Rule, enabled_rules, map_event, mapped_rules,
    mapped_types,
};
pub use strict_json::Ambiguity;
pub use verification::{Verified, VerifyError};
