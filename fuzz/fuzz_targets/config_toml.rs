//! Fuzz target `config_toml`: [`mcpmux_core::fuzzing::config`] on every input;
//! a property it reports broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = mcpmux_core::fuzzing::config(data) {
        panic!("config_toml: {problem}");
    }
});
