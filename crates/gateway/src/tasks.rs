//! Tasks the gateway hands out to its 2026-07-28 clients: the tasks
//! extension (SEP-2663, `io.modelcontextprotocol/tasks`), server side.
//!
//! A client that declares the extension on a `tools/call` gets a task when
//! the call becomes one upstream (a 2026-07-28 server answered with a task,
//! or a 2025-11-25 server ran the tool as a task): the hub's call goes on in
//! the background, following the server's task to its end, and the client
//! gets a `CreateTaskResult` under an id of the gateway's, which it polls
//! with `tasks/get` (the result, or the error, inline once it ended),
//! answers with `tasks/update` (the questions the server asks within the
//! call, as `inputRequests`), and cancels with `tasks/cancel` (the server's
//! task is cancelled with it). A call that ends without becoming a task is
//! answered as a plain call. So a client of this revision can run a task of
//! a server of either revision.
//!
//! Ids name the server whose task they follow and end in 128 random bits
//! ([`task_id_for`]): the extension has no `tasks/list`, so only who was
//! given an id can use it. At most [`MAX_TASKS`] are kept, holding at
//! most [`MAX_STORED_BYTES`] of results together; a finished one is kept
//! [`TTL`] after its creation, then forgotten. Past the count a call is
//! answered as a plain call; a result past the bytes fails its task with
//! `LIMIT_EXCEEDED`. The gateway's tasks live in this replica's memory.
//!
//! The same store holds the tasks of 2025-11-25 clients (the protocol's own
//! tasks, `stateful_tasks`): those belong to the connection that made them,
//! ask their questions as requests to it, and may ask for a shorter TTL.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures::future::BoxFuture;
use mcpmux_core::client::{CallOptions, ClientHandlers, RequestHandler, ServerRequest};
use mcpmux_core::error::Error;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::relay::{RelayTarget, RELATED_TASK};
use super::Gateway;

/// What the gateway's task ids begin with.
pub(crate) const TASK_PREFIX: &str = "mcpmux-";

/// The extension's name.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Most tasks the gateway keeps at once.
pub(crate) const MAX_TASKS: usize = 1024;
/// Most of those one client may have: a 2025-11-25 connection, or the
/// holder of one credential on 2026-07-28.
pub(crate) const MAX_TASKS_PER_CLIENT: usize = 256;

/// Most bytes of results the kept tasks hold together.
pub(crate) const MAX_STORED_BYTES: usize = 256 << 20;

/// How long a task is kept after its creation once it ended (`ttlMs`).
pub(crate) const TTL: Duration = Duration::from_secs(300);

/// The poll interval the gateway suggests (`pollIntervalMs`).
pub(crate) const POLL_INTERVAL_MS: u64 = 250;

/// Most questions one task may have open at once.
const MAX_OPEN_INPUTS: usize = 16;

/// JSON-RPC: a capability the request needed was not declared.
const MISSING_CAPABILITY: i64 = -32021;

/// The gateway's tasks, shared by every client.
#[derive(Default)]
pub(crate) struct Tasks {
    map: Mutex<HashMap<String, Arc<GatewayTask>>>,
    /// Bytes of the results the kept tasks hold.
    stored: std::sync::atomic::AtomicUsize,
}

/// One task handed out.
pub(crate) struct GatewayTask {
    /// Itself, for the relay (which holds it weakly).
    me: std::sync::Weak<GatewayTask>,
    /// Its id ([`task_id_for`]): set when it is handed out, once the
    /// server whose task it follows is known.
    id: std::sync::OnceLock<String>,
    created: Instant,
    pub(crate) created_at: SystemTime,
    /// How long it is kept after its creation once it ended.
    pub(crate) ttl: Duration,
    /// The 2025-11-25 connection it belongs to (`None`: a 2026-07-28
    /// task, which whoever holds its id may use).
    pub(crate) owner: Option<u64>,
    /// Who may use a 2026-07-28 task: [`holder_of`] the credential of the
    /// client that made it (`None`: none was sent, as over stdio). Another
    /// credential is told the task does not exist.
    pub(crate) holder: Option<u64>,
    /// Who a 2025-11-25 task asks its questions (its client, held weakly:
    /// a closed connection answers nothing); `None`: `inputRequests`.
    asker: Option<std::sync::Weak<dyn RelayTarget>>,
    /// True once the task ended (set before the change is counted).
    ended: std::sync::atomic::AtomicBool,
    /// Counts its changes of state, its end among them: `tasks/result`
    /// waits on it, and a listen stream that asked for the task pushes it
    /// on each (`notifications/tasks`). One channel for both: every call
    /// of a client that declares tasks makes a task.
    changes: tokio::sync::watch::Sender<u64>,
    state: Mutex<TaskState>,
    /// The background call; aborting it cancels the server's task.
    pub(crate) call: Mutex<Option<AbortHandle>>,
    /// Bytes of its result counted in [`Tasks::stored`].
    stored: std::sync::atomic::AtomicUsize,
}

