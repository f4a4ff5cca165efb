//! Engine errors to Python exceptions.
//!
//! The exception classes and the code-to-class table live in one Python
//! file, `python/mcpmux/_errors.py` (one subclass of `McpmuxError` per code
//! of `docs/errors.md#codes`). This side only hands over what the engine said: the
//! stable code, the message, and for `SERVER_ERROR` the JSON-RPC code and
//! `data`. Errors found by the binding itself (bad arguments) are engine
//! errors too (`Error::InvalidInput`), so they take the same path.

use mcpmux_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static FROM_CORE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python exception for `error` (a subclass of `mcpmux.McpmuxError`).
pub fn to_py(py: Python<'_>, error: &Error) -> PyErr {
    let data = match error {
        Error::ServerError { data: Some(d), .. } => Some(d.to_string()),
        _ => None,
    };
    let made = FROM_CORE
        .import(py, "mcpmux._errors", "_from_core")
        .and_then(|f| f.call1((error.code(), error.to_string(), error.rpc_code(), data)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        // Only when mcpmux._errors cannot be imported (a broken install).
        Err(e) => {
            let err = PyRuntimeError::new_err(format!("{} ({})", error, error.code()));
            err.set_cause(py, Some(e));
            err
        }
    }
}

/// `INVALID_INPUT` naming the argument at fault.
pub fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, &Error::InvalidInput(message.into()))
}

/// The error every method of a closed hub raises (the same as the engine's).
pub fn closed() -> Error {
    Error::TransportClosed("the hub is closed".into())
}
