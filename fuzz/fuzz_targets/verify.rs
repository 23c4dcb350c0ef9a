//! Every kind's signature check on arbitrary headers and body: never a
//! panic, whatever the bytes. The input is `name: value` lines, a blank
//! line, then the body.
#![no_main]

use hookledger::providers::{
    Delivery, HeaderPairs, KindSettings, VerifyPolicy, known_kinds, provider_for,
};
use hookledger::secret::KeyBytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
    let now = chrono::DateTime::from_timestamp(1_780_000_000, 0).unwrap();
    let delivery = Delivery {
        headers: &pairs,
        body,
        received_at: now,
    };
    let settings = KindSettings {
        notification_url: Some("https://hooks.example.com/webhooks/square".into()),
        webhook_id: Some("WH-FUZZ".into()),
        generic: None,
    };
    let keys = [KeyBytes::new(b"fuzz-key-0123456789".to_vec())];
    for kind in known_kinds() {
        let provider = provider_for(kind).unwrap();
        let policy = VerifyPolicy {
            tolerance_secs: provider.default_tolerance_secs().max(300),
            settings: &settings,
        };
        let _ = provider.verify(&delivery, &keys, &policy, now);
    }
});
