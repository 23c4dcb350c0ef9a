//! The config loader on arbitrary text: never a panic (errors are
//! values). Generated secrets go to a scratch folder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
    let _ = hookledger::config::from_toml(text, &env);
});
