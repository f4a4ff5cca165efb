//! The person in the loop from JavaScript: `authorize(url, redirectUri,
//! server)`, a function the host passes to `Hub.connect`, resolving to the
//! redirect URL the authorization server sent back. It is called on the
//! JavaScript thread through a threadsafe function; the wrapper in
//! index.js makes it always return a Promise.

use std::sync::Arc;

use futures::future::BoxFuture;
use mcpmux_core::{AuthorizationHandler, AuthorizationRequest, Error};
use napi::bindgen_prelude::{FnArgs, Function, Promise};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Status;

type Args = FnArgs<(String, String, String)>;
type Tsfn = ThreadsafeFunction<Args, Promise<String>, Args, Status, false, true>;

/// The JavaScript function as napi hands it over.
pub type JsFunction<'a> = Function<'a, Args, Promise<String>>;

/// An [`AuthorizationHandler`] that calls a JavaScript function.
pub struct JsAuthorize(Arc<Tsfn>);

impl JsAuthorize {
    /// Wraps `f` (JavaScript thread only). Weak: a hub waiting for nothing
    /// does not keep Node alive through this function.
    pub fn new(f: JsFunction<'_>) -> napi::Result<JsAuthorize> {
        let tsfn = f
            .build_threadsafe_function::<Args>()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        Ok(JsAuthorize(Arc::new(tsfn)))
    }
}

impl AuthorizationHandler for JsAuthorize {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, Error>> {
        let tsfn = self.0.clone();
        Box::pin(async move {
            let fail = |e: napi::Error| {
                Error::AuthFailed(format!("the authorize function failed: {}", e.reason))
            };
            let promise = tsfn
                .call_async_catch((request.url, request.redirect_uri, request.server).into())
                .await
                .map_err(fail)?;
            promise.await.map_err(fail)
        })
    }
}
