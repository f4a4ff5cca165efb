//! Error mapping of the C ABI, in one place: [`mcpmux_status`] (one value per
//! code of `docs/errors.md#codes`), [`mcpmux_error`] (code + message)
//! and its accessors.

use std::ffi::{c_char, CStr, CString};

use mcpmux_core::Error;

use crate::boundary::guard_value;

/// The outcome of an mcpmux function: MCPMUX_STATUS_OK (0), or the error
/// code of the failure, one value per code string of mcpmux_error_code().
/// The values are fixed: new codes get new values, existing values never
/// change.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mcpmux_status {
    /// Success.
    MCPMUX_STATUS_OK = 0,
    /// "CONFIG_INVALID": the configuration is malformed or names something invalid.
    MCPMUX_STATUS_CONFIG_INVALID = 1,
    /// "INVALID_INPUT": a bad argument (NULL, not UTF-8, bad JSON, bad option),
    /// or a blocking function called from inside a callback.
    MCPMUX_STATUS_INVALID_INPUT = 2,
    /// "UNKNOWN_SERVER": no configured server has this name.
    MCPMUX_STATUS_UNKNOWN_SERVER = 3,
    /// "UNKNOWN_TOOL": no connected server offers a tool with this name.
    MCPMUX_STATUS_UNKNOWN_TOOL = 4,
    /// "TOOL_NOT_ALLOWED": policy refused the tool.
    MCPMUX_STATUS_TOOL_NOT_ALLOWED = 5,
    /// "CONNECT_FAILED": a server could not be started or initialized.
    MCPMUX_STATUS_CONNECT_FAILED = 6,
    /// "TRANSPORT_CLOSED": the connection is gone (server exited, hub closed,
    /// engine freed).
    MCPMUX_STATUS_TRANSPORT_CLOSED = 7,
    /// "TIMEOUT": a request did not complete in time.
    MCPMUX_STATUS_TIMEOUT = 8,
    /// "CANCELLED": the call was cancelled (mcpmux_call_cancel()).
    MCPMUX_STATUS_CANCELLED = 9,
    /// "PROTOCOL_ERROR": the server broke the protocol.
    MCPMUX_STATUS_PROTOCOL_ERROR = 10,
    /// "SERVER_ERROR": the server answered with a JSON-RPC error
    /// (mcpmux_error_rpc_code() gives its code).
    MCPMUX_STATUS_SERVER_ERROR = 11,
    /// "LIMIT_EXCEEDED": a configured limit was reached.
    MCPMUX_STATUS_LIMIT_EXCEEDED = 12,
    /// "PROVIDER_ERROR": an LLM provider failed.
    MCPMUX_STATUS_PROVIDER_ERROR = 13,
    /// "UNKNOWN_SKILL": a session skill name is not known.
    MCPMUX_STATUS_UNKNOWN_SKILL = 14,
    /// "REVIEWER_NOT_FOUND": a session reviewer could not be found.
    MCPMUX_STATUS_REVIEWER_NOT_FOUND = 15,
    /// "INVALID_SESSION": a directory is not a readable session.
    MCPMUX_STATUS_INVALID_SESSION = 16,
    /// "ROUND_STILL_RUNNING": a reply was sent while the round still runs.
    MCPMUX_STATUS_ROUND_STILL_RUNNING = 17,
    /// "INTERNAL": a bug or an unexpected condition inside mcpmux (a caught
    /// panic included).
    MCPMUX_STATUS_INTERNAL = 18,
    /// "AUTH_REQUIRED": the server needs authorization and there is no usable
    /// token and no way to ask for one.
    MCPMUX_STATUS_AUTH_REQUIRED = 19,
    /// "AUTH_FAILED": the server or its authorization server refused the
    /// authorization.
    MCPMUX_STATUS_AUTH_FAILED = 20,
    /// "CONFIG_UNTRUSTED": a config found in the current directory is not
    /// trusted (or changed since it was trusted); nothing was started.
    MCPMUX_STATUS_CONFIG_UNTRUSTED = 21,
    /// "OUTPUT_INVALID": a tool's result does not satisfy the tool's
    /// outputSchema (or has no structuredContent though it declares one).
    MCPMUX_STATUS_OUTPUT_INVALID = 22,
    /// "TOOL_CHANGED": a pinned tool's definition changed since it was
    /// approved (or the tool is new): quarantined, the server was not asked.
    MCPMUX_STATUS_TOOL_CHANGED = 23,
}

