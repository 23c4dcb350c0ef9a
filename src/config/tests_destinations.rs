//! The keys every destination has, read by the config: a URL's checks.

use super::*;

#[test]
fn urls_with_credentials_or_another_scheme_are_refused() {
    let key = "destinations[x]";
    assert!(plain_url("https://billing.internal/hooks", &["https", "http"], key).is_ok());
    assert!(plain_url("https://u:p@billing.internal/", &["https", "http"], key).is_err());
    assert!(plain_url("ftp://billing.internal/", &["https", "http"], key).is_err());
    assert!(plain_url("http:///path", &["https", "http"], key).is_err());
    assert!(plain_url("nats://127.0.0.1:4222", &["nats", "tls"], key).is_ok());
}
