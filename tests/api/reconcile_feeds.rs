//! Reconcile against each provider's record of events, faked in its own
//! dialect (`fake_feed`): payments (and a refund) made while hookledger got
//! none of their webhooks are found by one `hookledger reconcile` run over
//! several pages and applied once, through the same decisions as a
//! webhook; a second run re-reads them and recovers nothing; a webhook
//! that arrives late is a duplicate. A `429` is waited out as its
//! `Retry-After` says; a refused key fails the command naming the source;
//! a page not as documented stops the run with nothing written.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_feed::{Dialect, FakeFeed, Fault};
use crate::helpers::*;
use crate::kinds::Kind;
use crate::process::run_with_config as cli;
use crate::reconcile::{app, config_dir};

/// One provider's feed under test.
struct FeedCase {
    kind: &'static Kind,
    dialect: fn() -> Arc<dyn Dialect>,
    /// The key the fake takes.
    key: &'static str,
    /// The type its payments are listed under.
    payment_type: &'static str,
}

const PADDLE: FeedCase = FeedCase {
    kind: &crate::kinds::paddle::PADDLE,
    dialect: || Arc::new(crate::fake_feed::paddle::Paddle),
    key: "pdl_sdbx_apikey_01hv8x2acma2gz3ysy1w9h7q6e_test",
    payment_type: "transaction.completed",
};

const SQUARE: FeedCase = FeedCase {
    kind: &crate::kinds::square::SQUARE,
    dialect: || Arc::new(crate::fake_feed::square::Square),
    key: "EAAAl_personal_access_token_for_tests",
    payment_type: "payment.updated",
};

const PAYPAL: FeedCase = FeedCase {
    kind: &crate::kinds::paypal::PAYPAL,
    dialect: || Arc::new(crate::fake_feed::paypal::PayPal),
    key: "AbC123fakeClientId:EFG456fakeClientSecret",
    payment_type: "PAYMENT.CAPTURE.COMPLETED",
};

const SHOPIFY: FeedCase = FeedCase {
    kind: &crate::kinds::shopify::SHOPIFY,
    dialect: || Arc::new(crate::fake_feed::shopify::Shopify),
    key: "shpat_0123456789abcdef0123456789abcdef",
    payment_type: "orders.json",
};

/// `request_gap_ms` of the fakes' sources.
const GAP_MS: u64 = 150;

fn payment_id(n: usize) -> String {
    (450_789_000 + n).to_string()
}

impl FeedCase {
    /// The kind's source reading `base` with `key`, on demand only, its
    /// requests `GAP_MS` apart rather than the provider's seconds.
    fn sources(&self, base: &str, key: &str) -> String {
        format!(
            "{}\n[sources.reconcile]\napi_key = \"{key}\"\napi_base = \"{base}\"\n\
             interval_secs = 0\nrequest_gap_ms = {GAP_MS}\n",
            self.kind.config
        )
    }

    async fn start(&self) -> FakeFeed {
        FakeFeed::start((self.dialect)(), self.key).await
    }

    /// Payment `n`: its id is digits, as Shopify's integer ids are.
    fn payment(&self, n: usize, amount: i64) -> Value {
        (self.kind.payment)(&format!("evt_{n:06}"), &payment_id(n), amount)
    }

    /// `hookledger reconcile --source <kind> --json`: success and output.
    fn reconcile(&self, dir: &tempfile::TempDir) -> (bool, String) {
        cli(
            dir.path(),
            &["reconcile", "--source", self.kind.source, "--json"],
        )
    }

    fn summary(&self, dir: &tempfile::TempDir) -> Value {
        let (ok, out) = self.reconcile(dir);
        assert!(ok, "{out}");
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
    }
}

async fn missed_events_are_recovered_once_across_pages(backend: Backend, case: &FeedCase) {
    let feed = case.start().await;
    let sources = case.sources(&feed.base, case.key);
    let app = app(backend, &sources).await;
    // 25 payments: three pages of the fake's 10; and a refund of the first.
    let payments: Vec<Value> = (0..25)
        .map(|n| feed.publish(case.payment(n, 1500)))
        .collect();
    feed.publish((case.kind.refund)(
        "evt_900000",
        "509562969",
        &payment_id(0),
        500,
    ));
    let dir = config_dir(&app, &sources);

    let first = case.summary(&dir);
    assert_eq!(first["source"], case.kind.source);
    assert_eq!(first["recovered"], 26, "{first}");
    assert_eq!(first["statuses"], json!({"applied": 26}), "{first}");
    assert_eq!(app.balance("acct_1", "USD").await, 25 * 1500 - 500);
    let pages = feed
        .asked()
        .iter()
        .filter(|a| a.target.contains(case.payment_type) || a.body.contains(case.payment_type))
        .count();
    assert_eq!(pages, 3, "{:?}", feed.asked());
    // The run's requests, paced as configured: their gaps are timed from
    // when each was sent, seen here as each arrives, so allow half a gap.
    let asked = feed.asked();
    let span = asked[asked.len() - 1].at - asked[0].at;
    let paced = Duration::from_millis(GAP_MS * (asked.len() as u64 - 1) - GAP_MS / 2);
    assert!(span >= paced, "{} requests in {span:?}", asked.len());

    // Again: the overlap is read again and nothing moves.
    let second = case.summary(&dir);
    assert_eq!(second["recovered"], 0, "{second}");
    assert_eq!(second["already_stored"], 26, "{second}");
    // A webhook that comes late is a duplicate of the recovered event.
    let late = case.kind.send(&app, &payments[7]).await;
    assert_eq!(late["duplicate"], true, "{late}");
    let stored = app
        .event(case.kind.source, &(case.kind.key_of)(&payments[7]))
        .await;
    assert_eq!(stored["origin"], "reconcile", "{stored}");
    assert_eq!(app.balance("acct_1", "USD").await, 25 * 1500 - 500);
    app.assert_invariants().await;
}

