//! [`mcpmux_policy`]: the tool-use policy (`docs/policy.md`) for a host's own
//! calls: allow lists, limits, redaction and audit (`mcpmux_policy`).

use std::ffi::{c_char, c_void};
use std::path::PathBuf;
use std::sync::Arc;

use ::mcpmux_policy::audit::LISTENER_QUEUE;
use ::mcpmux_policy::SessionPolicy;

use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{call_options, hub_ref, mcpmux_hub, tool_arguments};
use crate::util::{
    c_string, guard_status, guard_value, json_string, write_out, Args, JsonListener,
};

/// A policy for a host's calls on one hub's configuration. Created by
/// mcpmux_policy_new(), owned by the caller, freed with mcpmux_policy_free().
/// It does not keep the hub alive: functions that need the hub take it.
/// Any thread may use it, several at once.
pub struct mcpmux_policy {
    policy: Arc<SessionPolicy>,
}

/// An audit listener: called once per call made with the policy, in call
/// order, on an engine thread (never the caller's), shortly after the
/// call ended, with one
/// audit event as JSON: `{"time", "server", "tool", "status" ("ok",
/// "error", "not_allowed", "limit_exceeded", "timeout"), "bytes",
/// "duration_ms", "redactions", "truncated", "code"?}`. `event_json` is
/// borrowed: it is valid only during the callback (copy it to keep it; do
/// not free it). The callback should return quickly; blocking mcpmux
/// functions fail there with INVALID_INPUT.
#[allow(non_camel_case_types)]
pub type mcpmux_audit_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char)>;

/// The checked policy behind a pointer.
///
/// # Safety
/// `policy` is NULL or a live policy.
unsafe fn policy_ref<'a>(
    args: Args,
    policy: *const mcpmux_policy,
) -> Result<&'a mcpmux_policy, mcpmux_core::Error> {
    args.non_null("policy", policy)?;
    // SAFETY: non-NULL and live by the caller's promise.
    Ok(unsafe { &*policy })
}

/// Builds a policy for calls on `hub`, from the `[session]` table of the
/// hub's configuration with `settings_json` put over it. Does not block.
///
/// `settings_json` (nullable): a JSON object with any of `scope`,
/// `max_tool_calls`, `call_timeout_seconds`, `max_output_bytes`,
/// `redact` (an array of `{"name", "pattern"}`) and `pin_tools` (`true`:
/// pin the servers' tool definitions, refusing a changed or new tool with
/// `TOOL_CHANGED`; off unless asked); an unknown key or a bad
/// value is INVALID_INPUT naming it. The allow lists are the servers'
/// `allow_tools`, `allow_all`, `confirm_read_only` and `scopes` keys of
/// the configuration. `audit_path` (nullable): a file that gets one JSON
/// line per call (created or appended to; INVALID_INPUT when it cannot be
/// opened).
///
/// On success `*out` receives the policy, owned by the caller, freed with
/// mcpmux_policy_free(). Use it with mcpmux_hub_call_tool_with_policy() on
/// this hub: on another hub every function taking both is INVALID_INPUT.
///
/// # Safety
/// `hub` is a live hub; `settings_json` and `audit_path` NULL or
/// NUL-terminated strings; `out` and `err` are NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_new(
    hub: *const mcpmux_hub,
    settings_json: *const c_char,
    audit_path: *const c_char,
    out: *mut *mut mcpmux_policy,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_new",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let settings = args.opt_json("settings_json", settings_json)?;
            let audit_path = args.opt_str("audit_path", audit_path)?.map(PathBuf::from);
            args.non_null("out", out)?;
            let policy = SessionPolicy::for_hub(&hub.hub, settings.as_ref(), audit_path)?;
            let policy = Box::new(mcpmux_policy {
                policy: Arc::new(policy),
            });
            write_out(out, Box::into_raw(policy));
            Ok(())
        })
    }
}

