//! Review sessions (`docs/sessions.md#review-sessions`):
//! [`mcpmux_sessions`] (a configuration and a host reviewer), the four verbs
//! `begin` / `wait` / `reply` / `end` (blocking, and `_async` variants with a
//! callback), and the `host` reviewer as a C function pointer
//! ([`mcpmux_host_fn`], answered through [`mcpmux_host_reply`]).
//!
//! Everything is JSON in, JSON out, exactly as `mcpmux_sessions`
//! takes and gives it; this file only converts arguments, maps errors and
//! bridges threads. Rounds run as tasks on the engine's runtime
//! (`Runner::InProcess`): they go on after a verb returned, die with the
//! engine (or the process), and a later `wait` (from any process) resumes a
//! round whose runner died.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};

use ::mcpmux_sessions::llm::host::{HostCallback, HostProvider};
use ::mcpmux_sessions::{Runner, SessionContext};
use futures::FutureExt;
use mcpmux_core::{ConfigSource, Error};
use serde_json::Value;

use crate::call::mcpmux_callback;
use crate::engine::{mcpmux_engine, Shared, Work};
use crate::error::{mcpmux_error, mcpmux_status};
use crate::util::{c_string, guard_status, guard_value, json_string, panic_error, write_out, Args};

thread_local! {
    /// Set while a host callback runs on this thread.
    static IN_HOST_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// The `host` reviewer: called once per model turn of a round whose
/// reviewer is "host", with the completion request as JSON text
/// (`{"model", "effort", "system", "messages": [{"role", "text",
/// "tool_calls", "tool_results"}], "tools": [{"name", "description",
/// "input_schema"}], "max_tokens"}`).
///
/// It answers synchronously, before it returns, by calling exactly one of
/// mcpmux_host_reply_ok(), mcpmux_host_reply_text() or
/// mcpmux_host_reply_error() on `reply` (the last call wins; no call at all
/// fails the round). `request_json` and `reply` belong to mcpmux and are
/// valid only until the callback returns: do not free them or keep them.
///
/// Thread: an engine thread set aside for blocking work (never the thread
/// that called a session verb), so the callback may take as long as it
/// needs (e.g. a network request to a model) without stalling the engine.
/// Several rounds (of different sessions) may call it at the same time from
/// different threads. Blocking mcpmux functions fail there with
/// INVALID_INPUT. `user_data` is passed as given to mcpmux_sessions_new().
#[allow(non_camel_case_types)]
pub type mcpmux_host_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        request_json: *const c_char,
        reply: *mut mcpmux_host_reply,
    ),
>;

/// The answer slot of one host callback (see mcpmux_host_fn). Owned by
/// mcpmux; valid only during the callback it was passed to.
pub struct mcpmux_host_reply {
    outcome: Option<Result<Value, Error>>,
}

/// The host callback and its data, closed by mcpmux_sessions_free().
struct HostGate {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char, *mut mcpmux_host_reply),
    user_data: *mut c_void,
    /// `(open, callbacks running)`.
    state: Mutex<(bool, usize)>,
    idle: Condvar,
}

// SAFETY: the C caller promises (see mcpmux_sessions_new) that `user_data`
// may be used from engine threads; the function pointer is plain code.
unsafe impl Send for HostGate {}
// SAFETY: as above; the state is behind a mutex.
unsafe impl Sync for HostGate {}