async fn a_429_is_waited_out_as_its_retry_after_says(backend: Backend, case: &FeedCase) {
    let feed = case.start().await;
    let sources = case.sources(&feed.base, case.key);
    let app = app(backend, &sources).await;
    feed.publish(case.payment(1, 700));
    feed.fault(Fault::RateLimited(3));
    let dir = config_dir(&app, &sources);
    let summary = case.summary(&dir);
    assert_eq!(summary["recovered"], 1, "{summary}");
    let asked: Vec<_> = feed.asked().into_iter().filter(|a| a.listing).collect();
    let waited = asked[1].at - asked[0].at;
    assert!(waited >= Duration::from_secs(3), "{waited:?}");
    assert_eq!(app.balance("acct_1", "USD").await, 700);
}

async fn a_refused_key_fails_the_command_naming_the_source(backend: Backend, case: &FeedCase) {
    let feed = case.start().await;
    let wrong = format!("{}_revoked", case.key);
    let sources = case.sources(&feed.base, &wrong);
    let app = app(backend, &sources).await;
    feed.publish(case.payment(1, 700));
    let dir = config_dir(&app, &sources);
    let (ok, out) = case.reconcile(&dir);
    assert!(!ok, "{out}");
    let said = format!(
        "source {}: the provider refused the API key",
        case.kind.source
    );
    assert!(out.contains(&said), "{out}");
    // And says the provider's own words.
    let (status, answer) = (case.dialect)().refused();
    assert!(out.contains(&format!("HTTP {status}: ")), "{out}");
    let words = [
        "/error/detail",
        "/errors/0/detail",
        "/error_description",
        "/errors",
    ]
    .iter()
    .find_map(|at| answer.pointer(at).and_then(Value::as_str))
    .unwrap();
    assert!(out.contains(words), "{out}");
    assert!(!out.contains(&wrong), "the key is never shown: {out}");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
}

async fn a_page_not_as_documented_moves_nothing(backend: Backend, case: &FeedCase) {
    let feed = case.start().await;
    let sources = case.sources(&feed.base, case.key);
    let app = app(backend, &sources).await;
    for n in 0..3 {
        feed.publish(case.payment(n, 700));
    }
    feed.fault(Fault::Page(json!({"data": "not a list", "events": 7})));
    let dir = config_dir(&app, &sources);
    let (ok, out) = case.reconcile(&dir);
    assert!(!ok, "{out}");
    assert!(out.contains("not a page of events"), "{out}");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    let events = app
        .admin_get(&format!("/admin/api/events?source={}", case.kind.source))
        .await;
    let events = json_with_status(events, reqwest::StatusCode::OK).await;
    assert_eq!(events["events"], json!([]), "{events}");
}

/// Shopify, object mode: an order paid only in part (a deposit) and then
/// refunded was never `orders/paid`; it is not credited, and its refund
/// waits for a payment that never came, held. A fully paid order refunded
/// and then fulfilled (its `updated_at` past the refund) is credited and
/// debited, the refund not stale.
async fn a_shopify_order_paid_in_part_is_not_credited(backend: Backend) {
    let case = &SHOPIFY;
    let feed = case.start().await;
    let sources = case.sources(&feed.base, case.key);
    let app = app(backend, &sources).await;
    let mut deposit = case.payment(1, 1500);
    deposit["financial_status"] = json!("partially_paid");
    deposit["total_outstanding"] = json!("12.00");
    feed.publish(deposit);
    feed.publish((case.kind.refund)("e_r1", "509562001", &payment_id(1), 300));
    feed.publish(case.payment(2, 2000));
    feed.publish((case.kind.refund)("e_r2", "509562002", &payment_id(2), 500));
    let dir = config_dir(&app, &sources);
    let summary = case.summary(&dir);
    assert_eq!(
        summary["statuses"],
        json!({"applied": 2, "unmatched": 1}),
        "{summary}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 2000 - 500);
    let held = app.event("shopify", "refund:509562001").await;
    assert_eq!(held["status"], "unmatched", "{held}");
}

both_backends!(a_shopify_order_paid_in_part_is_not_credited);

macro_rules! feed_cases {
    ($($module:ident: $case:ident),* $(,)?) => {$(
        mod $module {
            use super::*;

            async fn missed_events_are_recovered_once_across_pages(backend: Backend) {
                super::missed_events_are_recovered_once_across_pages(backend, &super::$case).await
            }
            async fn a_429_is_waited_out_as_its_retry_after_says(backend: Backend) {
                super::a_429_is_waited_out_as_its_retry_after_says(backend, &super::$case).await
            }
            async fn a_refused_key_fails_the_command_naming_the_source(backend: Backend) {
                super::a_refused_key_fails_the_command_naming_the_source(backend, &super::$case)
                    .await
            }
            async fn a_page_not_as_documented_moves_nothing(backend: Backend) {
                super::a_page_not_as_documented_moves_nothing(backend, &super::$case).await
            }

            both_backends!(
                missed_events_are_recovered_once_across_pages,
                a_429_is_waited_out_as_its_retry_after_says,
                a_refused_key_fails_the_command_naming_the_source,
                a_page_not_as_documented_moves_nothing,
            );
        }
    )*};
}

feed_cases!(paddle: PADDLE, paypal: PAYPAL, shopify: SHOPIFY, square: SQUARE);
