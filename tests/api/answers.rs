//! Reading answers in tests: the status asserted with the body shown on
//! failure, and query values encoded.

use reqwest::{Response, StatusCode};
use serde_json::Value;

/// Asserts the status and returns the JSON body, showing the body on failure.
pub async fn json_with_status(response: Response, expected: StatusCode) -> Value {
    let status = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(status, expected, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"))
}

/// Asserts an error answer: status and stable error code.
pub async fn assert_error(response: Response, expected: StatusCode, code: &str) -> Value {
    let body = json_with_status(response, expected).await;
    assert_eq!(body["error"], code, "unexpected error body: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "no message: {body}"
    );
    body
}

/// Every byte but RFC 3986's unreserved characters percent-encoded.
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
