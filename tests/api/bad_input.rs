//! Bad input: each gets its documented status code and a clear message, and
//! nothing is written (checked through the admin API and the invariants).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hookledger::cli::sign_body;
use hookledger::providers::Sample;
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{
    Backend, DEMO_OLD_SECRET, DEMO_SECRET, Options, ROTATED_OUT_SECRET, TestApp, assert_error,
    credit, json_with_status, now,
};

/// Nothing at all was stored, and the verification failure was counted.
async fn assert_nothing_stored(app: &TestApp) {
    assert!(
        app.events().await.is_empty(),
        "events were stored: {:?}",
        app.events().await
    );
    app.assert_invariants().await;
}

async fn verification_failures(app: &TestApp) -> Value {
    let metrics = json_with_status(app.admin_get("/admin/api/metrics").await, StatusCode::OK).await;
    metrics["verification_failures"].clone()
}

fn signed(sample: &Sample, secret: &str) -> hookledger::cli::SignedRequest {
    hookledger::cli::signed_sample("standard-webhooks", &Secret::new(secret), sample).unwrap()
}

fn header<'a>(request: &'a hookledger::cli::SignedRequest, name: &str) -> &'a str {
    &request.headers.iter().find(|(n, _)| *n == name).unwrap().1
}

fn replace_header(request: &mut hookledger::cli::SignedRequest, name: &str, value: Option<&str>) {
    request.headers.retain(|(n, _)| *n != name);
    if let Some(value) = value {
        let name: &'static str = match name {
            "webhook-signature" => "webhook-signature",
            "webhook-timestamp" => "webhook-timestamp",
            _ => unreachable!("not a header these tests change"),
        };
        request.headers.push((name, value.to_owned()));
    }
}

async fn tampered_bodies_and_signatures_are_401(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let mut request = signed(&credit("msg_1", "acct_1", 1500), DEMO_SECRET);
    let original_body = request.body.clone();
    request.body = String::from_utf8(original_body.clone())
        .unwrap()
        .replace("1500", "9500")
        .into_bytes();
    assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::UNAUTHORIZED,
        "signature_mismatch",
    )
    .await;

    request.body = original_body;
    let signature = header(&request, "webhook-signature").to_owned();
    let mut tag = STANDARD
        .decode(signature.strip_prefix("v1,").unwrap())
        .unwrap();
    tag[0] ^= 1;
    let flipped = format!("v1,{}", STANDARD.encode(tag));
    replace_header(&mut request, "webhook-signature", Some(&flipped));
    assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::UNAUTHORIZED,
        "signature_mismatch",
    )
    .await;

    replace_header(&mut request, "webhook-signature", None);
    let body = assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::UNAUTHORIZED,
        "missing_signature_header",
    )
    .await;
    assert_eq!(body["message"], "webhook-signature header is missing");

    replace_header(&mut request, "webhook-signature", Some("}}garbage{{"));
    assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::UNAUTHORIZED,
        "malformed_signature_header",
    )
    .await;
    replace_header(
        &mut request,
        "webhook-signature",
        Some("v1,%%%not-base64%%%"),
    );
    assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::UNAUTHORIZED,
        "signature_mismatch",
    )
    .await;

    assert_nothing_stored(&app).await;
    let failures = verification_failures(&app).await;
    assert_eq!(failures["demo"]["signature_mismatch"], 3);
    assert_eq!(failures["demo"]["missing_signature_header"], 1);
    assert_eq!(failures["demo"]["malformed_signature_header"], 1);
}

async fn secret_rotation_accepts_any_configured_secret_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let answer = json_with_status(
        app.post_signed("demo", &signed(&credit("msg_1", "a", 1), DEMO_OLD_SECRET))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        answer["status"], "applied",
        "the previous secret is still configured"
    );
    let rotated_out = signed(&credit("msg_2", "a", 1), ROTATED_OUT_SECRET);
    assert_error(
        app.post_signed("demo", &rotated_out).await,
        StatusCode::UNAUTHORIZED,
        "signature_mismatch",
    )
    .await;
    assert_eq!(app.events().await.len(), 1);
    app.assert_invariants().await;
}