pub(crate) struct TaskState {
    /// Handed to the client yet (questions before that have nobody to ask).
    pub(crate) published: bool,
    pub(crate) status: &'static str,
    pub(crate) message: Option<String>,
    pub(crate) last_updated_at: SystemTime,
    pub(crate) result: Option<Value>,
    pub(crate) error: Option<Value>,
    /// Open questions: key, `{method, params}`, who waits for the answer.
    inputs: Vec<(String, Value, oneshot::Sender<Value>)>,
    next_key: u64,
    /// Questions of a 2025-11-25 task waiting for its client's answer.
    asking: usize,
}

// Kept as times and written as text only when shown: most calls never
// become tasks, and formatting two timestamps was a part of every call.
fn now() -> SystemTime {
    SystemTime::now()
}

/// `at` as the tasks' RFC 3339 text.
pub(crate) fn shown_time(at: SystemTime) -> String {
    mcpmux_policy::audit::rfc3339(at)
}

/// How a task that failed with `e` says so: its `statusMessage`, and its
/// `error` (`{code, message}`: a server's own code, else -32603).
pub(crate) fn failure(e: &Error) -> (String, Value) {
    let code = match e {
        Error::ServerError { code, .. } => *code,
        _ => -32603,
    };
    let message = match e {
        Error::ServerError { message, .. } => message.clone(),
        other => format!("{}: {other}", other.code()),
    };
    let error = json!({ "code": code, "message": message });
    (message, error)
}

pub(crate) fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// Whether this request's `_meta` declares the tasks extension (it is
/// negotiated per request on this revision).
/// Drops a 2025-11-25 server's `_meta` related-task from a result that a
/// 2026-07-28 `tasks/get` inlines: there the task id is at the root, and the
/// v1 key naming the server's own task must not reach the client.
pub(crate) fn without_related_task(result: &mut Value) {
    let Some(result) = result.as_object_mut() else {
        return;
    };
    let emptied = match result.get_mut("_meta").and_then(Value::as_object_mut) {
        Some(meta) => {
            meta.remove(RELATED_TASK);
            meta.is_empty()
        }
        None => false,
    };
    if emptied {
        result.remove("_meta");
    }
}

pub(crate) fn declared(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(mcpmux_core::internal::stateless::META_CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// Whether a server behind the gateway can run tools as tasks (either
/// revision's), so that the gateway advertises the extension.
pub(crate) fn any_server_has_tasks(gateway: &Gateway) -> bool {
    gateway.hub().servers().iter().any(|s| {
        s.capabilities.as_ref().is_some_and(|c| {
            c.get("extensions").and_then(|e| e.get(EXTENSION)).is_some()
                || mcpmux_core::tasks::accepts_tool_tasks(c)
        })
    })
}

/// The error of a `tasks/*` request that did not declare the extension.
pub(crate) fn missing_capability() -> Error {
    Error::ServerError {
        code: MISSING_CAPABILITY,
        message: "Missing required client capability: the tasks extension".into(),
        data: Some(json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } })),
    }
}

pub(crate) fn unknown_task(id: &str) -> Error {
    Error::ServerError {
        code: -32602,
        message: format!("unknown task: {id:.200}"),
        data: None,
    }
}

