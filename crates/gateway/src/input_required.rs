//! Input-required results (SEP-2322) the gateway gives its 2026-07-28
//! clients: a server's question within a plain `tools/call` goes back to
//! the client that made the call, in that client's revision.
//!
//! The hub's call runs in the background with handlers of its own
//! ([`PendingCall::handlers`]): whatever the server behind asks within the
//! call (a 2026-07-28 server's `inputRequests`, answered by the engine's
//! retry; the questions of a 2025-11-25 server's task) parks the call
//! under a `requestState` of the gateway's and answers the client with
//! `{"resultType": "input_required", "inputRequests": ..., "requestState":
//! ...}`. The client's retry (the same `tools/call` with `inputResponses`
//! and that `requestState`) hands the answers to the waiting handlers and
//! follows the call again: its result, a `CreateTaskResult` when the call
//! became a task (the tasks extension), or the next questions.
//!
//! A question is only ever asked of the client whose call it belongs to,
//! never of another client of the gateway; a 2025-11-25 server's request
//! outside its tasks goes to the latest such call on that server (the
//! relay's call routes). One the client did not declare
//! the capability for (`elicitation`, `sampling`, `roots` in the request's
//! `_meta` client capabilities) is answered as such a client would
//! (-32601). `requestState` is 128 random bits, new each round and good
//! for one retry: only the client given it can resume the call. At most
//! [`MAX_PENDING`] calls wait for their client at once, each at most
//! [`TTL`]; a call nobody resumes in that time is cancelled (and with it
//! the server's request). Parked calls live in this replica's memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use mcpmux_core::client::{ClientHandlers, RequestHandler, ServerRequest};
use mcpmux_core::error::Error;
use serde_json::{json, Map, Value};
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

use super::relay::RelayTarget;
use super::Gateway;

/// Most calls parked for their clients at once.
pub(crate) const MAX_PENDING: usize = 1024;

/// How long a parked call waits for its client's retry.
pub(crate) const TTL: Duration = Duration::from_secs(300);

/// Most questions one call may have open at once.
const MAX_OPEN_INPUTS: usize = 16;

/// How long the gateway waits, after a first question, for the others the
/// server asked at once, so that they go to the client in one round.
const GATHER: Duration = Duration::from_millis(20);

/// Prefix of the gateway's `requestState` values.
const STATE_PREFIX: &str = "mcpmux-rs-";

/// The calls parked for their clients, shared by every client.
#[derive(Default)]
pub(crate) struct Pending {
    map: Mutex<HashMap<String, Parked>>,
}

/// A call waiting for its client's retry.
struct Parked {
    call: Arc<PendingCall>,
    running: Running,
    since: Instant,
}