/// Frees a policy. Calls still running with it finish with it. NULL is a
/// no-op. Any thread.
///
/// # Safety
/// `policy` is NULL or a policy that was not freed; it must not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_free(policy: *mut mcpmux_policy) {
    guard_value((), || {
        if !policy.is_null() {
            // SAFETY: the caller gives back ownership of the Box.
            drop(unsafe { Box::from_raw(policy) });
        }
    })
}

/// Adds an audit listener: `cb(user_data, event_json)` is called once for
/// every later call made with the policy (see mcpmux_audit_fn), on an
/// engine thread of the engine `hub` runs on. Events wait in a queue of
/// 10000 while `cb` runs; past that (a callback that blocks), newer events
/// are dropped for this listener (mcpmux_policy_audit_json() and the audit
/// file keep them). There is no way to remove it; `user_data` must stay usable from engine threads until the engine
/// is freed (events of calls that ended before mcpmux_policy_free() may
/// still be delivered after it). Does not block; any thread.
///
/// # Safety
/// `policy` is a live policy; `hub` a live hub; `err` is NULL or valid for
/// one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_on_audit(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    cb: mcpmux_audit_fn,
    user_data: *mut c_void,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_on_audit",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let policy = policy_ref(args, policy)?;
            let hub = hub_ref(args, hub)?;
            let Some(cb) = cb else {
                return Err(args.invalid("cb", "is NULL"));
            };
            let listener = JsonListener { cb, user_data };
            // One task delivers the events in order on an engine thread, so
            // that callbacks never run on the caller's thread (a blocking
            // call runs its future there) and the call is not held up.
            // Bounded: past LISTENER_QUEUE events a callback has not taken
            // (it blocks), newer ones are dropped for it.
            let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(LISTENER_QUEUE);
            // Refused once the engine shut down. The task holds no unit of
            // work: an engine may shut down while a policy is still alive.
            drop(hub.shared.begin()?);
            hub.shared.handle().spawn(async move {
                while let Some(json) = rx.recv().await {
                    listener.call(&json);
                }
            });
            policy.policy.on_audit(move |event| {
                if let Ok(json) = serde_json::to_string(event) {
                    let _ = tx.try_send(json);
                }
            });
            Ok(())
        })
    }
}

/// Writes the tools of `hub` that the policy offers to `*out_json`: a JSON
/// array in the shape of mcpmux_hub_list_tools(). Later calls with the
/// policy are limited to these. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `policy` is a live policy; `hub` the live hub it was made for (another
/// hub is an INVALID_INPUT error);
/// `out_json` and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_offered_json(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_offered_json",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let policy = policy_ref(args, policy)?;
            let hub = hub_ref(args, hub)?;
            args.non_null("out_json", out_json)?;
            policy.policy.check_hub(&hub.hub)?;
            let tools = hub.shared.block_on(args, async { hub.hub.list_tools() })?;
            write_out(out_json, json_string(&policy.policy.offered(&tools))?);
            Ok(())
        })
    }
}

/// Writes the policy's decision for every tool of `hub` to `*out_json`: a
/// JSON array of `{"name", "server", "tool", "offered", "refusal"?,
/// "reason"?}` (`refusal`: "not_allowed", "destructive",
/// "needs_confirmation", "out_of_scope", "unknown_tool"), the entries of
/// `mcpmux policy --json`. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// As for mcpmux_policy_offered_json().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_verdicts_json(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_verdicts_json",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let policy = policy_ref(args, policy)?;
            let hub = hub_ref(args, hub)?;
            args.non_null("out_json", out_json)?;
            policy.policy.check_hub(&hub.hub)?;
            let tools = hub.shared.block_on(args, async { hub.hub.list_tools() })?;
            write_out(out_json, json_string(&policy.policy.verdicts(&tools))?);
            Ok(())
        })
    }
}