/// Who holds the tasks a client with `credential` (its bearer token)
/// makes: 64 bits of its SHA-256, so the credential itself is never kept,
/// and the same on every replica of a fleet (a sealed task id carries it:
/// `fleet_tasks`); `None` without one.
pub(crate) fn holder_of(credential: Option<&str>) -> Option<u64> {
    use sha2::{Digest, Sha256};
    credential.map(|c| {
        let digest = Sha256::digest(c.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    })
}

/// `prefix` and 128 random bits in hex: an id only who was given it can
/// use. `None` when the system has no randomness to give.
pub(crate) fn random_id(prefix: &str) -> Option<String> {
    use std::fmt::Write;
    let bytes = random_16()?;
    let mut id = String::with_capacity(prefix.len() + 32);
    id.push_str(prefix);
    for b in bytes {
        let _ = write!(id, "{b:02x}");
    }
    Some(id)
}

/// 16 bytes from the operating system's CSPRNG, drawn 512 at a time per
/// thread: every `tools/call` of a client that declares tasks makes an id,
/// and a system call per id was a few percent of the gateway's work per
/// relayed call. Bytes handed out are wiped from the pool.
fn random_16() -> Option<[u8; 16]> {
    use std::cell::RefCell;
    const POOL_BYTES: usize = 512;
    thread_local! {
        static POOL: RefCell<([u8; POOL_BYTES], usize)> =
            const { RefCell::new(([0; POOL_BYTES], POOL_BYTES)) };
    }
    POOL.with(|pool| {
        let (bytes, used) = &mut *pool.borrow_mut();
        if *used + 16 > POOL_BYTES {
            getrandom::fill(bytes).ok()?;
            *used = 0;
        }
        let mut out = [0u8; 16];
        out.copy_from_slice(&bytes[*used..*used + 16]);
        bytes[*used..*used + 16].fill(0);
        *used += 16;
        Some(out)
    })
}

/// [`random_id`] of an id only this replica can serve: `prefix`, the
/// replica's name and a dot when it has one, then the random bits.
pub(crate) fn replica_id(gateway: &Gateway, prefix: &str) -> Option<String> {
    match &gateway.inner.options.replica {
        Some(name) => random_id(&format!("{prefix}{name}.")),
        None => random_id(prefix),
    }
}

/// Most bytes of a server's name a task id carries.
const MAX_SERVER_IN_ID: usize = 48;

/// The id of a task of the gateway's following a task of `server`:
/// `mcpmux-`, the replica's name and a dot when it has one, the server's
/// name, a dash, 128 random bits in hex (`mcpmux-a.everything-3f…`). The
/// name is for people and logs (what the gateway routes by is the task it
/// keeps): a byte outside `A-Z a-z 0-9 _ -` is written `_`, and it is cut
/// at [`MAX_SERVER_IN_ID`] bytes, so the id stays a header value and has
/// no dot but the replica's.
pub(crate) fn task_id_for(gateway: &Gateway, server: &str) -> Option<String> {
    random_id(&task_id_prefix(
        gateway.inner.options.replica.as_deref(),
        server,
    ))
}

/// What [`task_id_for`] puts before the random bits.
pub(crate) fn task_id_prefix(replica: Option<&str>, server: &str) -> String {
    let mut prefix = String::from(TASK_PREFIX);
    if let Some(name) = replica {
        prefix.push_str(name);
        prefix.push('.');
    }
    prefix.extend(server.bytes().take(MAX_SERVER_IN_ID).map(|b| {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            b as char
        } else {
            '_'
        }
    }));
    prefix.push('-');
    prefix
}

/// The error for an id with `prefix` this replica does not know: when it
/// names another replica, one saying where it lives (a balancer sent the
/// request to the wrong one), else `unknown`.
pub(crate) fn not_here(gateway: &Gateway, prefix: &str, id: &str, unknown: Error) -> Error {
    let named = id
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_once('.'))
        .map(|(name, _)| name)
        .filter(|name| crate::session_token::valid_name(name));
    match named {
        Some(name) if gateway.inner.options.replica.as_deref() != Some(name) => {
            Error::ServerError {
                code: -32602,
                message: format!(
                    "{id:.200} lives on gateway replica '{name}', not on this one ({}): \
                     send requests about it to '{name}' (balancers route on the prefix)",
                    gateway
                        .inner
                        .options
                        .replica
                        .as_deref()
                        .unwrap_or("unnamed")
                ),
                data: Some(json!({ "replica": name })),
            }
        }
        _ => unknown,
    }
}

impl GatewayTask {
    /// A task of the extension's, its id not yet made ([`Self::name`]).
    fn new(holder: Option<u64>) -> Arc<GatewayTask> {
        GatewayTask::build(std::sync::OnceLock::new(), None, holder, TTL, None)
    }

    /// A task of the 2025-11-25 connection `owner` (see the fields)
    /// following a task of `server`. `None` when the system has no
    /// randomness for its id.
    pub(crate) fn with_owner(
        gateway: &Gateway,
        server: &str,
        owner: Option<u64>,
        ttl: Duration,
        asker: Option<std::sync::Weak<dyn RelayTarget>>,
    ) -> Option<Arc<GatewayTask>> {
        let id = std::sync::OnceLock::from(task_id_for(gateway, server)?);
        Some(GatewayTask::build(id, owner, None, ttl, asker))
    }

