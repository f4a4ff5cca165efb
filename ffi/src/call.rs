//! Asynchronous tool calls: [`mcpmux_hub_call_tool_async`], whose callback is
//! called exactly once on an engine thread, and [`mcpmux_call`] to cancel.

use std::ffi::{c_char, c_void};
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

use futures::FutureExt;
use mcpmux_core::{Error, ToolResult};
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::engine::Work;
use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{call_options, hub_ref, mcpmux_hub, tool_arguments_raw, CallTrace};
use crate::util::{c_string, guard_status, guard_value, panic_error, write_out, Args};

/// The callback of an asynchronous call. Called exactly once, on an engine
/// thread (never on the thread that started the call), with either a
/// result (`result_json` not NULL, `error` NULL) or an error (`result_json`
/// NULL, `error` not NULL). The callback owns both: free `result_json` with
/// mcpmux_string_free() and `error` with mcpmux_error_free(). It should
/// return quickly (it holds an engine thread); it may start other
/// asynchronous calls, cancel calls and free hubs and calls, but blocking
/// functions fail there with INVALID_INPUT and mcpmux_engine_free() is
/// refused.
#[allow(non_camel_case_types)]
pub type mcpmux_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        result_json: *mut c_char,
        error: *mut mcpmux_error,
    ),
>;

/// A handle on one asynchronous call, to cancel it. Created by
/// mcpmux_hub_call_tool_async() when `out_call` is not NULL, owned by the
/// caller, freed with mcpmux_call_free() (freeing does not cancel). It does
/// not depend on the hub or engine: it may be cancelled or freed after
/// them. Any thread may use it, callbacks included.
pub struct mcpmux_call {
    cancel: Mutex<Option<oneshot::Sender<()>>>,
}

/// The user's callback and its data, delivered exactly once: by
/// [`Delivery::deliver`], or with CANCELLED when the task is dropped unrun.
struct Delivery {
    cb: unsafe extern "C" fn(*mut c_void, *mut c_char, *mut mcpmux_error),
    user_data: *mut c_void,
    done: bool,
}

// SAFETY: the C caller promises (in the header) that `user_data` may be used
// from engine threads; the function pointer is plain code.
unsafe impl Send for Delivery {}

impl Delivery {
    fn deliver(&mut self, outcome: Result<ToolResult, Error>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let (result, error) = match outcome.and_then(|r| c_string(r.json())) {
            Ok(json) => (json, std::ptr::null_mut()),
            Err(e) => (std::ptr::null_mut(), mcpmux_error::from_core(&e).into_raw()),
        };
        // SAFETY: the function pointer and user data are the caller's; the
        // callback takes ownership of `result` and `error`.
        unsafe { (self.cb)(self.user_data, result, error) };
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.deliver(Err(Error::Cancelled(
            "the engine stopped before the call finished".into(),
        )));
    }
}

/// Starts calling the tool `name` and returns at once; `cb(user_data,
/// result_json, error)` is called exactly once when the call ends, on an
/// engine thread (see mcpmux_callback). Does not block; any thread,
/// callbacks included.
///
/// `args_json` and `options_json` are as for mcpmux_hub_call_tool(). They
/// are checked before this returns: a bad argument (or a shut-down engine)
/// is reported by the returned status and `*err`, and then the callback is
/// never called. Once this returned MCPMUX_STATUS_OK the callback will be
/// called, with a result (the CallToolResult JSON, `isError` included) or
/// an error (UNKNOWN_TOOL, TIMEOUT, CANCELLED, TRANSPORT_CLOSED, ...).
///
/// `out_call` (nullable): on success receives a handle to cancel the call
/// with mcpmux_call_cancel(), owned by the caller and freed with
/// mcpmux_call_free(). `user_data` is passed to `cb` as is; it must be
/// usable from engine threads until the callback ran. The hub may be freed
/// while the call runs.
///
/// # Safety
/// `hub` is a live hub; `name` a NUL-terminated string; `args_json` and
/// `options_json` NULL or NUL-terminated strings; `out_call` and `err` are
/// NULL or valid for one pointer write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mcpmux_hub_call_tool_async(
    hub: *const mcpmux_hub,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    cb: mcpmux_callback,
    user_data: *mut c_void,
    out_call: *mut *mut mcpmux_call,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_call_tool_async",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let name = args.str("name", name)?.to_owned();
            let arguments = tool_arguments_raw(args, args_json)?.map(RawValue::to_owned);
            let options = args.opt_object("options_json", options_json)?;
            let trace = CallTrace::of(options.as_ref());
            let opts = call_options(args, options)?;
            let Some(cb) = cb else {
                return Err(args.invalid("cb", "is NULL"));
            };
            let work = hub.shared.begin()?;
            let (tx, rx) = oneshot::channel::<()>();
            let handle = (!out_call.is_null()).then(|| {
                Box::into_raw(Box::new(mcpmux_call {
                    cancel: Mutex::new(Some(tx)),
                }))
            });
            let delivery = Delivery {
                cb,
                user_data,
                done: false,
            };
            let task = run(work, hub.hub.clone(), name, arguments, opts, rx, delivery);
            hub.shared.handle().spawn(trace.run(task));
            if let Some(handle) = handle {
                write_out(out_call, handle);
            }
            Ok(())
        })
    }
}

/// The task of one asynchronous call.
async fn run(
    work: Work,
    hub: mcpmux_core::Hub,
    name: String,
    arguments: Option<Box<RawValue>>,
    opts: mcpmux_core::CallOptions,
    cancel: oneshot::Receiver<()>,
    mut delivery: Delivery,
) {
    let call =
        AssertUnwindSafe(hub.call_tool_raw(&name, arguments.as_deref(), &opts)).catch_unwind();
    // A dropped sender (the handle freed without cancelling, or never
    // asked for) is not a cancellation.
    let cancelled = async {
        if cancel.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let outcome = tokio::select! {
        biased;
        outcome = call => outcome
            .unwrap_or_else(|panic| Err(panic_error("mcpmux_hub_call_tool_async", panic.as_ref()))),
        () = cancelled => Err(Error::Cancelled(format!(
            "the call of '{name}' was cancelled (mcpmux_call_cancel)"
        ))),
    };
    // The call future is dropped here when cancelled, which sends
    // notifications/cancelled to the server.
    drop(hub);
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| delivery.deliver(outcome)));
    drop(work);
}

/// Cancels an asynchronous call: the request is abandoned (the server is
/// sent notifications/cancelled) and the callback is called with a
/// CANCELLED error, unless the call had already ended, in which case this
/// does nothing. Either way the callback is called exactly once. Does not
/// block; any thread, callbacks included. NULL is a no-op.
///
/// # Safety
/// `call` is NULL or a call handle that was not freed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_call_cancel(call: *mut mcpmux_call) {
    guard_value((), || {
        // SAFETY: the caller promises a live handle or NULL.
        if let Some(call) = unsafe { call.as_ref() } {
            let sender = call.cancel.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(sender) = sender {
                let _ = sender.send(());
            }
        }
    })
}

/// Frees a call handle. Does not cancel the call: its callback is still
/// called. NULL is a no-op. Any thread, callbacks included.
///
/// # Safety
/// `call` is NULL or a call handle that was not freed; it must not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_call_free(call: *mut mcpmux_call) {
    guard_value((), || {
        if !call.is_null() {
            // SAFETY: the caller gives back ownership of the Box.
            // Dropping the sender is not a cancellation (see `run`).
            drop(unsafe { Box::from_raw(call) });
        }
    })
}
