//! Config-source parity, C side: every case of
//! tests/fixtures/config_sources.json through mcpmux_hub_connect_file (a
//! `path`), mcpmux_hub_connect (`text`, and an `object` as its JSON text)
//! and mcpmux_sessions_new, which must reach the servers the case lists (or
//! its error code) exactly as Python, Node and the CLI do. One test in this
//! binary: it changes the current directory.

mod common;

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use common::*;
use mcpmux::engine::{mcpmux_engine, mcpmux_engine_free, mcpmux_engine_new};
use mcpmux::error::{mcpmux_error, mcpmux_error_code, mcpmux_error_free, mcpmux_error_message};
use mcpmux::hub::{
    mcpmux_hub, mcpmux_hub_connect, mcpmux_hub_connect_file, mcpmux_hub_free, mcpmux_hub_servers,
};
use mcpmux::mcpmux_string_free;
use mcpmux::session::{mcpmux_sessions, mcpmux_sessions_free, mcpmux_sessions_new};
use serde_json::Value;

/// What a connect ended with: the server names, or `(code, message)`.
type Reached = Result<Vec<String>, (String, String)>;

/// Takes the error out of `err` as `(code, message)`.
unsafe fn take_error(err: *mut mcpmux_error) -> (String, String) {
    assert!(!err.is_null(), "a failed call set no error");
    // SAFETY: a live error from the library.
    let out = unsafe {
        (
            CStr::from_ptr(mcpmux_error_code(err))
                .to_string_lossy()
                .into_owned(),
            CStr::from_ptr(mcpmux_error_message(err))
                .to_string_lossy()
                .into_owned(),
        )
    };
    // SAFETY: ours to free.
    unsafe { mcpmux_error_free(err) };
    out
}

/// Connects through the C ABI the way the case's kind says.
unsafe fn hub_reached(engine: *mut mcpmux_engine, kind: &str, input: &CString) -> Reached {
    let mut hub: *mut mcpmux_hub = ptr::null_mut();
    let mut err: *mut mcpmux_error = ptr::null_mut();
    // SAFETY: a live engine, NUL-terminated input, valid out pointers.
    let status = unsafe {
        if kind == "path" {
            mcpmux_hub_connect_file(engine, input.as_ptr(), &mut hub, &mut err)
        } else {
            mcpmux_hub_connect(engine, input.as_ptr(), &mut hub, &mut err)
        }
    };
    if status as i32 != 0 {
        // SAFETY: set by the failed call.
        return Err(unsafe { take_error(err) });
    }
    let mut json: *mut c_char = ptr::null_mut();
    // SAFETY: the hub we just connected.
    let status = unsafe { mcpmux_hub_servers(hub, &mut json, &mut err) };
    assert_eq!(status as i32, 0, "mcpmux_hub_servers failed");
    // SAFETY: a string owned by us.
    let text = unsafe { CStr::from_ptr(json) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: ours to free.
    unsafe {
        mcpmux_string_free(json);
        mcpmux_hub_free(hub);
    }
    let servers: Value = serde_json::from_str(&text).unwrap();
    Ok(servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect())
}

/// mcpmux_sessions_new with the same input: `Ok(())` or `(code, message)`.
unsafe fn sessions_reached(
    engine: *mut mcpmux_engine,
    kind: &str,
    input: &CString,
) -> Result<(), (String, String)> {
    let mut sessions: *mut mcpmux_sessions = ptr::null_mut();
    let mut err: *mut mcpmux_error = ptr::null_mut();
    let (text, path) = if kind == "path" {
        (ptr::null(), input.as_ptr())
    } else {
        (input.as_ptr(), ptr::null())
    };
    // SAFETY: a live engine, NUL-terminated strings or NULL, valid outs.
    let status = unsafe {
        mcpmux_sessions_new(
            engine,
            text,
            path,
            None,
            ptr::null_mut(),
            &mut sessions,
            &mut err,
        )
    };
    if status as i32 != 0 {
        // SAFETY: set by the failed call.
        return Err(unsafe { take_error(err) });
    }
    // SAFETY: ours to free.
    unsafe { mcpmux_sessions_free(sessions) };
    Ok(())
}

#[test]
fn every_source_reaches_the_config_every_front_end_reaches() {
    let fixtures = workspace_root().join("tests/fixtures");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("config_sources.json")).unwrap(),
    )
    .unwrap();
    std::env::set_current_dir(fixtures.join("config_sources")).unwrap();
    let mut engine: *mut mcpmux_engine = ptr::null_mut();
    let mut err: *mut mcpmux_error = ptr::null_mut();
    // SAFETY: valid out pointers.
    let status = unsafe { mcpmux_engine_new(ptr::null(), &mut engine, &mut err) };
    assert_eq!(status as i32, 0);
    let mut checked = 0;
    for case in doc["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let kind = case["kind"].as_str().unwrap();
        let input = match &case["input"] {
            Value::String(s) => s.clone(),
            object => object.to_string(),
        };
        let input = CString::new(input).unwrap();
        // SAFETY: the engine is live.
        let (hub, sessions) = unsafe {
            (
                hub_reached(engine, kind, &input),
                sessions_reached(engine, kind, &input),
            )
        };
        match (&case["servers"], case["code"].as_str()) {
            (Value::Array(want), None) => {
                let want: Vec<&str> = want.iter().map(|s| s.as_str().unwrap()).collect();
                assert_eq!(
                    hub,
                    Ok(want.iter().map(|s| s.to_string()).collect()),
                    "{name}"
                );
                assert_eq!(sessions, Ok(()), "{name}: mcpmux_sessions_new");
            }
            (_, Some(code)) => {
                for (what, got) in [("hub", hub.map(|_| ())), ("sessions", sessions)] {
                    let (got_code, message) = got.expect_err(&format!("{name}: {what} connected"));
                    assert_eq!(got_code, code, "{name}: {what}: {message}");
                    if let Some(part) = case["message"].as_str() {
                        assert!(
                            message.contains(part),
                            "{name}: {what}: '{message}' lacks '{part}'"
                        );
                    }
                }
            }
            _ => panic!("{name}: a case needs `servers` or `code`"),
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} cases");
    // SAFETY: no hub of it is left.
    unsafe { mcpmux_engine_free(engine) };
}
