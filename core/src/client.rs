//! [`Client`]: one connected MCP server — the `initialize` handshake, typed
//! requests, pagination, and the server's own requests and notifications.

use std::sync::{Arc, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::config::ServerConfig;
use crate::error::Error;
use crate::events::{self, EventSender, HubEvent};
use crate::jsonrpc::{
    codes, AnswerGate, Inbound, Peer, ProgressCallback, RequestOptions, RpcError,
};
use crate::output_check::{OutputChecks, ValidateOutput};
use crate::protocol::{self, InitializeResult, Tool};
use crate::stateless::{self, RequestMeta};
use crate::tool_names::HubTool;

mod task_calls;

/// A request the server sent to the host (`roots/list`,
/// `sampling/createMessage`, `elicitation/create`).
#[derive(Debug, Clone)]
pub struct ServerRequest {
    /// The configured name of the server that asked.
    pub server: String,
    /// The JSON-RPC method.
    pub method: String,
    /// The request's params (`null` when absent).
    pub params: Value,
}

/// Answers one kind of server request. Runs on an engine task; the future
/// is dropped when the server cancels the request. An `Err` reaches the
/// server as a JSON-RPC error (a [`Error::ServerError`] keeps its code).
pub type RequestHandler =
    Arc<dyn Fn(ServerRequest) -> BoxFuture<'static, Result<Value, Error>> + Send + Sync>;

/// Handlers the host sets for server-to-client requests. A capability is
/// declared to servers only when its handler is set; without one the engine
/// answers "method not found", as the specification says for a client
/// without that capability. `ping` is always answered.
#[derive(Clone, Default)]
pub struct ClientHandlers {
    /// Answers `roots/list`.
    pub roots: Option<RequestHandler>,
    /// Answers `sampling/createMessage`.
    pub sampling: Option<RequestHandler>,
    /// Answers `elicitation/create`.
    pub elicitation: Option<RequestHandler>,
}

/// Options shared by every client of a hub.
#[derive(Clone)]
pub struct ClientOptions {
    /// `clientInfo` sent in `initialize`.
    pub client_info: Value,
    /// Handlers for server requests.
    pub handlers: ClientHandlers,
    /// Called after the tool list changed (on an engine task).
    pub on_tools_changed: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Authorization hooks (handler, token store) for OAuth servers.
    pub auth: crate::auth::AuthOptions,
    /// Where the server's notifications go as [`HubEvent`]s (log messages,
    /// list changes, resource updates); the hub's sender.
    pub events: EventSender,
    /// Whether the host may change its roots (and says so with
    /// `notifications/roots/list_changed`): the `roots` capability is then
    /// declared with `listChanged: true`. The hub sets it with its roots.
    pub roots_list_changed: bool,
    /// Extensions the host declares to every server
    /// (`capabilities.extensions`: name to settings), such as MCP Apps'
    /// `io.modelcontextprotocol/ui` for a host that renders apps. The tasks
    /// extension is declared by the engine itself on 2026-07-28.
    pub extensions: serde_json::Map<String, Value>,
    /// Where the client may connect ([`crate::NetworkPolicy`]): every
    /// connection of a network server (OAuth's included) is under it. The
    /// hub sets its options' policy with its config's `[network]`.
    pub network: crate::NetworkPolicy,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: protocol::default_client_info(),
            handlers: ClientHandlers::default(),
            on_tools_changed: None,
            auth: crate::auth::AuthOptions::default(),
            events: EventSender::default(),
            roots_list_changed: false,
            extensions: serde_json::Map::new(),
            network: crate::NetworkPolicy::default(),
        }
    }
}

/// Per-call options for [`Client::call_tool`] and the hub's calls. Build
/// them from [`CallOptions::new`] (or `Default`) with the `with_*` methods,
/// or set the public fields; new fields may come in any release.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Time allowed without a response or progress; the server's
    /// `timeout_seconds` when `None`.
    pub timeout: Option<Duration>,
    /// Upper bound however much progress arrives; the server's
    /// `max_total_timeout_seconds` when `None`.
    pub max_total_timeout: Option<Duration>,
    /// Receives progress notifications, on the connection's reader task.
    pub on_progress: Option<ProgressCallback>,
    /// Runs the call through a session policy (allow lists, limits,
    /// redaction, audit) as a model's call would be: an
    /// `Arc<mcpmux_policy::SessionPolicy>` (see
    /// `SessionPolicy::call_for_host` in the `mcpmux-policy` crate).
    /// Read by the hub ([`crate::Hub::call_tool`]), never by a [`Client`].
    /// Typed as the trait [`CallPolicy`] so that this module does not depend
    /// on the policy, which sits above the hub.
    pub policy: Option<Arc<dyn CallPolicy>>,
    /// Calls a tool whose `execution.taskSupport` is `optional` as a task
    /// (`required` ones always are): the call then polls `tasks/get` until
    /// the task ends, within the call's total time (`max_total_timeout`).
    pub task: bool,
    /// The `ttl` asked for a task this call creates (how long the server
    /// keeps it); the server chooses when `None`.
    pub task_ttl: Option<Duration>,
    /// Called once when the call becomes an MCP task (the server created
    /// one, of either revision), on the calling task; the call goes on
    /// waiting for it. For a host that hands out tasks of its own (the
    /// gateway).
    #[allow(clippy::type_complexity)]
    pub on_task: Option<Arc<dyn Fn(&crate::tasks::Task) + Send + Sync>>,
    /// Answers the questions asked within this call (a 2026-07-28
    /// `input_required` result, a 2026-07-28 task's `inputRequests`) in
    /// place of the hub's handlers; a kind it lacks falls back to them.
    /// Requests a 2025-11-25 server sends on its own still go to the hub's.
    pub handlers: Option<ClientHandlers>,
    /// Asked, on the connection's reader, whether to keep the call's result
    /// once it is read, before any copy of it is made (see [`AnswerGate`]).
    /// Offered only a plain call's result: not a task's, nor a 2026-07-28
    /// server's (whose answer may be a task or a question), which are kept.
    pub answer_gate: Option<Arc<dyn AnswerGate>>,
    /// What a result whose `structuredContent` does not satisfy its tool's
    /// `outputSchema` becomes (see [`ValidateOutput`]): an
    /// `OUTPUT_INVALID` error by default.
    pub validate_output: ValidateOutput,
}

