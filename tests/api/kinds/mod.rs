//! The scenarios every source kind must pass end to end, through HTTP on
//! both backends, with the provider's own payloads (`tests/fixtures/<kind>`)
//! signed exactly as the provider signs: a credit once however often it is
//! delivered, a tampered body refused, a rotated secret accepted, a refund
//! matched to its payment, a refund before its payment, an excess refund.
//! Each kind's file gives a [`Kind`] and adds its own trap.

pub mod adyen;
pub mod checkout;
pub mod coinbase;
pub mod generic_hmac;
pub mod lemonsqueezy;
pub mod mollie;
pub mod paddle;
pub mod paypal;
pub mod paystack;
pub mod polar;
pub mod razorpay;
pub mod shopify;
pub mod square;

use hookledger::cli::{SignedRequest, sign_body_with};
use hookledger::providers::KindSettings;
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{Backend, Options, TestApp, assert_error, json_with_status, now};

/// How one kind is configured and what its events look like.
pub struct Kind {
    /// The source name in [`Kind::config`].
    pub source: &'static str,
    pub kind: &'static str,
    /// The secret a sender signs with now, and the retired one still
    /// configured (rotation).
    pub secret: &'static str,
    pub old_secret: &'static str,
    /// The `[[sources]]` block, listing both secrets.
    pub config: &'static str,
    /// A credit of `amount` minor units (USD) to `acct_1`, as payment
    /// `payment`, with the provider's event id `event_id`.
    pub payment: fn(event_id: &str, payment: &str, amount: i64) -> Value,
    /// A refund `refund_id` of `amount` minor units of payment `payment`
    /// (never called for a kind declared `no_refunds`).
    pub refund: fn(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value,
    /// The intent key a body is stored under.
    pub key_of: fn(&Value) -> String,
}

impl Kind {
    pub async fn spawn(&self, backend: Backend) -> TestApp {
        let options = Options {
            extra_sources: self.config,
            ..Options::default()
        };
        TestApp::spawn_with(backend, options).await
    }

    /// The source's settings as hookledger reads them from
    /// [`Kind::config`] (Square's URL, PayPal's webhook id, a generic
    /// scheme), so the test signs exactly what the source verifies.
    pub fn settings(&self) -> KindSettings {
        let options = Options {
            extra_sources: self.config,
            ..Options::default()
        };
        let text = crate::helpers::base_config("sqlite://unused.db", &options);
        let config = hookledger::config::from_toml(&text, &|_| None).expect("kind config is valid");
        config
            .sources
            .into_iter()
            .find(|s| s.name.as_str() == self.source)
            .map(|s| s.settings)
            .expect("the kind's source is configured")
    }

    /// `body` signed with `secret` at the test clock's time; `id` is the
    /// event id for kinds that sign one in a header.
    pub fn sign_with(&self, secret: &str, body: &Value, id: &str) -> SignedRequest {
        let settings = self.settings();
        sign_body_with(
            self.kind,
            &Secret::new(secret),
            body.to_string().into_bytes(),
            id,
            now().timestamp(),
            &settings,
        )
        .expect("body signs")
    }

    pub fn sign(&self, body: &Value) -> SignedRequest {
        self.sign_with(self.secret, body, &header_id(body))
    }

    /// Posts a signed request asking for JSON by name, so kinds with an
    /// acknowledgement of their own (Adyen) say what happened too.
    pub async fn post(&self, app: &TestApp, signed: &SignedRequest) -> reqwest::Response {
        let mut request = app
            .client
            .post(app.url(&format!("/webhooks/{}", self.source)))
            .header("accept", "application/json")
            .body(signed.body.clone());
        for (name, value) in &signed.headers {
            request = request.header(*name, value);
        }
        request.send().await.unwrap()
    }

