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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::feed_for;

    /// Without `request_gap_ms`, a run spends a tenth of the provider's
    /// documented read limit, or one request a second where the provider
    /// publishes no number (docs/operating/reconcile.md).
    #[test]
    fn each_feed_paces_itself_within_its_providers_budget() {
        let tenth = |per_second: f64| Duration::from_secs_f64(10.0 / per_second);
        for (kind, key, gap) in [
            // Live mode 100 reads a second ("Rate limits"); test mode 25,
            // of which a run takes 2, under a tenth.
            ("stripe", "rk_live_x", tenth(100.0)),
            ("stripe", "sk_test_x", Duration::from_millis(500)),
            // 240 a minute.
            ("paddle", "pdl_x", tenth(4.0)),
            // A bucket leaking 2 a second.
            ("shopify", "shpat_x", tenth(2.0)),
            ("square", "EAAA_x", Duration::from_secs(1)),
            ("paypal", "id:secret", Duration::from_secs(1)),
        ] {
            assert_eq!(feed_for(kind).unwrap().gap(key), gap, "{kind} {key}");
        }
        assert!(feed_for("adyen").is_none());
    }
}
