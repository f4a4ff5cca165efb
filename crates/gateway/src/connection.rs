//! One downstream client of a [`Gateway`]: its requests answered from the
//! hub (each on its own task, so a slow call never holds up a `ping`), its
//! cancellations and progress tokens relayed, and the hub's change
//! notifications forwarded to it.
//!
//! Everything the connection sends goes through one bounded channel that
//! the transport drains. Answers wait for room; notifications are dropped
//! when the client does not keep up (a client that stops reading cannot
//! make the gateway hold an unbounded backlog). What answers, notifications
//! and relayed requests hold is counted against the client's budget
//! (`budget.rs`) until written, a tool's result from the moment a server's
//! reader reads it (`admission.rs`): an answer that does not fit is
//! replaced by a -32000 "gateway busy" error, and while the client is full
//! its new requests get that error at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::admission::{AnswerCharge, ReleaseOnDrop};
use super::budget::{ClientBudget, Outgoing};
use super::out::Out;
use super::relay::{capability_for, RelayTarget};
use super::{
    Gateway, GatewayMode, CALL_TOOL, DEFAULT_SEARCH_LIMIT, DESCRIBE_TOOL, MAX_SEARCH_LIMIT,
    SEARCH_TOOLS,
};
use mcpmux_core::client::CallOptions;
use mcpmux_core::error::Error;
use mcpmux_core::events::HubEvent;
use mcpmux_core::internal::telemetry::{self, ServedVia};
use mcpmux_core::protocol;
use mcpmux_core::{HubTool, ProgressUpdate};

/// Most requests of one client running at once; past it a request is
/// refused at once (JSON-RPC -32000) instead of queued.
pub const MAX_REQUESTS_IN_FLIGHT: usize = 256;
/// Messages waiting for the transport to send them.
pub const OUTGOING_QUEUE: usize = 1024;

/// One client's connection. Dropping it (or [`Connection::close`]) cancels
/// the client's calls in flight.
pub struct Connection {
    gateway: Gateway,
    out: Out,
    /// What this client's messages may hold.
    budget: ClientBudget,
    log_level: LogLevel,
    /// This client as the target of relayed server requests.
    downstream: Arc<Downstream>,
    inflight: Arc<Mutex<HashMap<String, AbortHandle>>>,
    /// The task forwarding the hub's notifications; none for a stateless
    /// request's connection, which has nowhere to send them.
    forwarder: Option<AbortHandle>,
    /// Every request is of the stateless revision, answered in its shapes
    /// also when its `_meta` does not name the revision (over HTTP the
    /// `MCP-Protocol-Version` header may be all that names it).
    stateless: bool,
}

impl Connection {
    /// A connection whose outgoing messages go to `out` (a queue the
    /// transport drains, or a router); starts forwarding the hub's
    /// notifications.
    pub(crate) fn new(gateway: Gateway, out: Out) -> Connection {
        Connection::build(gateway, out, false, None)
    }

    /// A connection for one request of the stateless revision: every
    /// request answered in its shapes, and no forwarding of the hub's
    /// notifications, which such a request's response does not carry (a
    /// spawned task per request saved).
    ///
    /// `holder` ([`super::tasks::holder_of`] the client's credential) alone
    /// may use the tasks it makes.
    pub(crate) fn stateless(gateway: Gateway, out: Out, holder: Option<u64>) -> Connection {
        Connection::build(gateway, out, true, holder)
    }

