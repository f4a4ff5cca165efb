//! Error mapping for Node, in one place: how a core [`Error`] reaches
//! JavaScript.
//!
//! Every failure of an engine operation travels to the JavaScript thread as
//! JSON text `{"code", "message", "rpcCode"?, "data"?}` (see
//! [`error_json`]); the wrapper in `index.js` turns it into an
//! `McpmuxError` with the same fields. `code` is always one of the stable
//! strings of `docs/errors.md#codes` ([`mcpmux_core::error::ALL_CODES`]), unchanged.
//! Failures inside the binding itself (a worker task that panicked, a
//! runtime that cannot start) are reported as `INTERNAL` through the same
//! shape ([`internal`]).

use mcpmux_core::Error;
use serde_json::{json, Value};

/// The error as the JSON text the JavaScript wrapper reads: `code` (one of
/// [`mcpmux_core::error::ALL_CODES`]), `message` (for people; never carries
/// secrets, core sees to that), and for `SERVER_ERROR` the JSON-RPC
/// `rpcCode` and the server's `data` when it sent any.
pub fn error_json(error: &Error) -> String {
    let mut out = json!({ "code": error.code(), "message": error.to_string() });
    if let Error::ServerError { code, data, .. } = error {
        out["rpcCode"] = Value::from(*code);
        if let Some(data) = data {
            out["data"] = data.clone();
        }
    }
    out.to_string()
}

/// An `INTERNAL` error for a failure of the binding itself.
pub fn internal(message: impl Into<String>) -> Error {
    Error::Internal(message.into())
}

/// An `INVALID_INPUT` error naming the argument at fault.
pub fn invalid_input(argument: &str, problem: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("{argument}: {problem}"))
}