impl HostGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, (bool, usize)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs the C callback for one request (on a blocking thread).
    fn call(&self, request: &str) -> Result<Value, Error> {
        {
            let mut state = self.lock();
            if !state.0 {
                return Err(Error::ProviderError(
                    "host: the mcpmux_sessions handle of this round was freed".into(),
                ));
            }
            state.1 += 1;
        }
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let request = CString::new(request)
                .map_err(|_| Error::Internal("host: the request contains a NUL byte".into()))?;
            let mut reply = mcpmux_host_reply { outcome: None };
            IN_HOST_CALLBACK.with(|f| f.set(true));
            // SAFETY: the caller's function and data; `request` and `reply`
            // live until it returns.
            unsafe { (self.cb)(self.user_data, request.as_ptr(), &mut reply) };
            IN_HOST_CALLBACK.with(|f| f.set(false));
            reply.outcome.unwrap_or_else(|| {
                Err(Error::ProviderError(
                    "host: the callback returned without answering (mcpmux_host_reply_ok, \
                     mcpmux_host_reply_text or mcpmux_host_reply_error)"
                        .into(),
                ))
            })
        }))
        .unwrap_or_else(|p| Err(panic_error("mcpmux host callback", p.as_ref())));
        let mut state = self.lock();
        state.1 -= 1;
        if state.1 == 0 {
            self.idle.notify_all();
        }
        outcome
    }

    /// No more calls; waits for the running ones (unless called from one).
    fn close(&self) {
        let mut state = self.lock();
        state.0 = false;
        let own = usize::from(IN_HOST_CALLBACK.with(Cell::get));
        while state.1 > own {
            state = self.idle.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// The engine callback of the host provider: the C function on a blocking
/// thread of the runtime.
fn host_callback(gate: Arc<HostGate>) -> HostCallback {
    Arc::new(move |request: Value| {
        let gate = gate.clone();
        Box::pin(async move {
            let text = request.to_string();
            tokio::task::spawn_blocking(move || gate.call(&text))
                .await
                .unwrap_or_else(|e| {
                    Err(Error::ProviderError(format!(
                        "host: the callback did not finish: {e}"
                    )))
                })
        })
    })
}

/// A session context: the configuration whose servers and `[session]`
/// table review sessions use, and the host reviewer. Created by
/// mcpmux_sessions_new(), owned by the caller, freed with
/// mcpmux_sessions_free(). Any thread may use it, several at once.
pub struct mcpmux_sessions {
    ctx: Arc<SessionContext>,
    shared: Arc<Shared>,
    gate: Option<Arc<HostGate>>,
}

/// Creates a session context on `engine`.
///
/// `config_text` (nullable) is a TOML or JSON configuration (servers whose
/// tools the reviewer may call, and a `[session]` table); `config_path`
/// (nullable) names a file with one instead. At most one may be given;
/// with neither, sessions run without tools and with built-in defaults. A
/// malformed configuration is CONFIG_INVALID. Servers are started by each
/// round, not here. Does not block.
///
/// `host` (nullable) is the `host` reviewer (see mcpmux_host_fn), used by
/// sessions begun with `"reviewer": "host"` (REVIEWER_NOT_FOUND without
/// one). `host_user_data` is passed to it as is; it must stay usable from
/// engine threads until mcpmux_sessions_free() returned.
///
/// On success `*out` receives the context, owned by the caller, freed with
/// mcpmux_sessions_free(). It runs on `engine`, which must outlive it.
///
/// # Safety
/// `engine` is a live engine; `config_text` and `config_path` are NULL or
/// NUL-terminated strings; `out` and `err` are NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_sessions_new(
    engine: *mut mcpmux_engine,
    config_text: *const c_char,
    config_path: *const c_char,
    host: mcpmux_host_fn,
    host_user_data: *mut c_void,
    out: *mut *mut mcpmux_sessions,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_sessions_new",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("engine", engine)?;
            let text = args.opt_str("config_text", config_text)?;
            let path = args.opt_str("config_path", config_path)?;
            args.non_null("out", out)?;
            let config = match (text, path) {
                (Some(_), Some(_)) => {
                    return Err(args.invalid(
                        "config_path",
                        "must be NULL when config_text is given (pass one of them)",
                    ))
                }
                (Some(text), None) => {
                    Some(crate::util::load_config(ConfigSource::Text(text.into()))?)
                }
                (None, Some(path)) => {
                    Some(crate::util::load_config(ConfigSource::Path(path.into()))?)
                }
                (None, None) => None,
            };
            let gate = host.map(|cb| {
                Arc::new(HostGate {
                    cb,
                    user_data: host_user_data,
                    state: Mutex::new((true, 0)),
                    idle: Condvar::new(),
                })
            });
            let host = gate.clone().map(|g| {
                Arc::new(HostProvider::new(host_callback(g)))
                    as ::mcpmux_sessions::llm::provider::SharedProvider
            });
            let ctx = Arc::new(SessionContext {
                config,
                host,
                runner: Runner::InProcess,
            });
            let sessions = Box::new(mcpmux_sessions {
                ctx,
                shared: (*engine).shared().clone(),
                gate,
            });
            write_out(out, Box::into_raw(sessions));
            Ok(())
        })
    }
}