    fn build(gateway: Gateway, out: Out, stateless: bool, holder: Option<u64>) -> Connection {
        gateway
            .inner
            .pin_watch
            .call_once(|| super::pin_watch::start(&gateway));
        let log_level = LogLevel::default();
        let budget = ClientBudget::new(
            gateway.inner.options.client_budget_bytes,
            gateway.inner.total.clone(),
        );
        let forwarder = (!stateless).then(|| {
            tokio::spawn(forward_events(
                gateway.clone(),
                out.clone(),
                log_level.clone(),
                budget.clone(),
            ))
            .abort_handle()
        });
        static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);
        let downstream = Arc::new(Downstream {
            id: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed),
            out: out.clone(),
            budget: budget.clone(),
            capabilities: Mutex::new(Value::Null),
            version: Mutex::new(String::new()),
            pending: Arc::default(),
            next_id: AtomicU64::new(1),
            holder,
        });
        // Only a gateway with a status page keeps the list (no work per
        // connection otherwise).
        if gateway.inner.status.is_some() {
            let view: Arc<dyn super::status::ClientView> = downstream.clone();
            gateway.inner.clients.register(Arc::downgrade(&view));
        }
        Connection {
            gateway,
            out,
            budget,
            log_level,
            downstream,
            inflight: Arc::default(),
            forwarder,
            stateless,
        }
    }

    /// Acts on one message from the client: a request is answered on its
    /// own task, `notifications/cancelled` stops the request it names,
    /// other notifications and answers are ignored. A request refused at
    /// once (duplicate id, too many in flight, the client's budget full)
    /// waits here until its refusal is queued: every request gets an
    /// answer, so a client that floods requests without reading is slowed
    /// down, never dropped.
    /// `via`: how the message came (its SERVER span's transport and client).
    pub async fn handle(&self, msg: Value, via: ServedVia) {
        if let Some(refusal) = self.dispatch(msg, via) {
            self.out.send(refusal.into()).await;
        }
    }

    /// Cancels the client's request `id` (as the client's
    /// `notifications/cancelled` would), when it is still in flight.
    pub fn cancel(&self, id: &Value) {
        if let Some(task) = self.inflight.lock().unwrap().remove(&id.to_string()) {
            task.abort();
        }
    }

    /// [`Connection::handle`] up to the point of waiting: the refusal to
    /// send, if the message is a request refused at once.
    fn dispatch(&self, mut msg: Value, via: ServedVia) -> Option<Value> {
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            if let (Some(_), Some(id)) = (msg.get("method"), msg.get("id")) {
                return Some(error_answer(
                    id,
                    -32600,
                    "invalid request: method must be a string",
                    None,
                ));
            }
            // An answer to a request we relayed (or to nothing we asked).
            self.downstream.answered(&msg);
            return None;
        };
        let method = method.to_owned();
        // Moved out, not copied: the message is not looked at again.
        let params = msg.get_mut("params").map_or(Value::Null, Value::take);
        let Some(id) = msg.get("id").cloned() else {
            if method == "notifications/cancelled" {
                if let Some(request) = params.get("requestId") {
                    self.cancel(request);
                }
            }
            return None;
        };
        let key = id.to_string();
        let mut inflight = self.inflight.lock().unwrap();
        if inflight.contains_key(&key) {
            return Some(error_answer(
                &id,
                -32600,
                "a request with this id is already in flight",
                None,
            ));
        }
        if inflight.len() >= MAX_REQUESTS_IN_FLIGHT {
            return Some(error_answer(
                &id,
                -32000,
                &format!("too many requests in flight (at most {MAX_REQUESTS_IN_FLIGHT})"),
                None,
            ));
        }
        // The client holds its budget of answers it has not read (or the
        // gateway its total): this one would only add to them.
        if let Some(why) = self.budget.refuses_new() {
            return Some(error_answer(&id, -32000, &why, Some("LIMIT_EXCEEDED")));
        }
        if method == "initialize" {
            self.attach(&params);
        }
        // The stateless revision's results carry members older ones lack.
        let stateless = self.stateless
            || params
                .get("_meta")
                .and_then(|m| m.get(mcpmux_core::internal::stateless::META_PROTOCOL_VERSION))
                .and_then(Value::as_str)
                == Some(mcpmux_core::internal::stateless::VERSION);
        let gateway = self.gateway.clone();
        let out = self.out.clone();
        let log_level = self.log_level.clone();
        let table = self.inflight.clone();
        let task_key = key.clone();
        let budget = self.budget.clone();
        let client = self.downstream.clone();
        let task = tokio::spawn(async move {
            // What a server's reader counts of the answer; given back if
            // this task ends without settling it (cancelled).
            let charge = AnswerCharge::new(budget);
            let _release = ReleaseOnDrop(charge.clone());
            let requestor = Requestor {
                id: &id,
                out: &out,
                log_level: &log_level,
                client: &client,
                stateless,
            };
            // The status page's calls name the client that made them.
            let answering = super::status::CLIENT.scope(
                client.id,
                answer(&gateway, &requestor, &method, &params, &charge),
            );
            // A SERVER span, child of the request's `_meta.traceparent`.
            let answered = telemetry::serve_via(via, &method, &params, answering).await;
            let answer = match answered {
                Ok(mut result) => {
                    if stateless {
                        mcpmux_core::internal::stateless::complete_result(&method, &mut result);
                    }
                    json!({"jsonrpc": "2.0", "id": id, "result": result})
                }
                Err(e) => error_of(&id, &e),
            };
            // Held against the client's budget until written; one that
            // does not fit (now, or when a server's reader read it) is
            // dropped for a small refusal.
            let answer = match charge.settle(answer) {
                Ok(answer) => answer,
                Err(why) => error_answer(&id, -32000, &why, Some("LIMIT_EXCEEDED")).into(),
            };
            // Counted until its answer is queued: a client that stops
            // reading holds at most MAX_REQUESTS_IN_FLIGHT answers.
            out.send(answer).await;
            table.lock().unwrap().remove(&task_key);
        });
        // The task removes its entry under the same lock, so it cannot do
        // so before this insert.
        inflight.insert(key, task.abort_handle());
        None
    }

    /// Records what the client can do (its `initialize` capabilities) and
    /// offers it to the gateway's relay.
    fn attach(&self, params: &Value) {
        *self.downstream.capabilities.lock().unwrap() =
            params.get("capabilities").cloned().unwrap_or(Value::Null);
        *self.downstream.version.lock().unwrap() = negotiated(params).to_owned();
        if let Some(relay) = &self.gateway.inner.relay {
            let target: Arc<dyn RelayTarget> = self.downstream.clone();
            relay.attach(Arc::downgrade(&target));
        }
    }

    /// Carries on a session begun elsewhere (another replica, or this one
    /// before a restart): the client's revision and capabilities as its
    /// `initialize` gave them.
    pub(crate) fn resume(&self, version: &str, capabilities: &Value) {
        self.attach(&json!({ "protocolVersion": version, "capabilities": capabilities }));
    }

    /// Cancels the client's calls in flight and stops forwarding.
    pub fn close(&self) {
        if let Some(forwarder) = &self.forwarder {
            forwarder.abort();
        }
        super::stateful_tasks::forget(&self.gateway, self.downstream.id);
        for (_, task) in self.inflight.lock().unwrap().drain() {
            task.abort();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close();
    }
}

