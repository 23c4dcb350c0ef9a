//! "Why are my webhooks failing?": the latest verification failures per
//! source, with the reason a person reads, the header names, the body's
//! size and hash, never the body; at most 1,000 kept per source.

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;

use crate::browser::{login, page};
use crate::helpers::*;

/// A body no page or answer may echo.
const MARKER: &str = "body-marker-7f3a";

fn marked(event_id: &str) -> hookledger::providers::Sample {
    credit(event_id, MARKER, 1500)
}

async fn failures_say_why_and_never_show_the_body(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let wrong = app
        .deliver(
            "demo",
            "standard-webhooks",
            ROTATED_OUT_SECRET,
            &marked("evt_1"),
        )
        .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let old = credit_at("evt_2", MARKER, 1500, now().timestamp() - 412);
    let stale = app
        .deliver("demo", "standard-webhooks", DEMO_SECRET, &old)
        .await;
    assert_eq!(stale.status(), StatusCode::UNAUTHORIZED);
    let unsigned = app
        .client
        .post(app.url("/webhooks/stripe"))
        .header("x-unrelated", "1")
        .body(MARKER)
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);

    let cookie = login(&app).await;
    let html = page(&app, "/admin/failures", &cookie).await;
    for reason in [
        "no signature matched any of the 2 configured secret(s)",
        "signed timestamp is 412 s from now, outside the tolerance of 300 s",
        "Stripe-Signature header is missing",
    ] {
        assert!(html.contains(reason), "{reason}: {html}");
    }
    assert!(html.contains("webhook-signature"), "header names: {html}");
    assert!(html.contains("x-unrelated"), "header names: {html}");
    assert!(html.contains(&hookledger::receive::sha256_hex(MARKER.as_bytes())));
    assert!(!html.contains(MARKER), "a body was shown: {html}");
    assert!(!html.contains(DEMO_SECRET) && !html.contains(STRIPE_SECRET));

    let api: Value = json_with_status(
        app.admin_get("/admin/api/failures?source=demo").await,
        StatusCode::OK,
    )
    .await;
    let demo = &api["sources"][0];
    assert_eq!(demo["source"], "demo");
    assert_eq!(demo["kept"], 2);
    let newest = &demo["failures"][0];
    assert_eq!(newest["code"], "timestamp_outside_tolerance");
    assert_eq!(newest["skew_secs"], 412);
    assert_eq!(
        newest["signed_at"].as_str().unwrap()[..19],
        (now() - chrono::TimeDelta::seconds(412)).to_rfc3339()[..19]
    );
    let unknown = app.admin_get("/admin/api/failures?source=nope").await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}

async fn a_flood_keeps_the_newest_thousand(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for chunk in (0..1005).collect::<Vec<_>>().chunks(100) {
        join_all(chunk.iter().map(|n| {
            let app = &app;
            async move {
                let response = app
                    .client
                    .post(app.url("/webhooks/demo"))
                    .body(vec![b'x'; *n])
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            }
        }))
        .await;
    }
    let api: Value = json_with_status(
        app.admin_get("/admin/api/failures?source=demo&limit=1000")
            .await,
        StatusCode::OK,
    )
    .await;
    let demo = &api["sources"][0];
    assert_eq!(demo["kept"], 1000);
    let sizes: Vec<u64> = demo["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["body_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes.len(), 1000);
    // Chunks arrive in order; within one, any order. The first chunk's
    // oldest five are the ones evicted, whichever they were: 1000 distinct
    // sizes remain, and every size from the second chunk on is there.
    let mut distinct = sizes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 1000);
    assert!((100..1005).all(|n| distinct.binary_search(&n).is_ok()));
    // Nothing of it reached the database.
    assert!(app.events().await.is_empty());
}

both_backends!(
    failures_say_why_and_never_show_the_body,
    a_flood_keeps_the_newest_thousand,
);