/// Frees a session context. Its host callback is never called again: this
/// waits until the calls of it that are running have returned (except the
/// one this is called from, when called inside the host callback). Rounds
/// still running on the engine go on, but one that needs the host reviewer
/// fails (PROVIDER_ERROR); sessions on disk stay valid for a new context.
/// Verbs in flight on other threads must have returned. NULL is a no-op.
/// Any thread.
///
/// # Safety
/// `sessions` is NULL or a context that was not freed; it must not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_sessions_free(sessions: *mut mcpmux_sessions) {
    guard_value((), || {
        if !sessions.is_null() {
            // SAFETY: the caller gives back ownership of the Box.
            let sessions = unsafe { Box::from_raw(sessions) };
            if let Some(gate) = &sessions.gate {
                gate.close();
            }
            drop(sessions);
        }
    })
}

/// Answers a host callback with a completion: `completion_json` is a JSON
/// object `{"text": "...", "tool_calls": [{"id", "name", "arguments"}]}`
/// (tool calls optional; `arguments` an object or JSON text) or a JSON
/// string (the answer text). The text is copied. Text that is not JSON is
/// INVALID_INPUT and leaves the reply unanswered. Only inside the callback
/// that received `reply`.
///
/// # Safety
/// `reply` is the reply of the running callback; `completion_json` a
/// NUL-terminated string; `err` NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_host_reply_ok(
    reply: *mut mcpmux_host_reply,
    completion_json: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_host_reply_ok",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("reply", reply)?;
            let text = args.str("completion_json", completion_json)?;
            let value: Value = serde_json::from_str(text)
                .map_err(|e| args.invalid("completion_json", format!("is not valid JSON: {e}")))?;
            (*reply).outcome = Some(Ok(value));
            Ok(())
        })
    }
}

/// Answers a host callback with plain answer text (no tool calls): the
/// same as mcpmux_host_reply_ok() with a JSON string. The text is copied.
/// Only inside the callback that received `reply`.
///
/// # Safety
/// As for mcpmux_host_reply_ok(), with `text` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_host_reply_text(
    reply: *mut mcpmux_host_reply,
    text: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_host_reply_text",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("reply", reply)?;
            let text = args.str("text", text)?;
            (*reply).outcome = Some(Ok(Value::String(text.to_owned())));
            Ok(())
        })
    }
}

/// Answers a host callback with a failure: the model turn fails with
/// `message` (copied), and so does the round (`wait` reports status
/// "failed" with the message in `error`). Only inside the callback that
/// received `reply`.
///
/// # Safety
/// As for mcpmux_host_reply_ok(), with `message` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_host_reply_error(
    reply: *mut mcpmux_host_reply,
    message: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_host_reply_error",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("reply", reply)?;
            let message = args.str("message", message)?;
            (*reply).outcome = Some(Err(Error::ProviderError(message.to_owned())));
            Ok(())
        })
    }
}

/// One of the four verbs: the name `session::call` dispatches on.
#[derive(Clone, Copy)]
enum Verb {
    Begin,
    Wait,
    Reply,
    End,
}

impl Verb {
    /// Runs the verb (on the engine's runtime) through `session::call`.
    async fn run(self, ctx: Arc<SessionContext>, params: Value) -> Result<Value, Error> {
        let name = match self {
            Verb::Begin => "begin",
            Verb::Wait => "wait",
            Verb::Reply => "reply",
            Verb::End => "end",
        };
        ::mcpmux_sessions::call(&ctx, name, &params).await
    }
}

/// The checked context behind a pointer.
///
/// # Safety
/// `sessions` is NULL or a live context.
unsafe fn sessions_ref<'a>(
    args: Args,
    sessions: *const mcpmux_sessions,
) -> Result<&'a mcpmux_sessions, Error> {
    args.non_null("sessions", sessions)?;
    // SAFETY: non-NULL and live by the caller's promise.
    Ok(unsafe { &*sessions })
}

/// Reads `params_json`: a required JSON object.
///
/// # Safety
/// `params_json` is NULL or a NUL-terminated string.
unsafe fn params(args: Args, params_json: *const c_char) -> Result<Value, Error> {
    // SAFETY: forwarded.
    let text = unsafe { args.str("params_json", params_json) }?;
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(args.invalid("params_json", "must be a JSON object")),
        Err(e) => Err(args.invalid("params_json", format!("is not valid JSON: {e}"))),
    }
}