impl CallOptions {
    /// Options with every field at its default: the server's timeouts, no
    /// progress callback, no policy, no task.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// Sets [`CallOptions::timeout`].
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets [`CallOptions::max_total_timeout`].
    pub fn with_max_total_timeout(mut self, limit: Duration) -> Self {
        self.max_total_timeout = Some(limit);
        self
    }

    /// Sets [`CallOptions::on_progress`].
    pub fn with_progress(mut self, on_progress: ProgressCallback) -> Self {
        self.on_progress = Some(on_progress);
        self
    }

    /// Sets [`CallOptions::policy`].
    pub fn with_policy(mut self, policy: Arc<dyn CallPolicy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Sets [`CallOptions::task`].
    pub fn with_task(mut self, task: bool) -> Self {
        self.task = task;
        self
    }

    /// Sets [`CallOptions::task_ttl`].
    pub fn with_task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = Some(ttl);
        self
    }

    /// Sets [`CallOptions::on_task`].
    pub fn with_on_task(mut self, on_task: Arc<dyn Fn(&crate::tasks::Task) + Send + Sync>) -> Self {
        self.on_task = Some(on_task);
        self
    }

    /// Sets [`CallOptions::handlers`].
    pub fn with_handlers(mut self, handlers: ClientHandlers) -> Self {
        self.handlers = Some(handlers);
        self
    }

    /// Sets [`CallOptions::validate_output`].
    pub fn with_validate_output(mut self, validate: ValidateOutput) -> Self {
        self.validate_output = validate;
        self
    }

    /// Sets [`CallOptions::answer_gate`].
    pub fn with_answer_gate(mut self, gate: Arc<dyn AnswerGate>) -> Self {
        self.answer_gate = Some(gate);
        self
    }
}

tokio::task_local! {
    /// The handlers of the call running on this task ([`CallOptions::handlers`]).
    static CALL_HANDLERS: ClientHandlers;
}

/// What a [`CallPolicy`] calls through: hub-wide names resolved to tools,
/// and the call itself without any policy. Implemented by
/// [`crate::Hub`]; defined here, below both the hub and the policy, so
/// neither has to name the other to hand a call over.
pub trait ToolRouter: Send + Sync {
    /// Which hub this is (a policy made for one hub refuses the others).
    fn hub_id(&self) -> u64;

    /// The tool offered under the hub-wide `name`, if any.
    fn tool(&self, name: &str) -> Option<HubTool>;

    /// [`tool`](Self::tool), shared: a router that keeps its tools built
    /// (the hub does) hands out the same one on every call instead of a
    /// new copy. What a policy looks up on each call.
    fn tool_shared(&self, name: &str) -> Option<Arc<HubTool>> {
        self.tool(name).map(Arc::new)
    }

    /// Every tool `server` offers now, in hub order (a policy that pins
    /// tool definitions compares the whole list). The default, for a
    /// router that cannot list, is none.
    fn tools_of_server(&self, server: &str) -> Vec<HubTool> {
        let _ = server;
        Vec::new()
    }

    /// Where the router's [`HubEvent`]s go, when
    /// it has any (a policy reports quarantined tools there).
    fn event_sender(&self) -> Option<crate::events::EventSender> {
        None
    }

    /// Calls `name` with no policy applied (`opts.policy` is ignored).
    fn call_unchecked<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<&'a Value>,
        opts: &'a CallOptions,
    ) -> BoxFuture<'a, Result<ToolResult, Error>>;
}

/// A policy that a host's own calls go through ([`CallOptions::policy`]).
/// Implemented by `mcpmux_policy::SessionPolicy`; the hub
/// hands every call with a policy set to [`CallPolicy::call_tool`], on the
/// caller's task.
pub trait CallPolicy: Send + Sync {
    /// Checks, runs (through `router`), redacts and audits one call;
    /// refusals are errors (`TOOL_NOT_ALLOWED`, `LIMIT_EXCEEDED`).
    fn call_tool<'a>(
        &'a self,
        router: &'a dyn ToolRouter,
        name: &'a str,
        arguments: Option<&'a Value>,
        opts: &'a CallOptions,
    ) -> BoxFuture<'a, Result<ToolResult, Error>>;
}

/// A `tools/call` result exactly as the server sent it (`content`,
/// `structuredContent`, `isError` and anything else, unchanged).
#[derive(Debug, Clone)]
pub struct ToolResult {
    raw: Box<RawValue>,
    is_error: bool,
}

impl ToolResult {
    fn new(raw: Box<RawValue>) -> Result<ToolResult, Error> {
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(rename = "isError", default)]
            is_error: Option<bool>,
        }
        let probe: Probe = serde_json::from_str(raw.get())
            .map_err(|_| Error::ProtocolError("tools/call result is not an object".into()))?;
        Ok(ToolResult {
            raw,
            is_error: probe.is_error.unwrap_or(false),
        })
    }

    /// A result made from JSON (an object), e.g. after redaction.
    pub fn from_value(value: &Value) -> Result<ToolResult, Error> {
        let raw = serde_json::value::to_raw_value(value)
            .map_err(|e| Error::Internal(format!("cannot encode a tool result: {e}")))?;
        ToolResult::new(raw)
    }

    /// Whether the tool reported its own failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The result as JSON text, byte for byte as received.
    pub fn json(&self) -> &str {
        self.raw.get()
    }

    /// The result parsed into a [`Value`].
    pub fn value(&self) -> Value {
        serde_json::from_str(self.raw.get()).unwrap_or(Value::Null)
    }
}

/// One connected server. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    config: ServerConfig,
    peer: Peer,
    init: InitializeResult,
    /// The `_meta` of every request, when the stateless revision is in use.
    stateless: Option<RequestMeta>,
    handlers: ClientHandlers,
    tools: RwLock<Arc<Vec<Tool>>>,
    on_tools_changed: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Refreshes after `notifications/tools/list_changed`: one runs at a
    /// time, and notifications meanwhile make at most one more.
    refresh: std::sync::Mutex<Refresh>,
    /// Where `task_status` events go.
    events: EventSender,
    /// The last status told per task, so that polls and notifications
    /// make one event per change (bounded, see `task_calls`).
    task_seen: std::sync::Mutex<task_calls::Seen>,
    /// The open `events/stream` requests (shared with the inbound side).
    event_streams: Arc<crate::events_ext::Streams>,
    /// The compiled `outputSchema`s of the tools, for checking results.
    output_checks: OutputChecks,
    /// The `subscriptions/listen` stream of a 2026-07-28 connection whose
    /// server offers something to listen for.
    listener: Option<Arc<crate::listen::Listener>>,
    /// Dropped with the client: ends the listener's task.
    _listening: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The state of list_changed refreshes of one client.