    /// Delivers `body` signed, expecting 200; the JSON answer.
    pub async fn send(&self, app: &TestApp, body: &Value) -> Value {
        json_with_status(self.post(app, &self.sign(body)).await, StatusCode::OK).await
    }
}

/// An id for kinds that sign one in a header (Standard Webhooks, Polar):
/// derived from the body, so a redelivery carries the same one.
pub fn header_id(body: &Value) -> String {
    let digest = hookledger::receive::sha256_hex(body.to_string().as_bytes());
    format!("msg_{}", &digest[..24])
}

/// A secret of the same form that is not configured: one digit in the
/// middle changed (a digit is valid in hex, base64 and plain secrets alike,
/// and the middle avoids base64's padding bits).
fn stranger(secret: &str) -> String {
    if secret.contains("BEGIN PRIVATE KEY") {
        // A signing key (PayPal): another key no source trusts.
        return include_str!("../../fixtures/paypal/stranger-key.pem").to_owned();
    }
    let mut chars: Vec<char> = secret.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == '1' { '2' } else { '1' };
    chars.into_iter().collect()
}

pub async fn a_credit_applies_once_however_often_it_is_delivered(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    let body = (kind.payment)("e1", "pay_1", 1500);
    let first = kind.send(&app, &body).await;
    assert_eq!(
        (first["status"].as_str(), first["duplicate"].as_bool()),
        (Some("applied"), Some(false)),
        "{first}"
    );
    assert_eq!(first["event_id"], (kind.key_of)(&body));
    for _ in 0..2 {
        let again = kind.send(&app, &body).await;
        assert_eq!(again["duplicate"], true, "{again}");
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

pub async fn a_tampered_body_or_unknown_secret_is_refused(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    let body = (kind.payment)("e1", "pay_1", 1500);
    let mut request = kind.sign(&body);
    let text = String::from_utf8(request.body.clone()).unwrap();
    // The amount: signed by every kind (Adyen signs only eight fields), as
    // minor units or a decimal.
    let tampered = ["1500", "15.00"]
        .iter()
        .find(|amount| text.contains(*amount))
        .map(|amount| text.replacen(amount, &amount.replace('1', "9"), 1))
        .expect("the body states the amount 1500 or 15.00");
    request.body = tampered.into_bytes();
    let response = kind.post(&app, &request).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let stranger = kind.sign_with(&stranger(kind.secret), &body, &header_id(&body));
    let body401 =
        json_with_status(kind.post(&app, &stranger).await, StatusCode::UNAUTHORIZED).await;
    assert!(body401["error"].as_str().is_some(), "{body401}");
    assert!(app.events().await.is_empty(), "nothing stored");
    app.assert_invariants().await;
}

pub async fn a_retired_secret_still_configured_verifies(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    let body = (kind.payment)("e1", "pay_1", 1500);
    let request = kind.sign_with(kind.old_secret, &body, &header_id(&body));
    let answer = json_with_status(kind.post(&app, &request).await, StatusCode::OK).await;
    assert_eq!(answer["status"], "applied");
    app.assert_invariants().await;
}

pub async fn a_refund_is_matched_to_its_payment(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    kind.send(&app, &(kind.payment)("e1", "pay_1", 1500)).await;
    let refund = (kind.refund)("e2", "rf_1", "pay_1", 500);
    let answer = kind.send(&app, &refund).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    assert_eq!(answer["event_id"], (kind.key_of)(&refund));
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    // The same refund again: no second debit.
    assert_eq!(kind.send(&app, &refund).await["duplicate"], true);
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

pub async fn a_refund_before_its_payment_waits_for_it(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    let early = kind
        .send(&app, &(kind.refund)("e2", "rf_1", "pay_1", 500))
        .await;
    assert_eq!(early["status"], "unmatched", "{early}");
    let paid = kind.send(&app, &(kind.payment)("e1", "pay_1", 1500)).await;
    assert_eq!(
        (paid["status"].as_str(), paid["released"].as_u64()),
        (Some("applied"), Some(1)),
        "{paid}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

pub async fn a_refund_beyond_the_payment_is_rejected(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    kind.send(&app, &(kind.payment)("e1", "pay_1", 1500)).await;
    kind.send(&app, &(kind.refund)("e2", "rf_1", "pay_1", 1000))
        .await;
    let excess = (kind.refund)("e3", "rf_2", "pay_1", 600);
    let answer = kind.send(&app, &excess).await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    let stored = app.event(kind.source, &(kind.key_of)(&excess)).await;
    let reason = stored["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("refund of USD 6.00 exceeds what payment pay_1 has left"),
        "{reason}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 500);
    app.assert_invariants().await;
}

/// A body signed for `kind` answered 401 with `code`.
pub async fn assert_refused(app: &TestApp, kind: &Kind, request: &SignedRequest, code: &str) {
    assert_error(
        kind.post(app, request).await,
        StatusCode::UNAUTHORIZED,
        code,
    )
    .await;
}

/// Stamps the shared scenarios for one kind's [`Kind`] (and the kind's own
/// extra scenarios) into `sqlite::` and `postgres::` tests. A kind with no
/// refund event at all (Coinbase Commerce) says `no_refunds`.
#[macro_export]
macro_rules! kind_scenarios {
    ($kind:expr, no_refunds; $($extra:ident),* $(,)?) => {
        async fn a_credit_applies_once_however_often_it_is_delivered(backend: $crate::backend::Backend) {
            $crate::kinds::a_credit_applies_once_however_often_it_is_delivered(backend, &$kind).await;
        }
        async fn a_tampered_body_or_unknown_secret_is_refused(backend: $crate::backend::Backend) {
            $crate::kinds::a_tampered_body_or_unknown_secret_is_refused(backend, &$kind).await;
        }
        async fn a_retired_secret_still_configured_verifies(backend: $crate::backend::Backend) {
            $crate::kinds::a_retired_secret_still_configured_verifies(backend, &$kind).await;
        }
        both_backends!(
            a_credit_applies_once_however_often_it_is_delivered,
            a_tampered_body_or_unknown_secret_is_refused,
            a_retired_secret_still_configured_verifies,
            $($extra),*
        );
    };
    ($kind:expr; $($extra:ident),* $(,)?) => {
        async fn a_credit_applies_once_however_often_it_is_delivered(backend: $crate::backend::Backend) {
            $crate::kinds::a_credit_applies_once_however_often_it_is_delivered(backend, &$kind).await;
        }
        async fn a_tampered_body_or_unknown_secret_is_refused(backend: $crate::backend::Backend) {
            $crate::kinds::a_tampered_body_or_unknown_secret_is_refused(backend, &$kind).await;
        }
        async fn a_retired_secret_still_configured_verifies(backend: $crate::backend::Backend) {
            $crate::kinds::a_retired_secret_still_configured_verifies(backend, &$kind).await;
        }
        async fn a_refund_is_matched_to_its_payment(backend: $crate::backend::Backend) {
            $crate::kinds::a_refund_is_matched_to_its_payment(backend, &$kind).await;
        }
        async fn a_refund_before_its_payment_waits_for_it(backend: $crate::backend::Backend) {
            $crate::kinds::a_refund_before_its_payment_waits_for_it(backend, &$kind).await;
        }
        async fn a_refund_beyond_the_payment_is_rejected(backend: $crate::backend::Backend) {
            $crate::kinds::a_refund_beyond_the_payment_is_rejected(backend, &$kind).await;
        }
        both_backends!(
            a_credit_applies_once_however_often_it_is_delivered,
            a_tampered_body_or_unknown_secret_is_refused,
            a_retired_secret_still_configured_verifies,
            a_refund_is_matched_to_its_payment,
            a_refund_before_its_payment_waits_for_it,
            a_refund_beyond_the_payment_is_rejected,
            $($extra),*
        );
    };
}
