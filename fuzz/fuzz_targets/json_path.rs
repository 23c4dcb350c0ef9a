//! The JSON path reader: parsing any text and looking it up in a fixed
//! document never panics.
#![no_main]

use hookledger::providers::JsonPath;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
});
