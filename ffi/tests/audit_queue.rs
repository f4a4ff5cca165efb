//! mcpmux_policy_on_audit() with a callback that blocks: the events it has
//! not taken wait in a bounded queue (core's `LISTENER_QUEUE`, 10000), the
//! rest are dropped for it, and the host's calls never wait for it. Once it
//! returns it gets what was queued, and the policy's own audit log still has
//! every event.

mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use ::mcpmux_policy::audit::{LISTENER_QUEUE, MEMORY_EVENTS};
use common::*;
use mcpmux::engine::{mcpmux_engine, mcpmux_engine_free, mcpmux_engine_new};
use mcpmux::error::{mcpmux_error, mcpmux_error_free, mcpmux_error_message, mcpmux_status};
use mcpmux::hub::{mcpmux_hub, mcpmux_hub_close, mcpmux_hub_connect, mcpmux_hub_free};
use mcpmux::mcpmux_string_free;
use mcpmux::policy::{
    mcpmux_hub_call_tool_with_policy, mcpmux_policy, mcpmux_policy_audit_json, mcpmux_policy_free,
    mcpmux_policy_new, mcpmux_policy_on_audit,
};

/// The callback's state: it waits until `released`, then counts.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, usize)>,
    changed: Condvar,
}

unsafe extern "C" fn blocking_listener(user_data: *mut c_void, _event_json: *const c_char) {
    // SAFETY: `user_data` is the `Gate` the test keeps alive until the end.
    let gate = unsafe { &*(user_data as *const Gate) };
    let mut state = gate.state.lock().unwrap();
    while !state.0 {
        state = gate.changed.wait(state).unwrap();
    }
    state.1 += 1;
    gate.changed.notify_all();
}

/// Panics with the error's message unless `status` is OK.
fn ok(what: &str, status: mcpmux_status, err: *mut mcpmux_error) {
    if status as i32 != 0 {
        // SAFETY: a failed call set a live error; freed once.
        let message = unsafe {
            let m = CStr::from_ptr(mcpmux_error_message(err))
                .to_string_lossy()
                .into_owned();
            mcpmux_error_free(err);
            m
        };
        panic!("{what}: {message}");
    }
}

#[test]
fn a_blocked_audit_callback_holds_at_most_the_queue_and_never_holds_up_calls() {
    let calls = LISTENER_QUEUE + 50;
    let mut err: *mut mcpmux_error = ptr::null_mut();
    // Two engine threads: the callback blocks one of them.
    let options = CString::new(r#"{"worker_threads":2}"#).unwrap();
    let mut engine: *mut mcpmux_engine = ptr::null_mut();
    // SAFETY: valid strings and out pointers throughout; every handle is
    // freed once, after its last use.
    unsafe {
        ok(
            "engine",
            mcpmux_engine_new(options.as_ptr(), &mut engine, &mut err),
            err,
        );
        let config = CString::new(format!(
            "[[mcp.servers]]\nname = \"demo\"\ncommand = {:?}\nallow_tools = [\"echo\"]\n",
            demo_server().display().to_string()
        ))
        .unwrap();
        let mut hub: *mut mcpmux_hub = ptr::null_mut();
        ok(
            "connect",
            mcpmux_hub_connect(engine, config.as_ptr(), &mut hub, &mut err),
            err,
        );
        let mut policy: *mut mcpmux_policy = ptr::null_mut();
        ok(
            "policy",
            mcpmux_policy_new(hub, ptr::null(), ptr::null(), &mut policy, &mut err),
            err,
        );
        let gate = Box::new(Gate::default());
        let gate_ptr = &*gate as *const Gate as *mut c_void;
        ok(
            "on_audit",
            mcpmux_policy_on_audit(policy, hub, Some(blocking_listener), gate_ptr, &mut err),
            err,
        );

        let name = CString::new("mcp_demo_echo").unwrap();
        let args = CString::new(r#"{"text":"x"}"#).unwrap();
        for i in 0..calls {
            let mut out: *mut c_char = ptr::null_mut();
            ok(
                &format!("call {i}"),
                mcpmux_hub_call_tool_with_policy(
                    hub,
                    name.as_ptr(),
                    args.as_ptr(),
                    ptr::null(),
                    policy,
                    &mut out,
                    &mut err,
                ),
                err,
            );
            mcpmux_string_free(out);
        }
        assert_eq!(
            gate.state.lock().unwrap().1,
            0,
            "the callback returned while blocked"
        );

        // Released: it gets the one it was blocked on and the queued ones.
        {
            let mut state = gate.state.lock().unwrap();
            state.0 = true;
            gate.changed.notify_all();
            let deadline = Instant::now() + Duration::from_secs(60);
            while state.1 < LISTENER_QUEUE && Instant::now() < deadline {
                state = gate
                    .changed
                    .wait_timeout(state, Duration::from_millis(100))
                    .unwrap()
                    .0;
            }
        }
        // Nothing more comes after a quiet spell.
        std::thread::sleep(Duration::from_millis(300));
        let delivered = gate.state.lock().unwrap().1;
        assert!(
            (LISTENER_QUEUE..=LISTENER_QUEUE + 1).contains(&delivered),
            "{delivered} events delivered to a callback blocked during {calls} calls \
             (the queue holds {LISTENER_QUEUE})"
        );

        // The policy's own log kept the newest events regardless.
        let mut json: *mut c_char = ptr::null_mut();
        ok(
            "audit_json",
            mcpmux_policy_audit_json(policy, &mut json, &mut err),
            err,
        );
        let events: serde_json::Value =
            serde_json::from_str(&CStr::from_ptr(json).to_string_lossy()).unwrap();
        mcpmux_string_free(json);
        assert_eq!(
            events.as_array().map(Vec::len),
            Some(MEMORY_EVENTS.min(calls))
        );

        mcpmux_policy_free(policy);
        ok("close", mcpmux_hub_close(hub, &mut err), err);
        mcpmux_hub_free(hub);
        mcpmux_engine_free(engine);
        // The engine is gone: no callback can run any more.
        drop(gate);
    }
}