/// Most relayed requests waiting for one client's answer.
const MAX_RELAYED_IN_FLIGHT: usize = 64;

/// Relayed requests waiting for the client, by our request id.
type Waiters = HashMap<String, oneshot::Sender<Result<Value, Error>>>;

/// One client as the target of relayed server requests.
struct Downstream {
    /// Which connection it is (unique in the process): what owns its
    /// 2025-11-25 tasks.
    id: u64,
    out: Out,
    /// What the relayed requests may hold.
    budget: ClientBudget,
    /// Its `initialize` capabilities.
    capabilities: Mutex<Value>,
    /// The revision its `initialize` negotiated (empty before).
    version: Mutex<String>,
    /// Our request id → who waits for the answer.
    pending: Arc<Mutex<Waiters>>,
    next_id: AtomicU64,
    /// Who holds the 2026-07-28 tasks it makes (see
    /// [`super::tasks::GatewayTask::holder`]).
    holder: Option<u64>,
}

impl super::status::ClientView for Downstream {
    fn id(&self) -> u64 {
        self.id
    }

    fn revision(&self) -> String {
        self.version.lock().unwrap().clone()
    }

    fn held(&self) -> (usize, usize) {
        (self.budget.used(), self.budget.limit())
    }
}

impl Downstream {
    /// Whether its revision has the protocol's own tasks (2025-11-25).
    fn has_tasks(&self) -> bool {
        super::stateful_tasks::in_revision(&self.version.lock().unwrap())
    }

    /// Hands an answer from the client to the relayed request it answers.
    fn answered(&self, msg: &Value) {
        let Some(id) = msg.get("id").and_then(Value::as_str) else {
            return;
        };
        let Some(waiter) = self.pending.lock().unwrap().remove(id) else {
            return;
        };
        let outcome = match (msg.get("result"), msg.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(Error::ServerError {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the client answered with an error")
                    .chars()
                    .take(4096)
                    .collect(),
                data: error.get("data").cloned(),
            }),
            (None, None) => Err(Error::ProtocolError(
                "the client's answer has neither result nor error".into(),
            )),
        };
        let _ = waiter.send(outcome);
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        // The client is gone: what waits for its answers fails now.
        self.pending.lock().unwrap().clear();
    }
}

/// Removes a relayed request's entry when its waiter goes away (answered,
/// or the server cancelled it).
struct PendingEntry {
    pending: Arc<Mutex<Waiters>>,
    id: String,
}

impl Drop for PendingEntry {
    fn drop(&mut self) {
        self.pending.lock().unwrap().remove(&self.id);
    }
}

impl RelayTarget for Downstream {
    fn accepts(&self, method: &str) -> bool {
        capability_for(method).is_some_and(|c| {
            self.capabilities
                .lock()
                .unwrap()
                .get(c)
                .is_some_and(|v| !v.is_null())
        })
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, Error>> {
        let id = format!(
            "mcpmux-gateway-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap();
            if pending.len() >= MAX_RELAYED_IN_FLIGHT {
                return Box::pin(async move {
                    Err(Error::LimitExceeded(format!(
                        "at most {MAX_RELAYED_IN_FLIGHT} requests may wait for the gateway's client"
                    )))
                });
            }
            pending.insert(id.clone(), tx);
        }
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            msg["params"] = params;
        }
        let entry = PendingEntry {
            pending: self.pending.clone(),
            id,
        };
        let sent = match self.budget.hold(&msg) {
            Ok(held) => {
                let sent = self.out.try_send(Outgoing {
                    msg,
                    held: Some(held),
                });
                sent.then_some(()).ok_or_else(|| {
                    Error::TransportClosed("the gateway's client is not reading".into())
                })
            }
            Err(why) => Err(Error::LimitExceeded(why)),
        };
        Box::pin(async move {
            let _entry = entry;
            sent?;
            rx.await.unwrap_or_else(|_| {
                Err(Error::TransportClosed(
                    "the gateway's client went away".into(),
                ))
            })
        })
    }
}

/// Who sent a request, and what answering it needs of them.
struct Requestor<'a> {
    /// The request's id.
    id: &'a Value,
    out: &'a Out,
    log_level: &'a LogLevel,
    client: &'a Arc<Downstream>,
    /// The request is of the stateless 2026-07-28 revision.
    stateless: bool,
}

