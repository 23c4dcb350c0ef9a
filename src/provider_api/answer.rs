//! What a provider's answer says, read safely: its body to a bound, its
//! `Retry-After`, its `Link` header's next page, and its own error
//! message with every secret redacted; the backoff between tries.

use std::time::Duration;

use serde_json::Value;

use super::error::ApiError;

/// The largest answer read: a page of 100 Stripe events is well under
/// 1 MiB; a page of 250 Shopify orders, each with its lines, addresses and
/// refunds, can come near 16.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// The path and query of the `rel="next"` entry of a `Link` header
/// (RFC 8288: `<url>; rel="next", <url>; rel="previous"`; relation names
/// are case-insensitive and a `rel` may list several). A header that
/// speaks of a next page this cannot read is an error, never a last page.
pub(super) fn next_link(
    value: Option<&reqwest::header::HeaderValue>,
) -> Result<Option<String>, ApiError> {
    let Some(value) = value else { return Ok(None) };
    let unreadable = || ApiError::Malformed("a Link header whose next page cannot be read".into());
    let text = value.to_str().map_err(|_| unreadable())?;
    let found = text.split(',').find_map(|entry| {
        let (target, params) = entry.split_once(';')?;
        let next = params.split(';').any(|param| {
            let Some((name, rels)) = param.split_once('=') else {
                return false;
            };
            name.trim().eq_ignore_ascii_case("rel")
                && rels
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|rel| rel.eq_ignore_ascii_case("next"))
        });
        let url = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        let path = &rest[rest.find('/')?..];
        next.then(|| path.to_owned())
    });
    match found {
        None if text.to_ascii_lowercase().contains("next") => Err(unreadable()),
        found => Ok(found),
    }
}

/// `Retry-After` in seconds, whole or with a fraction (Shopify sends
/// `2.0`), a fraction rounded up (the HTTP-date form is not used by the
/// providers here; it counts as none).
pub(super) fn seconds(value: Option<&reqwest::header::HeaderValue>) -> Option<Duration> {
    let text = value?.to_str().ok()?.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let secs: u64 = whole.parse().ok()?;
    let up = u64::from(fraction.bytes().any(|b| b != b'0'));
    Some(Duration::from_secs(secs.saturating_add(up)))
}

/// 250 ms, doubling with each try.
pub(super) fn backoff(tried: u32) -> Duration {
    Duration::from_millis(250) * 2u32.pow(tried.min(6))
}

/// The answer's body, at most [`MAX_BODY`] bytes.
pub(super) async fn bounded(mut response: reqwest::Response) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ApiError::Network(without_url(&e)))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ApiError::Malformed(format!(
                "an answer larger than {} MiB",
                MAX_BODY / 1024 / 1024
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The provider's own error message, if its body has one (`error.message`,
/// Stripe's shape), bounded, with anything that looks like a key (or the
/// key itself) replaced: `: ...` or nothing.
pub(super) async fn detail(response: reqwest::Response, secrets: &[&str]) -> String {
    let Ok(body) = bounded(response).await else {
        return String::new();
    };
    // Stripe's `error.message`, Paddle's `error.detail`, Square's
    // `errors[0].detail`, PayPal's `message` (and its token endpoint's
    // `error_description`), Shopify's `errors` string.
    let message = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
        [
            "/error/message",
            "/error/detail",
            "/errors/0/detail",
            "/message",
            "/error_description",
            "/errors",
        ]
        .iter()
        .find_map(|at| v.pointer(at).and_then(Value::as_str).map(str::to_owned))
    });
    match message {
        Some(text) => format!(": {}", shown(text, secrets)),
        None => String::new(),
    }
}

/// A provider's message as shown: every secret redacted in the whole
/// text, then cut to 200 characters (cut first, a secret cut in two would
/// no longer match and its first half would show).
fn shown(text: String, secrets: &[&str]) -> String {
    let text = secrets.iter().fold(text, |text, key| redacted(&text, key));
    text.chars().take(200).collect()
}