/// Writes the effective allow list per server to `*out_json`, exactly as
/// `mcpmux policy --json` prints it: `{"scope", "servers": [{"name",
/// "state", "scopes", "in_scope", "offered", "refused", "missing"}]}`.
/// Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// As for mcpmux_policy_offered_json().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_report_json(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_report_json",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let policy = policy_ref(args, policy)?;
            let hub = hub_ref(args, hub)?;
            args.non_null("out_json", out_json)?;
            policy.policy.check_hub(&hub.hub)?;
            let report = hub.shared.block_on(args, policy.policy.report(&hub.hub))?;
            write_out(out_json, json_string(&report)?);
            Ok(())
        })
    }
}

/// Writes the audit events recorded by the policy so far (oldest first,
/// at most the last 10000) to `*out_json`: a JSON array of the events
/// described at mcpmux_audit_fn. Does not block; any thread.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `policy` is a live policy; `out_json` and `err` are NULL or valid for
/// one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_audit_json(
    policy: *const mcpmux_policy,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_audit_json",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let policy = policy_ref(args, policy)?;
            args.non_null("out_json", out_json)?;
            write_out(out_json, json_string(&policy.policy.audit_events())?);
            Ok(())
        })
    }
}

/// Reconnects the server `server` of `hub`, lists its tools again and
/// writes what changed for the policy to `*out_json`: `{"server",
/// "offered" (its tools offered now), "dropped" (offered before, not any
/// more), "added", "missing" (exact names in `allow_tools` the server does
/// not offer)}`. Tools that dropped out are refused by later calls.
/// UNKNOWN_SERVER when no server has that name; a server that fails to
/// come back is an error (CONNECT_FAILED, ...). Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `policy` is a live policy; `hub` the live hub it was made for (another
/// hub is an INVALID_INPUT error); `server`
/// a NUL-terminated string; `out_json` and `err` are NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_refresh(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_refresh",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let policy = policy_ref(args, policy)?;
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            args.non_null("out_json", out_json)?;
            let report = hub
                .shared
                .block_on(args, policy.policy.refresh(&hub.hub, server))??;
            write_out(out_json, json_string(&report)?);
            Ok(())
        })
    }
}

/// mcpmux_hub_call_tool() through `policy`: the call is counted and checked
/// first (TOOL_NOT_ALLOWED for a tool the policy does not offer,
/// LIMIT_EXCEEDED past `max_tool_calls`; the server is not asked then),
/// runs within `call_timeout_seconds`, its text is redacted (secrets become
/// `[REDACTED:<rule>]`) and, when `max_output_bytes` is set, cut to that
/// many bytes; every call, refused ones included, is audited. Blocking.
///
/// On success `*out_json` receives the redacted CallToolResult, owned by
/// the caller (free it with mcpmux_string_free()).
///
/// # Safety
/// As for mcpmux_hub_call_tool(); `policy` is a live policy made for `hub`
/// (one made for another hub is an INVALID_INPUT error, and the call is
/// neither made nor counted).
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_call_tool_with_policy(
    hub: *const mcpmux_hub,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    policy: *const mcpmux_policy,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_call_tool_with_policy",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let name = args.str("name", name)?;
            let arguments = tool_arguments(args, args_json)?;
            let options = args.opt_object("options_json", options_json)?;
            let trace = crate::hub::CallTrace::of(options.as_ref());
            let mut opts = call_options(args, options)?;
            opts.policy = Some(policy_ref(args, policy)?.policy.clone());
            args.non_null("out_json", out_json)?;
            let result = hub.shared.block_on(
                args,
                trace.run(hub.hub.call_tool(name, arguments.as_ref(), &opts)),
            )??;
            write_out(out_json, c_string(result.json())?);
            Ok(())
        })
    }
}

/// Which pin operation [`pin_operation`] runs.
#[derive(Clone, Copy)]
enum PinOp {
    List,
    Approve,
    Revoke,
}