    fn build(
        id: std::sync::OnceLock<String>,
        owner: Option<u64>,
        holder: Option<u64>,
        ttl: Duration,
        asker: Option<std::sync::Weak<dyn RelayTarget>>,
    ) -> Arc<GatewayTask> {
        let at = now();
        Arc::new_cyclic(|me| GatewayTask {
            me: me.clone(),
            id,
            created: Instant::now(),
            created_at: at,
            ttl,
            owner,
            holder,
            asker,
            ended: std::sync::atomic::AtomicBool::new(false),
            changes: tokio::sync::watch::channel(0).0,
            state: Mutex::new(TaskState {
                published: false,
                status: "working",
                message: None,
                last_updated_at: at,
                result: None,
                error: None,
                inputs: Vec::new(),
                next_key: 0,
                asking: 0,
            }),
            call: Mutex::new(None),
            stored: Default::default(),
        })
    }

    /// Notes a change of its state (the state's lock may be held).
    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Its changes from now on, for a listen stream.
    pub(crate) fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Whether it ended.
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Its id; empty until it was handed out.
    pub(crate) fn id(&self) -> &str {
        self.id.get().map_or("", String::as_str)
    }

    /// Makes its id, naming `server` (a no-op once made): the one `seal`
    /// makes of the server's task `upstream` and the `tool` called (an id
    /// any replica of the fleet can serve), else one only this replica
    /// knows. False when the system has no
    /// randomness for it.
    fn name(
        &self,
        gateway: &Gateway,
        server: &str,
        upstream: &str,
        (tool, seal): (&str, Sealer),
    ) -> bool {
        if self.id.get().is_none() {
            let id = seal(gateway, server, upstream, tool, self.holder)
                .or_else(|| task_id_for(gateway, server));
            match id {
                Some(id) => drop(self.id.set(id)),
                None => return false,
            }
        }
        true
    }