#[derive(Default)]
struct Refresh {
    running: bool,
    again: bool,
}

impl Client {
    /// Starts the server, runs the `initialize` handshake and lists its tools.
    ///
    /// Any failure is [`Error::ConnectFailed`] with the cause (for a process
    /// that died, its exit status and the end of its stderr), except a tool
    /// list past a bound of [`Client::list_all_as`]: `PROTOCOL_ERROR`.
    pub async fn connect(config: &ServerConfig, options: &ClientOptions) -> Result<Client, Error> {
        crate::secrets::register(config.secret_values());
        Self::connect_inner(config, options)
            .await
            .map_err(crate::secrets::redact_error)
    }

    async fn connect_inner(
        config: &ServerConfig,
        options: &ClientOptions,
    ) -> Result<Client, Error> {
        let label = format!("server '{}'", config.name);
        let inbound = Arc::new(ClientInbound {
            server: config.name.clone(),
            timeout: config.timeout,
            handlers: options.handlers.clone(),
            events: options.events.clone(),
            event_streams: Default::default(),
            client: OnceLock::new(),
        });
        let peer = Peer::new(label.clone(), inbound.clone());
        #[cfg(feature = "telemetry")]
        if let Some(t) = crate::telemetry::active() {
            use crate::config::TransportConfig as T;
            let url = match &config.transport {
                T::Stdio(_) => None,
                T::Http(n) | T::Sse(n) | T::WebSocket(n) => Some(&n.url),
            };
            peer.set_trace_info(crate::telemetry::PeerInfo::new(t, &config.name, url));
        }
        let network = crate::net::Http::new(&options.network);
        let transport = crate::transport::connect_with_auth(
            &label,
            config,
            peer.sink(),
            &options.auth,
            &network,
        )
        .await
        .map_err(connect_failed)?;
        peer.attach(transport);
        match Self::lifecycle(config, options, &peer).await {
            Ok((init, stateless)) => {
                let listener = stateless
                    .as_ref()
                    .and_then(|_| crate::listen::Listener::new(&config.name, &init.capabilities));
                let (listening, dropped) = tokio::sync::oneshot::channel();
                let client = Client {
                    inner: Arc::new(ClientInner {
                        config: config.clone(),
                        peer,
                        init,
                        stateless,
                        handlers: options.handlers.clone(),
                        tools: RwLock::new(Arc::new(Vec::new())),
                        on_tools_changed: options.on_tools_changed.clone(),
                        refresh: Default::default(),
                        events: options.events.clone(),
                        task_seen: Default::default(),
                        event_streams: inbound.event_streams.clone(),
                        output_checks: OutputChecks::default(),
                        listener: listener.clone(),
                        _listening: listener.is_some().then_some(listening),
                    }),
                };
                let _ = inbound.client.set(Arc::downgrade(&client.inner));
                if let (Some(listener), Some(meta)) = (listener, &client.inner.stateless) {
                    tokio::spawn(crate::listen::run(
                        listener,
                        client.inner.peer.clone(),
                        meta.clone(),
                        dropped,
                    ));
                }
                if client.inner.init.has_capability("tools") {
                    if let Err(e) = client.refresh_tools().await {
                        // A listing bound the server passed stays a
                        // PROTOCOL_ERROR naming the bound.
                        let bound = client.closed_error();
                        client.close().await;
                        return Err(match bound {
                            Some(bound @ Error::ProtocolError(_)) => bound,
                            _ => connect_failed(e),
                        });
                    }
                }
                Ok(client)
            }
            Err(e) => {
                peer.close().await;
                Err(connect_failed(e))
            }
        }
    }

    /// Starts the session: the stateless revision (`server/discover`) when
    /// the config pins it, or automatically for Streamable HTTP with a
    /// fallback to `initialize` for older servers; else `initialize`.
    async fn lifecycle(
        config: &ServerConfig,
        options: &ClientOptions,
        peer: &Peer,
    ) -> Result<(InitializeResult, Option<RequestMeta>), Error> {
        let mut capabilities = client_capabilities(&options.handlers, options.roots_list_changed);
        if !options.extensions.is_empty() {
            capabilities["extensions"] = Value::Object(options.extensions.clone());
        }
        let pinned = config.protocol_version.as_deref();
        let http = matches!(config.transport, crate::config::TransportConfig::Http(_));
        let try_stateless = match pinned {
            Some(v) => protocol::is_stateless(v),
            None => http,
        };
        if try_stateless {
            // The tasks extension is declared with every request of this
            // revision (SEP-2663): a task answer is always understood. So is
            // the events extension, whose client side is always there.
            let meta = RequestMeta::new(
                stateless::VERSION,
                &crate::tasks::declare_extension(
                    &capabilities,
                    &[crate::tasks::EXTENSION, crate::events_ext::EXTENSION],
                ),
                &options.client_info,
            );
            match Self::discover(config, peer, &meta).await {
                Ok(Some(init)) => return Ok((init, Some(meta))),
                Ok(None) if pinned.is_some() => {
                    return Err(Error::ConnectFailed(format!(
                        "server '{}': does not support protocol version {} (server/discover did not list it)",
                        config.name,
                        stateless::VERSION
                    )))
                }
                Err(e @ (Error::TransportClosed(_) | Error::AuthRequired(_) | Error::AuthFailed(_))) => {
                    return Err(e)
                }
                Err(e) if pinned.is_some() => {
                    return Err(e.context(format!("protocol version {}", stateless::VERSION)))
                }
                Ok(None) | Err(_) => {
                    tracing::debug!(server = %config.name, "no stateless revision; falling back to initialize");
                }
            }
            peer.set_protocol_version(None);
        }
        let init = Self::handshake(config, options, peer, &capabilities).await?;
        Ok((init, None))
    }