/// `text` with the key, and every word that looks like a provider key
/// (Stripe's `sk_`, `rk_`, `pk_`, Paddle's `pdl_`, masked or not), replaced.
fn redacted(text: &str, key: &str) -> String {
    let mut text = text.to_owned();
    // The key, and each half of a `CLIENT_ID:SECRET` one.
    if !key.is_empty() {
        text = text.replace(key, "<key>");
    }
    for part in key.split(':').filter(|part| *part != key) {
        if part.len() >= 8 {
            text = text.replace(part, "<key>");
        }
    }
    text.split(' ')
        .map(|word| {
            let bare =
                word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '*');
            match ["sk_", "rk_", "pk_", "pdl_"]
                .iter()
                .any(|p| bare.starts_with(p))
            {
                true => word.replace(bare, "<key>"),
                false => word.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A request error without its URL: the query holds nothing secret, but
/// the message stays short and the key is never in it (it is a header).
pub(super) fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), "the provider");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{next_link, redacted, seconds, shown};

    #[test]
    fn retry_after_is_whole_seconds_or_a_fraction_rounded_up() {
        let wait =
            |text: &str| seconds(Some(&reqwest::header::HeaderValue::from_str(text).unwrap()));
        assert_eq!(wait("3"), Some(std::time::Duration::from_secs(3)));
        assert_eq!(wait("2.0"), Some(std::time::Duration::from_secs(2)));
        assert_eq!(wait("0.5"), Some(std::time::Duration::from_secs(1)));
        assert_eq!(wait("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(wait("-1"), None);
        assert_eq!(wait(".5"), None);
    }

    #[test]
    fn a_link_header_names_the_next_page_on_this_api() {
        let header = |text: &str| reqwest::header::HeaderValue::from_str(text).unwrap();
        let both = header(
            "<https://shop.myshopify.com/admin/api/2026-07/orders.json?limit=250&page_info=abc>; \
             rel=\"previous\", <https://shop.myshopify.com/admin/api/2026-07/orders.json?\
             limit=250&page_info=def>; rel=\"next\"",
        );
        assert_eq!(
            next_link(Some(&both)).unwrap().as_deref(),
            Some("/admin/api/2026-07/orders.json?limit=250&page_info=def")
        );
        let shouted = header("<https://s.example/a?page_info=x>; REL=\"Next Last\"");
        assert_eq!(
            next_link(Some(&shouted)).unwrap().as_deref(),
            Some("/a?page_info=x")
        );
        let broken = header("https://s.example/a?page_info=x; rel=\"next\"");
        assert!(next_link(Some(&broken)).is_err());
        let last = header("<https://shop.myshopify.com/x?page_info=abc>; rel=\"previous\"");
        assert_eq!(next_link(Some(&last)).unwrap(), None);
        assert_eq!(next_link(None).unwrap(), None);
    }

    #[test]
    fn a_providers_message_never_carries_the_key() {
        assert_eq!(
            redacted(
                "Invalid API Key provided: sk_test_****1234.",
                "sk_test_abcd1234"
            ),
            "Invalid API Key provided: <key>."
        );
        assert_eq!(
            redacted("echo sk_test_abcd1234 back", "sk_test_abcd1234"),
            "echo <key> back"
        );
        assert_eq!(
            redacted(
                "Client Authentication failed for AbC123clientid",
                "AbC123clientid:EFG456secret"
            ),
            "Client Authentication failed for <key>"
        );
        // Cut after redaction: a secret at the cut is hidden whole.
        let long = format!("{} echoed EFG456secretEFG456secret", "x".repeat(180));
        let secrets = ["AbC123clientid:EFG456secretEFG456secret", "A21AA-token"];
        let text = shown(long, &secrets);
        assert!(!text.contains("EFG4"), "{text}");
        assert_eq!(
            shown("token A21AA-token expired".into(), &secrets),
            "token <key> expired"
        );
        assert_eq!(
            redacted("No such event: evt_1", "rk_live_x"),
            "No such event: evt_1"
        );
    }
}
