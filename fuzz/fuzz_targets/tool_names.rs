//! Fuzz target `tool_names`: [`mcpmux_core::fuzzing::tool_names`] on every input;
//! a property it reports broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = mcpmux_core::fuzzing::tool_names(data) {
        panic!("tool_names: {problem}");
    }
});