    /// `server/discover`; `Ok(None)` when the server does not speak the
    /// stateless revision. A rejected version is retried once with the
    /// revision the server says it supports.
    async fn discover(
        config: &ServerConfig,
        peer: &Peer,
        meta: &RequestMeta,
    ) -> Result<Option<InitializeResult>, Error> {
        peer.set_protocol_version(Some(stateless::VERSION));
        let params = meta.apply(None);
        let opts = RequestOptions {
            timeout: config.timeout,
            max_total: config.timeout,
            ..RequestOptions::default()
        };
        let mut retried = false;
        loop {
            match peer
                .request(peer.next_id(), "server/discover", Some(&params), &opts)
                .await
            {
                Ok(raw) => return Ok(stateless::discovered(&raw)),
                Err(e) => {
                    let retry = !retried
                        && stateless::supported_versions(&e)
                            .is_some_and(|v| v.iter().any(|v| v == stateless::VERSION));
                    if !retry {
                        return Err(e);
                    }
                    retried = true;
                }
            }
        }
    }

    async fn handshake(
        config: &ServerConfig,
        options: &ClientOptions,
        peer: &Peer,
        capabilities: &Value,
    ) -> Result<InitializeResult, Error> {
        let offered = match config.protocol_version.as_deref() {
            Some(v) if !protocol::is_stateless(v) => v,
            _ => protocol::LATEST_STATEFUL_VERSION,
        };
        let opts = RequestOptions {
            timeout: config.timeout,
            max_total: config.timeout,
            cancellable: false,
            ..RequestOptions::default()
        };
        // A server should answer an unknown offer with a version it supports;
        // some refuse with an error instead, so older revisions are offered in
        // turn (unless the config pins one).
        let fallbacks: &[&str] = match config.protocol_version {
            Some(_) => &[],
            None => &protocol::STATEFUL_VERSIONS[1..],
        };
        let mut offered = offered;
        let mut older = fallbacks.iter();
        let raw = loop {
            let params = serde_json::json!({
                "protocolVersion": offered,
                "capabilities": capabilities,
                "clientInfo": options.client_info,
            });
            match peer
                .request(peer.next_id(), "initialize", Some(&params), &opts)
                .await
            {
                Err(Error::ServerError { message, .. })
                    if message.to_ascii_lowercase().contains("version") && older.len() > 0 =>
                {
                    let next = older.next().expect("checked len");
                    tracing::debug!(server = %config.name, offered, next, "initialize refused: {message}");
                    offered = next;
                }
                other => break other?,
            }
        };
        let init: InitializeResult = serde_json::from_str(raw.get()).map_err(|e| {
            Error::ProtocolError(format!(
                "server '{}': invalid initialize result: {e}",
                config.name
            ))
        })?;
        protocol::accept_version(offered, &init.protocol_version)
            .map_err(|m| Error::ProtocolError(format!("server '{}': {m}", config.name)))?;
        peer.set_protocol_version(Some(&init.protocol_version));
        peer.notify::<()>("notifications/initialized", None)?;
        Ok(init)
    }

    /// The configured name of the server.
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// The last `lines` lines the server wrote to its stderr (stdio
    /// servers; redacted), oldest first.
    pub fn recent_stderr(&self, lines: usize) -> Vec<String> {
        self.inner.peer.recent_stderr(lines)
    }

    /// What the server said in `initialize`.
    pub fn init(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// The tools as last listed.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.inner.tools.read().unwrap().clone()
    }

    /// Why the connection is gone, when it is.
    pub fn closed_error(&self) -> Option<Error> {
        self.inner.peer.closed_error()
    }

    /// Waits until the connection is gone and returns why (the hub's
    /// supervisor restarts the server then).
    pub async fn closed(&self) -> Error {
        self.inner.peer.closed().await
    }

    /// Ends the connection with `error` as its reason (every call in flight
    /// fails with it), e.g. when a keep-alive ping got no answer.
    pub fn fail(&self, error: Error) {
        self.inner.peer.fail(error);
    }

    /// Lists every tool (following pagination), stores the list, and tells
    /// the hub it changed.
    pub async fn refresh_tools(&self) -> Result<Arc<Vec<Tool>>, Error> {
        let mut tools = self.list_all_as::<Tool>("tools/list", "tools").await?;
        // A tool whose x-mcp-header annotations are invalid must never be called.
        tools.retain(
            |t| match crate::param_headers::invalid_annotations(&t.input_schema()) {
                None => true,
                Some(why) => {
                    tracing::warn!(server = %self.name(), tool = %t.name, "tool left out: {why}");
                    false
                }
            },
        );
        let tools = Arc::new(tools);
        *self.inner.tools.write().unwrap() = tools.clone();
        if let Some(cb) = &self.inner.on_tools_changed {
            cb();
        }
        Ok(tools)
    }

