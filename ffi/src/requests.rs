//! Requests a server sends to the host, answered from C
//! (mcpmux_hub_connect_with_requests()): one [`mcpmux_request_fn`] for
//! `elicitation/create` and `sampling/createMessage`, answered through
//! [`mcpmux_request_reply_ok`]; and the roots shared with servers
//! (`"roots"` in a connect's `options_json`, mcpmux_hub_set_roots(),
//! mcpmux_hub_roots()). Core decides what is declared and bounds a slow
//! answer by the server's `timeout_seconds`; this file only bridges the
//! callback to a blocking engine thread.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};

use mcpmux_core::client::{RequestHandler, ServerRequest};
use mcpmux_core::{ClientHandlers, ConfigSource, Error};
use serde_json::{Map, Value};

use crate::engine::mcpmux_engine;
use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{connect_options, connect_with_gate, hub_ref, mcpmux_hub};
use crate::util::{guard_status, json_string, panic_error, string_list, write_out, Args};

/// Answers one request a server sent to the host: `method` is
/// `"elicitation/create"` or `"sampling/createMessage"`, `params_json` the
/// request's params as the server sent them, `server` the configured name
/// of the server that asked.
///
/// It answers before it returns by calling mcpmux_request_reply_ok() with the
/// result the specification defines (`{"action": "accept", "content":
/// {...}}`, a `CreateMessageResult`), or mcpmux_request_reply_error(); no
/// call answers the server with an error. The return value is ignored.
/// `params_json` and `reply` belong to mcpmux and are valid only until the
/// callback returns.
///
/// Thread: an engine thread set aside for blocking work (never the caller
/// of a blocking mcpmux function), so it may wait for a person; several may
/// run at once. Blocking mcpmux functions fail there with INVALID_INPUT.
/// An answer slower than the server's `timeout_seconds` is answered for it
/// with an error. `user_data` is passed as given to
/// mcpmux_hub_connect_with_requests() and must stay valid until
/// mcpmux_hub_free() returned, which waits for running callbacks.
#[allow(non_camel_case_types)]
pub type mcpmux_request_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        server: *const c_char,
        method: *const c_char,
        params_json: *const c_char,
        reply: *mut mcpmux_request_reply,
    ) -> c_int,
>;

thread_local! {
    /// Set while a request callback runs on this thread.
    static IN_REQUEST_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// The answer slot of one mcpmux_request_fn call. Owned by mcpmux; valid
/// only during that call.
pub struct mcpmux_request_reply {
    outcome: Option<Result<Value, String>>,
}

type Callback = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    *const c_char,
    *const c_char,
    *mut mcpmux_request_reply,
) -> c_int;

/// The callback and its data, closed by mcpmux_hub_free(): no call starts
/// after that, and the free waits for those running.
pub(crate) struct RequestGate {
    callback: Callback,
    user_data: *mut c_void,
    /// `(open, callbacks running)`.
    state: Mutex<(bool, usize)>,
    idle: Condvar,
}

// SAFETY: the C caller promises (mcpmux_request_fn) that `user_data` may be
// used from engine threads; the function pointer is plain code.
unsafe impl Send for RequestGate {}
// SAFETY: as above; the state is behind a mutex.
unsafe impl Sync for RequestGate {}

impl RequestGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, (bool, usize)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs the callback for one request (on a blocking thread).
    fn call(&self, request: &ServerRequest) -> Result<Value, String> {
        {
            let mut state = self.lock();
            if !state.0 {
                return Err("the hub was freed".into());
            }
            state.1 += 1;
        }
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let text =
                |s: &str| CString::new(s).map_err(|_| "a NUL byte in the request".to_owned());
            let server = text(&request.server)?;
            let method = text(&request.method)?;
            let params = text(&request.params.to_string())?;
            let mut reply = mcpmux_request_reply { outcome: None };
            IN_REQUEST_CALLBACK.with(|f| f.set(true));
            // SAFETY: the host's callback with its own data; the strings and
            // `reply` live until it returns.
            unsafe {
                (self.callback)(
                    self.user_data,
                    server.as_ptr(),
                    method.as_ptr(),
                    params.as_ptr(),
                    &mut reply,
                )
            };
            IN_REQUEST_CALLBACK.with(|f| f.set(false));
            reply.outcome.unwrap_or_else(|| {
                Err("the callback returned without mcpmux_request_reply_ok()".into())
            })
        }))
        .unwrap_or_else(|p| Err(panic_error("mcpmux request callback", p.as_ref()).to_string()));
        let mut state = self.lock();
        state.1 -= 1;
        if state.1 == 0 {
            self.idle.notify_all();
        }
        outcome
    }

    /// No more calls; waits for the running ones (but the one it is
    /// called from, when a callback frees its hub).
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.0 = false;
        let own = usize::from(IN_REQUEST_CALLBACK.with(Cell::get));
        while state.1 > own {
            state = self.idle.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn handler(self: &Arc<Self>) -> RequestHandler {
        let gate = self.clone();
        Arc::new(move |request: ServerRequest| {
            let gate = gate.clone();
            Box::pin(async move {
                let method = request.method.clone();
                let answer = tokio::task::spawn_blocking(move || gate.call(&request))
                    .await
                    .map_err(|e| Error::Internal(format!("{method} callback: {e}")))?;
                answer.map_err(|message| Error::ServerError {
                    code: -32603,
                    message: format!("the host's {method} handler failed: {message}"),
                    data: None,
                })
            })
        })
    }
}

