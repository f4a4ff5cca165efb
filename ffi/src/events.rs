//! Hub events to a C callback, and the rest of the MCP client surface:
//! ping, log level, completions, resource subscriptions.

use std::ffi::{c_char, c_void};

use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{hub_ref, mcpmux_hub};
use crate::util::{guard_status, json_string, write_out, Args, JsonListener};

/// An event listener: called once per hub event, in order, on an engine
/// thread (never the caller's), with the event as JSON: `{"type":
/// "server_state" | "tools_changed" | "resources_changed" |
/// "prompts_changed" | "events_changed" | "resource_updated" | "log" |
/// "task_status" | "event" | "event_stream" | "lagged", ...}` (see docs/events-and-tasks.md#events). `event_json` is borrowed:
/// valid only during the callback (copy it to keep it; do not free it).
/// The callback should return quickly: events wait for it, and one that
/// falls 1024 events behind loses the oldest (a `lagged` event says how
/// many). Blocking mcpmux functions fail there with INVALID_INPUT.
#[allow(non_camel_case_types)]
pub type mcpmux_event_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char)>;

/// Sets the hub's event listener: `cb(user_data, event_json)` for every
/// later event (see mcpmux_event_fn), on an engine thread. A second call
/// replaces the listener; `cb` NULL removes it. `user_data` must stay
/// usable from engine threads until the listener is replaced or removed,
/// or the hub is freed (an event being delivered then may still use it
/// once). Does not block; any thread.
///
/// # Safety
/// `hub` is a live hub; `err` is NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_set_event_callback(
    hub: *const mcpmux_hub,
    cb: mcpmux_event_fn,
    user_data: *mut c_void,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_set_event_callback",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let task = match cb {
                None => None,
                Some(cb) => {
                    let listener = JsonListener { cb, user_data };
                    let mut events = hub.hub.events();
                    // Refused once the engine shut down.
                    drop(hub.shared.begin()?);
                    Some(
                        hub.shared
                            .handle()
                            .spawn(async move {
                                while let Some(event) = events.recv().await {
                                    if let Ok(json) = serde_json::to_string(&event) {
                                        listener.call(&json);
                                    }
                                }
                            })
                            .abort_handle(),
                    )
                }
            };
            hub.set_event_task(task);
            Ok(())
        })
    }
}

/// Pings the server named `server` and writes the round-trip time in
/// seconds to `*out_seconds`. Blocking. A server that does not answer
/// within its `timeout_seconds` is TIMEOUT; UNKNOWN_SERVER when no server
/// has that name.
///
/// # Safety
/// `hub` is a live hub; `server` a NUL-terminated string; `out_seconds` and
/// `err` are NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_ping(
    hub: *const mcpmux_hub,
    server: *const c_char,
    out_seconds: *mut f64,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_ping",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            args.non_null("out_seconds", out_seconds)?;
            let rtt = hub.shared.block_on(args, hub.hub.ping(server))??;
            write_out(out_seconds, rtt.as_secs_f64());
            Ok(())
        })
    }
}

/// Asks the server named `server` to send log messages at `level` or above
/// (`debug`, `info`, `notice`, `warning`, `error`, `critical`, `alert`,
/// `emergency`; anything else is INVALID_INPUT); they arrive as `log`
/// events. Blocking.
///
/// # Safety
/// `hub` is a live hub; `server` and `level` NUL-terminated strings; `err`
/// is NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_set_log_level(
    hub: *const mcpmux_hub,
    server: *const c_char,
    level: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_set_log_level",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let level = args.str("level", level)?;
            hub.shared
                .block_on(args, hub.hub.set_log_level(server, level))?
        })
    }
}

/// Completes an argument (`completion/complete`) and writes the server's
/// `completion` object (`{"values": [...], "total"?, "hasMore"?}`) to
/// `*out_json`. `ref_json`: `{"type": "ref/prompt", "name": ...}` or
/// `{"type": "ref/resource", "uri": <template>}`; `argument_json`:
/// `{"name": ..., "value": ...}`; `context_json` (nullable): `{"arguments":
/// {...}}`; `server` (nullable): without it, the one server offering that
/// prompt or template answers. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `ref_json` and `argument_json` NUL-terminated
/// strings; `context_json` and `server` NULL or NUL-terminated strings;
/// `out_json` and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_complete(
    hub: *const mcpmux_hub,
    ref_json: *const c_char,
    argument_json: *const c_char,
    context_json: *const c_char,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_complete",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let reference = args.json("ref_json", ref_json)?;
            let argument = args.json("argument_json", argument_json)?;
            let context = args.opt_json("context_json", context_json)?;
            let server = args.opt_str("server", server)?;
            args.non_null("out_json", out_json)?;
            let completion = hub.shared.block_on(
                args,
                hub.hub
                    .complete(&reference, &argument, context.as_ref(), server),
            )??;
            write_out(out_json, json_string(&completion)?);
            Ok(())
        })
    }
}

/// Subscribes to changes of resource `uri` (`resources/subscribe`) on
/// `server` (nullable: the server that lists `uri`); changes arrive as
/// `resource_updated` events. A server without subscriptions is
/// INVALID_INPUT naming it. Blocking.
///
/// # Safety
/// `hub` is a live hub; `uri` a NUL-terminated string; `server` NULL or a
/// NUL-terminated string; `err` is NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_subscribe(
    hub: *const mcpmux_hub,
    uri: *const c_char,
    server: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    // SAFETY: the caller's promises, forwarded.
    unsafe { subscription("mcpmux_hub_subscribe", true, hub, uri, server, err) }
}

/// Ends a subscription made with mcpmux_hub_subscribe(). Blocking.
///
/// # Safety
/// As for mcpmux_hub_subscribe().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_unsubscribe(
    hub: *const mcpmux_hub,
    uri: *const c_char,
    server: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    // SAFETY: the caller's promises, forwarded.
    unsafe { subscription("mcpmux_hub_unsubscribe", false, hub, uri, server, err) }
}

/// The body of mcpmux_hub_subscribe() and mcpmux_hub_unsubscribe().
///
/// # Safety
/// As for mcpmux_hub_subscribe().
unsafe fn subscription(
    func: &'static str,
    subscribe: bool,
    hub: *const mcpmux_hub,
    uri: *const c_char,
    server: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args { func };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let uri = args.str("uri", uri)?;
            let server = args.opt_str("server", server)?;
            let h = &hub.hub;
            hub.shared.block_on(args, async {
                if subscribe {
                    h.subscribe(uri, server).await
                } else {
                    h.unsubscribe(uri, server).await
                }
            })?
        })
    }
}
