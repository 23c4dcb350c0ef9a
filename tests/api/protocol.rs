//! HTTP as clients and load balancers use it: `HEAD` on every readable
//! path, `OPTIONS` with `Allow`, 405 with `Allow` for other methods; and the
//! protocol faults any client can cause (a malformed request head, a
//! signature header that is not ASCII) answered and counted exactly.

use reqwest::header::HeaderValue;
use reqwest::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{ADMIN_TOKEN, Backend, DEMO_SECRET, TestApp, assert_error, credit};

async fn request(app: &TestApp, method: Method, path: &str) -> reqwest::Response {
    app.client
        .request(method, app.url(path))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
}

async fn head_is_get_without_a_body(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for path in [
        "/healthz",
        "/readyz",
        "/admin",
        "/admin/api/metrics",
        "/admin/api/events",
    ] {
        let get = request(&app, Method::GET, path).await;
        let head = request(&app, Method::HEAD, path).await;
        assert_eq!(get.status(), StatusCode::OK, "GET {path}");
        assert_eq!(head.status(), StatusCode::OK, "HEAD {path}");
        assert_eq!(
            head.headers().get("content-type"),
            get.headers().get("content-type"),
            "HEAD {path}"
        );
        assert!(
            !get.bytes().await.unwrap().is_empty(),
            "GET {path} has a body"
        );
        assert!(
            head.bytes().await.unwrap().is_empty(),
            "HEAD {path} has none"
        );
    }
}

async fn options_and_other_methods_name_the_allowed_ones(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for (path, allow) in [
        ("/healthz", "GET, HEAD, OPTIONS"),
        ("/readyz", "GET, HEAD, OPTIONS"),
        ("/webhooks/demo", "POST, OPTIONS"),
        ("/admin/login", "GET, HEAD, POST, OPTIONS"),
        ("/admin/api/events", "GET, HEAD, OPTIONS"),
    ] {
        let options = request(&app, Method::OPTIONS, path).await;
        assert_eq!(options.status(), StatusCode::NO_CONTENT, "OPTIONS {path}");
        assert_eq!(options.headers()["allow"], allow, "OPTIONS {path}");
        for method in [Method::DELETE, Method::PUT, Method::PATCH] {
            let response = request(&app, method.clone(), path).await;
            assert_eq!(response.headers()["allow"], allow, "{method} {path}");
            let body = assert_error(
                response,
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
            )
            .await;
            assert_eq!(
                body["message"],
                format!("this path answers {allow} only"),
                "{method} {path}"
            );
        }
    }
    let unknown = request(&app, Method::OPTIONS, "/nowhere").await;
    assert_error(unknown, StatusCode::NOT_FOUND, "not_found").await;
    let get_webhook = request(&app, Method::GET, "/webhooks/demo").await;
    assert_error(
        get_webhook,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await;
    assert!(app.events().await.is_empty());
}

async fn a_signature_header_that_is_not_ascii_is_malformed_not_missing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let signed = hookledger::cli::signed_sample(
        "standard-webhooks",
        &hookledger::secret::Secret::new(DEMO_SECRET),
        &credit("msg_1", "acct_1", 1500),
    )
    .unwrap();
    let mut request = app
        .client
        .post(app.url("/webhooks/demo"))
        .body(signed.body.clone());
    for (name, value) in &signed.headers {
        if *name == "webhook-signature" {
            let mut bytes = value.as_bytes().to_vec();
            bytes.extend_from_slice(b" v1,\xe9t\xe9");
            request = request.header(*name, HeaderValue::from_bytes(&bytes).unwrap());
        } else {
            request = request.header(*name, value);
        }
    }
    let body = assert_error(
        request.send().await.unwrap(),
        StatusCode::UNAUTHORIZED,
        "malformed_signature_header",
    )
    .await;
    assert_eq!(
        body["message"],
        "webhook-signature header is malformed: not visible ASCII"
    );
    assert!(app.events().await.is_empty());
}

/// Sends raw bytes on a new connection; returns the status line answered.
async fn raw_status_line(app: &TestApp, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(app.address.trim_start_matches("http://"))
        .await
        .unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

async fn malformed_requests_are_answered_400_and_counted(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for bytes in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: x\r\nX: \x01\r\n\r\n",
        b"POST /webhooks/demo HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
    ] {
        assert_eq!(
            raw_status_line(&app, bytes).await,
            "HTTP/1.1 400 Bad Request"
        );
    }
    // Counted when the connection's task ends, just after the client saw
    // the close: wait for the count (a bounded wait, not a timing guess).
    let mut counted = serde_json::Value::Null;
    for _ in 0..100 {
        let metrics = crate::helpers::json_with_status(
            app.admin_get("/admin/api/metrics").await,
            StatusCode::OK,
        )
        .await;
        counted = metrics["connections"]["malformed_request"].clone();
        if counted == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(counted, 3);
    assert!(app.events().await.is_empty());
}

both_backends!(
    head_is_get_without_a_body,
    options_and_other_methods_name_the_allowed_ones,
    a_signature_header_that_is_not_ascii_is_malformed_not_missing,
    malformed_requests_are_answered_400_and_counted,
);