/// The request kinds `options_json` names under `"requests"` (default: both).
fn kinds(args: Args, options: &Map<String, Value>) -> Result<Vec<String>, Error> {
    let Some(value) = options.get("requests") else {
        return Ok(vec!["elicitation".into(), "sampling".into()]);
    };
    let list = value.as_array().ok_or_else(|| {
        args.invalid(
            "options_json",
            "option 'requests' must be an array of strings",
        )
    })?;
    list.iter()
        .map(|k| match k.as_str() {
            Some(k @ ("elicitation" | "sampling")) => Ok(k.to_owned()),
            _ => Err(args.invalid(
                "options_json",
                format!("option 'requests' has {k}; known: \"elicitation\", \"sampling\""),
            )),
        })
        .collect()
}

/// Like mcpmux_hub_connect_with_options(), with `on_request` answering the
/// servers' requests to the host (see mcpmux_request_fn). `options_json`
/// (nullable) takes, besides the startup timeout, `"requests"`: which
/// requests `on_request` answers, `["elicitation", "sampling"]` by default;
/// only those capabilities are declared to servers. And `"roots"`: an
/// array of paths or `file://` URIs shared with servers (declares `roots`;
/// mcpmux_hub_set_roots() changes them). `on_request` may be NULL (then
/// nothing but roots is declared). Blocking.
///
/// # Safety
/// As for mcpmux_hub_connect_with_options(); `on_request` is NULL or a
/// function safe to call from any thread with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_connect_with_requests(
    engine: *mut mcpmux_engine,
    config_text: *const c_char,
    options_json: *const c_char,
    on_request: mcpmux_request_fn,
    user_data: *mut c_void,
    out: *mut *mut mcpmux_hub,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_connect_with_requests",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("engine", engine)?;
            let text = args.str("config_text", config_text)?;
            let mut raw = args
                .opt_object("options_json", options_json)?
                .unwrap_or_default();
            let kinds = kinds(args, &raw)?;
            raw.remove("requests");
            let mut options = connect_options(args, Some(raw), &["requests"])?;
            args.non_null("out", out)?;
            let gate = on_request.map(|callback| {
                Arc::new(RequestGate {
                    callback,
                    user_data,
                    state: Mutex::new((true, 0)),
                    idle: Condvar::new(),
                })
            });
            if let Some(gate) = &gate {
                let mut handlers = ClientHandlers::default();
                for kind in &kinds {
                    match kind.as_str() {
                        "elicitation" => handlers.elicitation = Some(gate.handler()),
                        _ => handlers.sampling = Some(gate.handler()),
                    }
                }
                options.handlers = handlers;
            }
            let on_free =
                gate.map(|gate| Box::new(move || gate.close()) as Box<dyn FnOnce() + Send + Sync>);
            let hub = connect_with_gate(
                args,
                &*engine,
                crate::util::load_config(ConfigSource::Text(text.to_owned())),
                options,
                on_free,
            )?;
            write_out(out, hub);
            Ok(())
        })
    }
}

/// Answers a request callback with its result: `result_json` is a JSON
/// object (copied). Text that is not a JSON object is INVALID_INPUT and
/// leaves the reply unanswered. Only inside the callback that received
/// `reply`; the last answer wins.
///
/// # Safety
/// `reply` is the reply of the running callback; `result_json` a
/// NUL-terminated string; `err` NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_request_reply_ok(
    reply: *mut mcpmux_request_reply,
    result_json: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_request_reply_ok",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("reply", reply)?;
            let value = args.json("result_json", result_json)?;
            if !value.is_object() {
                return Err(args.invalid("result_json", "is not a JSON object"));
            }
            (*reply).outcome = Some(Ok(value));
            Ok(())
        })
    }
}

/// Answers a request callback with a failure: the server gets a JSON-RPC
/// error carrying `message` (copied). Only inside the callback that
/// received `reply`; the last answer wins.
///
/// # Safety
/// As for mcpmux_request_reply_ok(), with `message` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_request_reply_error(
    reply: *mut mcpmux_request_reply,
    message: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_request_reply_error",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("reply", reply)?;
            let message = args.str("message", message)?;
            (*reply).outcome = Some(Err(message.to_owned()));
            Ok(())
        })
    }
}

/// Replaces the roots shared with servers: `roots_json` is a JSON array of
/// paths or `file://` URIs. Every connected server is told
/// (`notifications/roots/list_changed`). A hub connected without `"roots"`
/// is INVALID_INPUT; so is a bad root, which changes nothing. Does not
/// block; any thread, callbacks included.
///
/// # Safety
/// `hub` is a live hub; `roots_json` a NUL-terminated string; `err` NULL
/// or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_set_roots(
    hub: *const mcpmux_hub,
    roots_json: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_set_roots",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let roots = string_list(
                args,
                "roots_json",
                &args.json("roots_json", roots_json)?,
                "a JSON array of paths or file:// URIs",
            )?;
            hub.hub.set_roots(&roots)
        })
    }
}

/// Writes the roots shared with servers now to `*out_json`: a JSON array
/// of `{"uri", "name"}` (empty for a hub connected without roots), owned by
/// the caller (mcpmux_string_free()). Does not block; any thread.
///
/// # Safety
/// `hub` is a live hub; `out_json` and `err` are NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_roots(
    hub: *const mcpmux_hub,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_roots",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            args.non_null("out_json", out_json)?;
            write_out(out_json, json_string(&hub.hub.roots())?);
            Ok(())
        })
    }
}
