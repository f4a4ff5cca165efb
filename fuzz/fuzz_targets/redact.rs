//! Fuzz target `redact`: [`mcpmux_policy::fuzzing::redact`] on every input;
//! a property it reports broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = mcpmux_policy::fuzzing::redact(data) {
        panic!("redact: {problem}");
    }
});
