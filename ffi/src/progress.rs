//! [`mcpmux_hub_call_tool_with_progress`]: a blocking tool call whose
//! progress notifications reach a C callback (the `on_progress` call
//! option of `mcpmux_core::contract`), delivered on the calling thread.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use mcpmux_core::{ProgressCallback, ProgressUpdate};
use tokio::sync::mpsc;

use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{call_options, hub_ref, mcpmux_hub, tool_arguments_raw, CallTrace};
use crate::util::{c_string, guard_status, write_out, Args};

/// A progress callback of mcpmux_hub_call_tool_with_progress(): called
/// once per progress notification of the call, in order, on the thread
/// that called mcpmux_hub_call_tool_with_progress() (never on an engine
/// thread, never after that function returned), with `progress_json`:
/// `{"progress": number, "total"?: number, "message"?: string}`.
/// `progress_json` is borrowed: valid only during the callback (copy it to
/// keep it; do not free it). It should return quickly and must not call
/// blocking mcpmux functions.
#[allow(non_camel_case_types)]
pub type mcpmux_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, progress_json: *const c_char)>;

/// The JSON text of one progress notification.
fn progress_json(update: &ProgressUpdate) -> String {
    let mut v = serde_json::json!({ "progress": update.progress });
    if let Some(total) = update.total {
        v["total"] = total.into();
    }
    if let Some(message) = &update.message {
        v["message"] = message.clone().into();
    }
    v.to_string()
}

/// Calls the C callback with one update (on the calling thread).
///
/// # Safety
/// `cb` and `user_data` are the caller's, valid for the call.
unsafe fn deliver(
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: *mut c_void,
    update: &ProgressUpdate,
) {
    if let Ok(text) = CString::new(progress_json(update)) {
        // SAFETY: the caller's function and data; the string outlives the call.
        unsafe { cb(user_data, text.as_ptr()) };
    }
}

/// mcpmux_hub_call_tool() with a progress callback: calls the tool `name`
/// and waits for the result, calling `on_progress(user_data,
/// progress_json)` for each progress notification the server sends (the
/// server is asked for them with a progress token; each one also resets
/// the call's `timeout_ms` / `timeout_seconds`, up to
/// `max_total_timeout_*`). Blocking.
///
/// `on_progress` runs on the calling thread, before this function returns
/// (see mcpmux_progress_fn); NULL makes this the same as
/// mcpmux_hub_call_tool(). `user_data` is passed to it unchanged.
/// `args_json`, `options_json`, `out_json` and the errors are as for
/// mcpmux_hub_call_tool().
///
/// # Safety
/// `hub` is a live hub; `name` a NUL-terminated string; `args_json` and
/// `options_json` NULL or NUL-terminated strings; `on_progress` NULL or a
/// function that may be called with `user_data`; `out_json` and `err` are
/// NULL or valid for one pointer write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mcpmux_hub_call_tool_with_progress(
    hub: *const mcpmux_hub,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    on_progress: mcpmux_progress_fn,
    user_data: *mut c_void,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_call_tool_with_progress",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let name = args.str("name", name)?;
            let arguments = tool_arguments_raw(args, args_json)?;
            let options = args.opt_object("options_json", options_json)?;
            let trace = CallTrace::of(options.as_ref());
            let mut opts = call_options(args, options)?;
            args.non_null("out_json", out_json)?;
            let (tx, mut rx) = mpsc::unbounded_channel::<ProgressUpdate>();
            if on_progress.is_some() {
                let forward: ProgressCallback = Arc::new(move |u| {
                    let _ = tx.send(u);
                });
                opts.on_progress = Some(forward);
            }
            // Polled on this thread by block_on: the callback runs here.
            let work = async {
                let call = trace.run(hub.hub.call_tool_raw(name, arguments, &opts));
                tokio::pin!(call);
                loop {
                    tokio::select! {
                        biased;
                        Some(update) = rx.recv() => {
                            if let Some(cb) = on_progress {
                                // SAFETY: the caller's callback and data.
                                deliver(cb, user_data, &update);
                            }
                        }
                        result = &mut call => {
                            // Notifications that came before the result go first.
                            while let Ok(update) = rx.try_recv() {
                                if let Some(cb) = on_progress {
                                    // SAFETY: as above.
                                    deliver(cb, user_data, &update);
                                }
                            }
                            break result;
                        }
                    }
                }
            };
            let result = hub.shared.block_on(args, work)??;
            write_out(out_json, c_string(result.json())?);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_json_has_the_optional_fields_only_when_sent() {
        let u = ProgressUpdate {
            progress: 1.0,
            total: None,
            message: None,
        };
        assert_eq!(progress_json(&u), r#"{"progress":1.0}"#);
        let u = ProgressUpdate {
            progress: 2.0,
            total: Some(3.0),
            message: Some("m".into()),
        };
        let v: serde_json::Value = serde_json::from_str(&progress_json(&u)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"progress": 2.0, "total": 3.0, "message": "m"})
        );
    }
}