/// The body of a blocking verb.
///
/// # Safety
/// The caller's pointers as in the exported functions.
unsafe fn blocking(
    args: Args,
    verb: Verb,
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let sessions = sessions_ref(args, sessions)?;
            let params = params(args, params_json)?;
            args.non_null("out_json", out_json)?;
            let ctx = sessions.ctx.clone();
            let result = sessions.shared.block_on(args, verb.run(ctx, params))??;
            write_out(out_json, json_string(&result)?);
            Ok(())
        })
    }
}

/// The user's callback, delivered exactly once: with the outcome, or with
/// CANCELLED when the task is dropped unrun (engine shut down).
struct Delivery {
    cb: unsafe extern "C" fn(*mut c_void, *mut c_char, *mut mcpmux_error),
    user_data: *mut c_void,
    done: bool,
}

// SAFETY: the C caller promises that `user_data` may be used from engine
// threads; the function pointer is plain code.
unsafe impl Send for Delivery {}

impl Delivery {
    fn deliver(&mut self, outcome: Result<Value, Error>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let text = outcome.and_then(|v| {
            serde_json::to_string(&v)
                .map_err(|e| Error::Internal(format!("cannot encode a result as JSON: {e}")))
        });
        let (result, error) = match text.and_then(|t| c_string(&t)) {
            Ok(json) => (json, std::ptr::null_mut()),
            Err(e) => (std::ptr::null_mut(), mcpmux_error::from_core(&e).into_raw()),
        };
        // SAFETY: the caller's function and data; it takes ownership of both.
        unsafe { (self.cb)(self.user_data, result, error) };
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.deliver(Err(Error::Cancelled(
            "the engine stopped before the session call finished".into(),
        )));
    }
}

/// The body of an asynchronous verb.
///
/// # Safety
/// The caller's pointers as in the exported functions.
unsafe fn asynchronous(
    args: Args,
    verb: Verb,
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    cb: mcpmux_callback,
    user_data: *mut c_void,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let sessions = sessions_ref(args, sessions)?;
            let params = params(args, params_json)?;
            let Some(cb) = cb else {
                return Err(args.invalid("cb", "is NULL"));
            };
            let work: Work = sessions.shared.begin()?;
            let mut delivery = Delivery {
                cb,
                user_data,
                done: false,
            };
            let ctx = sessions.ctx.clone();
            let func = args.func;
            sessions.shared.handle().spawn(async move {
                let outcome = AssertUnwindSafe(verb.run(ctx, params))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|p| Err(panic_error(func, p.as_ref())));
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| delivery.deliver(outcome)));
                drop(work);
            });
            Ok(())
        })
    }
}

/// Begins a review session and its round 1, and returns at once while the
/// round runs on the engine. Blocking (briefly: it checks the input,
/// renders the prompt and writes the session directory).
///
/// `params_json`: a JSON object `{"skill", "mode"?, "input", "working_dir",
/// "model"?, "effort"?, "timeout_seconds"?, "reviewer"?, "max_turns"?,
/// "max_tool_calls"?, "call_timeout_seconds"?, "max_output_bytes"?,
/// "scope"?}` (docs/sessions.md#review-sessions).
/// On success `*out_json` receives `{"session_dir", "round": 1, "status":
/// "running"}` (plus `"analysis_prompt"` for peer skills), owned by the
/// caller (free it with mcpmux_string_free()). Errors: INVALID_INPUT (a
/// bad or missing parameter, a placeholder missing from the input),
/// UNKNOWN_SKILL, REVIEWER_NOT_FOUND (e.g. "host" without a host callback),
/// CONFIG_INVALID.
///
/// # Safety
/// `sessions` is a live context; `params_json` a NUL-terminated string;
/// `out_json` and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_begin(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_begin",
    };
    // SAFETY: forwarded.
    unsafe { blocking(args, Verb::Begin, sessions, params_json, out_json, err) }
}

