//! Telemetry through the C ABI: a call's `options_json` `traceparent` makes
//! the call's spans children of the host's span, so the server receives the
//! host's trace id in `params._meta.traceparent`. One test in this binary:
//! it sets the `OTEL_*` variables of the process before the engine starts
//! (pointing at a port nothing listens on: exports are refused and dropped,
//! which must not fail the call).

mod common;

use std::ffi::{CStr, CString};
use std::ptr;

use common::*;
use mcpmux::engine::{mcpmux_engine, mcpmux_engine_free, mcpmux_engine_new};
use mcpmux::error::mcpmux_error;
use mcpmux::hub::{mcpmux_hub, mcpmux_hub_call_tool, mcpmux_hub_connect, mcpmux_hub_free};
use mcpmux::mcpmux_string_free;
use serde_json::Value;

const HOST_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[test]
fn a_calls_traceparent_reaches_the_server() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Before any thread of the library reads the environment.
    std::env::remove_var("OTEL_SDK_DISABLED");
    std::env::set_var(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        format!("http://127.0.0.1:{dead}"),
    );
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("meta.jsonl");
    let script = workspace_root().join("tests/servers/meta_recorder.py");
    let config = format!(
        "[[mcp.servers]]\nname = \"rec\"\ncommand = {}\nargs = [{}, {}]\n",
        serde_json::to_string(python().to_str().unwrap()).unwrap(),
        serde_json::to_string(script.to_str().unwrap()).unwrap(),
        serde_json::to_string(record.to_str().unwrap()).unwrap(),
    );
    let config = CString::new(config).unwrap();
    let name = CString::new("mcp_rec_echo").unwrap();
    let arguments = CString::new(r#"{"text":"from C"}"#).unwrap();
    let options = CString::new(format!(
        r#"{{"traceparent":"00-{HOST_TRACE}-00f067aa0ba902b7-01","tracestate":"vendor=1"}}"#
    ))
    .unwrap();
    let mut engine: *mut mcpmux_engine = ptr::null_mut();
    let mut hub: *mut mcpmux_hub = ptr::null_mut();
    let mut err: *mut mcpmux_error = ptr::null_mut();
    let mut out: *mut std::ffi::c_char = ptr::null_mut();
    // SAFETY: valid strings and out pointers; everything made here is freed here.
    let answer = unsafe {
        assert_eq!(
            mcpmux_engine_new(ptr::null(), &mut engine, &mut err) as i32,
            0
        );
        assert_eq!(
            mcpmux_hub_connect(engine, config.as_ptr(), &mut hub, &mut err) as i32,
            0
        );
        let status = mcpmux_hub_call_tool(
            hub,
            name.as_ptr(),
            arguments.as_ptr(),
            options.as_ptr(),
            &mut out,
            &mut err,
        );
        assert_eq!(status as i32, 0, "the call fails");
        let answer = CStr::from_ptr(out).to_string_lossy().into_owned();
        mcpmux_string_free(out);
        mcpmux_hub_free(hub);
        mcpmux_engine_free(engine);
        answer
    };
    assert!(answer.contains("from C"), "{answer}");
    let seen: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = seen
        .iter()
        .find(|r| r["method"] == "tools/call")
        .expect("the call reached the server");
    let traceparent = call["meta"]["traceparent"].as_str().expect("a traceparent");
    assert_eq!(traceparent.split('-').nth(1), Some(HOST_TRACE), "{call}");
    // A new span of mcpmux's, not the host's.
    assert_ne!(traceparent.split('-').nth(2), Some("00f067aa0ba902b7"));
    assert_eq!(call["meta"]["tracestate"], "vendor=1", "{call}");
    // The progress token mcpmux sends is still there.
    assert!(call["meta"]["progressToken"].is_number(), "{call}");
}