    /// Calls tool `name` (the server's own name) with `arguments` (an object;
    /// `{}` when `None`). A tool's own failure is an `Ok` result with
    /// `is_error()`; transport and protocol failures are errors.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        static EMPTY: OnceLock<Value> = OnceLock::new();
        let arguments =
            arguments.unwrap_or_else(|| EMPTY.get_or_init(|| Value::Object(Default::default())));
        if !arguments.is_object() {
            return Err(Error::InvalidInput(format!(
                "arguments of tool '{name}' must be a JSON object"
            )));
        }
        let result = if let Some(handlers) = &opts.handlers {
            let mut opts = opts.clone();
            let handlers = opts.handlers.take().unwrap_or_else(|| handlers.clone());
            Box::pin(CALL_HANDLERS.scope(handlers, self.call_tool_inner(name, arguments, &opts)))
                .await?
        } else {
            self.call_tool_inner(name, arguments, opts).await?
        };
        self.check_output(name, result, opts.validate_output)
    }

    /// `result` (a `tools/call` result of this server's tool `name` that
    /// came by another way than a call) checked against the tool's
    /// `outputSchema`: `OUTPUT_INVALID` when it does not satisfy it.
    pub(crate) fn check_result_output(&self, name: &str, result: &Value) -> Result<(), Error> {
        self.check_output(name, ToolResult::from_value(result)?, ValidateOutput::Error)
            .map(drop)
    }

    /// `result` of tool `name` checked against the tool's `outputSchema`
    /// as `validate` says: a violation is `OUTPUT_INVALID` (`Error`), or a
    /// warning logged and sent as a hub `log` event (`Warn`).
    fn check_output(
        &self,
        name: &str,
        result: ToolResult,
        validate: ValidateOutput,
    ) -> Result<ToolResult, Error> {
        if validate == ValidateOutput::Off || result.is_error() {
            return Ok(result);
        }
        let tools = self.inner.tools.read().unwrap().clone();
        let Some(schema) = tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.output_schema_json.as_deref())
        else {
            return Ok(result);
        };
        // A schema that cannot be compiled is told to the host once, as
        // a warning log event of the server.
        let report = |message: &str| {
            self.inner.events.send(HubEvent::Log {
                server: self.name().to_owned(),
                level: "warning".into(),
                logger: Some("mcpmux".into()),
                data: Value::String(message.to_owned()),
            })
        };
        let Err(why) =
            self.inner
                .output_checks
                .check(self.name(), name, schema.get(), result.json(), &report)
        else {
            return Ok(result);
        };
        if validate == ValidateOutput::Error {
            return Err(Error::OutputInvalid(why));
        }
        tracing::warn!(server = %self.name(), tool = %name, "{why}");
        self.inner.events.send(HubEvent::Log {
            server: self.name().to_owned(),
            level: "warning".into(),
            logger: Some("mcpmux".into()),
            data: Value::String(format!("OUTPUT_INVALID: {why}")),
        });
        Ok(result)
    }

    async fn call_tool_inner(
        &self,
        name: &str,
        arguments: &Value,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        if self.wants_task(name, opts) {
            // Boxed: a task's polling loop would make every call's future
            // (moved into its task whole) several times larger.
            return Box::pin(self.call_as_task(name, arguments, opts)).await;
        }
        let raw = self.send_tools_call(name, arguments, None, opts).await?;
        if self.inner.stateless.is_some() && task_calls::is_task_answer(&raw) {
            // A 2026-07-28 server decides which calls become tasks.
            return Box::pin(self.follow_created_task(raw, name, opts)).await;
        }
        ToolResult::new(raw).map_err(|e| e.context(format!("server '{}'", self.name())))
    }

    /// [`call_tool`](Self::call_tool) with the arguments as checked JSON
    /// text of an object ([`Hub::call_tool_json`](crate::Hub::call_tool_json)
    /// checks it): a plain call sends the text as it is; a task, or a
    /// stateless server (whose `Mcp-Param` headers come from the
    /// arguments), takes the parsed way.
    pub(crate) async fn call_tool_raw(
        &self,
        name: &str,
        arguments: &RawValue,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        if self.inner.stateless.is_some() || self.wants_task(name, opts) {
            let arguments: Value = serde_json::from_str(arguments.get())
                .map_err(|e| Error::InvalidInput(format!("arguments of tool '{name}': {e}")))?;
            return Box::pin(self.call_tool(name, Some(&arguments), opts)).await;
        }
        let mut ropts = self.request_options(opts);
        ropts.track_progress = true;
        // A plain call on a session: its answer is its result.
        ropts.answer_gate = opts.answer_gate.clone();
        let raw = self.peer_tools_call(name, arguments, None, &ropts).await?;
        let result =
            ToolResult::new(raw).map_err(|e| e.context(format!("server '{}'", self.name())))?;
        self.check_output(name, result, opts.validate_output)
    }

    /// Sends one `tools/call` (with `params.task` when `task` is set) and
    /// returns its raw result.
    async fn send_tools_call(
        &self,
        name: &str,
        arguments: &Value,
        task: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let mut ropts = self.request_options(opts);
        ropts.track_progress = true;
        if task.is_none() && self.inner.stateless.is_none() {
            // The answer is the call's result (see `CallOptions::answer_gate`).
            ropts.answer_gate = opts.answer_gate.clone();
        }
        if self.inner.stateless.is_some() {
            let tool = self
                .tools()
                .iter()
                .find(|t| t.name == name)
                .map(|t| t.input_schema());
            if let Some(schema) = tool {
                ropts.headers = crate::param_headers::headers(&schema, arguments);
            }
            let mut params = serde_json::json!({ "name": name, "arguments": arguments });
            if let Some(task) = task {
                params["task"] = task.clone();
            }
            Box::pin(self.rpc("tools/call", Some(params), &ropts)).await
        } else {
            self.peer_tools_call(name, arguments, task, &ropts).await
        }
    }

    /// Sends one `tools/call` on the session's connection (not the
    /// stateless revision), its id doubling as the progress token.
    /// `arguments` is a JSON object: a [`Value`] or checked [`RawValue`]
    /// text.
    async fn peer_tools_call<A: Serialize + ?Sized>(
        &self,
        name: &str,
        arguments: &A,
        task: Option<&Value>,
        ropts: &RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        #[derive(Serialize)]
        struct Meta {
            #[serde(rename = "progressToken")]
            progress_token: u64,
        }
        #[derive(Serialize)]
        struct Params<'a, A: ?Sized> {
            name: &'a str,
            arguments: &'a A,
            #[serde(skip_serializing_if = "Option::is_none")]
            task: Option<&'a Value>,
            #[serde(rename = "_meta")]
            meta: Meta,
        }
        let peer = &self.inner.peer;
        let id = peer.next_id();
        let params = Params {
            name,
            arguments,
            task,
            meta: Meta { progress_token: id },
        };
        peer.request(id, "tools/call", Some(&params), ropts).await
    }

    /// Sends any request and returns its result as JSON.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<Value, Error> {
        let raw = self
            .rpc(method, params.cloned(), &self.request_options(opts))
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| {
            Error::ProtocolError(format!(
                "server '{}': invalid {method} result: {e}",
                self.name()
            ))
        })
    }

    /// Whether this connection speaks the stateless 2026-07-28 revision.
    pub fn is_stateless(&self) -> bool {
        self.inner.stateless.is_some()
    }

    /// Listens for changes of resource `uri` (`on`) or stops (on the
    /// 2026-07-28 revision, where `subscriptions/listen` replaces
    /// `resources/subscribe`): see [`crate::listen::Listener::watch_resource`].
    /// `INVALID_INPUT` when the server offers no resource subscriptions.
    pub(crate) async fn listen_resource(&self, uri: &str, on: bool) -> Result<(), Error> {
        match &self.inner.listener {
            Some(listener) => {
                listener
                    .watch_resource(uri, on, self.inner.config.timeout)
                    .await
            }
            None => Err(Error::InvalidInput(format!(
                "server '{}' does not offer resource subscriptions",
                self.name()
            ))),
        }
    }

    /// The open `events/stream` requests of this connection.
    pub(crate) fn event_streams(&self) -> &crate::events_ext::Streams {
        &self.inner.event_streams
    }

    /// A fresh request id of this connection.
    pub(crate) fn next_request_id(&self) -> u64 {
        self.inner.peer.next_id()
    }

    /// Sends request `id` with no request timeout (a long-lived request:
    /// `events/stream`) and waits for its result. Dropping the future
    /// cancels it (`notifications/cancelled`).
    pub(crate) async fn long_request(
        &self,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<Value, Error> {
        let params = match &self.inner.stateless {
            Some(meta) => meta.apply(Some(params)),
            None => params,
        };
        let opts = RequestOptions {
            timeout: Duration::MAX,
            max_total: Duration::MAX,
            ..RequestOptions::default()
        };
        let raw = self
            .inner
            .peer
            .request(id, method, Some(&params), &opts)
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| {
            Error::ProtocolError(format!(
                "server '{}': invalid {method} result: {e}",
                self.name()
            ))
        })
    }

    /// Follows a paginated list (`tools/list`, `resources/list`, ...) to its
    /// end and returns the items found under `key`.
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, Error> {
        self.list_all_as(method, key).await
    }

    /// [`Client::list_all`] with the items read as `T`.
    ///
    /// One listing is bounded: at most [`MAX_LIST_ITEMS`] items, at most
    /// [`max_list_bytes`] bytes of pages, and the server's request timeout
    /// for all pages together. A server that passes a bound (pagination
    /// that never ends) fails: the error is `PROTOCOL_ERROR` naming the
    /// bound, and the connection is ended with it.
    pub async fn list_all_as<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Vec<T>, Error> {
        let result = self.list_pages(method, key).await;
        if let Err(ListError::Limit(e)) = &result {
            tracing::warn!(server = %self.name(), "{e}");
            self.inner.peer.fail(e.clone());
        }
        result.map_err(ListError::into_error)
    }

    async fn list_pages<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Vec<T>, ListError> {
        let invalid = |what: String| {
            ListError::Other(Error::ProtocolError(format!(
                "server '{}': invalid {method} result: {what}",
                self.name()
            )))
        };
        let limit = |what: String| {
            ListError::Limit(Error::ProtocolError(format!(
                "server '{}': {method} {what}",
                self.name()
            )))
        };
        let max_bytes = max_list_bytes(self.inner.config.max_message_bytes);
        let timeout = self.inner.config.timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut opts = self.request_options(&CallOptions::default());
        let mut items = Vec::new();
        let mut bytes = 0usize;
        let mut cursor: Option<String> = None;
        let mut pages = 0usize;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let over_time = || {
                limit(format!(
                    "pagination did not end within the request timeout ({:.1} s, \
                     timeout_seconds) after {pages} pages",
                    timeout.as_secs_f64()
                ))
            };
            if pages > 0 && left.is_zero() {
                return Err(over_time());
            }
            // The whole listing shares one timeout, progress or not.
            opts.timeout = left;
            opts.max_total = left;
            let params = cursor.as_ref().map(|c| serde_json::json!({ "cursor": c }));
            let raw = match self.rpc(method, params, &opts).await {
                Ok(raw) => raw,
                Err(Error::Timeout(_)) if pages > 0 => return Err(over_time()),
                Err(e) => return Err(ListError::Other(e)),
            };
            bytes = bytes.saturating_add(raw.get().len());
            if bytes > max_bytes {
                return Err(limit(format!(
                    "pages passed {max_bytes} bytes (the limit of one listing) after {} pages",
                    pages + 1
                )));
            }
            let page: std::collections::HashMap<std::borrow::Cow<'_, str>, &RawValue> =
                serde_json::from_str(raw.get()).map_err(|e| invalid(e.to_string()))?;
            if let Some(list) = page.get(key).filter(|l| l.get() != "null") {
                // Items are counted while they are read: one page of tiny
                // items must not fill memory before the count is known.
                let mut over = false;
                let mut de = serde_json::Deserializer::from_str(list.get());
                let read = serde::de::DeserializeSeed::deserialize(
                    BoundedList {
                        items: &mut items,
                        max: MAX_LIST_ITEMS,
                        over: &mut over,
                    },
                    &mut de,
                );
                if over {
                    return Err(limit(format!(
                        "returned more than {MAX_LIST_ITEMS} items (the limit of one listing) \
                         after {} pages",
                        pages + 1
                    )));
                }
                read.map_err(|e| invalid(format!("'{key}': {e}")))?;
            }
            let next: Option<String> = match page.get("nextCursor") {
                Some(c) => serde_json::from_str(c.get())
                    .map_err(|e| invalid(format!("'nextCursor': {e}")))?,
                None => None,
            };
            match next {
                Some(next) if !next.is_empty() => {
                    if cursor.as_deref() == Some(next.as_str()) {
                        return Err(invalid("the same cursor twice".into()));
                    }
                    cursor = Some(next);
                }
                _ => return Ok(items),
            }
            pages += 1;
        }
    }

    /// Sends one request. With the stateless revision, adds the request
    /// `_meta` and answers input-required results (SEP-2322) through the
    /// host's handlers, retrying with `inputResponses` under a new id.
    async fn rpc(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        let peer = &self.inner.peer;
        let Some(meta) = &self.inner.stateless else {
            return peer
                .request(peer.next_id(), method, params.as_ref(), opts)
                .await;
        };
        let mut params = meta.apply(params);
        // The rounds and the host's answers share the request's total time.
        let started = Instant::now();
        let out_of_time = |rounds: usize| {
            Error::Timeout(format!(
                "server '{}': {method} did not finish within its total time ({:.1} s, \
                 max_total_timeout_seconds) after {rounds} input rounds",
                self.name(),
                opts.max_total.as_secs_f64()
            ))
        };
        let mut round_opts = opts.clone();
        for round in 0..=stateless::MAX_INPUT_ROUNDS {
            let left = opts.max_total.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(out_of_time(round));
            }
            round_opts.max_total = left;
            round_opts.timeout = opts.timeout.min(left);
            let id = peer.next_id();
            if opts.track_progress {
                params["_meta"]["progressToken"] = id.into();
            }
            let raw = peer.request(id, method, Some(&params), &round_opts).await?;
            let Some(ask) = stateless::input_required(&raw) else {
                return Ok(raw);
            };
            if ask.requests.len() > stateless::MAX_INPUT_REQUESTS {
                return Err(Error::ProtocolError(format!(
                    "server '{}': {method} asked for {} inputs at once (at most {})",
                    self.name(),
                    ask.requests.len(),
                    stateless::MAX_INPUT_REQUESTS
                )));
            }
            // Asked together (the server waits for all of them; a host, or a
            // gateway's client, sees them in one round), within the time left.
            let left = opts.max_total.saturating_sub(started.elapsed());
            let asked = ask.requests.into_iter().map(|(key, question)| async move {
                Ok::<_, Error>((key, self.answer(question).await?))
            });
            let answers: serde_json::Map<String, Value> =
                tokio::time::timeout(left, futures::future::try_join_all(asked))
                    .await
                    .map_err(|_| out_of_time(round + 1))??
                    .into_iter()
                    .collect();
            params = stateless::retry_params(&params, answers, ask.request_state);
        }
        Err(Error::ProtocolError(format!(
            "server '{}': {method} still asked for input after {} rounds",
            self.name(),
            stateless::MAX_INPUT_ROUNDS
        )))
    }

    /// Answers one question of an input-required result through the host's handlers.
    async fn answer(&self, question: Value) -> Result<Value, Error> {
        let method = question
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let params = question.get("params").cloned().unwrap_or(Value::Null);
        let pick = |handlers: &ClientHandlers| match method.as_str() {
            "elicitation/create" => handlers.elicitation.clone(),
            "sampling/createMessage" => handlers.sampling.clone(),
            "roots/list" => handlers.roots.clone(),
            _ => None,
        };
        // The call's own handlers first (CallOptions::handlers), then the hub's.
        let handler = CALL_HANDLERS
            .try_with(|h| pick(h))
            .ok()
            .flatten()
            .or_else(|| pick(&self.inner.handlers));
        let Some(handler) = handler else {
            return match method.as_str() {
                "elicitation/create" => Ok(serde_json::json!({ "action": "decline" })),
                "roots/list" => Ok(serde_json::json!({ "roots": [] })),
                _ => Err(Error::ProtocolError(format!(
                    "server '{}' asked for '{method}', which this host does not handle",
                    self.name()
                ))),
            };
        };
        let request = ServerRequest {
            server: self.name().to_owned(),
            method: method.clone(),
            params: params.clone(),
        };
        let mut answer = handler(request).await?;
        if method == "elicitation/create" {
            crate::elicitation::fill_defaults(&params, &mut answer);
        }
        Ok(answer)
    }

    /// Tells the server the host's roots changed
    /// (`notifications/roots/list_changed`), when it keeps a session; a
    /// 2026-07-28 server has none to tell. A connection that is gone is
    /// left to its supervisor.
    pub(crate) fn notify_roots_changed(&self) {
        if self.inner.stateless.is_some() {
            return;
        }
        if let Err(e) = self
            .inner
            .peer
            .notify::<Value>("notifications/roots/list_changed", None)
        {
            tracing::debug!(server = %self.name(), error = %e, "roots change not sent");
        }
    }

    /// Closes the connection (for stdio: stdin, then SIGTERM, then SIGKILL)
    /// and waits until the server is gone.
    pub async fn close(&self) {
        self.inner.peer.close().await;
    }

    fn request_options(&self, opts: &CallOptions) -> RequestOptions {
        let config = &self.inner.config;
        let timeout = opts.timeout.unwrap_or(config.timeout);
        RequestOptions {
            timeout,
            max_total: opts
                .max_total_timeout
                .unwrap_or(config.max_total_timeout)
                .max(timeout),
            track_progress: opts.on_progress.is_some(),
            on_progress: opts.on_progress.clone(),
            cancellable: true,
            headers: Vec::new(),
            // Set only where the answer is the call's result.
            answer_gate: None,
        }
    }
}

