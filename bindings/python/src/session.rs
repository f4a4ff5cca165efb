//! `_native.Sessions`: review sessions (`docs/sessions.md#review-sessions`) for the Python
//! `mcpmux.Sessions` (sync) and `mcpmux.AsyncSessions` (asyncio) classes.
//!
//! JSON in, JSON out: `call(verb, params, aio)` hands a dict of parameters
//! to `mcpmux_sessions::call` and returns the
//! result as plain Python objects. Every verb runs on an engine thread
//! (rounds are tasks of the process's runtime, `Runner::InProcess`).
//!
//! The `host` reviewer: the Python layer passes an adapter
//! `fn(request_json: str) -> str` (JSON text of the completion) that wraps
//! the user's callable. It is called on a blocking thread of the runtime
//! with the GIL taken; an exception it raises fails the model turn (and so
//! the round) with the exception's text as the message.

use std::sync::Arc;

use mcpmux_core::Error;
use mcpmux_sessions::llm::host::{HostCallback, HostProvider};
use mcpmux_sessions::llm::provider::SharedProvider;
use mcpmux_sessions::{self as session, Runner, SessionContext};
use pyo3::prelude::*;
use serde_json::Value;

use crate::bridge::{Exec, Op, Outcome};
use crate::calls::{run, Aio};
use crate::{convert, errors};

/// A session context: a configuration and the host reviewer.
#[pyclass(frozen, module = "mcpmux._native", name = "Sessions")]
pub struct NativeSessions {
    ctx: Arc<SessionContext>,
}

/// Calls the Python adapter with one request (blocking thread, GIL taken).
fn call_host(host: &Py<PyAny>, request: &str) -> Result<Value, Error> {
    Python::attach(|py| {
        let answer = host
            .bind(py)
            .call1((request,))
            .map_err(|e| Error::ProviderError(e.to_string()))?;
        let text: String = answer.extract().map_err(|e| {
            Error::ProviderError(format!("host: the adapter did not return JSON text: {e}"))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            Error::ProviderError(format!("host: the reviewer's answer is not JSON: {e}"))
        })
    })
}

/// The engine callback of the host provider.
fn host_callback(host: Py<PyAny>) -> HostCallback {
    let host = Arc::new(host);
    Arc::new(move |request: Value| {
        let host = host.clone();
        Box::pin(async move {
            let text = request.to_string();
            tokio::task::spawn_blocking(move || call_host(&host, &text))
                .await
                .unwrap_or_else(|e| {
                    Err(Error::ProviderError(format!(
                        "host: the reviewer callback did not finish: {e}"
                    )))
                })
        })
    })
}

#[pymethods]
impl NativeSessions {
    /// A context. `kind` says what `config` is (as for
    /// [`crate::hub::load_config`], or `None` for no configuration); `host` is the adapter of
    /// the host reviewer, or `None`.
    #[new]
    #[pyo3(signature = (kind=None, config=None, host=None))]
    fn new(
        py: Python<'_>,
        kind: Option<&str>,
        config: Option<&Bound<'_, PyAny>>,
        host: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = match (kind, config) {
            (None, _) => None,
            (Some(kind), Some(config)) => Some(crate::hub::load_config(py, kind, config)?),
            (Some(_), None) => return Err(errors::invalid(py, "argument 'config' is missing")),
        };
        let host = match host.filter(|h| !h.is_none()) {
            None => None,
            Some(h) if h.is_callable() => {
                Some(Arc::new(HostProvider::new(host_callback(h.unbind()))) as SharedProvider)
            }
            Some(h) => {
                return Err(errors::invalid(
                    py,
                    format!(
                        "argument 'host' must be callable or None, not {}",
                        convert::type_name(&h)
                    ),
                ))
            }
        };
        Ok(NativeSessions {
            ctx: Arc::new(SessionContext {
                config,
                host,
                runner: Runner::InProcess,
            }),
        })
    }

    /// The JSON text of `{verb: input schema}` for every session verb, from
    /// core's parameter types: what the drift test compares the Python
    /// signatures with.
    #[staticmethod]
    fn schemas() -> String {
        session::params::schemas().to_string()
    }

    /// Runs verb `verb` (`begin`, `wait`, `reply`, `end`) with `params` (a
    /// dict) through `session::call`: blocking without `aio`, else as an
    /// asyncio future. An unknown verb is `INVALID_INPUT`.
    #[pyo3(signature = (verb, params, aio=None))]
    fn call(
        &self,
        py: Python<'_>,
        verb: &str,
        params: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let params = convert::opt_object(Some(params), "params")?
            .ok_or_else(|| errors::invalid(py, "argument 'params' must be a dict"))?;
        let ctx = self.ctx.clone();
        let verb = verb.to_owned();
        let op: Op = Box::pin(async move { json(session::call(&ctx, &verb, &params).await?) });
        // On an engine thread: rounds are spawned onto the runtime, and a
        // round may start server processes.
        run(py, op, aio, Exec::Worker)
    }
}

fn json(value: Value) -> Result<Outcome, Error> {
    serde_json::to_string(&value)
        .map(Outcome::Json)
        .map_err(|e| Error::Internal(format!("cannot encode a session result: {e}")))
}
