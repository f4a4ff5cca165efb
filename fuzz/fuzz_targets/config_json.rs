//! Fuzz target `config_json`: [`mcpmux_core::fuzzing::config_json`] on every input;
//! a property it reports broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = mcpmux_core::fuzzing::config_json(data) {
        panic!("config_json: {problem}");
    }
});
