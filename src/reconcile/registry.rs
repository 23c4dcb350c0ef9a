//! Which source kinds have a feed of their events: one line each.

use super::feed::Feed;
use super::paddle::Paddle;
use super::paypal::PayPal;
use super::shopify::Shopify;
use super::square::Square;
use super::stripe::Stripe;

/// The feed of a source kind, if it has one.
pub fn feed_for(kind: &str) -> Option<&'static dyn Feed> {
    match kind {
        "paddle" => Some(&Paddle),
        "paypal" => Some(&PayPal),
        "shopify" => Some(&Shopify),
        "square" => Some(&Square),
        "stripe" => Some(&Stripe),
        _ => None,
    }
}