use mcpmux_status::*;

/// Every status but OK with its code string, in the order of
/// `mcpmux_core::error::ALL_CODES`.
pub(crate) const CODES: &[(mcpmux_status, &CStr)] = &[
    (MCPMUX_STATUS_CONFIG_INVALID, c"CONFIG_INVALID"),
    (MCPMUX_STATUS_INVALID_INPUT, c"INVALID_INPUT"),
    (MCPMUX_STATUS_UNKNOWN_SERVER, c"UNKNOWN_SERVER"),
    (MCPMUX_STATUS_UNKNOWN_TOOL, c"UNKNOWN_TOOL"),
    (MCPMUX_STATUS_TOOL_NOT_ALLOWED, c"TOOL_NOT_ALLOWED"),
    (MCPMUX_STATUS_CONNECT_FAILED, c"CONNECT_FAILED"),
    (MCPMUX_STATUS_TRANSPORT_CLOSED, c"TRANSPORT_CLOSED"),
    (MCPMUX_STATUS_TIMEOUT, c"TIMEOUT"),
    (MCPMUX_STATUS_CANCELLED, c"CANCELLED"),
    (MCPMUX_STATUS_PROTOCOL_ERROR, c"PROTOCOL_ERROR"),
    (MCPMUX_STATUS_SERVER_ERROR, c"SERVER_ERROR"),
    (MCPMUX_STATUS_LIMIT_EXCEEDED, c"LIMIT_EXCEEDED"),
    (MCPMUX_STATUS_PROVIDER_ERROR, c"PROVIDER_ERROR"),
    (MCPMUX_STATUS_UNKNOWN_SKILL, c"UNKNOWN_SKILL"),
    (MCPMUX_STATUS_REVIEWER_NOT_FOUND, c"REVIEWER_NOT_FOUND"),
    (MCPMUX_STATUS_INVALID_SESSION, c"INVALID_SESSION"),
    (MCPMUX_STATUS_ROUND_STILL_RUNNING, c"ROUND_STILL_RUNNING"),
    (MCPMUX_STATUS_INTERNAL, c"INTERNAL"),
    (MCPMUX_STATUS_AUTH_REQUIRED, c"AUTH_REQUIRED"),
    (MCPMUX_STATUS_AUTH_FAILED, c"AUTH_FAILED"),
    (MCPMUX_STATUS_CONFIG_UNTRUSTED, c"CONFIG_UNTRUSTED"),
    (MCPMUX_STATUS_OUTPUT_INVALID, c"OUTPUT_INVALID"),
    (MCPMUX_STATUS_TOOL_CHANGED, c"TOOL_CHANGED"),
];

/// An error reported by mcpmux: a status, its stable code string (see
/// docs/errors.md#codes) and a message for people. Created by
/// mcpmux, owned by the caller that received it, freed with
/// mcpmux_error_free().
pub struct mcpmux_error {
    status: mcpmux_status,
    code: &'static CStr,
    message: CString,
    rpc_code: Option<i64>,
    /// The JSON text of a SERVER_ERROR's `data` member, when sent.
    data: Option<CString>,
}

