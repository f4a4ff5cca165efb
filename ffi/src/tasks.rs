//! MCP tasks through the C ABI: start a tool as a task and get its handle,
//! poll it, wait for its result, cancel it, list a server's tasks. JSON in
//! and out, blocking, any thread (as the other hub calls). A plain
//! mcpmux_hub_call_tool() already runs tools that require a task as one
//! (and optional ones with `"task": true` in its options).

use std::ffi::c_char;

use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{call_options, hub_ref, mcpmux_hub, tool_arguments};
use crate::util::{c_string, guard_status, json_string, write_out, Args};

/// Starts the tool `name` (hub name) as a task without waiting for it and
/// writes its handle to `*out_json`: `{"server": ..., "task_id": ...}`
/// (plain strings: keep them to poll, wait or cancel later, also after a
/// restart of the host while the server keeps the task). The tool's
/// `execution.taskSupport` must be `optional` or `required` and its server
/// must accept tasks, else INVALID_INPUT. `args_json` and `options_json`
/// as for mcpmux_hub_call_tool() (`task_ttl_ms` / `task_ttl_seconds` ask
/// how long the server keeps the task). Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `name` a NUL-terminated string; `args_json` and
/// `options_json` NULL or NUL-terminated strings; `out_json` and `err` are
/// NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_call_tool_as_task(
    hub: *const mcpmux_hub,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_call_tool_as_task",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let name = args.str("name", name)?;
            let arguments = tool_arguments(args, args_json)?;
            let opts = call_options(args, args.opt_object("options_json", options_json)?)?;
            args.non_null("out_json", out_json)?;
            let handle = hub.shared.block_on(
                args,
                hub.hub.call_tool_as_task(name, arguments.as_ref(), &opts),
            )??;
            write_out(out_json, json_string(&handle)?);
            Ok(())
        })
    }
}

/// Writes the status of task `task_id` of the server named `server`
/// (`tasks/get`) to `*out_json`: `{"server", "task_id", "status":
/// "working" | "input_required" | "completed" | "failed" | "cancelled",
/// "message"?, "created_at"?, "last_updated_at"?, "ttl_ms"?,
/// "poll_interval_ms"?}`. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `server` and `task_id` NUL-terminated strings;
/// `out_json` and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_task(
    hub: *const mcpmux_hub,
    server: *const c_char,
    task_id: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_task",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let task_id = args.str("task_id", task_id)?;
            args.non_null("out_json", out_json)?;
            let task = hub.shared.block_on(args, hub.hub.task(server, task_id))??;
            write_out(out_json, json_string(&task)?);
            Ok(())
        })
    }
}

/// Waits for task `task_id` of the server named `server` to end and writes
/// its result to `*out_json`, as mcpmux_hub_call_tool() would (the
/// CallToolResult as sent). Polls at the server's interval and answers
/// `input_required` through the hub's handlers. `options_json` as for
/// mcpmux_hub_call_tool(): the wait ends at `max_total_timeout_*` (else
/// the server's) with TIMEOUT, without cancelling the task. A cancelled
/// task is CANCELLED. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `server` and `task_id` NUL-terminated strings;
/// `options_json` NULL or a NUL-terminated string; `out_json` and `err` are
/// NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_task_result(
    hub: *const mcpmux_hub,
    server: *const c_char,
    task_id: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_task_result",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let task_id = args.str("task_id", task_id)?;
            let opts = call_options(args, args.opt_object("options_json", options_json)?)?;
            args.non_null("out_json", out_json)?;
            let result = hub
                .shared
                .block_on(args, hub.hub.task_result(server, task_id, &opts))??;
            write_out(out_json, c_string(result.json())?);
            Ok(())
        })
    }
}

/// Cancels task `task_id` of the server named `server` (`tasks/cancel`)
/// and writes the task as the server now reports it to `*out_json` (as
/// mcpmux_hub_task()). Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `server` and `task_id` NUL-terminated strings;
/// `out_json` and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_cancel_task(
    hub: *const mcpmux_hub,
    server: *const c_char,
    task_id: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_cancel_task",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let task_id = args.str("task_id", task_id)?;
            args.non_null("out_json", out_json)?;
            let task = hub
                .shared
                .block_on(args, hub.hub.cancel_task(server, task_id))??;
            write_out(out_json, json_string(&task)?);
            Ok(())
        })
    }
}

/// Writes the tasks the server named `server` keeps for this hub
/// (`tasks/list`) to `*out_json`: a JSON array of tasks (as
/// mcpmux_hub_task()). Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `server` a NUL-terminated string; `out_json` and
/// `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_list_tasks(
    hub: *const mcpmux_hub,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_list_tasks",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            args.non_null("out_json", out_json)?;
            let tasks = hub.shared.block_on(args, hub.hub.list_tasks(server))??;
            write_out(out_json, json_string(&tasks)?);
            Ok(())
        })
    }
}
