//! Server requests answered from JavaScript: `onRequest(method, paramsJson)`,
//! one function index.js builds from the host's `onElicitation` /
//! `onSampling` (it picks the handler by method, awaits it, and resolves to
//! the result as JSON text). It is called on the JavaScript thread through a
//! threadsafe function; core bounds the answer by the server's
//! `timeout_seconds`.

use std::sync::Arc;

use mcpmux_core::client::{RequestHandler, ServerRequest};
use mcpmux_core::{ClientHandlers, Error};
use napi::bindgen_prelude::{FnArgs, Function, Promise};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Status;

type Args = FnArgs<(String, String)>;
type Tsfn = ThreadsafeFunction<Args, Promise<String>, Args, Status, false, true>;

/// The JavaScript function as napi hands it over.
pub type JsFunction<'a> = Function<'a, Args, Promise<String>>;

/// The handlers for the request kinds in `kinds` (`"elicitation"`,
/// `"sampling"`), each calling `f` (JavaScript thread only). Weak: a hub
/// waiting for nothing does not keep Node alive through this function.
pub fn handlers(f: JsFunction<'_>, kinds: &[String]) -> napi::Result<ClientHandlers> {
    let tsfn = Arc::new(
        f.build_threadsafe_function::<Args>()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?,
    );
    let mut handlers = ClientHandlers::default();
    for kind in kinds {
        let handler = Some(handler(tsfn.clone()));
        match kind.as_str() {
            "elicitation" => handlers.elicitation = handler,
            "sampling" => handlers.sampling = handler,
            other => {
                return Err(napi::Error::new(
                    Status::InvalidArg,
                    format!("INVALID_INPUT: unknown server request kind '{other}'"),
                ))
            }
        }
    }
    Ok(handlers)
}

fn handler(tsfn: Arc<Tsfn>) -> RequestHandler {
    Arc::new(move |request: ServerRequest| {
        let tsfn = tsfn.clone();
        Box::pin(async move {
            let method = request.method;
            let failed = |e: napi::Error| Error::ServerError {
                code: -32603,
                message: format!("the host's {method} handler failed: {}", e.reason),
                data: None,
            };
            let params = serde_json::to_string(&request.params)
                .map_err(|e| Error::Internal(format!("{method} params: {e}")))?;
            let promise = tsfn
                .call_async_catch((method.clone(), params).into())
                .await
                .map_err(failed)?;
            let text = promise.await.map_err(failed)?;
            serde_json::from_str(&text).map_err(|e| Error::ServerError {
                code: -32603,
                message: format!("the host's {method} handler gave no JSON object: {e}"),
                data: None,
            })
        })
    })
}