/// Most items one listing (`tools/list`, `resources/list`, ...) may return.
pub const MAX_LIST_ITEMS: usize = 100_000;

/// The least room for the pages of one listing.
const MIN_LIST_BYTES: usize = 32 * 1024 * 1024;

/// Most bytes the pages of one listing may hold together: 32 MiB, or
/// `max_message_bytes` when that is larger (one page may always be that big).
pub fn max_list_bytes(max_message_bytes: usize) -> usize {
    max_message_bytes.max(MIN_LIST_BYTES)
}

/// Reads a JSON array into `items`, failing (with `over` set) as soon as
/// `items` would hold more than `max`.
struct BoundedList<'a, T> {
    items: &'a mut Vec<T>,
    max: usize,
    over: &'a mut bool,
}

impl<'de, T: serde::de::DeserializeOwned> serde::de::DeserializeSeed<'de> for BoundedList<'_, T> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de, T: serde::de::DeserializeOwned> serde::de::Visitor<'de> for BoundedList<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<T>()? {
            if self.items.len() >= self.max {
                *self.over = true;
                return Err(serde::de::Error::custom("too many items"));
            }
            self.items.push(item);
        }
        Ok(())
    }
}

/// Why a listing failed: a bound it passed fails the whole server.
enum ListError {
    Limit(Error),
    Other(Error),
}

