//! Every kind's JSON mapping on an arbitrary body taken as verified
//! (`hookledger::fuzzing::normalise`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| hookledger::fuzzing::normalise(data));
