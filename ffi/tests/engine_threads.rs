//! mcpmux_engine_new and core's worker-thread rule: the `worker_threads`
//! option beats `$MCPMUX_WORKER_THREADS`, which beats one per CPU; a bad
//! variable is INVALID_INPUT naming it unless the option is given. Threads
//! are counted by name (`mcpmux-engine`) in /proc. A bad
//! `$MCPMUX_STAY_AWAKE_US` is INVALID_INPUT too. One test in this binary:
//! it sets the process environment.

use std::ffi::CStr;
use std::ptr;
use std::time::{Duration, Instant};

use mcpmux::engine::{mcpmux_engine, mcpmux_engine_free, mcpmux_engine_new};
use mcpmux::error::{mcpmux_error, mcpmux_error_code, mcpmux_error_free, mcpmux_error_message};

/// Threads of this process named `mcpmux-engine`.
fn engine_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "mcpmux-engine")
        .count()
}

/// Polls (bounded: only a hang fails here) until `engine_threads()` is
/// `want`; returns the last count. Threads name themselves once running, so
/// they show up a moment after the runtime is built.
fn settle(want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = engine_threads();
        if n == want || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Creates an engine with `options`: `Ok` with the number of engine threads
/// once it has `want` (or the deadline passed), or its error `(code,
/// message)`.
fn engine(options: Option<&CStr>, want: usize) -> Result<usize, (String, String)> {
    assert_eq!(settle(0), 0, "threads of an earlier engine are left");
    let mut engine: *mut mcpmux_engine = ptr::null_mut();
    let mut err: *mut mcpmux_error = ptr::null_mut();
    let options = options.map_or(ptr::null(), CStr::as_ptr);
    // SAFETY: NULL or a NUL-terminated string; valid out pointers.
    let status = unsafe { mcpmux_engine_new(options, &mut engine, &mut err) };
    if status as i32 != 0 {
        // SAFETY: a live error, freed once.
        unsafe {
            let out = (
                CStr::from_ptr(mcpmux_error_code(err))
                    .to_string_lossy()
                    .into_owned(),
                CStr::from_ptr(mcpmux_error_message(err))
                    .to_string_lossy()
                    .into_owned(),
            );
            mcpmux_error_free(err);
            return Err(out);
        }
    }
    let started = settle(want);
    // SAFETY: the engine just made, no hub on it.
    unsafe { mcpmux_engine_free(engine) };
    Ok(started)
}

#[test]
fn option_beats_variable_beats_default() {
    // The only test of this binary: no other thread reads the environment.
    std::env::set_var("MCPMUX_WORKER_THREADS", "3");
    assert_eq!(engine(None, 3), Ok(3));
    assert_eq!(engine(Some(c"{\"worker_threads\": 2}"), 2), Ok(2));
    std::env::remove_var("MCPMUX_WORKER_THREADS");
    std::env::set_var("MCPMUX_ENGINE_THREADS", "1");
    assert_eq!(engine(None, 1), Ok(1));
    std::env::set_var("MCPMUX_ENGINE_THREADS", "lots");
    let (code, message) = engine(None, 0).unwrap_err();
    assert_eq!(code, "INVALID_INPUT");
    assert!(message.contains("MCPMUX_ENGINE_THREADS"), "{message}");
    assert_eq!(engine(Some(c"{\"worker_threads\": 2}"), 2), Ok(2));
    // Core's other runtime variable: how long a blocking call stays awake.
    std::env::remove_var("MCPMUX_ENGINE_THREADS");
    std::env::set_var("MCPMUX_STAY_AWAKE_US", "soon");
    let (code, message) = engine(Some(c"{\"worker_threads\": 2}"), 0).unwrap_err();
    assert_eq!(code, "INVALID_INPUT");
    assert!(message.contains("MCPMUX_STAY_AWAKE_US"), "{message}");
    std::env::set_var("MCPMUX_STAY_AWAKE_US", "0");
    assert_eq!(engine(Some(c"{\"worker_threads\": 2}"), 2), Ok(2));
    std::env::remove_var("MCPMUX_STAY_AWAKE_US");
}