async fn timestamps_outside_the_tolerance_are_401(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for skew in [-600, 600] {
        let sample = Sample {
            timestamp: now().timestamp() + skew,
            ..credit("msg_1", "acct_1", 1500)
        };
        let body = assert_error(
            app.post_signed("demo", &signed(&sample, DEMO_SECRET)).await,
            StatusCode::UNAUTHORIZED,
            "timestamp_outside_tolerance",
        )
        .await;
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("tolerance of 300 s"),
            "{body}"
        );
    }
    let mut request = signed(&credit("msg_1", "acct_1", 1500), DEMO_SECRET);
    replace_header(&mut request, "webhook-timestamp", Some("yesterday"));
    assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::UNAUTHORIZED,
        "malformed_signature_header",
    )
    .await;
    // Within the window is fine.
    let sample = Sample {
        timestamp: now().timestamp() - 299,
        ..credit("msg_1", "acct_1", 1500)
    };
    json_with_status(
        app.post_signed("demo", &signed(&sample, DEMO_SECRET)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(app.events().await.len(), 1);
    app.assert_invariants().await;
}

async fn oversized_bodies_are_413(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let huge = vec![b' '; 10 * 1024 * 1024];
    let request = sign_body(
        "standard-webhooks",
        &Secret::new(DEMO_SECRET),
        huge,
        "msg_1",
        now().timestamp(),
    )
    .unwrap();
    assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
    )
    .await;
    // Just over the limit, without a Content-Length to trust: a chunked body.
    let just_over = vec![b' '; 256 * 1024 + 1];
    let stream = futures::stream::iter(vec![Ok::<_, std::io::Error>(just_over)]);
    let response = app
        .client
        .post(app.url("/webhooks/demo"))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    assert_error(response, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large").await;
    assert_nothing_stored(&app).await;
}

/// Amounts and currencies that cannot be applied: 200, `rejected`, held,
/// with a reason naming the problem, and no balance change.
async fn bad_amounts_and_currencies_are_rejected_and_held(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let cases: [(&str, Value, Value, &str); 6] = [
        (
            "msg_float",
            serde_json::json!(15.0),
            "USD".into(),
            "amount must be a JSON integer of minor units, not a fractional number",
        ),
        (
            "msg_string",
            "1500".into(),
            "USD".into(),
            "amount must be a JSON integer of minor units, not a string",
        ),
        (
            "msg_negative",
            serde_json::json!(-5),
            "USD".into(),
            "amount must be positive, got -5",
        ),
        (
            "msg_zero",
            serde_json::json!(0),
            "USD".into(),
            "amount must be positive, got 0",
        ),
        (
            "msg_space",
            serde_json::json!(100),
            "usd ".into(),
            "currency \"usd \" is not a three-letter ISO 4217 code",
        ),
        (
            "msg_four",
            serde_json::json!(100),
            "XXXX".into(),
            "currency \"XXXX\" is not a three-letter ISO 4217 code",
        ),
    ];
    for (event_id, amount, currency, reason) in cases {
        let body = serde_json::json!({
            "type": "balance.credit",
            "data": {"account_id": "acct_1", "amount_minor": amount, "currency": currency},
        });
        let response = app
            .deliver_body("demo", event_id, body.to_string().as_bytes())
            .await;
        let answer = json_with_status(response, StatusCode::OK).await;
        assert_eq!(answer["status"], "rejected", "{event_id}");
        assert_eq!(app.event("demo", event_id).await["reason"], reason);
    }
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    let held = json_with_status(
        app.admin_get("/admin/api/events?status=rejected").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(held["events"].as_array().unwrap().len(), 6);
    app.assert_invariants().await;
}

async fn unknown_sources_are_404(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let request = signed(&credit("msg_1", "acct_1", 1), DEMO_SECRET);
    let body = assert_error(
        app.post_signed("nope", &request).await,
        StatusCode::NOT_FOUND,
        "unknown_source",
    )
    .await;
    assert_eq!(body["message"], "no source named \"nope\" is configured");
    // A huge unknown name is echoed as a bounded prefix only.
    let huge = "x".repeat(60_000);
    let body = assert_error(
        app.post_signed(&huge, &request).await,
        StatusCode::NOT_FOUND,
        "unknown_source",
    )
    .await;
    let echoed = body["message"].as_str().unwrap();
    assert_eq!(
        echoed,
        format!("no source named {:?} is configured", "x".repeat(64))
    );
    assert_nothing_stored(&app).await;
}

async fn a_smaller_body_limit_is_honoured(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Options {
            top_level: "max_body_bytes = 64",
            ..Default::default()
        },
    )
    .await;
    let request = signed(&credit("msg_1", "acct_1", 1), DEMO_SECRET);
    assert!(request.body.len() > 64);
    assert_error(
        app.post_signed("demo", &request).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
    )
    .await;
    assert_nothing_stored(&app).await;
}

both_backends!(
    tampered_bodies_and_signatures_are_401,
    secret_rotation_accepts_any_configured_secret_only,
    timestamps_outside_the_tolerance_are_401,
    oversized_bodies_are_413,
    bad_amounts_and_currencies_are_rejected_and_held,
    unknown_sources_are_404,
    a_smaller_body_limit_is_honoured,
);