impl mcpmux_error {
    /// The C error for a core error.
    pub(crate) fn from_core(e: &Error) -> mcpmux_error {
        let mut message = e.to_string();
        let (status, code) = match CODES
            .iter()
            .find(|(_, c)| c.to_bytes() == e.code().as_bytes())
        {
            Some(&(status, code)) => (status, code),
            None => {
                // A code core added that this table lacks (a test checks the
                // table against ALL_CODES, so this is only a safety net).
                message = format!("{}: {message}", e.code());
                (MCPMUX_STATUS_INTERNAL, c"INTERNAL")
            }
        };
        mcpmux_error {
            status,
            code,
            message: c_message(message),
            rpc_code: e.rpc_code(),
            data: e
                .data()
                .and_then(|d| serde_json::to_string(d).ok())
                .and_then(|d| CString::new(d).ok()),
        }
    }

    /// The status of this error.
    pub(crate) fn status(&self) -> mcpmux_status {
        self.status
    }

    /// Moves the error to the heap for C.
    pub(crate) fn into_raw(self) -> *mut mcpmux_error {
        Box::into_raw(Box::new(self))
    }
}

/// A C string of `message`, with NUL bytes (which C cannot carry) written as `\0`.
fn c_message(message: String) -> CString {
    CString::new(message).unwrap_or_else(|e| {
        let text = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\\0");
        CString::new(text).unwrap_or_default()
    })
}

/// Stores `e` in `*err` when `err` is not NULL and returns its status.
///
/// # Safety
/// `err` is NULL or valid for one pointer write.
pub(crate) unsafe fn report(err: *mut *mut mcpmux_error, e: &Error) -> mcpmux_status {
    let error = mcpmux_error::from_core(e);
    let status = error.status();
    if !err.is_null() {
        // SAFETY: the caller promises `err` is valid for a write.
        unsafe { *err = error.into_raw() };
    }
    status
}

/// The stable code string of `error` ("TIMEOUT", "UNKNOWN_TOOL", ... the
/// codes of docs/errors.md#codes, the same in every mcpmux front
/// end), or "" when `error` is NULL. The string is static: do not free it; it stays valid after
/// mcpmux_error_free(). Any thread.
///
/// # Safety
/// `error` is NULL or an error from mcpmux that was not freed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_error_code(error: *const mcpmux_error) -> *const c_char {
    guard_value(c"INTERNAL".as_ptr(), || {
        // SAFETY: the caller promises a valid error or NULL.
        match unsafe { error.as_ref() } {
            Some(e) => e.code.as_ptr(),
            None => c"".as_ptr(),
        }
    })
}

/// The message of `error` for people (it may change between versions; match
/// on mcpmux_error_code() instead), or "" when `error` is NULL. The string
/// belongs to `error`: do not free it; it is valid until
/// mcpmux_error_free(error). Any thread.
///
/// # Safety
/// `error` is NULL or an error from mcpmux that was not freed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_error_message(error: *const mcpmux_error) -> *const c_char {
    guard_value(c"".as_ptr(), || {
        // SAFETY: the caller promises a valid error or NULL.
        match unsafe { error.as_ref() } {
            Some(e) => e.message.as_ptr(),
            None => c"".as_ptr(),
        }
    })
}

/// The status of `error` (the same value the failing function returned),
/// or MCPMUX_STATUS_INVALID_INPUT when `error` is NULL. Any thread.
///
/// # Safety
/// `error` is NULL or an error from mcpmux that was not freed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_error_status(error: *const mcpmux_error) -> mcpmux_status {
    guard_value(MCPMUX_STATUS_INTERNAL, || {
        // SAFETY: the caller promises a valid error or NULL.
        match unsafe { error.as_ref() } {
            Some(e) => e.status,
            None => MCPMUX_STATUS_INVALID_INPUT,
        }
    })
}

