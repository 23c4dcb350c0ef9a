//! The config loader on arbitrary text (`hookledger::fuzzing::config`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| hookledger::fuzzing::config(data));