impl ListError {
    fn into_error(self) -> Error {
        match self {
            ListError::Limit(e) | ListError::Other(e) => e,
        }
    }
}

/// The capabilities to declare: one per handler the host set. Roots the
/// host can change are announced as such.
fn client_capabilities(handlers: &ClientHandlers, roots_change: bool) -> Value {
    let mut capabilities = serde_json::Map::new();
    if handlers.roots.is_some() {
        capabilities.insert(
            "roots".into(),
            serde_json::json!({ "listChanged": roots_change }),
        );
    }
    if handlers.sampling.is_some() {
        capabilities.insert("sampling".into(), serde_json::json!({}));
    }
    if handlers.elicitation.is_some() {
        capabilities.insert("elicitation".into(), serde_json::json!({}));
    }
    Value::Object(capabilities)
}

fn connect_failed(e: Error) -> Error {
    match e {
        Error::ConnectFailed(_) | Error::AuthRequired(_) | Error::AuthFailed(_) => e,
        other => Error::ConnectFailed(other.to_string()),
    }
}

/// Answers the server's requests and notifications for one client.
struct ClientInbound {
    server: String,
    /// The server's `timeout_seconds`: how long a host's handler may take
    /// (the server's own call waits meanwhile).
    timeout: Duration,
    handlers: ClientHandlers,
    events: EventSender,
    /// The open `events/stream` requests, which `notifications/events/*`
    /// are routed to.
    event_streams: Arc<crate::events_ext::Streams>,
    client: OnceLock<Weak<ClientInner>>,
}