/// For a SERVER_ERROR: writes the JSON-RPC error code the server sent to
/// `*out_rpc_code` and returns true. For any other error, or when `error`
/// or `out_rpc_code` is NULL, returns false and writes nothing. Any thread.
///
/// # Safety
/// `error` is NULL or an error from mcpmux that was not freed; `out_rpc_code`
/// is NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_error_rpc_code(
    error: *const mcpmux_error,
    out_rpc_code: *mut i64,
) -> bool {
    guard_value(false, || {
        // SAFETY: the caller promises a valid error or NULL.
        let Some(e) = (unsafe { error.as_ref() }) else {
            return false;
        };
        match (e.rpc_code, out_rpc_code.is_null()) {
            (Some(code), false) => {
                // SAFETY: checked non-NULL; the caller promises it is writable.
                unsafe { *out_rpc_code = code };
                true
            }
            _ => false,
        }
    })
}

/// For a SERVER_ERROR whose JSON-RPC error had a `data` member: that member
/// as JSON text (any JSON value). NULL for any other error, for a server
/// error without `data`, or when `error` is NULL. The string belongs to
/// `error`: do not free it; it is valid until mcpmux_error_free(error).
/// (Python's `ServerError.data`, Node's `McpmuxError.data`, the `data`
/// member of the CLI's error JSON.) Any thread.
///
/// # Safety
/// `error` is NULL or an error from mcpmux that was not freed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_error_data(error: *const mcpmux_error) -> *const c_char {
    guard_value(std::ptr::null(), || {
        // SAFETY: the caller promises a valid error or NULL.
        match unsafe { error.as_ref() }.and_then(|e| e.data.as_ref()) {
            Some(data) => data.as_ptr(),
            None => std::ptr::null(),
        }
    })
}

/// Frees an error received from mcpmux (through an `mcpmux_error **err`
/// out-parameter or a callback). NULL is a no-op. Any thread.
///
/// # Safety
/// `error` is NULL or an error from mcpmux that was not freed yet; it must
/// not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_error_free(error: *mut mcpmux_error) {
    guard_value((), || {
        if !error.is_null() {
            // SAFETY: the caller gives back ownership of a Box from into_raw.
            drop(unsafe { Box::from_raw(error) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_code_has_a_status_and_back() {
        let ours: Vec<&str> = CODES.iter().map(|(_, c)| c.to_str().unwrap()).collect();
        assert_eq!(ours, mcpmux_core::error::ALL_CODES);
        for (i, (status, _)) in CODES.iter().enumerate() {
            assert_eq!(
                *status as i32,
                i as i32 + 1,
                "status values follow ALL_CODES"
            );
        }
    }

    #[test]
    fn messages_with_nul_bytes_survive() {
        let e = mcpmux_error::from_core(&Error::ServerError {
            code: -32000,
            message: "bad\0byte".into(),
            data: None,
        });
        assert_eq!(
            e.message.to_str().unwrap(),
            "server error -32000: bad\\0byte"
        );
        assert_eq!(e.rpc_code, Some(-32000));
        assert!(e.data.is_none());
        assert_eq!(e.code.to_str().unwrap(), "SERVER_ERROR");
        assert_eq!(e.status(), MCPMUX_STATUS_SERVER_ERROR);
    }

    #[test]
    fn server_error_data_is_readable() {
        let e = mcpmux_error::from_core(&Error::ServerError {
            code: -32001,
            message: "no".into(),
            data: Some(serde_json::json!({"token": "t", "n": [1, 2]})),
        })
        .into_raw();
        // SAFETY: `e` is a live error from mcpmux; freed once below.
        unsafe {
            let data = std::ffi::CStr::from_ptr(mcpmux_error_data(e));
            let v: serde_json::Value = serde_json::from_str(data.to_str().unwrap()).unwrap();
            assert_eq!(v, serde_json::json!({"token": "t", "n": [1, 2]}));
            mcpmux_error_free(e);
        }
        let plain = mcpmux_error::from_core(&Error::Timeout("slow".into())).into_raw();
        // SAFETY: as above.
        unsafe {
            assert!(mcpmux_error_data(plain).is_null());
            assert!(mcpmux_error_data(std::ptr::null()).is_null());
            mcpmux_error_free(plain);
        }
    }
}