    fn myself(&self) -> Option<Arc<GatewayTask>> {
        self.me.upgrade()
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, TaskState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The task as `tasks/get` answers it (`DetailedTask`), and as
    /// `notifications/tasks` pushes it.
    pub(crate) fn detailed(&self) -> Value {
        let state = self.lock();
        let mut task = Map::new();
        task.insert("taskId".into(), self.id().into());
        task.insert("status".into(), state.status.into());
        if let Some(m) = &state.message {
            task.insert("statusMessage".into(), m.clone().into());
        }
        task.insert("createdAt".into(), shown_time(self.created_at).into());
        task.insert(
            "lastUpdatedAt".into(),
            shown_time(state.last_updated_at).into(),
        );
        task.insert("ttlMs".into(), (self.ttl.as_millis() as u64).into());
        task.insert("pollIntervalMs".into(), POLL_INTERVAL_MS.into());
        match state.status {
            "completed" => {
                if let Some(r) = &state.result {
                    task.insert("result".into(), r.clone());
                }
            }
            "failed" => {
                if let Some(e) = &state.error {
                    task.insert("error".into(), e.clone());
                }
            }
            "input_required" => {
                let asked: Map<String, Value> = state
                    .inputs
                    .iter()
                    .map(|(key, question, _)| (key.clone(), question.clone()))
                    .collect();
                task.insert("inputRequests".into(), Value::Object(asked));
            }
            _ => {}
        }
        Value::Object(task)
    }

    /// The `CreateTaskResult` that hands it out.
    fn created(&self) -> Value {
        let mut v = self.detailed();
        if let Value::Object(o) = &mut v {
            o.retain(|k, _| !matches!(k.as_str(), "result" | "error" | "inputRequests"));
            o.insert("resultType".into(), "task".into());
        }
        v
    }

    pub(crate) fn set_status(&self, status: &'static str, message: Option<String>) {
        let mut state = self.lock();
        if terminal(state.status) {
            return;
        }
        state.status = status;
        state.message = message;
        state.last_updated_at = now();
        if terminal(status) {
            self.ended.store(true, std::sync::atomic::Ordering::Release);
        }
        self.changed();
    }

    /// Waits until the task ended (at once when it has).
    pub(crate) async fn wait_ended(&self) {
        // Subscribed before looking: an end after the look is a change.
        let mut changes = self.changes.subscribe();
        while !self.has_ended() {
            // The sender lives in `self`: this fails only if it is gone.
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Cancels it, and with it the server's task (an ended task is left
    /// as it is).
    pub(crate) fn cancel(&self, why: &str) {
        self.set_status("cancelled", Some(why.into()));
        self.lock().inputs.clear();
        if let Some(call) = self.call.lock().unwrap_or_else(|e| e.into_inner()).take() {
            call.abort();
        }
    }

    /// The call's outcome, once it ended (a cancelled task stays so).
    fn finish(&self, outcome: Result<Value, Error>) {
        let mut state = self.lock();
        if terminal(state.status) {
            return;
        }
        state.inputs.clear();
        state.last_updated_at = now();
        self.ended.store(true, std::sync::atomic::Ordering::Release);
        self.changed();
        match outcome {
            Ok(mut result) => {
                state.status = "completed";
                without_related_task(&mut result);
                state.result = Some(result);
            }
            Err(Error::Cancelled(m)) => {
                state.status = "cancelled";
                state.message = Some(m);
            }
            Err(e) => {
                let (message, error) = failure(&e);
                state.status = "failed";
                state.message = Some(message);
                state.error = Some(error);
            }
        }
    }

    /// A question the server asks within the call: shown as
    /// `inputRequests` until `tasks/update` answers it.
    async fn ask(self: Arc<Self>, request: ServerRequest) -> Result<Value, Error> {
        if let Some(asker) = &self.asker {
            return self.ask_client(asker.upgrade(), request).await;
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            if !state.published || terminal(state.status) {
                return Err(Error::InvalidInput(format!(
                    "{} asked before its task was handed out; nobody to ask",
                    request.method
                )));
            }
            if state.inputs.len() >= MAX_OPEN_INPUTS {
                return Err(Error::LimitExceeded(format!(
                    "task {} already has {MAX_OPEN_INPUTS} open questions",
                    self.id()
                )));
            }
            state.next_key += 1;
            let key = format!("q{}", state.next_key);
            let question = json!({ "method": request.method, "params": request.params });
            state.inputs.push((key, question, tx));
            state.status = "input_required";
            state.last_updated_at = now();
            self.changed();
        }
        // Answered by tasks/update; dropped (an error) when the task ends.
        rx.await.map_err(|_| {
            Error::Cancelled(format!("task {}: the question was not answered", self.id()))
        })
    }

    /// A 2025-11-25 task's question: sent to its client as a request of
    /// the gateway's naming this task (`_meta` related-task, the server's
    /// own task id replaced), the task `input_required` while it waits.
    async fn ask_client(
        &self,
        client: Option<Arc<dyn RelayTarget>>,
        request: ServerRequest,
    ) -> Result<Value, Error> {
        let Some(client) = client else {
            return Err(Error::TransportClosed(format!(
                "task {}: its client went away; nobody to ask",
                self.id()
            )));
        };
        if !client.accepts(&request.method) {
            return Err(Error::ServerError {
                code: -32601,
                message: format!(
                    "{}: the gateway's client did not declare the capability",
                    request.method
                ),
                data: None,
            });
        }
        {
            let mut state = self.lock();
            if terminal(state.status) {
                return Err(Error::Cancelled(format!("task {} ended", self.id())));
            }
            if state.asking >= MAX_OPEN_INPUTS {
                return Err(Error::LimitExceeded(format!(
                    "task {} already has {MAX_OPEN_INPUTS} open questions",
                    self.id()
                )));
            }
            state.asking += 1;
            state.status = "input_required";
            state.last_updated_at = now();
            self.changed();
        }
        let mut params = match request.params {
            Value::Object(p) => p,
            _ => Map::new(),
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        meta[RELATED_TASK] = json!({ "taskId": self.id() });
        let answer = client.request(&request.method, Value::Object(params)).await;
        let mut state = self.lock();
        state.asking -= 1;
        if state.asking == 0 && state.status == "input_required" {
            state.status = "working";
            state.last_updated_at = now();
            self.changed();
        }
        answer
    }

    /// Handlers that ask the client through this task once it was handed
    /// out, and through `before` (the client's input-required rounds)
    /// until then.
    pub(crate) fn handlers(self: &Arc<Self>, before: Option<ClientHandlers>) -> ClientHandlers {
        let handler = |task: Arc<GatewayTask>, before: Option<RequestHandler>| -> RequestHandler {
            Arc::new(move |request| {
                let task = task.clone();
                let before = before.clone().filter(|_| !task.lock().published);
                Box::pin(async move {
                    match before {
                        Some(before) => before(request).await,
                        None => task.ask(request).await,
                    }
                })
            })
        };
        let before = before.unwrap_or_default();
        ClientHandlers {
            roots: Some(handler(self.clone(), before.roots)),
            sampling: Some(handler(self.clone(), before.sampling)),
            elicitation: Some(handler(self.clone(), before.elicitation)),
        }
    }
}

/// A 2025-11-25 server's requests for the task behind this one (the
/// relay routes them here by the task's id) are asked like the others.
impl RelayTarget for GatewayTask {
    fn accepts(&self, method: &str) -> bool {
        let state = self.lock();
        state.published && !terminal(state.status) && super::relay::capability_for(method).is_some()
    }

    fn request(
        &self,
        method: &str,
        params: Value,
    ) -> futures::future::BoxFuture<'static, Result<Value, Error>> {
        let task = self.myself();
        let request = ServerRequest {
            server: String::new(),
            method: method.to_owned(),
            params,
        };
        Box::pin(async move {
            match task {
                Some(task) => task.ask(request).await,
                None => Err(Error::Cancelled("the task is gone".into())),
            }
        })
    }
}

impl Tasks {
    /// Ends `task` with the call's outcome, a result counted against
    /// [`MAX_STORED_BYTES`] (one that does not fit fails the task).
    pub(crate) fn finish(&self, task: &GatewayTask, outcome: Result<Value, Error>) {
        use std::sync::atomic::Ordering;
        let outcome = match outcome {
            Ok(result) => {
                let size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
                let before = self.stored.fetch_add(size, Ordering::Relaxed);
                if before.saturating_add(size) > MAX_STORED_BYTES {
                    self.stored.fetch_sub(size, Ordering::Relaxed);
                    Err(Error::LimitExceeded(format!(
                        "task {}: its result of {size} bytes does not fit the gateway's \
                         store of task results ({} MiB)",
                        task.id(),
                        MAX_STORED_BYTES >> 20
                    )))
                } else {
                    task.stored.store(size, Ordering::Relaxed);
                    Ok(result)
                }
            }
            Err(e) => Err(e),
        };
        task.finish(outcome);
    }

    pub(crate) fn get(&self, id: &str) -> Result<Arc<GatewayTask>, Error> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| unknown_task(id))
    }

    /// Keeps `task`, unless [`MAX_TASKS`] are kept even after forgetting
    /// the ended ones past their [`TTL`].
    pub(crate) fn insert(&self, task: &Arc<GatewayTask>) -> bool {
        use std::sync::atomic::Ordering;
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, t| {
            let expired = terminal(t.lock().status) && t.created.elapsed() > t.ttl;
            if expired {
                self.stored
                    .fetch_sub(t.stored.swap(0, Ordering::Relaxed), Ordering::Relaxed);
            }
            !expired
        });
        if map.len() >= MAX_TASKS {
            return false;
        }
        let same_client = |t: &&Arc<GatewayTask>| t.owner == task.owner && t.holder == task.holder;
        if map.values().filter(same_client).count() >= MAX_TASKS_PER_CLIENT {
            return false;
        }
        map.insert(task.id().to_owned(), task.clone());
        true
    }