/// The shared body of mcpmux_policy_pins_json(),
/// mcpmux_policy_approve_tools() and mcpmux_policy_revoke_pins().
///
/// # Safety
/// As for those functions.
#[allow(clippy::too_many_arguments)]
unsafe fn pin_operation(
    args: Args,
    op: PinOp,
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    server: *const c_char,
    tools_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let policy = policy_ref(args, policy)?;
            let hub = hub_ref(args, hub)?;
            let server = args.opt_str("server", server)?;
            let tools = match args.opt_json("tools_json", tools_json)? {
                None => Vec::new(),
                Some(v) => {
                    crate::util::string_list(args, "tools_json", &v, "a JSON array of tool names")?
                }
            };
            args.non_null("out_json", out_json)?;
            let pairs = |done: Vec<(String, String)>| -> Vec<serde_json::Value> {
                done.into_iter()
                    .map(|(s, t)| serde_json::json!({"server": s, "tool": t}))
                    .collect()
            };
            let p = &policy.policy;
            let text = match op {
                PinOp::List => json_string(&p.pin_report(&hub.hub, server)?)?,
                PinOp::Approve => json_string(&pairs(p.approve_tools(&hub.hub, server, &tools)?))?,
                PinOp::Revoke => json_string(&pairs(p.revoke_pins(&hub.hub, server, &tools)?))?,
            };
            write_out(out_json, text);
            Ok(())
        })
    }
}

/// Writes each pinned tool's status to `*out_json` (policies with
/// `pin_tools`, docs/policy.md): a JSON array of `{"server", "tool",
/// "status" ("pinned", "changed", "new", "removed"), "changes"? ({"fields",
/// "description"? {"before", "after"}, "added"?, "removed"?, "changed"?}),
/// "pinned_at"?}`, of the server `server` (nullable: every pinned server).
/// For the operator: `changes` quotes the server's new text. Does not
/// block (reads the pin store).
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `policy` is a live policy; `hub` the live hub it was made for; `server`
/// NULL or a NUL-terminated string; `out_json` and `err` are NULL or valid
/// for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_pins_json(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_pins_json",
    };
    // SAFETY: forwarded.
    unsafe {
        pin_operation(
            args,
            PinOp::List,
            policy,
            hub,
            server,
            std::ptr::null(),
            out_json,
            err,
        )
    }
}

/// Approves the tool definitions the hub's servers list now: of the tools
/// in `tools_json` (nullable: a JSON array of the server's own tool names;
/// NULL or `[]`: all its tools) of the server `server` (nullable: every
/// pinned server). A tool quarantined with TOOL_CHANGED becomes callable.
/// Writes `[{"server", "tool"}]` of the tools approved to `*out_json`.
/// UNKNOWN_SERVER or UNKNOWN_TOOL for a name the hub does not have. Does
/// not block (writes the pin store).
///
/// # Safety
/// As for mcpmux_policy_pins_json(); `tools_json` is NULL or a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_approve_tools(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    server: *const c_char,
    tools_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_approve_tools",
    };
    // SAFETY: forwarded.
    unsafe {
        pin_operation(
            args,
            PinOp::Approve,
            policy,
            hub,
            server,
            tools_json,
            out_json,
            err,
        )
    }
}

/// Forgets pins, chosen as mcpmux_policy_approve_tools() chooses: a server
/// without pins is pinned again as it is when next seen; a tool without a
/// pin, on a server with pins, is quarantined as new. Writes `[{"server",
/// "tool"}]` of the pins removed to `*out_json`. Does not block.
///
/// # Safety
/// As for mcpmux_policy_approve_tools().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_policy_revoke_pins(
    policy: *const mcpmux_policy,
    hub: *const mcpmux_hub,
    server: *const c_char,
    tools_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_policy_revoke_pins",
    };
    // SAFETY: forwarded.
    unsafe {
        pin_operation(
            args,
            PinOp::Revoke,
            policy,
            hub,
            server,
            tools_json,
            out_json,
            err,
        )
    }
}
