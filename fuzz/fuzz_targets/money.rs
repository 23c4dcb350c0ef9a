//! Money and currency parsing (`hookledger::fuzzing::money`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| hookledger::fuzzing::money(data));