    /// `tasks/get`.
    pub(crate) fn get_detailed(&self, params: &Value, holder: Option<u64>) -> Result<Value, Error> {
        Ok(self.get_shared(task_id(params)?, holder)?.detailed())
    }

    /// A task of the extension's made by `holder` (a 2025-11-25
    /// connection's own tasks are not shared, nor another credential's).
    pub(crate) fn get_shared(
        &self,
        id: &str,
        holder: Option<u64>,
    ) -> Result<Arc<GatewayTask>, Error> {
        self.get(id)
            .ok()
            .filter(|t| t.owner.is_none() && t.holder == holder)
            .ok_or_else(|| unknown_task(id))
    }

    /// The tasks of the 2025-11-25 connection `owner`, oldest first.
    pub(crate) fn owned_by(&self, owner: u64) -> Vec<Arc<GatewayTask>> {
        let mut owned: Vec<_> = self
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|t| {
                t.owner == Some(owner)
                    && !(terminal(t.lock().status) && t.created.elapsed() > t.ttl)
            })
            .cloned()
            .collect();
        owned.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id().cmp(b.id())));
        owned
    }

    /// `tasks/update`: answers the open questions it names (others are
    /// ignored, as the extension says).
    pub(crate) fn update(&self, params: &Value, holder: Option<u64>) -> Result<Value, Error> {
        let task = self.get_shared(task_id(params)?, holder)?;
        let responses = params
            .get("inputResponses")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::InvalidInput("tasks/update: no inputResponses object".into()))?;
        let mut state = task.lock();
        let mut open = Vec::new();
        for (key, question, tx) in state.inputs.drain(..) {
            match responses.get(&key) {
                Some(answer) => {
                    let _ = tx.send(answer.clone());
                }
                None => open.push((key, question, tx)),
            }
        }
        state.inputs = open;
        if state.inputs.is_empty() && state.status == "input_required" {
            state.status = "working";
        }
        state.last_updated_at = now();
        task.changed();
        Ok(json!({}))
    }

    /// `tasks/cancel`: the task is cancelled, and with it the server's
    /// (an ended one is left as it is; the answer is the same).
    pub(crate) fn cancel(&self, params: &Value, holder: Option<u64>) -> Result<Value, Error> {
        self.get_shared(task_id(params)?, holder)?
            .cancel("cancelled by the client");
        Ok(json!({}))
    }
}