/// Waits up to `max_wait_seconds` for the current round of a session.
/// Blocking (at most that long; default 50 s or `MCPMUX_WAIT_DEFAULT_S`).
///
/// `params_json`: `{"session_dir", "max_wait_seconds"?}`. On success
/// `*out_json` receives `{"status" ("running", "completed", "failed",
/// "stalled", "timeout"), "round", "elapsed_seconds", "thread_id",
/// "review": {"verdict", "blocks"}, "activities", "next", "next_reason",
/// ...}`, owned by the caller (free it with mcpmux_string_free()). A round
/// whose runner died (another process, a freed engine) is resumed here.
/// Errors: INVALID_SESSION (not a readable session directory),
/// INVALID_INPUT.
///
/// # Safety
/// As for mcpmux_session_begin().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_wait(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_wait",
    };
    // SAFETY: forwarded.
    unsafe { blocking(args, Verb::Wait, sessions, params_json, out_json, err) }
}

/// Starts the next round of a session on the same reviewer thread and
/// returns at once. Blocking (briefly).
///
/// `params_json`: `{"session_dir", "input", "model"?, "effort"?}`. On
/// success `*out_json` receives `{"status": "started", "session_dir",
/// "round", "thread_id"}`, owned by the caller (free it with
/// mcpmux_string_free()). Errors: ROUND_STILL_RUNNING (the current round
/// has not finished), INVALID_SESSION, INVALID_INPUT.
///
/// # Safety
/// As for mcpmux_session_begin().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_reply(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_reply",
    };
    // SAFETY: forwarded.
    unsafe { blocking(args, Verb::Reply, sessions, params_json, out_json, err) }
}

/// Ends a session: finalizes it (writes `meta.json`) and stops a round
/// that still runs. Blocking.
///
/// `params_json`: `{"session_dir", "outcome"?}` (`"consensus"` or
/// `"stalemate"`, for peer skills). On success `*out_json` receives
/// `{"status": "ended", "session_dir", "finalized", "verdict"?, "error"?}`,
/// owned by the caller (free it with mcpmux_string_free()). Errors:
/// INVALID_SESSION, INVALID_INPUT.
///
/// # Safety
/// As for mcpmux_session_begin().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_end(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_end",
    };
    // SAFETY: forwarded.
    unsafe { blocking(args, Verb::End, sessions, params_json, out_json, err) }
}

/// mcpmux_session_begin() as an asynchronous call: returns at once;
/// `cb(user_data, result_json, error)` is called exactly once, on an engine
/// thread, with the result or the error (see mcpmux_callback: the callback
/// owns both). `params_json` is checked before this returns: a bad argument
/// (or a shut-down engine) is reported by the returned status and `*err`,
/// and then the callback is never called. Does not block; any thread,
/// callbacks included.
///
/// # Safety
/// `sessions` is a live context; `params_json` a NUL-terminated string;
/// `user_data` usable from engine threads until the callback ran; `err`
/// NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_begin_async(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    cb: mcpmux_callback,
    user_data: *mut c_void,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_begin_async",
    };
    // SAFETY: forwarded.
    unsafe { asynchronous(args, Verb::Begin, sessions, params_json, cb, user_data, err) }
}

/// mcpmux_session_wait() as an asynchronous call (see
/// mcpmux_session_begin_async()).
///
/// # Safety
/// As for mcpmux_session_begin_async().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_wait_async(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    cb: mcpmux_callback,
    user_data: *mut c_void,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_wait_async",
    };
    // SAFETY: forwarded.
    unsafe { asynchronous(args, Verb::Wait, sessions, params_json, cb, user_data, err) }
}

/// mcpmux_session_reply() as an asynchronous call (see
/// mcpmux_session_begin_async()).
///
/// # Safety
/// As for mcpmux_session_begin_async().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_reply_async(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    cb: mcpmux_callback,
    user_data: *mut c_void,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_reply_async",
    };
    // SAFETY: forwarded.
    unsafe { asynchronous(args, Verb::Reply, sessions, params_json, cb, user_data, err) }
}

/// mcpmux_session_end() as an asynchronous call (see
/// mcpmux_session_begin_async()).
///
/// # Safety
/// As for mcpmux_session_begin_async().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_session_end_async(
    sessions: *const mcpmux_sessions,
    params_json: *const c_char,
    cb: mcpmux_callback,
    user_data: *mut c_void,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_session_end_async",
    };
    // SAFETY: forwarded.
    unsafe { asynchronous(args, Verb::End, sessions, params_json, cb, user_data, err) }
}
