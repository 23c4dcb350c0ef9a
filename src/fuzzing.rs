//! The properties the fuzz targets check (`fuzz/fuzz_targets/`, one line
//! each), kept here so that `cargo test` also runs them over the seed corpus
//! and seeded mutations of it: the short mode CI runs on every change, where
//! libFuzzer's coverage-guided runs (`HOOKLEDGER_FUZZ_SECS`) are the long one.
//! Each takes arbitrary bytes and panics only when a property is broken.

use crate::domain::{AmountFormat, Currency, PositiveAmount, format_minor, parse_decimal};
use crate::providers::{
    Delivery, HeaderPairs, JsonPath, KindSettings, Mapping, Verified, VerifyPolicy, known_kinds,
    parse_json, provider_for,
};
use crate::secret::KeyBytes;

/// The fixed "now" of every property: signatures and mappings see one time.
fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(1_780_000_000, 0).expect("a valid time")
}

/// Every kind's signature check on arbitrary headers and body: never a
/// panic. The input is `name: value` lines, a blank line, then the body.
pub fn verify(data: &[u8]) {
    let split = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(data.len());
    let head = String::from_utf8_lossy(&data[..split]);
    let body = data.get(split + 2..).unwrap_or_default();
    let headers: Vec<(&str, &str)> = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim(), v.trim()))
        .collect();
    let pairs = HeaderPairs(&headers);
    let delivery = Delivery {
        headers: &pairs,
        body,
        received_at: now(),
    };
    let settings = KindSettings {
        notification_url: Some("https://hooks.example.com/webhooks/square".into()),
        webhook_id: Some("WH-FUZZ".into()),
        generic: None,
    };
    let keys = [KeyBytes::new(b"fuzz-key-0123456789".to_vec())];
    for kind in known_kinds() {
        let provider = provider_for(kind).expect("a known kind has a provider");
        let policy = VerifyPolicy {
            tolerance_secs: provider.default_tolerance_secs().max(300),
            settings: &settings,
        };
        let _ = provider.verify(&delivery, &keys, &policy, now());
    }
}

/// Every kind's JSON mapping on an arbitrary body taken as verified: never
/// a panic, and every event it yields is storable on both backends
/// (`make_storable` leaves nothing PostgreSQL would refuse).
pub fn normalise(data: &[u8]) {
    let Ok((json, _)) = parse_json(data) else {
        return;
    };
    let headers = [("x-shopify-topic", "orders/paid"), ("x-event", "payment")];
    let pairs = HeaderPairs(&headers);
    let delivery = Delivery {
        headers: &pairs,
        body: data,
        received_at: now(),
    };
    let verified = Verified {
        key_index: 0,
        timestamp: Some(1_780_000_000),
        event_id: Some("msg_fuzz".into()),
    };
    for kind in known_kinds() {
        let provider = provider_for(kind).expect("a known kind has a provider");
        let path = JsonPath::parse(provider.default_account_path())
            .expect("every kind's default account path parses");
        let mapping = Mapping::with_account_path(path);
        if let Ok(mut events) = provider.normalise(&verified, &delivery, &json, &mapping) {
            for event in &mut events {
                event.make_storable();
                assert!(!event.event_type.contains('\0'), "{kind}: {event:?}");
                let object = event.object_id.as_deref().unwrap_or_default();
                assert!(!object.contains('\0'), "{kind}: {event:?}");
            }
        }
    }
}

/// Money and currency parsing (`"<code> <amount>"`): never a panic; a
/// decimal that parses formats back to the same number of minor units.
pub fn money(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (code, amount) = text.split_once(' ').unwrap_or(("USD", text));
    let Ok(currency) = Currency::parse(code) else {
        return;
    };
    if let Ok(minor) = parse_decimal(amount, currency) {
        let formatted = format_minor(minor, currency.exponent());
        assert_eq!(parse_decimal(&formatted, currency), Ok(minor), "{amount}");
    }
    let value = serde_json::Value::String(amount.to_owned());
    for format in [
        AmountFormat::Minor,
        AmountFormat::MinorString,
        AmountFormat::Decimal,
    ] {
        let _ = PositiveAmount::from_json_as(Some(&value), format, currency);
    }
    if let Ok(number) = serde_json::from_str::<serde_json::Value>(amount) {
        let _ = PositiveAmount::from_json(Some(&number));
    }
}

/// The config loader on arbitrary text: never a panic (errors are values).
/// Generated secrets go to a scratch folder.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = std::env::temp_dir().join("hookledger-fuzz-config");
    let data_dir = dir.display().to_string();
    let env = |name: &str| match name {
        "HOOKLEDGER_DATA_DIR" => Some(data_dir.clone()),
        "SET" => Some("whsec_YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4".to_owned()),
        _ => None,
    };
    let _ = crate::config::from_toml_reading(text, &env, &crate::outbox::destinations::check);
}

/// The JSON path reader: parsing any text and looking it up in a fixed
/// document never panics.
pub fn json_path(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let document = serde_json::json!({
        "data": {"object": {"metadata": {"account_id": "acct_1"}, "items": [1, {"a": null}]}},
        "note_attributes": [{"name": "account_id", "value": "acct_2"}],
        "": {"": 1}
    });
    if let Ok(path) = JsonPath::parse(text) {
        let _ = path.lookup(&document);
        let _ = path.as_str();
    }
}

#[cfg(test)]
mod seeds;
