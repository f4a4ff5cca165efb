//! Server requests answered from Python: `on_request(method, params) ->
//! dict`, one callable the Python layer builds from the host's
//! `on_elicitation` / `on_sampling` (it picks the handler by method and, for
//! an `AsyncHub`, runs an `async def` handler on the hub's event loop). The
//! callable runs on a blocking engine thread with the GIL held, so a slow
//! handler stalls no other engine work; core bounds it by the server's
//! `timeout_seconds`.

use std::sync::Arc;

use mcpmux_core::client::{RequestHandler, ServerRequest};
use mcpmux_core::{ClientHandlers, Error};
use pyo3::prelude::*;

use crate::convert;

/// The handlers for the request kinds in `kinds` (`"elicitation"`,
/// `"sampling"`), each calling `callback`. An unknown kind is `INVALID_INPUT`.
pub fn handlers(callback: Py<PyAny>, kinds: &[String]) -> Result<ClientHandlers, Error> {
    let callback = Arc::new(callback);
    let mut handlers = ClientHandlers::default();
    for kind in kinds {
        let handler = Some(handler(callback.clone()));
        match kind.as_str() {
            "elicitation" => handlers.elicitation = handler,
            "sampling" => handlers.sampling = handler,
            other => {
                return Err(Error::InvalidInput(format!(
                    "unknown server request kind '{other}' (elicitation, sampling)"
                )))
            }
        }
    }
    Ok(handlers)
}

fn handler(callback: Arc<Py<PyAny>>) -> RequestHandler {
    Arc::new(move |request: ServerRequest| {
        let callback = callback.clone();
        Box::pin(async move {
            let method = request.method.clone();
            let params = serde_json::to_string(&request.params)
                .map_err(|e| Error::Internal(format!("{method} params: {e}")))?;
            let answer = tokio::task::spawn_blocking(move || {
                Python::attach(|py| {
                    let params = convert::loads(py, &params)?;
                    let result = callback.bind(py).call1((request.method, params))?;
                    convert::to_json(&result, "result")
                })
                .map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| Error::Internal(format!("{method} handler: {e}")))?;
            answer.map_err(|e| Error::ServerError {
                code: -32603,
                message: format!("the host's {method} handler failed: {e}"),
                data: None,
            })
        })
    })
}