/// The hub's call running in the background; aborted when dropped (a
/// client that leaves, or a parked call nobody resumed).
struct Running(JoinHandle<Result<Value, Error>>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One call of a client, with the questions its server asked.
pub(crate) struct PendingCall {
    /// Itself, for the relay (which holds it weakly).
    me: std::sync::Weak<PendingCall>,
    tool: String,
    /// The capabilities the client declared with the call.
    declared: Value,
    state: Mutex<Questions>,
    asked: Notify,
}

#[derive(Default)]
struct Questions {
    /// Open questions: key, `{method, params}`, who waits for the answer.
    open: Vec<(String, Value, oneshot::Sender<Value>)>,
    next_key: u64,
}

/// Whether `params` is a request of the 2026-07-28 revision, whose client
/// is asked in its own revision.
pub(crate) fn applies(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(mcpmux_core::internal::stateless::META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
        == Some(mcpmux_core::internal::stateless::VERSION)
}

fn invalid_params(message: String) -> Error {
    Error::ServerError {
        code: -32602,
        message,
        data: None,
    }
}

impl PendingCall {
    fn new(tool: &str, params: &Value) -> Arc<PendingCall> {
        let declared = params
            .get("_meta")
            .and_then(|m| m.get(mcpmux_core::internal::stateless::META_CLIENT_CAPABILITIES))
            .cloned()
            .unwrap_or(Value::Null);
        Arc::new_cyclic(|me| PendingCall {
            me: me.clone(),
            tool: tool.to_owned(),
            declared,
            state: Mutex::new(Questions::default()),
            asked: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Questions> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn can_answer(&self, method: &str) -> bool {
        super::relay::capability_for(method)
            .is_some_and(|c| self.declared.get(c).is_some_and(Value::is_object))
    }

    /// A question the server asks within the call, open until the client's
    /// retry answers it.
    async fn ask(self: Arc<Self>, request: ServerRequest) -> Result<Value, Error> {
        if !self.can_answer(&request.method) {
            return Err(Error::ServerError {
                code: -32601,
                message: format!(
                    "{}: the client did not declare the capability it needs",
                    request.method
                ),
                data: None,
            });
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            if state.open.len() >= MAX_OPEN_INPUTS {
                return Err(Error::LimitExceeded(format!(
                    "a call of '{}' already has {MAX_OPEN_INPUTS} open questions",
                    self.tool
                )));
            }
            state.next_key += 1;
            let key = format!("q{}", state.next_key);
            let question = json!({ "method": request.method, "params": request.params });
            state.open.push((key, question, tx));
        }
        self.asked.notify_one();
        // Answered by the client's retry; dropped (an error) when the call
        // is given up.
        rx.await.map_err(|_| {
            Error::Cancelled(format!(
                "{}: the client did not answer within the call of '{}'",
                request.method, self.tool
            ))
        })
    }

    /// Handlers that ask this call's client.
    pub(crate) fn handlers(self: &Arc<Self>) -> ClientHandlers {
        let handler = |call: Arc<PendingCall>| -> RequestHandler {
            Arc::new(move |request| Box::pin(call.clone().ask(request)))
        };
        ClientHandlers {
            roots: Some(handler(self.clone())),
            sampling: Some(handler(self.clone())),
            elicitation: Some(handler(self.clone())),
        }
    }

    /// Waits until a question is open.
    async fn asked(&self) {
        loop {
            if !self.lock().open.is_empty() {
                return;
            }
            self.asked.notified().await;
        }
    }

    /// Hands the client's answers to the questions they name; the others
    /// stay open. How many were answered.
    fn answer(&self, responses: &Map<String, Value>) -> usize {
        let mut state = self.lock();
        let mut open = Vec::new();
        let mut answered = 0;
        for (key, question, tx) in state.open.drain(..) {
            match responses.get(&key) {
                Some(answer) => {
                    answered += 1;
                    let _ = tx.send(answer.clone());
                }
                None => open.push((key, question, tx)),
            }
        }
        state.open = open;
        answered
    }

    /// The open questions as `inputRequests`.
    fn input_requests(&self) -> Value {
        let state = self.lock();
        Value::Object(
            state
                .open
                .iter()
                .map(|(key, question, _)| (key.clone(), question.clone()))
                .collect(),
        )
    }
}

/// A 2025-11-25 server's requests within the call (sent on its own, not
/// as part of the call's answer) are asked the same way.
impl RelayTarget for PendingCall {
    fn accepts(&self, method: &str) -> bool {
        self.can_answer(method)
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, Error>> {
        let call = self.me.upgrade();
        let request = ServerRequest {
            server: String::new(),
            method: method.to_owned(),
            params,
        };
        Box::pin(async move {
            match call {
                Some(call) => call.ask(request).await,
                None => Err(Error::Cancelled("the call is gone".into())),
            }
        })
    }
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Parks `call` for its client's retry under a new `requestState`;
    /// `None` when [`MAX_PENDING`] calls wait already (or no random id
    /// could be had).
    fn park(&self, gateway: &Gateway, call: Arc<PendingCall>, running: Running) -> Option<String> {
        let state = super::tasks::replica_id(gateway, STATE_PREFIX)?;
        // Dropped (aborting the calls) outside the lock.
        let expired: Vec<Parked>;
        {
            let mut map = self.lock();
            let stale: Vec<String> = map
                .iter()
                .filter(|(_, p)| p.since.elapsed() > TTL)
                .map(|(k, _)| k.clone())
                .collect();
            expired = stale.iter().filter_map(|k| map.remove(k)).collect();
            if map.len() >= MAX_PENDING {
                return None;
            }
            map.insert(
                state.clone(),
                Parked {
                    call,
                    running,
                    since: Instant::now(),
                },
            );
        }
        drop(expired);
        Some(state)
    }

    /// The call parked under `state`, when it is a call of `tool` (one of
    /// another tool stays parked: its `Err` names that tool).
    fn take(&self, state: &str, tool: &str) -> Result<Option<Parked>, String> {
        let mut map = self.lock();
        match map.get(state) {
            None => return Ok(None),
            Some(p) if p.call.tool != tool => return Err(p.call.tool.clone()),
            Some(_) => {}
        }
        let parked = map.remove(state);
        drop(map);
        Ok(parked.filter(|p| p.since.elapsed() <= TTL))
    }
}

/// Runs a `tools/call` of tool `tool` of a 2026-07-28 client: a new call
/// (`start` runs the hub's call with the handlers given), or the retry of
/// a parked one (its `requestState` and `inputResponses`). The call's
/// result, or an input-required result with the server's questions.
pub(crate) async fn call<S>(
    gateway: &Gateway,
    tool: &str,
    params: &Value,
    start: S,
) -> Result<Value, Error>
where
    S: FnOnce(ClientHandlers) -> BoxFuture<'static, Result<Value, Error>>,
{
    let pending = &gateway.inner.input_required;
    let (call, running) = match params.get("requestState").and_then(Value::as_str) {
        Some(state) if state.starts_with(STATE_PREFIX) => {
            let parked = pending
                .take(state, tool)
                .map_err(|known| {
                    invalid_params(format!(
                        "tools/call of '{tool}': its requestState belongs to a call of '{known}'"
                    ))
                })?
                .ok_or_else(|| {
                    let unknown = invalid_params(format!(
                        "tools/call of '{tool}': unknown or expired requestState (a call waits \
                         {} s for its retry, and a requestState is good for one)",
                        TTL.as_secs()
                    ));
                    super::tasks::not_here(gateway, STATE_PREFIX, state, unknown)
                })?;
            let responses = params
                .get("inputResponses")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            parked.call.answer(&responses);
            (parked.call, parked.running)
        }
        _ => {
            let call = PendingCall::new(tool, params);
            if let (Some(relay), Some(server)) = (&gateway.inner.relay, gateway.server_of(tool)) {
                let weak: std::sync::Weak<PendingCall> = Arc::downgrade(&call);
                relay.route_call(&server, weak);
            }
            // Polled here until the server asks something (most calls end
            // first: no task spawned for them), then run in the background
            // while the client answers.
            let mut started = super::tasks::inline(start(call.handlers()));
            tokio::select! {
                outcome = &mut started => return outcome,
                () = call.asked() => {}
            }
            let running = Running(tokio::spawn(started));
            return gather(gateway, call, running).await;
        }
    };
    follow(gateway, call, running).await
}

/// Follows a call to its outcome or to its next questions.
async fn follow(
    gateway: &Gateway,
    call: Arc<PendingCall>,
    mut running: Running,
) -> Result<Value, Error> {
    tokio::select! {
        outcome = &mut running.0 => return joined(outcome),
        () = call.asked() => {}
    }
    gather(gateway, call, running).await
}

fn joined(outcome: Result<Result<Value, Error>, tokio::task::JoinError>) -> Result<Value, Error> {
    outcome.map_err(|e| Error::Internal(format!("tools/call: {e}")))?
}

/// A call whose server asked something: the questions asked with it
/// gathered, then the call parked for the client's retry (or its outcome,
/// when it ends first).
async fn gather(
    gateway: &Gateway,
    call: Arc<PendingCall>,
    mut running: Running,
) -> Result<Value, Error> {
    // Questions asked together go out together.
    tokio::select! {
        outcome = &mut running.0 => return joined(outcome),
        () = tokio::time::sleep(GATHER) => {}
    }
    let input_requests = call.input_requests();
    let tool = call.tool.clone();
    let Some(state) = gateway.inner.input_required.park(gateway, call, running) else {
        return Err(Error::LimitExceeded(format!(
            "tools/call of '{tool}': {MAX_PENDING} calls already wait for their clients' answers"
        )));
    };
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": input_requests,
        "requestState": state,
    }))
}
