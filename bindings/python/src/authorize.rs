//! The person in the loop from Python: `authorize(url, redirect_uri,
//! server) -> str`, a callable the host passes to `connect`. It opens the
//! URL (a browser) and returns the redirect URL the authorization server
//! sent back. It runs on a blocking engine thread with the GIL held, so a
//! slow callable never stalls the engine's other work.

use std::sync::Arc;

use futures::future::BoxFuture;
use mcpmux_core::{AuthorizationHandler, AuthorizationRequest, Error};
use pyo3::prelude::*;

/// An [`AuthorizationHandler`] that calls a Python callable.
pub struct PyAuthorize(pub Arc<Py<PyAny>>);

impl AuthorizationHandler for PyAuthorize {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, Error>> {
        let callback = self.0.clone();
        Box::pin(async move {
            let answer = tokio::task::spawn_blocking(move || {
                Python::attach(|py| {
                    callback
                        .bind(py)
                        .call1((request.url, request.redirect_uri, request.server))
                        .and_then(|r| r.extract::<String>())
                        .map_err(|e| e.to_string())
                })
            })
            .await
            .map_err(|e| Error::Internal(format!("authorize callback: {e}")))?;
            answer.map_err(|e| Error::AuthFailed(format!("the authorize callback failed: {e}")))
        })
    }
}
