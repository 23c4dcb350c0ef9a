//! The JSON path reader (`hookledger::fuzzing::json_path`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| hookledger::fuzzing::json_path(data));
