//! Review sessions (`docs/sessions.md#review-sessions`) for the JavaScript `Sessions` class:
//! [`NativeSessions`] runs the verbs `begin` / `wait` / `reply` / `end` of
//! `mcpmux_sessions` on the addon's runtime (JSON text in, completion
//! JSON out, through the dispatcher like every other operation), and the
//! `host` reviewer calls a JavaScript function.
//!
//! The host reviewer: the engine's callback (on a runtime thread) gives the
//! request an id, parks a oneshot sender under it and calls the wrapper's
//! function through a threadsafe function, so it runs on the JavaScript
//! thread and never blocks it. The wrapper calls the user's function,
//! awaits its result and answers with the dispatcher's `hostResolve` or
//! `hostReject` ([`host_answer`]), which wake the round. The threadsafe
//! function is weak: a round waiting for the host never keeps Node alive
//! by itself (a pending `wait()` does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use mcpmux_core::Error;
use mcpmux_sessions::llm::host::{HostCallback, HostProvider};
use mcpmux_sessions::llm::provider::SharedProvider;
use mcpmux_sessions::{self as session, Runner, SessionContext};
use napi::bindgen_prelude::{FnArgs, Function};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::{error_json, invalid_input};
use crate::{json_outcome, spawn_op, Sink};

/// The arguments of the wrapper's host function: `(callId, requestJson)`.
type HostArgs = FnArgs<(u32, String)>;

/// What a host call waits for.
type HostAnswer = oneshot::Sender<Result<Value, Error>>;

/// Host calls waiting for their answers, by call id, for every context of
/// the addon: the answer comes back through the dispatcher
/// ([`host_answer`]), so the wrapper's host function needs no reference to
/// its `NativeSessions` (which would keep it from being collected).
static HOST_CALLS: Mutex<Option<HashMap<u32, HostAnswer>>> = Mutex::new(None);
static NEXT_HOST_CALL: AtomicU32 = AtomicU32::new(1);

fn host_calls() -> std::sync::MutexGuard<'static, Option<HashMap<u32, HostAnswer>>> {
    HOST_CALLS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Delivers the answer of host call `call_id` (unknown ids are ignored).
pub(crate) fn host_answer(call_id: u32, answer: Result<Value, Error>) {
    let tx = host_calls().as_mut().and_then(|m| m.remove(&call_id));
    if let Some(tx) = tx {
        let _ = tx.send(answer);
    }
}

/// The JavaScript host function of one context.
struct HostBridge {
    tsfn: ThreadsafeFunction<HostArgs, (), HostArgs, Status, false, true>,
}

impl HostBridge {
    /// Asks JavaScript for one completion (any thread).
    async fn ask(&self, request: Value) -> Result<Value, Error> {
        let (tx, rx) = oneshot::channel();
        let id = NEXT_HOST_CALL.fetch_add(1, Ordering::Relaxed);
        host_calls().get_or_insert_with(HashMap::new).insert(id, tx);
        let status = self.tsfn.call(
            FnArgs::from((id, request.to_string())),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
        if status != Status::Ok {
            host_calls().as_mut().and_then(|m| m.remove(&id));
            return Err(Error::ProviderError(format!(
                "host: cannot call the JavaScript host reviewer ({status})"
            )));
        }
        rx.await.unwrap_or_else(|_| {
            Err(Error::ProviderError(
                "host: the JavaScript host reviewer went away before it answered".into(),
            ))
        })
    }
}

/// The engine callback of the host provider.
fn host_callback(bridge: Arc<HostBridge>) -> HostCallback {
    Arc::new(move |request: Value| {
        let bridge = bridge.clone();
        Box::pin(async move { bridge.ask(request).await })
    })
}

/// A session context (a configuration and the host reviewer), owned by
/// its JavaScript `Sessions` wrapper. Created by `Dispatcher.sessions()`. Its verb
/// methods return at once and post completion `id` to the dispatcher.
#[napi]
pub struct NativeSessions {
    ctx: Arc<SessionContext>,
    sink: Arc<Sink>,
}

/// Creates a session context. `config` (optional) and `kind` as for
/// [`crate::load_config`]. `host` (optional) is called on the
/// JavaScript thread as `host(callId, requestJson)` for each completion of
/// a `host` reviewer; it must answer later with the dispatcher's
/// `hostResolve` or `hostReject`. A bad config throws an error whose message is the JSON
/// text `{code, message}`.
pub(crate) fn new_sessions(
    sink: Arc<Sink>,
    config: Option<String>,
    kind: &str,
    host: Option<Function<'_, HostArgs, ()>>,
) -> napi::Result<NativeSessions> {
    let fail = |e: &Error| napi::Error::new(Status::GenericFailure, error_json(e));
    let config = match config {
        None => None,
        Some(text) => Some(crate::load_config(kind, text).map_err(|e| fail(&e))?),
    };
    let bridge = match host {
        None => None,
        Some(f) => Some(Arc::new(HostBridge {
            tsfn: f
                .build_threadsafe_function::<HostArgs>()
                .callee_handled::<false>()
                .weak::<true>()
                .build_callback(|ctx| Ok(ctx.value))?,
        })),
    };
    let provider = bridge.map(|b| Arc::new(HostProvider::new(host_callback(b))) as SharedProvider);
    Ok(NativeSessions {
        ctx: Arc::new(SessionContext {
            config,
            host: provider,
            runner: Runner::InProcess,
        }),
        sink,
    })
}

impl NativeSessions {
    fn verb(&self, id: u32, verb: &'static str, params: String) {
        let ctx = self.ctx.clone();
        spawn_op(&self.sink, id, async move {
            let params: Value = serde_json::from_str(&params)
                .map_err(|e| invalid_input("params", format!("not JSON: {e}")))?;
            json_outcome(&session::call(&ctx, verb, &params).await?)
        });
    }
}

/// The JSON text of `{verb: input schema}` for every session verb, from
/// core's parameter types (`mcpmux_sessions::params`): what the drift
/// test compares `index.d.ts` with.
// napi-rs registers it for JavaScript outside `cfg(test)` only.
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub fn session_schemas() -> String {
    session::params::schemas().to_string()
}

#[napi]
impl NativeSessions {
    /// Begins a session (`params`: JSON text of core's `BeginParams`:
    /// `{skill, mode?, input, working_dir?, model?, effort?,
    /// timeout_seconds?, reviewer?, max_turns?, max_tool_calls?,
    /// call_timeout_seconds?, max_output_bytes?, scope?}`).
    #[napi]
    pub fn begin(&self, id: u32, params: String) {
        self.verb(id, "begin", params);
    }

    /// Waits for the current round (`{session_dir, max_wait_seconds?}`).
    #[napi]
    pub fn wait(&self, id: u32, params: String) {
        self.verb(id, "wait", params);
    }

    /// Starts the next round (`{session_dir, input, model?, effort?}`).
    #[napi]
    pub fn reply(&self, id: u32, params: String) {
        self.verb(id, "reply", params);
    }

    /// Ends a session (`{session_dir, outcome?}`).
    #[napi]
    pub fn end(&self, id: u32, params: String) {
        self.verb(id, "end", params);
    }
}
