//! The panic boundary and argument conversion shared by every export.

use std::any::Any;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use mcpmux_core::Error;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{mcpmux_error, mcpmux_status, report};

pub(crate) use crate::boundary::guard_value;

/// Runs the body of a fallible export behind the panic boundary: `Ok` is
/// MCPMUX_STATUS_OK, an error (or a panic, as INTERNAL) is stored in `*err`
/// when `err` is not NULL and its status returned.
///
/// # Safety
/// `err` is NULL or valid for one pointer write.
pub(crate) unsafe fn guard_status(
    func: &'static str,
    err: *mut *mut mcpmux_error,
    f: impl FnOnce() -> Result<(), Error>,
) -> mcpmux_status {
    let outcome = catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|panic| Err(panic_error(func, panic.as_ref())));
    match outcome {
        Ok(()) => mcpmux_status::MCPMUX_STATUS_OK,
        // SAFETY: forwarded from the caller.
        Err(e) => guard_value(mcpmux_status::MCPMUX_STATUS_INTERNAL, || unsafe {
            report(err, &e)
        }),
    }
}

/// The INTERNAL error for a caught panic.
pub(crate) fn panic_error(func: &str, panic: &(dyn Any + Send)) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    Error::Internal(format!("{func}: internal panic: {what}"))
}

/// Argument checks for one export, with messages that name the function
/// and the argument.
#[derive(Clone, Copy)]
pub(crate) struct Args {
    /// The exported function's name.
    pub func: &'static str,
}

impl Args {
    /// The error for a bad argument.
    pub fn invalid(&self, arg: &str, what: impl std::fmt::Display) -> Error {
        Error::InvalidInput(format!("{}: argument '{arg}' {what}", self.func))
    }

    /// INVALID_INPUT for option `key` of `options_json`, none of `known`:
    /// core's one message, naming the nearest known key
    /// (`contract::unknown_option`).
    pub fn unknown_option<S: AsRef<str>>(&self, key: &str, known: &[S]) -> Error {
        let known: Vec<&str> = known.iter().map(AsRef::as_ref).collect();
        self.invalid(
            "options_json",
            format!("has {}", mcpmux_core::contract::unknown_option(key, &known)),
        )
    }

    /// A required pointer.
    pub fn non_null<T>(&self, arg: &str, p: *const T) -> Result<(), Error> {
        if p.is_null() {
            Err(self.invalid(arg, "is NULL"))
        } else {
            Ok(())
        }
    }

    /// A required UTF-8 C string.
    ///
    /// # Safety
    /// `p` is NULL or a NUL-terminated string that outlives `'a`.
    pub unsafe fn str<'a>(&self, arg: &str, p: *const c_char) -> Result<&'a str, Error> {
        self.non_null(arg, p)?;
        // SAFETY: non-NULL and NUL-terminated by the caller's promise.
        let bytes = unsafe { CStr::from_ptr(p) };
        bytes
            .to_str()
            .map_err(|e| self.invalid(arg, format!("is not valid UTF-8 ({e})")))
    }