/// `call` polled in place, a panic in it made an error (as the task it
/// used to be spawned on made it) so that the client still gets an answer.
pub(crate) fn inline(
    call: BoxFuture<'static, Result<Value, Error>>,
) -> BoxFuture<'static, Result<Value, Error>> {
    use futures::FutureExt;
    Box::pin(
        std::panic::AssertUnwindSafe(call)
            .catch_unwind()
            .map(|outcome| {
                outcome.unwrap_or_else(|_| {
                    Err(Error::Internal("tools/call: the call panicked".into()))
                })
            }),
    )
}

pub(crate) fn task_id(params: &Value) -> Result<&str, Error> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty() && id.len() <= mcpmux_core::tasks::MAX_TASK_ID_BYTES)
        .ok_or_else(|| Error::ServerError {
            code: -32602,
            message: "a taskId string is required".into(),
            data: None,
        })
}

/// Makes the id of a task of the gateway's that follows the server's task
/// `upstream` of `server`, begun by a call of `tool` by `holder`, when
/// one can be made that any replica serves (`fleet_tasks::sealed_id`,
/// passed in by the connection so that this module, which it builds on,
/// never names it); `None`: an id of this replica's.
pub(crate) type Sealer = fn(&Gateway, &str, &str, &str, Option<u64>) -> Option<String>;

