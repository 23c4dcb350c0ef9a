//! Guessing the admin token: after five wrong tokens from one address, that
//! address waits (1 s, then 2 s, 4 s, ...) and is answered 429 with
//! `Retry-After`, right token or not; another address signs in meanwhile.
//! Bearer and form share the count. The test clock stands in for the wait.

use chrono::TimeDelta;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use crate::helpers::{ADMIN_TOKEN, Backend, Options, TestApp, json_with_status};

const ATTACKER: &str = "127.0.0.4";
const OPERATOR: &str = "127.0.0.5";

fn client_from(local: &str) -> Client {
    hookledger::tls::client_builder()
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

async fn bearer_via(app: &TestApp, client: &Client, forwarded_for: &str, token: &str) -> Response {
    client
        .get(app.url("/admin/api/events"))
        .header("x-forwarded-for", forwarded_for)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// Behind a proxy every request comes from the proxy's address; the client
/// it names is what is throttled, so the operator behind the same proxy is
/// not locked out, and an entry the attacker wrote itself does not count.
async fn behind_a_trusted_proxy_the_forwarded_client_is_throttled(backend: Backend) {
    let options = Options {
        top_level: "[limits]\ntrusted_proxies = [\"127.0.0.4\"]\n",
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let proxy = client_from(ATTACKER);
    for n in 0..5 {
        let wrong = bearer_via(&app, &proxy, "203.0.113.9", &format!("guess-{n}")).await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    }
    for forwarded in [
        "203.0.113.9",
        "198.51.100.7, 203.0.113.9",
        "203.0.113.9, 127.0.0.4",
    ] {
        let refused = bearer_via(&app, &proxy, forwarded, ADMIN_TOKEN).await;
        assert_eq!(
            refused.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{forwarded}"
        );
    }
    let operator = bearer_via(&app, &proxy, "198.51.100.7", ADMIN_TOKEN).await;
    assert_eq!(operator.status(), StatusCode::OK);
}

/// Without a trusted proxy, `X-Forwarded-For` is the client's own claim and
/// never read: changing it does not escape the wait.
async fn a_forwarded_header_from_an_untrusted_peer_is_ignored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let attacker = client_from(ATTACKER);
    for n in 0..5 {
        let claimed = format!("198.51.100.{n}");
        let wrong = bearer_via(&app, &attacker, &claimed, "guess").await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    }
    let refused = bearer_via(&app, &attacker, "198.51.100.99", ADMIN_TOKEN).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
}

both_backends!(
    repeated_wrong_tokens_make_that_address_wait,
    a_right_token_clears_the_count,
    behind_a_trusted_proxy_the_forwarded_client_is_throttled,
    a_forwarded_header_from_an_untrusted_peer_is_ignored,
);
