//! Every kind's signature check on arbitrary headers and body
//! (`hookledger::fuzzing::verify`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| hookledger::fuzzing::verify(data));
