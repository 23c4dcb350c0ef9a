//! Guessing the admin token: after five wrong tokens from one address, that
//! address waits (1 s, then 2 s, 4 s, ...) and is answered 429 with
//! `Retry-After`, right token or not; another address signs in meanwhile.
//! Bearer and form share the count. The test clock stands in for the wait.

use chrono::TimeDelta;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use crate::helpers::{ADMIN_TOKEN, Backend, TestApp, json_with_status};

const ATTACKER: &str = "127.0.0.4";
const OPERATOR: &str = "127.0.0.5";

fn client_from(local: &str) -> Client {
    Client::builder()
        .local_address(Some(local.parse().unwrap()))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn bearer(app: &TestApp, client: &Client, token: &str) -> Response {
    client
        .get(app.url("/admin/api/events"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

async fn form(app: &TestApp, client: &Client, token: &str) -> Response {
    client
        .post(app.url("/admin/login"))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap()
}

fn retry_after(response: &Response) -> Option<&str> {
    response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
}

async fn sign_in_counters(app: &TestApp) -> Value {
    let metrics = json_with_status(app.admin_get("/admin/api/metrics").await, StatusCode::OK).await;
    metrics["sign_in"].clone()
}

async fn repeated_wrong_tokens_make_that_address_wait(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let attacker = client_from(ATTACKER);
    for n in 0..5 {
        let wrong = if n % 2 == 0 {
            bearer(&app, &attacker, &format!("guess-{n}")).await
        } else {
            form(&app, &attacker, &format!("guess-{n}")).await
        };
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED, "guess {n}");
    }
    // Even the right token is not compared while the address waits.
    let refused = bearer(&app, &attacker, ADMIN_TOKEN).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after(&refused), Some("1"));
    let body = json_with_status(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(body["error"], "too_many_attempts");
    let page = form(&app, &attacker, ADMIN_TOKEN).await;
    assert_eq!(page.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("Too many failed sign-ins")
    );

    // The operator elsewhere is not locked out.
    let operator = client_from(OPERATOR);
    assert_eq!(
        bearer(&app, &operator, ADMIN_TOKEN).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        form(&app, &operator, ADMIN_TOKEN).await.status(),
        StatusCode::SEE_OTHER
    );

    // After the wait, one more wrong guess costs twice as long.
    app.clock.advance(TimeDelta::seconds(1));
    let wrong = bearer(&app, &attacker, "guess-6").await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let refused = bearer(&app, &attacker, ADMIN_TOKEN).await;
    assert_eq!(retry_after(&refused), Some("2"));
    app.clock.advance(TimeDelta::seconds(2));
    assert_eq!(
        bearer(&app, &attacker, ADMIN_TOKEN).await.status(),
        StatusCode::OK
    );

    let counters = sign_in_counters(&app).await;
    assert_eq!(
        (counters["failed"].as_u64(), counters["throttled"].as_u64()),
        (Some(6), Some(3))
    );
}

async fn a_right_token_clears_the_count(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let client = client_from(ATTACKER);
    // Four typos and a right token, twice: without the reset, the second
    // round's first typo would be the fifth failure and the next one a 429.
    for _ in 0..2 {
        for _ in 0..4 {
            let typo = bearer(&app, &client, "typo").await;
            assert_eq!(typo.status(), StatusCode::UNAUTHORIZED);
        }
        let right = bearer(&app, &client, ADMIN_TOKEN).await;
        assert_eq!(right.status(), StatusCode::OK);
    }
}

both_backends!(
    repeated_wrong_tokens_make_that_address_wait,
    a_right_token_clears_the_count,
);