/// The result of one request, or the error to answer with. A tool's result
/// is counted against `charge` as soon as it is read.
async fn answer(
    gateway: &Gateway,
    requestor: &Requestor<'_>,
    method: &str,
    params: &Value,
    charge: &Arc<AnswerCharge>,
) -> Result<Value, Error> {
    let (id, out, log_level) = (requestor.id, requestor.out, requestor.log_level);
    let hub = gateway.hub();
    let string = |key: &str| -> Result<&str, Error> {
        params
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| Error::InvalidInput(format!("{method}: params.{key} must be a string")))
    };
    match method {
        "initialize" => {
            let mut answer = initialize(params);
            advertise_extensions(gateway, &mut answer);
            if super::stateful_tasks::in_revision(negotiated(params))
                && super::tasks::any_server_has_tasks(gateway)
            {
                answer["capabilities"]["tasks"] = super::stateful_tasks::capability();
            }
            if let Some(text) = merged_instructions(&hub.instructions()) {
                answer["instructions"] = text.into();
            }
            Ok(answer)
        }
        "server/discover" => {
            let mut answer = discover();
            advertise_extensions(gateway, &mut answer);
            Ok(answer)
        }
        "events/list" => super::events::list(gateway).await,
        "events/poll" => super::events::poll(gateway, params).await,
        "events/stream" => super::events::stream(gateway, params, id, out).await,
        "events/subscribe" => super::events::subscribe(gateway, params).await,
        "events/unsubscribe" => super::events::unsubscribe(gateway, params).await,
        "subscriptions/listen" => {
            super::listen::listen(gateway, params, id, out, requestor.client.holder).await
        }
        "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel"
            if !requestor.stateless
                && !super::tasks::declared(params)
                && requestor.client.has_tasks() =>
        {
            let owner = requestor.client.id;
            match method {
                "tasks/get" => super::stateful_tasks::get(gateway, params, owner),
                "tasks/result" => super::stateful_tasks::result(gateway, params, owner).await,
                "tasks/list" => super::stateful_tasks::list(gateway, params, owner),
                _ => super::stateful_tasks::cancel(gateway, params, owner),
            }
        }
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            if !super::tasks::declared(params) {
                return Err(super::tasks::missing_capability());
            }
            let tasks = &gateway.inner.tasks;
            let holder = requestor.client.holder;
            // A task of the fleet's that this replica does not follow (it
            // began on another, or before a restart): served from its server.
            if let Some(served) = super::fleet_tasks::serve(gateway, method, params, holder).await {
                return served;
            }
            let outcome = match method {
                "tasks/get" => tasks.get_detailed(params, holder),
                "tasks/update" => tasks.update(params, holder),
                _ => tasks.cancel(params, holder),
            };
            // A task of another replica: say which.
            let id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
            outcome.map_err(|e| super::tasks::not_here(gateway, super::tasks::TASK_PREFIX, id, e))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": gateway.tools_list() })),
        "tools/call"
            if !requestor.stateless
                && super::stateful_tasks::requested(params)
                && requestor.client.has_tasks()
                && gateway.inner.options.mode == GatewayMode::Full =>
        {
            call_as_task(gateway, requestor, params)
        }
        "tools/call" => Ok(call(gateway, params, out, charge, requestor.client.holder).await),
        "resources/list" => Ok(json!({
            "resources": super::apps::listed_resources(gateway, hub.list_resources(None).await?)
        })),
        "resources/templates/list" => Ok(json!({
            "resourceTemplates": super::apps::listed_templates(hub.list_resource_templates(None).await?)
        })),
        "resources/read" => {
            let uri = string("uri")?;
            if uri.starts_with(super::results::SCHEME) {
                super::results::read_resource(gateway, uri)
            } else if uri.starts_with(mcpmux_core::apps::SCHEME) {
                super::apps::read(gateway, uri).await
            } else {
                hub.read_resource(uri, None).await.map(Value::from)
            }
        }
        "resources/subscribe" => {
            let (uri, server) = super::apps::upstream(gateway, string("uri")?);
            hub.subscribe(&uri, server.as_deref()).await?;
            Ok(json!({}))
        }
        "resources/unsubscribe" => {
            let (uri, server) = super::apps::upstream(gateway, string("uri")?);
            hub.unsubscribe(&uri, server.as_deref()).await?;
            Ok(json!({}))
        }
        "prompts/list" => {
            let prompts = named_prompts(gateway).await?;
            Ok(json!({ "prompts": prompts.into_iter().map(|p| p.shown).collect::<Vec<_>>() }))
        }
        "prompts/get" => {
            let prompt = find_prompt(gateway, string("name")?).await?;
            hub.get_prompt(&prompt.own, params.get("arguments"), Some(&prompt.server))
                .await
                .map(Value::from)
        }
        "completion/complete" => {
            let mut reference = params.get("ref").cloned().unwrap_or(Value::Null);
            let argument = params.get("argument").cloned().unwrap_or(Value::Null);
            let mut server = None;
            if reference["type"] == "ref/prompt" {
                if let Some(name) = reference["name"].as_str() {
                    let prompt = find_prompt(gateway, name).await?;
                    reference["name"] = prompt.own.into();
                    server = Some(prompt.server);
                }
            }
            let completion = hub
                .complete(
                    &reference,
                    &argument,
                    params.get("context"),
                    server.as_deref(),
                )
                .await?;
            Ok(json!({ "completion": completion }))
        }
        "logging/setLevel" => {
            let level = string("level")?;
            if !protocol::LOG_LEVELS.contains(&level) {
                return Err(Error::InvalidInput(format!(
                    "logging/setLevel: unknown level '{level}'"
                )));
            }
            log_level.set(level);
            // Every server that logs; the others have nothing to set.
            for server in hub.servers() {
                let _ = hub.set_log_level(&server.name, level).await;
            }
            Ok(json!({}))
        }
        other => Err(Error::ServerError {
            code: -32601,
            message: format!("method not found: {other}"),
            data: None,
        }),
    }
}

