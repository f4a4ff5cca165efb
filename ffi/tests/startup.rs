//! mcpmux_hub_connect_with_options: `startup_timeout_ms` returns with the
//! servers that are up; one that never answers `initialize` shows as
//! "starting". Bad options are INVALID_INPUT naming them.

mod common;

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use common::*;
use mcpmux::engine::{mcpmux_engine, mcpmux_engine_free, mcpmux_engine_new};
use mcpmux::error::{mcpmux_error, mcpmux_error_code, mcpmux_error_free, mcpmux_error_message};
use mcpmux::hub::{
    mcpmux_hub, mcpmux_hub_connect_with_options, mcpmux_hub_free, mcpmux_hub_servers,
};
use mcpmux::mcpmux_string_free;
use serde_json::{json, Value};

/// Connects `config` with `options`: the servers' states, or `(code, message)`.
fn connect(
    engine: *mut mcpmux_engine,
    config: &Value,
    options: &str,
) -> Result<Value, (String, String)> {
    let config = CString::new(config.to_string()).unwrap();
    let options = CString::new(options).unwrap();
    let mut hub: *mut mcpmux_hub = ptr::null_mut();
    let mut err: *mut mcpmux_error = ptr::null_mut();
    // SAFETY: a live engine, NUL-terminated strings, valid out pointers.
    let status = unsafe {
        mcpmux_hub_connect_with_options(
            engine,
            config.as_ptr(),
            options.as_ptr(),
            &mut hub,
            &mut err,
        )
    };
    if status as i32 != 0 {
        // SAFETY: a live error, freed once.
        return Err(unsafe {
            let out = (
                CStr::from_ptr(mcpmux_error_code(err))
                    .to_string_lossy()
                    .into_owned(),
                CStr::from_ptr(mcpmux_error_message(err))
                    .to_string_lossy()
                    .into_owned(),
            );
            mcpmux_error_free(err);
            out
        });
    }
    let mut json: *mut c_char = ptr::null_mut();
    // SAFETY: a live hub; valid out pointers; the string and hub freed once.
    let servers = unsafe {
        assert_eq!(mcpmux_hub_servers(hub, &mut json, &mut err) as i32, 0);
        let text = CStr::from_ptr(json).to_string_lossy().into_owned();
        mcpmux_string_free(json);
        mcpmux_hub_free(hub);
        text
    };
    let servers: Value = serde_json::from_str(&servers).unwrap();
    Ok(servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_owned(), s["state"].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into())
}

#[test]
fn a_bounded_connect_returns_with_what_is_up() {
    let mut engine: *mut mcpmux_engine = ptr::null_mut();
    let mut err: *mut mcpmux_error = ptr::null_mut();
    // SAFETY: valid out pointers.
    assert_eq!(
        unsafe { mcpmux_engine_new(ptr::null(), &mut engine, &mut err) } as i32,
        0
    );
    let hang = workspace_root().join("tests/servers/hang_in_init.py");
    let config = json!({"mcpServers": {
        "demo": {"command": demo_server()},
        // Longer than any wait here: only a bounded connect returns in time.
        "stuck": {"command": python(), "args": [hang], "timeout_seconds": 600},
    }});
    let states = connect(engine, &config, r#"{"startup_timeout_ms": 1000}"#).unwrap();
    assert_eq!(states, json!({"demo": "connected", "stuck": "starting"}));
    for bad in [r#"{"startup_timeout_ms": -1}"#, r#"{"startup_wait": 1}"#] {
        let (code, message) = connect(engine, &config, bad).unwrap_err();
        assert_eq!(code, "INVALID_INPUT", "{message}");
        assert!(message.contains("options_json"), "{message}");
    }
    // SAFETY: ours to free, nothing else uses it.
    unsafe { mcpmux_engine_free(engine) };
}