impl Inbound for ClientInbound {
    fn on_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let handler = match method {
            "ping" => return Box::pin(async { Ok(serde_json::json!({})) }),
            "roots/list" => self.handlers.roots.clone(),
            "sampling/createMessage" => self.handlers.sampling.clone(),
            "elicitation/create" => self.handlers.elicitation.clone(),
            _ => None,
        };
        let Some(handler) = handler else {
            // The name is echoed, but never at a length the server chose.
            let message = format!("Method not found: {method:.100}");
            return Box::pin(async move { Err(RpcError::new(codes::METHOD_NOT_FOUND, message)) });
        };
        let request = ServerRequest {
            server: self.server.clone(),
            method: method.to_owned(),
            params: params
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or(Value::Null),
        };
        let elicitation = (method == "elicitation/create").then(|| request.params.clone());
        let fut = handler(request);
        let (timeout, method) = (self.timeout, method.to_owned());
        Box::pin(async move {
            let mut answer = tokio::time::timeout(timeout, fut)
                .await
                .map_err(|_| {
                    RpcError::new(
                        codes::INTERNAL_ERROR,
                        format!(
                            "the client's host did not answer {method:.100} within {:.1} s",
                            timeout.as_secs_f64()
                        ),
                    )
                })?
                .map_err(RpcError::from)?;
            if let Some(params) = elicitation {
                crate::elicitation::fill_defaults(&params, &mut answer);
            }
            Ok(answer)
        })
    }

    fn on_notification(&self, method: &str, params: Option<&RawValue>) {
        let server = || self.server.clone();
        let value = || {
            params
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .unwrap_or(Value::Null)
        };
        match method {
            "notifications/message" => {
                log_server_message(&self.server, params);
                self.events.send(events::log_event(&self.server, params));
            }
            "notifications/resources/list_changed" => {
                self.events
                    .send(HubEvent::ResourcesChanged { server: server() });
            }
            "notifications/prompts/list_changed" => {
                self.events
                    .send(HubEvent::PromptsChanged { server: server() });
            }
            "notifications/resources/updated" => {
                let value = value();
                let uri = value.get("uri").and_then(Value::as_str);
                if let Some(uri) = uri.filter(|u| u.len() <= events::MAX_EVENT_URI) {
                    self.events.send(HubEvent::ResourceUpdated {
                        server: server(),
                        uri: uri.to_owned(),
                    });
                }
            }
            "notifications/tools/list_changed" => {
                if let Some(weak) = self.client.get() {
                    refresh_after_change(weak.clone());
                }
            }
            // 2025-11-25's push, then the 2026-07-28 extension's (the
            // whole task as `tasks/get` would answer it).
            "notifications/tasks/status" | "notifications/tasks" => {
                let pushed = value();
                match crate::tasks::Task::from_wire(&self.server, &pushed) {
                    Ok(task) => match self.client.get().and_then(Weak::upgrade) {
                        Some(inner) => {
                            if let Some(listener) = &inner.listener {
                                listener.task_pushed(&pushed);
                            }
                            Client { inner }.note_task(&task)
                        }
                        None => self.events.send(task_calls::status_event(&task)),
                    },
                    Err(e) => {
                        tracing::debug!(server = %self.server, error = %e, "task status ignored")
                    }
                }
            }
            crate::listen::ACKNOWLEDGED => {
                let listener = self
                    .client
                    .get()
                    .and_then(Weak::upgrade)
                    .and_then(|inner| inner.listener.clone());
                if let Some(listener) = listener {
                    listener.acknowledged(&value());
                }
            }
            "notifications/events/list_changed" => {
                self.events
                    .send(HubEvent::EventsChanged { server: server() });
            }
            m if m.starts_with("notifications/events/") => {
                self.event_streams
                    .on_notification(&self.server, m, &value());
            }
            _ => tracing::debug!(server = %self.server, method, "notification from server"),
        }
    }
}

/// Lists the tools again after `notifications/tools/list_changed`, coalesced:
/// while a refresh runs, any number of notifications make one more refresh
/// (it sees every change before it), so a flood costs two refreshes, not one
/// per notification. The task holds the client only while it lists.
fn refresh_after_change(weak: Weak<ClientInner>) {
    let Some(inner) = weak.upgrade() else {
        return;
    };
    {
        let mut refresh = inner.refresh.lock().unwrap();
        if refresh.running {
            refresh.again = true;
            return;
        }
        refresh.running = true;
    }
    drop(inner);
    tokio::spawn(async move {
        loop {
            let Some(inner) = weak.upgrade() else {
                return;
            };
            let client = Client { inner };
            if let Err(e) = client.refresh_tools().await {
                tracing::warn!(server = %client.name(), error = %e, "cannot refresh tools after list_changed");
            }
            let mut refresh = client.inner.refresh.lock().unwrap();
            if !std::mem::take(&mut refresh.again) {
                refresh.running = false;
                return;
            }
        }
    });
}

/// Sends a server's `notifications/message` to `tracing` at its level.
fn log_server_message(server: &str, params: Option<&RawValue>) {
    let Some(v) = params.and_then(|p| serde_json::from_str::<Value>(p.get()).ok()) else {
        return;
    };
    let level = v.get("level").and_then(Value::as_str).unwrap_or("info");
    let logger = v.get("logger").and_then(Value::as_str).unwrap_or("");
    let data = match v.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let data = crate::secrets::redact(&data);
    match level {
        "debug" => tracing::debug!(target: "mcpmux::server_log", server, logger, "{data}"),
        "info" | "notice" => tracing::info!(target: "mcpmux::server_log", server, logger, "{data}"),
        "warning" => tracing::warn!(target: "mcpmux::server_log", server, logger, "{data}"),
        _ => tracing::error!(target: "mcpmux::server_log", server, logger, level, "{data}"),
    }
}