/// Runs a `tools/call` of a client that declared the extension: the call's
/// result when it ends without becoming a task upstream, else a
/// `CreateTaskResult` of the gateway's. `call` runs the hub's call with the
/// options given (the policy's path) and gives the client's result.
/// `before` answers the questions the server asks before the call became
/// a task (the client's input-required rounds).
pub(crate) async fn call<C>(
    gateway: &Gateway,
    tool: &str,
    seal: Sealer,
    holder: Option<u64>,
    before: Option<ClientHandlers>,
    call: C,
) -> Result<Value, Error>
where
    C: FnOnce(CallOptions) -> futures::future::BoxFuture<'static, Result<Value, Error>>,
{
    let task = GatewayTask::new(holder);
    let (became_tx, became_rx) = oneshot::channel::<(String, String)>();
    let became_tx = Mutex::new(Some(became_tx));
    let mut opts = CallOptions::default()
        .with_task(true)
        .with_handlers(task.handlers(before));
    let relay = gateway.inner.relay.clone();
    let routed: std::sync::Weak<dyn RelayTarget> = {
        let weak: std::sync::Weak<GatewayTask> = Arc::downgrade(&task);
        weak
    };
    opts.on_task = Some(Arc::new(move |upstream| {
        // A 2025-11-25 server asks its questions as requests of its own,
        // naming its task: they come to this task.
        if let Some(relay) = &relay {
            relay.route_task(&upstream.server, &upstream.task_id, routed.clone());
        }
        if let Some(tx) = became_tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send((upstream.server.clone(), upstream.task_id.clone()));
        }
    }));
    // Polled here until it becomes a task (most calls end first: no task
    // spawned for them); a client gone before then drops it, taking the
    // call along.
    let mut running = inline(call(opts));
    tokio::select! {
        outcome = &mut running => outcome,
        Ok((server, upstream)) = became_rx => {
            if !task.name(gateway, &server, &upstream, (tool, seal)) || !gateway.inner.tasks.insert(&task) {
                // Past the bound (or no randomness for an id): the client
                // waits for the call instead.
                return running.await;
            }
            let running = tokio::spawn(running);
            task.lock().published = true;
            *task.call.lock().unwrap_or_else(|e| e.into_inner()) = Some(running.abort_handle());
            let created = task.created();
            let task = task.clone();
            let gateway = gateway.clone();
            tokio::spawn(async move {
                let outcome = match running.await {
                    Ok(outcome) => outcome,
                    Err(e) if e.is_cancelled() => Err(Error::Cancelled("cancelled by the client".into())),
                    Err(e) => Err(Error::Internal(format!("tools/call: {e}"))),
                };
                gateway.inner.tasks.finish(&task, outcome);
            });
            Ok(created)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(holder: Option<u64>, n: usize, ttl: Duration) -> Arc<GatewayTask> {
        let id = std::sync::OnceLock::from(format!("t-{holder:?}-{n}"));
        GatewayTask::build(id, None, holder, ttl, None)
    }

    #[test]
    fn one_client_keeps_at_most_its_share_and_the_store_its_total() {
        let tasks = Tasks::default();
        for n in 0..MAX_TASKS_PER_CLIENT {
            assert!(tasks.insert(&made(Some(1), n, TTL)), "task {n}");
        }
        assert!(
            !tasks.insert(&made(Some(1), 9999, TTL)),
            "past the client's share"
        );
        // Another credential is not held back by the first one's tasks...
        for holder in 2..=(MAX_TASKS / MAX_TASKS_PER_CLIENT) as u64 {
            for n in 0..MAX_TASKS_PER_CLIENT {
                assert!(tasks.insert(&made(Some(holder), n, TTL)));
            }
        }
        // ... until the store is full.
        assert!(
            !tasks.insert(&made(Some(99), 0, TTL)),
            "past the store's total"
        );
        assert!(!tasks.insert(&made(None, 0, TTL)));
    }

    #[test]
    fn an_ended_task_past_its_ttl_makes_room() {
        let tasks = Tasks::default();
        let first = made(Some(1), 0, Duration::ZERO);
        assert!(tasks.insert(&first));
        for n in 1..MAX_TASKS_PER_CLIENT {
            assert!(tasks.insert(&made(Some(1), n, TTL)));
        }
        assert!(!tasks.insert(&made(Some(1), 1000, TTL)));
        // Running, it is kept whatever its TTL; ended, it goes.
        tasks.finish(&first, Ok(json!({"content": []})));
        assert!(tasks.insert(&made(Some(1), 1000, TTL)));
        assert!(
            tasks.get("t-Some(1)-0").is_err(),
            "the ended one was forgotten"
        );
    }

    #[test]
    fn a_task_id_names_its_server_as_a_header_value_with_no_dot_but_the_replicas() {
        assert_eq!(
            task_id_prefix(Some("a"), "everything"),
            "mcpmux-a.everything-"
        );
        assert_eq!(task_id_prefix(None, "my.srv/ü"), "mcpmux-my_srv___-");
        let long = task_id_prefix(None, &"x".repeat(500));
        assert_eq!(long.len(), TASK_PREFIX.len() + MAX_SERVER_IN_ID + 1);
        // Without a replica nothing reads as one (not_here splits at a dot).
        assert!(!task_id_prefix(None, "a.b").contains('.'));
    }

    #[test]
    fn ids_from_the_pool_are_distinct_hex_across_refills_and_threads() {
        let draw = || {
            (0..1000)
                .map(|_| random_id("t-").unwrap())
                .collect::<Vec<_>>()
        };
        let mut ids = draw();
        ids.extend(std::thread::spawn(draw).join().unwrap());
        for id in &ids {
            let hex = id.strip_prefix("t-").unwrap();
            assert_eq!(hex.len(), 32, "{id}");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
            assert_ne!(hex, "0".repeat(32), "a wiped slot was handed out");
        }
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
    }

    #[test]
    fn an_inlined_result_loses_only_the_v1_related_task_key() {
        let mut both = json!({
            "content": [],
            "_meta": { RELATED_TASK: { "taskId": "upstream-7" }, "other": 1 }
        });
        without_related_task(&mut both);
        assert_eq!(both, json!({ "content": [], "_meta": { "other": 1 } }));

        let mut only = json!({ "content": [], "_meta": { RELATED_TASK: { "taskId": "t" } } });
        without_related_task(&mut only);
        assert_eq!(only, json!({ "content": [] }));

        let mut none = json!({ "content": [] });
        without_related_task(&mut none);
        assert_eq!(none, json!({ "content": [] }));
    }
}
