//! `GET /metrics`: the Prometheus exposition counts what the server did and
//! reads the held queue and the outbox from the database; label values are
//! config names, never request input; `metrics.token` closes it.

use std::collections::HashMap;
use std::time::Duration;

use chrono::TimeDelta;
use reqwest::StatusCode;

use crate::helpers::*;
use crate::outbox::{app_with, drained, http_destination};
use crate::receiver::{Answer, Receiver};

/// Every sample line as `name{labels}` -> value.
async fn scrape(app: &TestApp, token: Option<&str>) -> HashMap<String, f64> {
    scrape_url(&app.client, &app.url("/metrics"), token).await
}

/// The same from any hookledger process's `/metrics` (a relay's, say).
pub(crate) async fn scrape_url(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> HashMap<String, f64> {
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("`series value`");
            (series.to_owned(), value.parse().expect("a number"))
        })
        .collect()
}

pub(crate) fn value(samples: &HashMap<String, f64>, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("{series} missing from {samples:#?}"))
}

async fn counts_deliveries_failures_and_the_held_queue(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("evt_1", "cus_1", 1500)).await;
    app.send_ok(&credit("evt_1", "cus_1", 1500)).await;
    // Number 2 of a stream that starts at 1: parked behind the gap.
    app.send_to("ledger", &credit_seq("evt_w2", "cus_2", 10, 2))
        .await;
    let forged = app
        .deliver(
            "demo",
            "standard-webhooks",
            ROTATED_OUT_SECRET,
            &credit("evt_x", "cus_1", 1),
        )
        .await;
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
    // Request input never becomes a label: an unknown source is not one.
    let unknown = app
        .client
        .post(app.url("/webhooks/evil-label"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    app.clock.advance(TimeDelta::seconds(90));

    let samples = scrape(&app, None).await;
    let deliveries = |source: &str, outcome: &str| {
        value(
            &samples,
            &format!(r#"hookledger_deliveries_total{{source="{source}",outcome="{outcome}"}}"#),
        )
    };
    assert_eq!(deliveries("demo", "applied"), 1.0);
    assert_eq!(deliveries("demo", "duplicate"), 1.0);
    assert_eq!(deliveries("ledger", "waiting"), 1.0);
    assert_eq!(
        value(
            &samples,
            r#"hookledger_verification_failures_total{source="demo",reason="signature_mismatch"}"#
        ),
        1.0
    );
    assert_eq!(
        value(&samples, r#"hookledger_held_events{status="waiting"}"#),
        1.0
    );
    assert_eq!(
        value(&samples, r#"hookledger_held_events{status="stale"}"#),
        0.0
    );
    assert_eq!(
        value(
            &samples,
            r#"hookledger_held_oldest_age_seconds{status="waiting"}"#
        ),
        90.0
    );
    // Three requests to demo (the forged one too), three stored deliveries.
    assert_eq!(
        value(
            &samples,
            r#"hookledger_webhook_request_duration_seconds_count{source="demo"}"#
        ),
        3.0
    );
    assert_eq!(
        value(&samples, "hookledger_transaction_duration_seconds_count"),
        3.0
    );
    assert!(value(&samples, "hookledger_db_pool_max_connections") >= 1.0);
    assert!(
        samples.keys().all(|series| !series.contains("evil")),
        "request input became a label"
    );
}

async fn a_token_closes_the_endpoint(backend: Backend) {
    const TOKEN: &str = "metrics-token-0123456789";
    let app = TestApp::spawn_with(
        backend,
        Options {
            top_level: &format!("[metrics]\ntoken = \"{TOKEN}\""),
            ..Options::default()
        },
    )
    .await;
    for presented in [None, Some("metrics-token-wrong-000000"), Some(ADMIN_TOKEN)] {
        let mut request = app.client.get(app.url("/metrics"));
        if let Some(token) = presented {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{presented:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        // It names the token it takes: not the admin's.
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], "unauthorized");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("metrics.token"), "{message}");
        assert!(!message.contains("admin"), "{message}");
    }
    let samples = scrape(&app, Some(TOKEN)).await;
    assert!(samples.contains_key(r#"hookledger_held_events{status="waiting"}"#));
    assert_eq!(
        value(
            &samples,
            r#"hookledger_metrics_auth_refusals_total{outcome="failed"}"#
        ),
        3.0
    );
    // Guessing at /metrics gets throttled, on its own: the admin is not.
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let response = app
            .client
            .get(app.url("/metrics"))
            .bearer_auth("metrics-token-wrong-000000")
            .send()
            .await
            .unwrap();
        statuses.push(response.status());
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert_eq!(
        app.admin_get("/admin/api/check").await.status(),
        StatusCode::OK
    );
}

async fn the_outbox_is_counted_per_destination(backend: Backend) {
    let good = Receiver::start(&[], Answer::Status(204)).await;
    let bad = Receiver::start(&[], Answer::Status(500)).await;
    let destinations = [
        http_destination("billing", &good.url(), ""),
        http_destination("crm", &bad.url(), "max_attempts = 1"),
    ]
    .concat();
    let app = app_with(backend, &destinations).await;
    app.send_ok(&credit("evt_1", "cus_1", 1500)).await;
    app.send_ok(&credit("evt_2", "cus_1", 700)).await;
    drained(&app, "billing", Duration::from_secs(20)).await;
    drained(&app, "crm", Duration::from_secs(20)).await;

    // A relay counts just after its outcomes are recorded: wait for both.
    let counted = |samples: &HashMap<String, f64>| {
        [
            r#"hookledger_outbox_delivered_total{destination="billing"}"#,
            r#"hookledger_outbox_dead_total{destination="crm"}"#,
        ]
        .iter()
        .all(|series| samples.get(*series) == Some(&2.0))
    };
    let started = std::time::Instant::now();
    let mut samples = scrape(&app, None).await;
    while !counted(&samples) && started.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        samples = scrape(&app, None).await;
    }
    let of = |name: &str, destination: &str| {
        value(
            &samples,
            &format!(r#"{name}{{destination="{destination}"}}"#),
        )
    };
    assert_eq!(of("hookledger_outbox_delivered_total", "billing"), 2.0);
    assert_eq!(of("hookledger_outbox_dead_total", "crm"), 2.0);
    assert_eq!(of("hookledger_outbox_dead_letters", "crm"), 2.0);
    assert_eq!(of("hookledger_outbox_dead_letters", "billing"), 0.0);
    assert_eq!(of("hookledger_outbox_pending", "billing"), 0.0);
    assert_eq!(of("hookledger_outbox_delivered_last_hour", "billing"), 2.0);
    assert_eq!(of("hookledger_outbox_delivered_last_hour", "crm"), 0.0);
    assert_eq!(
        of("hookledger_outbox_oldest_pending_seconds", "billing"),
        0.0
    );
    assert_eq!(
        of("hookledger_outbox_delivery_duration_seconds_count", "crm"),
        2.0
    );
    // From posting to acknowledgement: the delivered ones only.
    assert_eq!(
        of("hookledger_outbox_delivery_lag_seconds_count", "billing"),
        2.0
    );
    assert!(
        !samples.contains_key(r#"hookledger_outbox_delivery_lag_seconds_count{destination="crm"}"#)
    );
    assert!(!samples.contains_key(r#"hookledger_outbox_delivered_total{destination="crm"}"#));
}

both_backends!(
    counts_deliveries_failures_and_the_held_queue,
    a_token_closes_the_endpoint,
    the_outbox_is_counted_per_destination
);