/// The answer to `initialize`: the client's revision when the gateway
/// speaks it, else the newest.
fn initialize(params: &Value) -> Value {
    let version = negotiated(params);
    json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "logging": {}
        },
        "serverInfo": {"name": "mcpmux-gateway", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The revision an `initialize` with `params` gets.
pub(crate) fn negotiated(params: &Value) -> &str {
    let asked = params["protocolVersion"].as_str().unwrap_or("");
    if protocol::STATEFUL_VERSIONS.contains(&asked) {
        asked
    } else {
        protocol::LATEST_STATEFUL_VERSION
    }
}

/// The extensions the gateway implements for its clients, declared in its
/// capabilities when a server behind it has them: MCP Apps (the gateway
/// serves apps under its own names). An extension the gateway does not
/// implement is never claimed.
fn advertise_extensions(gateway: &Gateway, answer: &mut Value) {
    let apps = gateway.hub().servers().iter().any(|s| {
        s.capabilities
            .as_ref()
            .and_then(|c| c.get("extensions"))
            .and_then(|e| e.get(mcpmux_core::apps::EXTENSION))
            .is_some()
    });
    let mut extensions = Map::new();
    if apps {
        extensions.insert(mcpmux_core::apps::EXTENSION.into(), json!({}));
    }
    // Tasks: to 2026-07-28 clients only (the extension is not defined on
    // the older revisions), when a server behind can run tasks.
    let stateless = answer.get("supportedVersions").is_some();
    if stateless && super::tasks::any_server_has_tasks(gateway) {
        extensions.insert(super::tasks::EXTENSION.into(), json!({}));
    }
    if super::events::any_server_has_events(gateway) {
        // A change of any server's event types is relayed (as
        // `notifications/events/list_changed`) on the session's stream.
        let list_changed = gateway.hub().servers().iter().any(|s| {
            s.capabilities
                .as_ref()
                .is_some_and(mcpmux_core::events_ext::offers_list_changed)
        });
        extensions.insert(
            super::events::EXTENSION.into(),
            json!({ "listChanged": list_changed }),
        );
    }
    if !extensions.is_empty() {
        answer["capabilities"]["extensions"] = Value::Object(extensions);
    }
}

/// The instructions the gateway gives its clients: one server's as it sent
/// them; several servers' each under a heading with its name, in config
/// order; none when no server sent any (servers still starting when the
/// client initializes are not waited for).
fn merged_instructions(each: &[(String, String)]) -> Option<String> {
    match each {
        [] => None,
        [(_, only)] => Some(only.clone()),
        many => Some(
            many.iter()
                .map(|(server, text)| format!("## {server}\n\n{}", text.trim_end()))
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
    }
}

/// A prompt as the gateway lists it.
struct NamedPrompt {
    /// The configured server offering it.
    server: String,
    /// The server's own name for it.
    own: String,
    /// The prompt as listed to the client, under the gateway's name.
    shown: Value,
}

/// Every prompt, named as tools are (`mcp_{server}_{prompt}`, the same
/// rule, so two servers' prompts of one name stay apart), or under its own
/// name with `--no-prefix`.
async fn named_prompts(gateway: &Gateway) -> Result<Vec<NamedPrompt>, Error> {
    let hub = gateway.hub();
    let listed = hub.list_prompts(None).await?;
    let pairs: Vec<(String, String)> = listed
        .iter()
        .map(|p| {
            (
                p["server"].as_str().unwrap_or_default().to_owned(),
                p["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let names = if gateway.inner.options.no_prefix {
        pairs.iter().map(|(_, own)| own.clone()).collect()
    } else {
        hub.prompt_hub_names(&listed)
    };
    Ok(own(listed)
        .into_iter()
        .zip(pairs)
        .zip(names)
        .map(|((mut shown, (server, own)), name)| {
            shown["name"] = name.into();
            NamedPrompt { server, own, shown }
        })
        .collect())
}

/// The prompt the client calls `name`: by the name the gateway lists, else
/// by a server's own name when one server alone has a prompt of that name
/// (the name `mcpmux prompts` shows).
async fn find_prompt(gateway: &Gateway, name: &str) -> Result<NamedPrompt, Error> {
    let mut prompts = named_prompts(gateway).await?;
    if let Some(i) = prompts.iter().position(|p| p.shown["name"] == name) {
        return Ok(prompts.swap_remove(i));
    }
    let mut own: Vec<usize> = (0..prompts.len())
        .filter(|&i| prompts[i].own == name)
        .collect();
    if own.len() == 1 {
        return Ok(prompts.swap_remove(own.remove(0)));
    }
    let hint = mcpmux_core::internal::tool_names::did_you_mean(
        name,
        prompts
            .iter()
            .map(|p| (p.shown["name"].as_str().unwrap_or_default(), p.own.as_str())),
    );
    Err(Error::InvalidInput(format!(
        "unknown prompt '{name}'{hint}"
    )))
}

/// The answer to `server/discover` (the stateless 2026-07-28 revision):
/// every revision the gateway speaks, its capabilities and name.
fn discover() -> Value {
    let mut versions: Vec<&str> = vec![mcpmux_core::internal::stateless::VERSION];
    versions.extend(protocol::STATEFUL_VERSIONS);
    let mut answer = initialize(&Value::Null);
    let object = answer
        .as_object_mut()
        .expect("initialize answers an object");
    object.remove("protocolVersion");
    object.insert("supportedVersions".into(), json!(versions));
    answer
}

/// Items of a hub listing without the `server` member the hub adds.
fn own(items: Vec<Value>) -> Vec<Value> {
    items
        .into_iter()
        .map(|mut item| {
            if let Value::Object(o) = &mut item {
                o.remove("server");
            }
            item
        })
        .collect()
}

/// A `tools/call`: always a tool result; refusals and failures are results
/// with `isError` and the error's code first in their text, so that a
/// model sees them. The result of a plain call is counted against
/// `charge` as soon as it is read (a task's, once it is handed out).
async fn call(
    gateway: &Gateway,
    params: &Value,
    out: &Out,
    charge: &Arc<AnswerCharge>,
    holder: Option<u64>,
) -> Value {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let arguments = params.get("arguments").filter(|a| !a.is_null());
    let progress = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    #[cfg(feature = "sessions")]
    if let Some(ctx) = gateway.review() {
        if mcpmux_sessions::mcp_tools::is_review_tool(name) {
            let arguments = arguments.cloned().unwrap_or(Value::Null);
            return mcpmux_sessions::mcp_tools::call_review_tool(ctx, name, &arguments).await;
        }
    }
    if super::results::is_call(gateway, name) {
        let arguments = arguments.cloned().unwrap_or(Value::Null);
        return super::results::call(gateway, &arguments);
    }
    let result = match gateway.inner.options.mode {
        GatewayMode::Search => match name {
            SEARCH_TOOLS => Ok(search(gateway, arguments)),
            DESCRIBE_TOOL => describe(gateway, arguments),
            CALL_TOOL => {
                let inner_name = arguments
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let inner_args = arguments.and_then(|a| a.get("arguments")).filter(|a| !a.is_null());
                call_hub_tool(gateway, inner_name, inner_args, progress, out, charge).await
            }
            other => Err(Error::UnknownTool(format!(
                "unknown tool '{other}' (this gateway offers {SEARCH_TOOLS}, {DESCRIBE_TOOL} and {CALL_TOOL})"
            ))),
        },
        // A 2026-07-28 client is asked the server's questions itself (an
        // input-required result); one of the tasks extension gets a task
        // when the call becomes one.
        GatewayMode::Full if super::input_required::applies(params) => {
            let tasks = super::tasks::declared(params);
            let (gw, tool, arguments, out) = (
                gateway.clone(),
                name.to_owned(),
                arguments.cloned(),
                out.clone(),
            );
            super::input_required::call(gateway, name, params, move |asker| {
                Box::pin(async move {
                    let arguments = arguments.as_ref();
                    if !tasks {
                        let opts = CallOptions::default().with_handlers(asker);
                        return call_hub_tool_with(&gw, &tool, arguments, progress, &out, opts)
                            .await;
                    }
                    let (gw2, out2, called) = (gw.clone(), out.clone(), tool.clone());
                    let arguments = arguments.cloned();
                    let seal = super::fleet_tasks::sealed_id;
                    super::tasks::call(&gw, &called, seal, holder, Some(asker), move |opts| {
                        Box::pin(async move {
                            call_hub_tool_with(&gw2, &tool, arguments.as_ref(), progress, &out2, opts)
                                .await
                        })
                    })
                    .await
                })
            })
            .await
        }
        GatewayMode::Full if super::tasks::declared(params) => {
            let (gw, tool, arguments, out) = (
                gateway.clone(),
                name.to_owned(),
                arguments.cloned(),
                out.clone(),
            );
            let seal = super::fleet_tasks::sealed_id;
            super::tasks::call(gateway, name, seal, holder, None, move |opts| {
                Box::pin(async move {
                    call_hub_tool_with(&gw, &tool, arguments.as_ref(), progress, &out, opts).await
                })
            })
            .await
        }
        GatewayMode::Full => {
            call_hub_tool(gateway, name, arguments, progress, out, charge).await
        }
    };
    result.unwrap_or_else(|e| {
        json!({
            "content": [{"type": "text", "text": format!("{}: {e}", e.code())}],
            "isError": true
        })
    })
}

/// A 2025-11-25 client's `tools/call` with `params.task`: a task of the
/// gateway's at once (see `stateful_tasks`), the call in the background.
fn call_as_task(
    gateway: &Gateway,
    requestor: &Requestor<'_>,
    params: &Value,
) -> Result<Value, Error> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let progress = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    let (gw, name, arguments, out) = (
        gateway.clone(),
        name.to_owned(),
        params.get("arguments").filter(|a| !a.is_null()).cloned(),
        requestor.out.clone(),
    );
    let client: Arc<dyn RelayTarget> = requestor.client.clone();
    // The server the id names: none for a name no server has (the call
    // then fails as a plain one would, in the task).
    let server = gateway.server_of(&name).unwrap_or_default();
    super::stateful_tasks::call(
        gateway,
        &server,
        params,
        requestor.client.id,
        Arc::downgrade(&client),
        requestor.out.clone(),
        move |opts| {
            Box::pin(async move {
                // A tool's failure is the task's result, as a plain call's.
                let result =
                    call_hub_tool_with(&gw, &name, arguments.as_ref(), progress, &out, opts).await;
                Ok(result.unwrap_or_else(|e| {
                    json!({
                        "content": [{"type": "text", "text": format!("{}: {e}", e.code())}],
                        "isError": true
                    })
                }))
            })
        },
    )
}

/// Calls the tool the client knows as `name` through the policy, its
/// result counted against `charge` from the moment it is read.
async fn call_hub_tool(
    gateway: &Gateway,
    name: &str,
    arguments: Option<&Value>,
    progress: Option<Value>,
    out: &Out,
    charge: &Arc<AnswerCharge>,
) -> Result<Value, Error> {
    let gate: Arc<dyn mcpmux_core::AnswerGate> = charge.clone();
    let options = CallOptions::default().with_answer_gate(gate);
    call_hub_tool_with(gateway, name, arguments, progress, out, options).await
}

/// [`call_hub_tool`] with the call's options to start from (a task's).
async fn call_hub_tool_with(
    gateway: &Gateway,
    name: &str,
    arguments: Option<&Value>,
    progress: Option<Value>,
    out: &Out,
    mut options: CallOptions,
) -> Result<Value, Error> {
    // A name no server has is UNKNOWN_TOOL, naming the offered tools meant
    // (as describe_tool and every other front end do); a tool the hub has
    // goes to the policy, which refuses one it does not offer
    // (TOOL_NOT_ALLOWED, naming no other tool) and audits the attempt.
    let Some(hub_name) = gateway.resolve(name) else {
        return Err(unknown_tool(gateway, name));
    };
    // Every result is checked against its tool's outputSchema: a violation
    // is OUTPUT_INVALID, which the client gets as an error result naming
    // the tool and the path (as a server whose tool failed would answer).
    options.validate_output = mcpmux_core::ValidateOutput::Error;
    if let Some(token) = progress {
        let out = out.clone();
        options.on_progress = Some(Arc::new(move |update: ProgressUpdate| {
            let mut params = json!({"progressToken": token, "progress": update.progress});
            if let Some(total) = update.total {
                params["total"] = total.into();
            }
            if let Some(message) = update.message {
                params["message"] = message.into();
            }
            out.try_send(
                json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": params
                })
                .into(),
            );
        }));
    }
    let result = gateway
        .inner
        .policy
        .call_for_host(&gateway.inner.hub, &hub_name, arguments, &options)
        .await?;
    Ok(super::shown::shown_result(
        gateway,
        &hub_name,
        name,
        result.value(),
    ))
}

/// `search_tools {query, limit}`: the best matches among the offered tools.
fn search(gateway: &Gateway, arguments: Option<&Value>) -> Value {
    let query = arguments
        .and_then(|a| a.get("query"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let limit = arguments
        .and_then(|a| a.get("limit"))
        .and_then(Value::as_u64)
        .map_or(DEFAULT_SEARCH_LIMIT, |n| {
            (n as usize).clamp(1, MAX_SEARCH_LIMIT)
        });
    // Search mode's caller is a model: no app-only tool (MCP Apps).
    let offered: Vec<HubTool> = gateway
        .offered()
        .into_iter()
        .filter(|t| !t.is_app_only())
        .collect();
    let found: Vec<Value> = mcpmux_core::internal::tool_search::rank(&offered, query, limit)
        .into_iter()
        .map(|t| {
            json!({
                "name": gateway.shown_name(t),
                "description": t.description.clone().unwrap_or_default(),
                "inputSchema": t.input_schema
            })
        })
        .collect();
    let text = serde_json::to_string(&found).unwrap_or_default();
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"tools": found},
        "isError": false
    })
}

/// UNKNOWN_TOOL for a name no server has, with the names meant among the
/// tools this client is offered only: a tool the policy hides is never
/// named. In search mode, the offered hub tools; else every tool it lists
/// (the review tools too).
fn unknown_tool(gateway: &Gateway, name: &str) -> Error {
    let offered = gateway.offered();
    #[cfg_attr(not(feature = "sessions"), allow(unused_mut))]
    let mut shown: Vec<(String, String)> = offered
        .iter()
        .map(|t| (gateway.shown_name(t), t.tool.clone()))
        .collect();
    let search = matches!(gateway.inner.options.mode, GatewayMode::Search);
    #[cfg(feature = "sessions")]
    if !search && gateway.review().is_some() {
        for tool in mcpmux_sessions::mcp_tools::review_tools() {
            if let Some(review) = tool["name"].as_str() {
                shown.push((review.to_owned(), review.to_owned()));
            }
        }
    }
    let hint = mcpmux_core::internal::tool_names::did_you_mean(
        name,
        shown.iter().map(|(n, t)| (n.as_str(), t.as_str())),
    );
    if search {
        Error::UnknownTool(format!(
            "no tool '{name}' is offered{hint} (search with {SEARCH_TOOLS})"
        ))
    } else {
        Error::UnknownTool(format!("unknown tool '{name}'{hint}"))
    }
}

/// `describe_tool {name}`: one offered tool in MCP form.
fn describe(gateway: &Gateway, arguments: Option<&Value>) -> Result<Value, Error> {
    let name = arguments
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let hub_name = gateway
        .resolve(name)
        .ok_or_else(|| unknown_tool(gateway, name))?;
    let tool = gateway
        .offered()
        .into_iter()
        .find(|t| t.name == hub_name)
        .ok_or_else(|| Error::UnknownTool(format!("no tool '{name}' is offered")))?;
    let rendered = gateway
        .listed(std::slice::from_ref(&tool))
        .pop()
        .unwrap_or(Value::Null);
    Ok(json!({
        "content": [{"type": "text", "text": rendered.to_string()}],
        "structuredContent": rendered,
        "isError": false
    }))
}

/// The least severe server log level one client asked for with
/// `logging/setLevel`; until it asks, no server log reaches it (servers
/// log on their own, and a client that never asked gets nothing it did
/// not want).
#[derive(Clone)]
struct LogLevel(Arc<AtomicUsize>);

impl Default for LogLevel {
    fn default() -> Self {
        LogLevel(Arc::new(AtomicUsize::new(usize::MAX)))
    }
}

impl LogLevel {
    /// Records `level` (one of [`protocol::LOG_LEVELS`]).
    fn set(&self, level: &str) {
        if let Some(i) = protocol::LOG_LEVELS.iter().position(|l| *l == level) {
            self.0.store(i, Ordering::Relaxed);
        }
    }

    /// Whether a message at `level` goes to the client.
    fn passes(&self, level: &str) -> bool {
        let wanted = self.0.load(Ordering::Relaxed);
        protocol::LOG_LEVELS
            .iter()
            .position(|l| *l == level)
            .is_some_and(|i| wanted != usize::MAX && i >= wanted)
    }
}

/// Forwards the hub's change notifications to one client until the hub
/// closes or the client is gone.
async fn forward_events(gateway: Gateway, out: Out, log_level: LogLevel, budget: ClientBudget) {
    let mut events = gateway.hub().events();
    let search = gateway.inner.options.mode == GatewayMode::Search;
    let notify = |method: &str, params: Option<Value>| {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            msg["params"] = params;
        }
        // Dropped when the client does not keep up (see the module doc),
        // or when it does not fit the client's budget (a server's log
        // message may be large).
        let Ok(held) = budget.hold(&msg) else {
            return !out.is_closed();
        };
        out.try_send(Outgoing {
            msg,
            held: Some(held),
        }) || !out.is_closed()
    };
    let mut pins_changed = gateway.inner.pins_changed.subscribe();
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            Ok(()) = pins_changed.changed() => {
                // An approval changed what is offered.
                if search || notify("notifications/tools/list_changed", None) {
                    continue;
                }
                return;
            }
        };
        let Some(event) = event else {
            return;
        };
        let alive = match event {
            // The search mode's three tools never change.
            HubEvent::ToolsChanged { .. } if search => true,
            HubEvent::ToolsChanged { .. } => notify("notifications/tools/list_changed", None),
            // A pinned tool's definition changed: it is no longer listed.
            HubEvent::ToolQuarantined { .. } if search => true,
            HubEvent::ToolQuarantined { .. } => notify("notifications/tools/list_changed", None),
            HubEvent::ResourcesChanged { .. } => {
                notify("notifications/resources/list_changed", None)
            }
            HubEvent::PromptsChanged { .. } => notify("notifications/prompts/list_changed", None),
            HubEvent::EventsChanged { .. } => notify("notifications/events/list_changed", None),
            HubEvent::ResourceUpdated { server, uri } => notify(
                "notifications/resources/updated",
                Some(json!({ "uri": super::apps::shown_uri(&server, &uri) })),
            ),
            HubEvent::Log { ref level, .. } if !log_level.passes(level) => true,
            HubEvent::Log {
                level,
                logger,
                data,
                ..
            } => {
                let mut params = Map::new();
                params.insert("level".into(), level.into());
                if let Some(logger) = logger {
                    params.insert("logger".into(), logger.into());
                }
                params.insert("data".into(), data);
                notify("notifications/message", Some(Value::Object(params)))
            }
            // Lost events: every list may have changed.
            HubEvent::Lagged { .. } => {
                let tools = search || notify("notifications/tools/list_changed", None);
                tools
                    && notify("notifications/resources/list_changed", None)
                    && notify("notifications/prompts/list_changed", None)
            }
            // Restarts stay inside the gateway; tasks are not relayed yet.
            _ => true,
        };
        if !alive {
            return;
        }
    }
}

/// The JSON-RPC error answer for `e`: a server's own error keeps its code;
/// bad parameters are -32602; the rest -32603. `data.code` is mcpmux's
/// stable code.
fn error_of(id: &Value, e: &Error) -> Value {
    let code = match e {
        Error::ServerError { code, .. } => *code,
        Error::InvalidInput(_) | Error::UnknownServer(_) | Error::UnknownTool(_) => -32602,
        _ => -32603,
    };
    let message = match e {
        Error::ServerError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    let mut answer = error_answer(id, code, &message, Some(e.code()));
    // An error's own data (a server's, or the gateway's -32021 naming the
    // capability) goes along; `code` stays mcpmux's.
    if let Error::ServerError {
        data: Some(Value::Object(data)),
        ..
    } = e
    {
        if let Some(Value::Object(ours)) = answer["error"].get_mut("data") {
            for (k, v) in data {
                ours.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    answer
}

/// A JSON-RPC error answer.
pub(super) fn error_answer(
    id: &Value,
    code: i64,
    message: &str,
    mcpmux_code: Option<&str>,
) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(c) = mcpmux_code {
        error["data"] = json!({ "code": c });
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}
