//! Fuzz target `session_input`: [`mcpmux_sessions::fuzzing::session_input`] on every input;
//! a property it reports broken is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = mcpmux_sessions::fuzzing::session_input(data) {
        panic!("session_input: {problem}");
    }
});
