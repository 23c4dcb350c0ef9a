//! Every kind's JSON mapping on an arbitrary body taken as verified: never
//! a panic, and every event it yields is storable on both backends
//! (`make_storable` leaves nothing PostgreSQL would refuse).
#![no_main]

use hookledger::providers::{
    Delivery, HeaderPairs, JsonPath, Mapping, Verified, known_kinds, parse_json, provider_for,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((json, _)) = parse_json(data) else {
        return;
    };
    let headers = [("x-shopify-topic", "orders/paid"), ("x-event", "payment")];
    let pairs = HeaderPairs(&headers);
    let now = chrono::DateTime::from_timestamp(1_780_000_000, 0).unwrap();
    let delivery = Delivery {
        headers: &pairs,
        body: data,
        received_at: now,
    };
    let verified = Verified {
        key_index: 0,
        timestamp: Some(1_780_000_000),
        event_id: Some("msg_fuzz".into()),
    };
    for kind in known_kinds() {
        let provider = provider_for(kind).unwrap();
        let mapping =
            Mapping::with_account_path(JsonPath::parse(provider.default_account_path()).unwrap());
        if let Ok(mut events) = provider.normalise(&verified, &delivery, &json, &mapping) {
            for event in &mut events {
                event.make_storable();
                assert!(!event.event_type.contains('\0'), "{kind}: {event:?}");
                assert!(
                    !event
                        .object_id
                        .as_deref()
                        .unwrap_or_default()
                        .contains('\0'),
                    "{kind}: {event:?}"
                );
            }
        }
    }
});