    /// An optional (nullable) UTF-8 C string.
    ///
    /// # Safety
    /// As for [`Args::str`].
    pub unsafe fn opt_str<'a>(
        &self,
        arg: &str,
        p: *const c_char,
    ) -> Result<Option<&'a str>, Error> {
        if p.is_null() {
            Ok(None)
        } else {
            // SAFETY: forwarded.
            unsafe { self.str(arg, p) }.map(Some)
        }
    }

    /// An optional (nullable) JSON text.
    ///
    /// # Safety
    /// As for [`Args::str`].
    pub unsafe fn opt_json(&self, arg: &str, p: *const c_char) -> Result<Option<Value>, Error> {
        // SAFETY: forwarded.
        unsafe { self.opt_parsed(arg, p) }
    }

    /// An optional (nullable) JSON text, checked but kept as text.
    ///
    /// # Safety
    /// As for [`Args::str`]; the text outlives the returned reference.
    pub unsafe fn opt_raw_json<'a>(
        &self,
        arg: &str,
        p: *const c_char,
    ) -> Result<Option<&'a RawValue>, Error> {
        // SAFETY: forwarded.
        unsafe { self.opt_parsed(arg, p) }
    }

    /// An optional JSON text read as `T`; bad JSON names `arg`.
    ///
    /// # Safety
    /// As for [`Args::str`].
    unsafe fn opt_parsed<'a, T: serde::Deserialize<'a>>(
        &self,
        arg: &str,
        p: *const c_char,
    ) -> Result<Option<T>, Error> {
        // SAFETY: forwarded.
        match unsafe { self.opt_str(arg, p) }? {
            None => Ok(None),
            Some(text) => serde_json::from_str(text)
                .map(Some)
                .map_err(|e| self.invalid(arg, format!("is not valid JSON: {e}"))),
        }
    }

    /// A required JSON text.
    ///
    /// # Safety
    /// As for [`Args::str`].
    pub unsafe fn json(&self, arg: &str, p: *const c_char) -> Result<Value, Error> {
        self.non_null(arg, p)?;
        // SAFETY: forwarded.
        unsafe { self.opt_json(arg, p) }.map(Option::unwrap_or_default)
    }

    /// An optional JSON object (options); `None` for NULL.
    ///
    /// # Safety
    /// As for [`Args::str`].
    pub unsafe fn opt_object(
        &self,
        arg: &str,
        p: *const c_char,
    ) -> Result<Option<serde_json::Map<String, Value>>, Error> {
        // SAFETY: forwarded.
        match unsafe { self.opt_json(arg, p) }? {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(self.invalid(arg, "must be a JSON object")),
        }
    }
}

/// A new C string for `text`, owned by the caller (mcpmux_string_free).
pub(crate) fn c_string(text: &str) -> Result<*mut c_char, Error> {
    CString::new(text)
        .map(CString::into_raw)
        .map_err(|_| Error::Internal("a result contains a NUL byte".into()))
}

/// A new C string with `value` as compact JSON, owned by the caller.
pub(crate) fn json_string<T: serde::Serialize + ?Sized>(value: &T) -> Result<*mut c_char, Error> {
    let text = serde_json::to_string(value)
        .map_err(|e| Error::Internal(format!("cannot encode a result as JSON: {e}")))?;
    c_string(&text)
}

/// Writes `value` to the out-parameter `out` (checked non-NULL before).
///
/// # Safety
/// `out` is valid for one write.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) {
    // SAFETY: forwarded.
    unsafe { out.write(value) };
}

/// A C callback taking `(user_data, json)`, with the data it was given.
/// Called from engine threads only (see each export's doc comment).
pub(crate) struct JsonListener {
    pub(crate) cb: unsafe extern "C" fn(*mut std::ffi::c_void, *const c_char),
    pub(crate) user_data: *mut std::ffi::c_void,
}

// SAFETY: the C caller promises (in the header) that `user_data` may be used
// from any thread for as long as the callback is registered.
unsafe impl Send for JsonListener {}
// SAFETY: as above; the listener is only read.
unsafe impl Sync for JsonListener {}

impl JsonListener {
    /// Calls the callback with `json` (borrowed for the call's duration); a
    /// panic must not unwind into the runtime's task.
    pub(crate) fn call(&self, json: &str) {
        let Ok(json) = CString::new(json) else {
            return;
        };
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the caller's function and data; the string outlives the call.
            unsafe { (self.cb)(self.user_data, json.as_ptr()) }
        }));
    }
}

/// Loads a config with the policy's and the sessions' keys checked (their
/// layers are registered first; registering again does nothing).
pub(crate) fn load_config(source: mcpmux_core::ConfigSource) -> Result<mcpmux_core::Config, Error> {
    ::mcpmux_sessions::register_config_layers();
    mcpmux_core::Config::from_source(source)
}

/// A JSON array of strings; else INVALID_INPUT naming `arg` and `what` it
/// must be.
pub(crate) fn string_list(
    args: Args,
    arg: &str,
    value: &Value,
    what: &str,
) -> Result<Vec<String>, Error> {
    let bad = || args.invalid(arg, format!("must be {what}"));
    value
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
        .collect()
}
