//! [`Hub`]: many servers behind one tool list — concurrent connect, name
//! prefixing, routing, health, refresh and close.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::client::{CallOptions, Client, ClientHandlers, ClientOptions, ToolResult, ToolRouter};
use crate::config::{Config, ServerConfig, TransportKind};
use crate::error::Error;
use crate::events::{EventSender, EventStream, HubEvent};
use crate::protocol;
use crate::results::{GetPromptResult, ReadResourceResult};
use crate::tool_format::ToolFormat;
use crate::{tool_format, tool_names};
use futures::future::BoxFuture;

mod event_calls;
mod lifecycle;
mod restarts;
mod supervisor;
mod surface;
mod tasks;

/// Options for [`Hub::connect_with`]. Build them from [`HubOptions::new`]
/// (or `Default`) with the `with_*` methods, or set the public fields; new
/// fields may come in any release.
#[derive(Clone)]
#[non_exhaustive]
pub struct HubOptions {
    /// `clientInfo` sent to every server in `initialize`.
    pub client_info: Value,
    /// Handlers for server-to-client requests (roots, sampling, elicitation).
    pub handlers: ClientHandlers,
    /// Authorization hooks for OAuth servers: who asks the person, where
    /// tokens are kept.
    pub auth: crate::auth::AuthOptions,
    /// Where the hub sends its [`HubEvent`]s. Subscribe to it before
    /// connecting ([`EventSender::subscribe`]) to see the first servers
    /// connect; [`Hub::events`] subscribes later.
    pub events: EventSender,
    /// How long [`Hub::connect_with`] waits for the servers to come up.
    /// `None` (the default): until every enabled, non-lazy server is
    /// connected or has failed. `Some(bound)`: at most `bound`; the servers
    /// not up by then show as `starting` and go on starting in the
    /// background, their tools listed (with a `tools_changed` event) once
    /// they are up. For hosts that must answer quickly whatever one slow
    /// server does (the gateway's `initialize`, the CLI's listings).
    pub startup_wait: Option<std::time::Duration>,
    /// The host's roots ([`crate::roots::Roots`]): given, every server may
    /// ask `roots/list` (the capability is declared with `listChanged`) and
    /// [`Hub::set_roots`] changes them. It answers `roots/list` in place of
    /// [`ClientHandlers::roots`].
    pub roots: Option<crate::roots::Roots>,
    /// Extensions declared to every server (`capabilities.extensions`),
    /// see [`ClientOptions::extensions`]: only those the host implements.
    pub extensions: serde_json::Map<String, Value>,
    /// Where the servers may be reached ([`crate::NetworkPolicy`]:
    /// `deny_private`, `allow_networks`, `require_https`). It adds up with
    /// the config's `[network]` ([`crate::NetworkPolicy::merged`]): a check
    /// is on when either turns it on, a network is allowed when either
    /// lists it. Off by default.
    pub network: crate::NetworkPolicy,
}

impl Default for HubOptions {
    fn default() -> Self {
        HubOptions {
            client_info: protocol::default_client_info(),
            handlers: ClientHandlers::default(),
            auth: crate::auth::AuthOptions::default(),
            events: EventSender::default(),
            startup_wait: None,
            roots: None,
            extensions: serde_json::Map::new(),
            network: crate::NetworkPolicy::default(),
        }
    }
}

impl HubOptions {
    /// The defaults: mcpmux's `clientInfo`, no handlers, no authorization
    /// hooks, a new event sender, connect waits for every server.
    pub fn new() -> Self {
        HubOptions::default()
    }

    /// Sets [`HubOptions::client_info`].
    pub fn with_client_info(mut self, client_info: Value) -> Self {
        self.client_info = client_info;
        self
    }

    /// Sets [`HubOptions::handlers`].
    pub fn with_handlers(mut self, handlers: ClientHandlers) -> Self {
        self.handlers = handlers;
        self
    }

    /// Sets [`HubOptions::auth`].
    pub fn with_auth(mut self, auth: crate::auth::AuthOptions) -> Self {
        self.auth = auth;
        self
    }

    /// Sets [`HubOptions::events`].
    pub fn with_events(mut self, events: EventSender) -> Self {
        self.events = events;
        self
    }

    /// Sets [`HubOptions::startup_wait`].
    pub fn with_startup_wait(mut self, bound: std::time::Duration) -> Self {
        self.startup_wait = Some(bound);
        self
    }

    /// Declares extension `name` with `settings` to every server.
    pub fn with_extension(mut self, name: &str, settings: Value) -> Self {
        self.extensions.insert(name.to_owned(), settings);
        self
    }

    /// Sets [`HubOptions::roots`].
    pub fn with_roots(mut self, roots: crate::roots::Roots) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Sets [`HubOptions::network`].
    pub fn with_network(mut self, network: crate::NetworkPolicy) -> Self {
        self.network = network;
        self
    }
}

/// One tool as the hub offers it; defined in the leaf `crate::tool_names`
/// (with the names it carries) so the LLM tool formats and the policy read it
/// without depending on the hub.
pub use crate::tool_names::HubTool;

/// The health of one configured server (`servers --json` prints exactly this).
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    /// Configured name.
    pub name: String,
    /// Transport: `stdio`, `http`, `sse`, `websocket` (serialized as that
    /// string).
    #[serde(rename = "type")]
    pub transport: TransportKind,
    /// `connected`, `failed`, `disabled`, `restarting` or `idle`
    /// (serialized as that string).
    pub state: ServerState,
    /// The negotiated protocol revision.
    pub protocol_version: Option<String>,
    /// The server's `serverInfo`.
    pub server_info: Option<Value>,
    /// The capabilities the server declared (in `initialize` or
    /// `server/discover`) as it sent them, its `extensions` included
    /// (whether mcpmux implements them or not); `None` until connected.
    pub capabilities: Option<Value>,
    /// Number of tools it offers.
    pub tool_count: usize,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// The error code of `error`.
    pub error_code: Option<&'static str>,
}

/// What one configured server went through ([`Hub::server_history`]), for
/// status displays. Kept apart from [`ServerStatus`], whose JSON every
/// front end prints alike: these times differ from one process to another.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerHistory {
    /// Times its supervisor started it again after a failure, since the
    /// hub connected it (a reload that replaces the server starts anew).
    pub restarts: u32,
    /// When it last came up (milliseconds since the Unix epoch), while
    /// connected.
    pub connected_at_ms: Option<u64>,
    /// When its supervisor tries it next (milliseconds since the Unix
    /// epoch), while restarting.
    pub next_try_at_ms: Option<u64>,
}

/// Where a configured server stands, as [`ServerStatus::state`] reports
/// it. Serialized (and parsed, with [`str::parse`]) as `connected`,
/// `failed`, `disabled`, `restarting` or `idle`; compares equal to those
/// strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ServerState {
    /// Initialized and serving (its tools are listed).
    Connected,
    /// It could not connect, or its connection is gone (see `error`).
    Failed,
    /// `enabled = false` in the config: never started.
    Disabled,
    /// It failed and is being started again (see `error`); its tools stay
    /// listed and calls to them wait for it.
    Restarting,
    /// `lazy = true` and not used yet: not started, no tools listed. The
    /// first use (a call to `mcp_<server>_...`, or a read, prompt,
    /// completion, subscription, ping or refresh aimed at it) starts it.
    Idle,
    /// Its first start is under way: the hub was connected with a
    /// [`HubOptions::startup_wait`] that ran out before it came up (or a
    /// first use is starting it). No tools listed yet.
    Starting,
}

impl ServerState {
    /// Every state, in declaration order.
    pub const ALL: [ServerState; 6] = [
        ServerState::Connected,
        ServerState::Failed,
        ServerState::Disabled,
        ServerState::Restarting,
        ServerState::Idle,
        ServerState::Starting,
    ];

    /// The state's name: `connected`, `failed`, `disabled`, `restarting`,
    /// `idle` or `starting`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Connected => "connected",
            ServerState::Failed => "failed",
            ServerState::Disabled => "disabled",
            ServerState::Restarting => "restarting",
            ServerState::Idle => "idle",
            ServerState::Starting => "starting",
        }
    }
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::str::FromStr for ServerState {
    type Err = Error;

    /// Parses a state name; anything else is `INVALID_INPUT` naming it.
    fn from_str(s: &str) -> Result<Self, Error> {
        ServerState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "unknown server state '{s}' (expected one of: connected, failed, disabled, restarting, idle, starting)"
                ))
            })
    }
}

impl PartialEq<str> for ServerState {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ServerState {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

enum SlotState {
    Connected(Client),
    /// Being started again by its supervisor; `error` is why it went down.
    Restarting {
        error: Error,
        /// The tools it had: still listed, under the same names.
        tools: Arc<Vec<protocol::Tool>>,
    },
    Failed(Error),
    Disabled,
    /// Enabled but not started: `lazy = true` before its first use, or
    /// between a slot's creation and its start.
    Idle,
    /// The hub was closed, or a reload removed or replaced the server.
    Closed,
}

struct Slot {
    config: ServerConfig,
    state: RwLock<SlotState>,
    /// Bumped on every state change: calls waiting for a restart watch it.
    changed: tokio::sync::watch::Sender<u64>,
    /// The supervisor task ([`supervisor`]), aborted on close, refresh and drop.
    supervisor: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// Held while the server is being started by connect, reload, refresh
    /// or a first use ([`lifecycle`]), so that one start happens at a time
    /// and later users wait for it instead of starting a second process.
    starting: tokio::sync::Mutex<()>,
    /// Its restarts and times, for [`Hub::server_history`].
    history: Mutex<SlotHistory>,
}

/// What [`ServerStatus`] tells of a slot's past: kept beside its state
/// (written by `set_state` and the supervisor).
#[derive(Default)]
struct SlotHistory {
    restarts: u32,
    connected_at: Option<std::time::SystemTime>,
    next_try_at: Option<std::time::SystemTime>,
}

/// Milliseconds since the Unix epoch.
fn epoch_ms(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Slot {
    /// A slot for `config`, not started: `idle` when enabled, else `disabled`.
    fn new(config: ServerConfig) -> Slot {
        let state = if config.enabled {
            SlotState::Idle
        } else {
            SlotState::Disabled
        };
        Slot {
            config,
            state: RwLock::new(state),
            changed: tokio::sync::watch::Sender::new(0),
            supervisor: std::sync::Mutex::new(None),
            starting: tokio::sync::Mutex::new(()),
            history: Mutex::default(),
        }
    }

    /// When the supervisor tries it next (while it is restarting).
    fn note_next_try(&self, at: std::time::SystemTime) {
        self.history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_try_at = Some(at);
    }

    fn is_idle(&self) -> bool {
        matches!(*self.state.read().unwrap(), SlotState::Idle)
    }

    /// Whether `name` is under this server's prefix `mcp_<server>_`: a name
    /// it would list, or did (what a name says of its owner before the
    /// server has listed its tools).
    fn prefixes(&self, name: &str) -> bool {
        self.config.prefixes(name)
    }

    fn client(&self) -> Option<Client> {
        match &*self.state.read().unwrap() {
            SlotState::Connected(c) => Some(c.clone()),
            _ => None,
        }
    }

    fn is_closed(&self) -> bool {
        matches!(*self.state.read().unwrap(), SlotState::Closed)
    }

    /// What the supervisor watches.
    fn snapshot(&self) -> supervisor::Snapshot {
        match &*self.state.read().unwrap() {
            SlotState::Connected(c) => supervisor::Snapshot::Connected(
                c.clone(),
                self.config.supervision.ping_interval,
                self.config.timeout,
            ),
            _ => supervisor::Snapshot::Other,
        }
    }

    /// Replaces the supervisor task (aborting the old one).
    fn set_supervisor(&self, task: Option<tokio::task::AbortHandle>) {
        if let Some(old) = std::mem::replace(&mut *self.supervisor.lock().unwrap(), task) {
            old.abort();
        }
    }
}

/// One tool of the hub: its hub name and where it lives.
struct IndexEntry {
    name: String,
    slot: Arc<Slot>,
    server: String,
    tools: Arc<Vec<protocol::Tool>>,
    pos: usize,
    /// The tool as a [`HubTool`], built on first use by a policy's call
    /// (which looks its tool up on every call) and kept for as long as
    /// this index: a changed tool list builds a new one.
    shared: OnceLock<Arc<HubTool>>,
}

impl IndexEntry {
    fn shared_tool(&self) -> Arc<HubTool> {
        self.shared
            .get_or_init(|| Arc::new(self.to_hub_tool()))
            .clone()
    }

    fn tool(&self) -> &protocol::Tool {
        &self.tools[self.pos]
    }

    fn to_hub_tool(&self) -> HubTool {
        let t = self.tool();
        HubTool {
            name: self.name.clone(),
            server: self.server.clone(),
            tool: t.name.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema(),
            output_schema: t.output_schema(),
            annotations: t.annotations(),
            execution: t.execution(),
            icons: t.icons(),
            meta: t.meta(),
        }
    }
}

/// Hub names to tools. The tool lists are shared with the clients, not copied.
#[derive(Default)]
struct ToolIndex {
    entries: Vec<IndexEntry>,
    by_name: HashMap<String, usize>,
    /// The listed tools and their search index, built by the first
    /// [`Hub::search_tools`] on this list (a rebuild makes a new
    /// `ToolIndex`, so it never goes stale).
    search: OnceLock<(Vec<HubTool>, crate::tool_search::Index)>,
}

struct HubInner {
    /// Unique per connected hub (clones share it): what a policy made for
    /// this hub remembers ([`Hub::id`]).
    id: u64,
    /// The config as given (the last one [`Hub::reload`] was given), for
    /// policies built from it ([`Hub::config`]).
    config: RwLock<Arc<Config>>,
    /// The servers, in config order; [`Hub::reload`] replaces the list.
    slots: RwLock<Arc<Vec<Arc<Slot>>>>,
    /// Held by [`Hub::reload`]: one reload at a time.
    reloading: tokio::sync::Mutex<()>,
    index: RwLock<Arc<ToolIndex>>,
    /// Held by [`HubInner::rebuild_index`] from reading the servers' state
    /// to storing the index built from it: rebuilds run on whichever thread
    /// saw a change (a connect, a restart, a `list_changed` refresh), and
    /// without it one built from older state could be stored last.
    rebuilding: Mutex<()>,
    /// The host's roots ([`HubOptions::roots`]), which `set_roots` changes.
    roots: Option<crate::roots::Roots>,
    /// What every client of the hub is connected with; its `network` is the
    /// host's ([`HubOptions::network`]), which [`HubInner::connect_options`]
    /// adds the current config's `[network]` to.
    options: ClientOptions,
}

/// The id of the next hub connected in this process.
static NEXT_HUB_ID: AtomicU64 = AtomicU64::new(1);

/// Many MCP servers behind one tool list. Cheap to clone; clones share the
/// connections. Dropping the last clone without [`close`](Hub::close) kills
/// every server process at once.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

impl Hub {
    /// Connects every enabled server of `config` at once.
    ///
    /// A server that fails to start or initialize is marked failed with its
    /// error and the hub goes on with the rest; only an invalid config fails
    /// here.
    pub async fn connect(config: Config) -> Result<Hub, Error> {
        Self::connect_with(config, HubOptions::default()).await
    }

    /// [`Hub::connect`] with options (client info, server-request handlers).
    pub async fn connect_with(config: Config, options: HubOptions) -> Result<Hub, Error> {
        // From here on, what the servers send back cannot show the
        // config's secrets ([`crate::secrets`]).
        crate::secrets::register(config.secret_values());
        // Before any server starts: the config's `[telemetry]` table.
        crate::telemetry::configure(&config.telemetry);
        let startup_wait = options.startup_wait;
        let mut handlers = options.handlers;
        if let Some(roots) = &options.roots {
            handlers.roots = Some(roots.handler());
        }
        let roots_list_changed = options.roots.is_some();
        let kept = config.clone();
        let inner = Arc::new_cyclic(|me: &Weak<HubInner>| {
            let me = me.clone();
            HubInner {
                id: NEXT_HUB_ID.fetch_add(1, Ordering::Relaxed),
                config: RwLock::new(Arc::new(kept)),
                slots: RwLock::new(Arc::new(
                    config
                        .servers
                        .into_iter()
                        .map(|config| Arc::new(Slot::new(config)))
                        .collect(),
                )),
                reloading: tokio::sync::Mutex::new(()),
                index: RwLock::new(Arc::default()),
                rebuilding: Mutex::new(()),
                roots: options.roots,
                options: ClientOptions {
                    client_info: options.client_info,
                    handlers,
                    auth: options.auth,
                    events: options.events,
                    roots_list_changed,
                    extensions: options.extensions,
                    network: options.network,
                    on_tools_changed: Some(Arc::new(move || {
                        if let Some(hub) = me.upgrade() {
                            hub.rebuild_index();
                        }
                    })),
                },
            }
        });
        // Lazy servers wait for their first use ([`lifecycle`]).
        let eager: Vec<Arc<Slot>> = inner
            .slots()
            .iter()
            .filter(|s| s.config.enabled && !s.config.supervision.lazy)
            .cloned()
            .collect();
        let starts = {
            let inner = inner.clone();
            async move { futures::future::join_all(eager.iter().map(|s| inner.start(s))).await }
        };
        match startup_wait {
            None => {
                starts.await;
            }
            Some(bound) => {
                // What is not up within the bound goes on in the background
                // (each start is bounded by its server's timeout).
                let starts = tokio::spawn(starts);
                let _ = tokio::time::timeout(bound, starts).await;
            }
        }
        Ok(Hub { inner })
    }

    /// A stream of what happens to the hub's servers from now on
    /// ([`HubEvent`]: state changes, tool/resource/prompt list changes,
    /// resource updates, server log messages). Sending never waits for the
    /// host: a stream that falls behind loses its oldest events and gets a
    /// [`HubEvent::Lagged`] first.
    pub fn events(&self) -> EventStream {
        self.inner.options.events.subscribe()
    }

    /// The configuration the hub was connected with, or the last one
    /// [`Hub::reload`] was given (its `[session]` table and source file
    /// feed host policies).
    pub fn config(&self) -> Arc<Config> {
        self.inner.config.read().unwrap().clone()
    }

    /// The status of every configured server, in config order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.inner
            .slots()
            .iter()
            .map(|slot| {
                let mut status = ServerStatus {
                    name: slot.config.name.clone(),
                    transport: slot.config.transport.kind(),
                    state: ServerState::Disabled,
                    protocol_version: None,
                    server_info: None,
                    capabilities: None,
                    tool_count: 0,
                    error: None,
                    error_code: None,
                };
                let fail = |status: &mut ServerStatus, e: &Error| {
                    status.state = ServerState::Failed;
                    status.error = Some(e.to_string());
                    status.error_code = Some(e.code());
                };
                match &*slot.state.read().unwrap() {
                    SlotState::Connected(c) => {
                        status.state = ServerState::Connected;
                        status.protocol_version = Some(c.init().protocol_version.clone());
                        status.server_info = Some(c.init().server_info.clone());
                        status.capabilities = Some(c.init().capabilities.clone());
                        status.tool_count = c.tools().len();
                        if let Some(e) = c.closed_error() {
                            fail(&mut status, &e);
                        }
                    }
                    SlotState::Restarting { error, tools, .. } => {
                        fail(&mut status, error);
                        status.state = ServerState::Restarting;
                        status.tool_count = tools.len();
                    }
                    SlotState::Failed(e) => fail(&mut status, e),
                    SlotState::Disabled => {}
                    // A start under way holds `starting`.
                    SlotState::Idle if slot.starting.try_lock().is_err() => {
                        status.state = ServerState::Starting
                    }
                    SlotState::Idle => status.state = ServerState::Idle,
                    SlotState::Closed => fail(&mut status, &closed()),
                }
                status
            })
            .collect()
    }

    /// Server `name`'s restarts and times; `None` when the config has no
    /// such server.
    pub fn server_history(&self, name: &str) -> Option<ServerHistory> {
        let slots = self.inner.slots();
        let slot = slots.iter().find(|slot| slot.config.name == name)?;
        let history = slot.history.lock().unwrap_or_else(|e| e.into_inner());
        Some(ServerHistory {
            restarts: history.restarts,
            connected_at_ms: history.connected_at.map(epoch_ms),
            next_try_at_ms: history.next_try_at.map(epoch_ms),
        })
    }

    /// The last `lines` lines (at most 100) that server `name` wrote to its
    /// stderr, oldest first, with known secrets redacted: a connected stdio
    /// server's; empty for others (a failed server's `error` quotes what it
    /// wrote before it ended).
    pub fn server_stderr(&self, name: &str, lines: usize) -> Vec<String> {
        self.inner
            .slots()
            .iter()
            .find(|slot| slot.config.name == name)
            .and_then(|slot| slot.client())
            .map(|client| client.recent_stderr(lines.min(100)))
            .unwrap_or_default()
    }

    /// The `instructions` of every connected server that sent some, in
    /// config order, with the server's name: what the gateway passes on to
    /// its clients.
    pub fn instructions(&self) -> Vec<(String, String)> {
        self.inner
            .slots()
            .iter()
            .filter_map(|slot| {
                let client = slot.client()?;
                let text = client.init().instructions.clone()?;
                (!text.trim().is_empty()).then(|| (slot.config.name.clone(), text))
            })
            .collect()
    }

    /// One line saying which enabled servers failed (so their tools are
    /// missing from [`Hub::list_tools`] and [`Hub::tools_for`]), with each
    /// one's error code, and which are still `starting`; `None` when none. A server that is restarting
    /// before it ever listed tools is named too, marked `restarting` (one
    /// that had tools keeps them listed while it restarts). Front ends show
    /// it beside a tool list (the CLI on stderr); [`Hub::servers`] has the
    /// details.
    pub fn failed_servers_note(&self) -> Option<String> {
        let mut failed = Vec::new();
        let mut restarting = Vec::new();
        let mut starting = Vec::new();
        for s in self.servers() {
            if s.state == ServerState::Starting {
                starting.push(s.name);
                continue;
            }
            let listed_none = match s.state {
                ServerState::Failed => true,
                ServerState::Restarting => s.tool_count == 0,
                _ => false,
            };
            if listed_none {
                failed.push(format!("{} ({})", s.name, s.error_code.unwrap_or("FAILED")));
                if s.state == ServerState::Restarting {
                    restarting.push(s.name);
                }
            }
        }
        let starting = (!starting.is_empty()).then(|| {
            format!(
                "servers still starting, their tools not listed yet: {}",
                starting.join(", ")
            )
        });
        let failed = (!failed.is_empty()).then(|| {
            let restarting = if restarting.is_empty() {
                String::new()
            } else {
                format!("; being restarted: {}", restarting.join(", "))
            };
            format!(
                "tools of failed servers are not listed: {}{restarting} (see `servers` for why)",
                failed.join(", ")
            )
        });
        match (failed, starting) {
            (Some(f), Some(s)) => Some(format!("{f}; {s}")),
            (f, s) => f.or(s),
        }
    }

    /// Every tool of every connected server, in config order. A lazy
    /// server that has not started yet (`idle`) lists nothing: its tools
    /// are unknown until its first use starts it, though their names are
    /// already fixed (`mcp_<server>_<tool>`, from the config alone).
    pub fn list_tools(&self) -> Vec<HubTool> {
        let index = self.inner.index.read().unwrap().clone();
        index.entries.iter().map(IndexEntry::to_hub_tool).collect()
    }

    /// How many tools [`Hub::search_tools`] returns when a host gives no limit.
    pub const SEARCH_DEFAULT_LIMIT: usize = crate::tool_search::DEFAULT_LIMIT;

    /// The tools that match `query`, best first, at most `limit` (BM25 over
    /// each tool's names, title, description and parameter names, stemmed,
    /// with a few synonyms; never empty while there are tools and `limit` >
    /// 0: near words, then list order, when no tool shares a word with the
    /// query). For hosts that show a
    /// model a search instead of hundreds of tools.
    /// Front ends default `limit` to [`Hub::SEARCH_DEFAULT_LIMIT`].
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<HubTool> {
        let index = self.inner.index.read().unwrap().clone();
        let (tools, search) = index.search.get_or_init(|| {
            let tools: Vec<HubTool> = index.entries.iter().map(IndexEntry::to_hub_tool).collect();
            let search = crate::tool_search::Index::new(&tools);
            (tools, search)
        });
        crate::tool_search::rank_in(search, tools, query, limit)
            .into_iter()
            .cloned()
            .collect()
    }

    /// The hub name of the tool `server` calls `tool`, if the hub has it
    /// (no schema is parsed: a lookup for every call of a proxy).
    pub fn hub_name(&self, server: &str, tool: &str) -> Option<String> {
        let index = self.inner.index.read().unwrap();
        index
            .entries
            .iter()
            .find(|e| e.server == server && e.tool().name == tool)
            .map(|e| e.name.clone())
    }

    /// The tool with hub name `name`.
    pub fn tool(&self, name: &str) -> Option<HubTool> {
        let index = self.inner.index.read().unwrap();
        index
            .by_name
            .get(name)
            .map(|&i| index.entries[i].to_hub_tool())
    }

    /// The tool list rendered for an LLM API: `anthropic`, `openai`,
    /// `openai-responses` or `mcp`.
    /// An unknown name is `INVALID_INPUT` naming it; [`Hub::tools_as`]
    /// takes the typed [`ToolFormat`].
    pub fn tools_for(&self, format: &str) -> Result<Value, Error> {
        Ok(self.tools_as(format.parse()?))
    }

    /// The tool list rendered for an LLM API in `format`. Tools the host
    /// cannot call are left out: one that requires a task
    /// (`execution.taskSupport: "required"`) on a server that does not
    /// accept task calls. Tools that take tasks are callable
    /// ([`Hub::call_tool`] runs them as tasks).
    pub fn tools_as(&self, format: ToolFormat) -> Value {
        tool_format::render_as(&self.callable_tools(), format)
    }

    /// [`Hub::list_tools`] without the tools the host cannot call (see
    /// [`Hub::tools_as`]).
    pub fn callable_tools(&self) -> Vec<HubTool> {
        let index = self.inner.index.read().unwrap().clone();
        index
            .entries
            .iter()
            .filter(|e| {
                crate::tasks::task_support(e.tool().execution().as_ref())
                    != crate::tasks::TaskSupport::Required
                    || e.slot.client().is_none_or(|c| c.accepts_tool_tasks())
            })
            .map(IndexEntry::to_hub_tool)
            .collect()
    }

    /// This hub's identity in the process (clones share it; never reused):
    /// a policy made for a hub is refused on another.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Calls a tool by its hub name. A tool's own failure is an `Ok` result
    /// with `is_error()`; routing, transport and protocol failures are errors.
    /// With [`CallOptions::policy`] set, the policy checks, redacts and
    /// audits the call.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        if let Some(policy) = &opts.policy {
            // A lazy server named by the prefix starts now, so that the
            // policy sees its tools. (Without one, `route` starts it.)
            Box::pin(self.inner.start_owners(name)).await;
            return policy.call_tool(self, name, arguments, opts).await;
        }
        self.call_unchecked(name, arguments, opts).await
    }

    /// [`Hub::call_tool`] with the arguments as JSON text: an object, or
    /// `None` for `{}`. For front ends that hold the arguments as text
    /// (Node's `callTool`): the text is checked, then passed on as
    /// [`Hub::call_tool_raw`] describes. Text that is not a JSON object is
    /// `INVALID_INPUT` naming the tool.
    pub async fn call_tool_json(
        &self,
        name: &str,
        arguments: Option<&str>,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let raw = match arguments {
            Some(text) => {
                Some(serde_json::from_str::<&RawValue>(text).map_err(|e| not_json(name, e))?)
            }
            None => None,
        };
        self.call_tool_raw(name, raw, opts).await
    }

    /// [`Hub::call_tool`] with arguments that are already known to be JSON
    /// (`None` for `{}`), for front ends that checked the text themselves
    /// (the C ABI's `args_json`): sent as they are, not parsed into a
    /// [`Value`] and written again, unless the call needs the parsed form
    /// (a policy, a task, a stateless server, or text spread over several
    /// lines, which a stdio message cannot carry). JSON that is not an
    /// object is `INVALID_INPUT` naming the tool.
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: Option<&RawValue>,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let Some(raw) = arguments else {
            return self.call_tool(name, None, opts).await;
        };
        if !raw.get().starts_with('{') {
            return Err(Error::InvalidInput(format!(
                "arguments of tool '{name}' must be a JSON object"
            )));
        }
        if opts.policy.is_some() || raw.get().contains(['\n', '\r']) {
            let value: Value = serde_json::from_str(raw.get()).map_err(|e| not_json(name, e))?;
            return Box::pin(self.call_tool(name, Some(&value), opts)).await;
        }
        let (client, tool) = self.route(name, opts).await?;
        #[cfg(feature = "telemetry")]
        if let Some(t) = crate::telemetry::active() {
            return Box::pin(t.with_hub_tool(name, client.call_tool_raw(&tool, raw, opts))).await;
        }
        client.call_tool_raw(&tool, raw, opts).await
    }

    /// [`Hub::call_tool`] without the policy (the policy's own way in).
    pub(crate) async fn call_unchecked(
        &self,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let (client, tool) = self.route(name, opts).await?;
        // The hub's name rides in the context to the client span.
        #[cfg(feature = "telemetry")]
        if let Some(t) = crate::telemetry::active() {
            return Box::pin(t.with_hub_tool(name, client.call_tool(&tool, arguments, opts))).await;
        }
        client.call_tool(&tool, arguments, opts).await
    }

    /// The client and server-side name of hub tool `name`. A server that is
    /// restarting is waited for, up to the call's timeout (the server's
    /// `timeout_seconds` when the call sets none); past it, the call fails
    /// with the error that took the server down.
    async fn route(&self, name: &str, opts: &CallOptions) -> Result<(Client, String), Error> {
        // The usual case, a listed tool of a connected server, takes no
        // subscription, clock read or timer, and keeps the caller's future
        // small: the waiting is boxed (a call's future is moved into its
        // task whole, so its size is paid on every call).
        if let Some((slot, tool)) = self.find_tool(name) {
            if let SlotState::Connected(c) = &*slot.state.read().unwrap() {
                return Ok((c.clone(), tool));
            }
        }
        Box::pin(self.route_waiting(name, opts)).await
    }

    /// The slot and server-side name of listed hub tool `name`.
    fn find_tool(&self, name: &str) -> Option<(Arc<Slot>, String)> {
        let index = self.inner.index.read().unwrap();
        index.by_name.get(name).map(|&i| {
            (
                index.entries[i].slot.clone(),
                index.entries[i].tool().name.clone(),
            )
        })
    }

    /// [`route`](Self::route) when the tool is not listed or its server is
    /// not connected: starts a lazy server, waits for a restart.
    async fn route_waiting(
        &self,
        name: &str,
        opts: &CallOptions,
    ) -> Result<(Client, String), Error> {
        let found = match self.find_tool(name) {
            Some(found) => Some(found),
            // Not listed: maybe its lazy server has not started yet.
            None if self.inner.start_owners(name).await => self.find_tool(name),
            // Not listed: maybe its server failed its first start and is
            // being restarted; wait for that like for any restart.
            None if self.restarted_owner(name, opts).await => self.find_tool(name),
            None => None,
        };
        let Some((slot, tool)) = found else {
            return Err(self.unknown_tool(name));
        };
        let deadline = crate::runtime::deadline_after(opts.timeout.unwrap_or(slot.config.timeout));
        let mut changed = slot.changed.subscribe();
        loop {
            let last = match &*slot.state.read().unwrap() {
                SlotState::Connected(c) => return Ok((c.clone(), tool)),
                SlotState::Failed(e) => return Err(e.clone()),
                SlotState::Restarting { error, .. } => error.clone(),
                // Closed while the hub is not: a reload removed or replaced it.
                _ if !self.is_closed() => {
                    return Err(Error::TransportClosed(format!(
                    "server '{}' was removed or replaced by a reload; tool '{name}' unavailable",
                    slot.config.name
                )))
                }
                _ => return Err(closed()),
            };
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .map_or(true, |r| r.is_err())
            {
                return Err(last.context(format!(
                    "server '{}' is restarting; tool '{name}' unavailable",
                    slot.config.name
                )));
            }
        }
    }

    /// Waits (up to the call's timeout) for the restarting server whose
    /// prefix `mcp_<server>_` starts `name` (the longest such) to connect;
    /// whether it did. For a server that never listed tools: its names are
    /// unknown until it comes up.
    async fn restarted_owner(&self, name: &str, opts: &CallOptions) -> bool {
        let Some(slot) = self.inner.prefix_owner(name) else {
            return false;
        };
        let deadline = crate::runtime::deadline_after(opts.timeout.unwrap_or(slot.config.timeout));
        let mut changed = slot.changed.subscribe();
        loop {
            match &*slot.state.read().unwrap() {
                SlotState::Connected(_) => return true,
                SlotState::Restarting { .. } => {}
                _ => return false,
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .map_or(true, |r| r.is_err())
            {
                return false;
            }
        }
    }

    fn unknown_tool(&self, name: &str) -> Error {
        // A name under the prefix `mcp_<server>_` of a server that failed
        // gets that server's own error (CONNECT_FAILED, AUTH_REQUIRED, ...):
        // the caller's fix is the server, not the name. The longest prefix
        // wins (server `a_b` over server `a`).
        if let Some(slot) = self.inner.prefix_owner(name) {
            let server = &slot.config.name;
            let failed = |e: &Error| {
                e.clone().context(format!(
                    "tool '{name}' is unavailable: server '{server}' failed"
                ))
            };
            match &*slot.state.read().unwrap() {
                SlotState::Failed(e) | SlotState::Restarting { error: e, .. } => return failed(e),
                SlotState::Connected(c) => {
                    if let Some(e) = c.closed_error() {
                        return failed(&e);
                    }
                }
                SlotState::Disabled => {
                    return Error::UnknownTool(format!(
                        "unknown tool '{name}': server '{server}' is disabled"
                    ))
                }
                SlotState::Idle | SlotState::Closed => {}
            }
        }
        if self.is_closed() {
            return closed();
        }
        let index = self.inner.index.read().unwrap().clone();
        let hint = crate::tool_names::did_you_mean(
            name,
            index
                .entries
                .iter()
                .map(|e| (e.name.as_str(), e.tool().name.as_str())),
        );
        Error::UnknownTool(format!("unknown tool '{name}'{hint}"))
    }

    /// The client of server `name`, when it is connected. A lazy server
    /// not started yet is `TRANSPORT_CLOSED` saying so (this does not start
    /// it; the hub's requests aimed at it do).
    pub fn client(&self, server: &str) -> Result<Client, Error> {
        let slot = self.slot(server)?;
        let client = match &*slot.state.read().unwrap() {
            SlotState::Connected(c) => Ok(c.clone()),
            SlotState::Failed(e) | SlotState::Restarting { error: e, .. } => Err(e.clone()),
            SlotState::Disabled => Err(Error::UnknownServer(format!(
                "server '{server}' is disabled"
            ))),
            SlotState::Idle => Err(Error::TransportClosed(format!(
                "server '{server}' is lazy and has not started yet"
            ))),
            SlotState::Closed => Err(closed()),
        };
        client
    }

    /// [`Hub::client`], starting the server first when it is lazy and not
    /// started yet.
    async fn started_client(&self, server: &str) -> Result<Client, Error> {
        let slot = self.slot(server)?;
        if slot.is_idle() {
            self.inner.start(&slot).await;
        }
        self.client(server)
    }

    fn slot(&self, server: &str) -> Result<Arc<Slot>, Error> {
        self.inner
            .slots()
            .iter()
            .find(|s| s.config.name == server)
            .cloned()
            .ok_or_else(|| Error::UnknownServer(format!("unknown server '{server}'")))
    }

    async fn clients_with(
        &self,
        capability: &str,
        server: Option<&str>,
    ) -> Result<Vec<Client>, Error> {
        if let Some(name) = server {
            return Ok(vec![self.started_client(name).await?]);
        }
        if self.is_closed() {
            return Err(closed());
        }
        Ok(self
            .inner
            .slots()
            .iter()
            .filter_map(|s| s.client())
            .filter(|c| c.init().has_capability(capability))
            .collect())
    }

    async fn gather(
        &self,
        capability: &str,
        method: &str,
        key: &str,
        server: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        let clients = self.clients_with(capability, server).await?;
        let lists =
            futures::future::join_all(clients.iter().map(|c| c.list_all(method, key))).await;
        let mut out = Vec::new();
        for (client, list) in clients.iter().zip(lists) {
            match list {
                Ok(items) => out.extend(items.into_iter().map(|mut item| {
                    if let Value::Object(m) = &mut item {
                        m.insert("server".into(), client.name().into());
                    }
                    item
                })),
                Err(e) if server.is_some() => return Err(e),
                Err(e) => tracing::warn!(server = %client.name(), error = %e, "{method} failed"),
            }
        }
        Ok(out)
    }

    /// Every resource of every server (or of `server`), each with a
    /// `server` member, and each `ui://` one (MCP Apps) with `app_of`: the
    /// hub names of the tools whose UI it is.
    pub async fn list_resources(&self, server: Option<&str>) -> Result<Vec<Value>, Error> {
        let mut resources = self
            .gather("resources", "resources/list", "resources", server)
            .await?;
        self.mark_apps(&mut resources);
        Ok(resources)
    }

    fn mark_apps(&self, resources: &mut [Value]) {
        let is_app = |item: &Value| {
            item["uri"]
                .as_str()
                .is_some_and(|uri| uri.starts_with(crate::apps::SCHEME))
        };
        if !resources.iter().any(is_app) {
            return;
        }
        let apps: Vec<(String, String, String)> = {
            let index = self.inner.index.read().unwrap();
            index
                .entries
                .iter()
                .filter_map(|e| {
                    let tool = e.shared_tool();
                    let uri = tool.ui_resource_uri()?.to_owned();
                    Some((tool.server.clone(), uri, tool.name.clone()))
                })
                .collect()
        };
        for item in resources.iter_mut().filter(|item| is_app(item)) {
            let names: Vec<&str> = apps
                .iter()
                .filter(|(server, uri, _)| item["server"] == **server && item["uri"] == **uri)
                .map(|(_, _, name)| name.as_str())
                .collect();
            item["app_of"] = names.into();
        }
    }

    /// Every resource template, each with a `server` member.
    pub async fn list_resource_templates(&self, server: Option<&str>) -> Result<Vec<Value>, Error> {
        self.gather(
            "resources",
            "resources/templates/list",
            "resourceTemplates",
            server,
        )
        .await
    }

    /// Reads `uri` from `server`; without one, from the server that lists
    /// it, else the only server with resources, else the servers one of
    /// whose resource templates matches it (in config order, until one
    /// answers). A URI no server claims is `INVALID_INPUT` saying so and
    /// naming the servers that have resources; no server is asked.
    pub async fn read_resource(
        &self,
        uri: &str,
        server: Option<&str>,
    ) -> Result<ReadResourceResult, Error> {
        let params = serde_json::json!({ "uri": uri });
        let clients = match server {
            Some(_) => self.clients_with("resources", server).await?,
            None => {
                let (claimed, all) = self.resource_claimants(uri).await?;
                if claimed.is_empty() {
                    let names: Vec<&str> = all.iter().map(Client::name).collect();
                    return Err(Error::InvalidInput(if names.is_empty() {
                        format!("no connected server offers resources to read '{uri}'")
                    } else {
                        format!(
                            "no connected server lists '{uri}' or has a resource template \
                             that matches it (servers with resources: {}); name the server to ask",
                            names.join(", ")
                        )
                    }));
                }
                claimed
            }
        };
        let mut last = Error::InvalidInput(format!(
            "no connected server offers resources to read '{uri}'"
        ));
        for client in clients {
            match client
                .request("resources/read", Some(&params), &CallOptions::default())
                .await
            {
                Ok(v) => return Ok(ReadResourceResult::from_json(v)),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Every prompt of every server (or of `server`), each with a `server` member.
    pub async fn list_prompts(&self, server: Option<&str>) -> Result<Vec<Value>, Error> {
        self.gather("prompts", "prompts/list", "prompts", server)
            .await
    }

    /// The hub name of each prompt in `listed` (as [`Hub::list_prompts`]
    /// gives them, in that order): `mcp_{server}_{prompt}`, by the rule of
    /// tool names, so two servers' prompts of one name stay apart. The
    /// gateway lists prompts under these names; [`Hub::get_prompt`] takes
    /// them as well as a server's own name.
    pub fn prompt_hub_names(&self, listed: &[Value]) -> Vec<String> {
        let pairs: Vec<(&str, &str)> = listed
            .iter()
            .map(|p| {
                (
                    p["server"].as_str().unwrap_or_default(),
                    p["name"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        let config = self.config();
        let configured: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        tool_names::assign_in(&pairs, &configured)
    }

    /// Gets prompt `name` with `arguments` from `server`, or from the one
    /// server that lists a prompt of that name. `name` is the server's own
    /// name for the prompt or its hub name (`mcp_{server}_{prompt}`, as the
    /// gateway lists it); an unknown name is `INVALID_INPUT` saying which
    /// names were meant.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&Value>,
        server: Option<&str>,
    ) -> Result<GetPromptResult, Error> {
        let listed = match server {
            // A named server is asked for `name` as given unless it lists a
            // prompt under that hub name (a failed listing included).
            Some(s) => {
                self.started_client(s).await?;
                self.list_prompts(Some(s)).await.unwrap_or_default()
            }
            None => self.list_prompts(None).await?,
        };
        let by_hub_name = || {
            let hub_names = self.prompt_hub_names(&listed);
            let found = hub_names.iter().position(|n| n == name).map(|i| {
                (
                    listed[i]["server"].as_str().unwrap_or_default().to_owned(),
                    listed[i]["name"].as_str().unwrap_or_default().to_owned(),
                )
            });
            (found, hub_names)
        };
        let (owner, own) = match server {
            Some(s) => match by_hub_name() {
                (Some(found), _) if !listed.iter().any(|p| p["name"] == name) => found,
                _ => (s.to_owned(), name.to_owned()),
            },
            None if listed.iter().any(|p| p["name"] == name) => (
                surface::single_owner(&listed, "name", name, "prompt")?,
                name.to_owned(),
            ),
            None => match by_hub_name() {
                (Some(found), _) => found,
                (None, hub_names) => {
                    let hint = tool_names::did_you_mean(
                        name,
                        hub_names
                            .iter()
                            .zip(&listed)
                            .map(|(h, p)| (h.as_str(), p["name"].as_str().unwrap_or_default())),
                    );
                    return Err(Error::InvalidInput(format!(
                        "no connected server has a prompt named '{name}'{hint}"
                    )));
                }
            },
        };
        let client = self.client(&owner)?;
        let mut params = serde_json::json!({ "name": own });
        if let Some(args) = arguments {
            params["arguments"] = args.clone();
        }
        client
            .request("prompts/get", Some(&params), &CallOptions::default())
            .await
            .map(GetPromptResult::from_json)
    }

    /// Reconnects server `name` and lists its tools again.
    pub async fn refresh(&self, server: &str) -> Result<(), Error> {
        let slot = self.slot(server)?;
        if matches!(*slot.state.read().unwrap(), SlotState::Closed) {
            return Err(closed());
        }
        if !slot.config.enabled {
            return Err(Error::UnknownServer(format!(
                "server '{server}' is disabled"
            )));
        }
        // One start at a time (a first use of a lazy server, a reload).
        let _starting = slot.starting.lock().await;
        // The old supervisor would restart what we close now.
        slot.set_supervisor(None);
        if let Some(old) = slot.client() {
            old.close().await;
        }
        let result = surface::connect(&slot.config, &self.inner.connect_options()).await;
        let outcome = result.as_ref().map(|_| ()).map_err(Clone::clone);
        self.inner.start_supervising(&slot, result);
        outcome
    }

    /// Closes every server (stdin, then SIGTERM, then SIGKILL for stdio) at
    /// once and waits until all are gone. Later calls fail with TRANSPORT_CLOSED.
    pub async fn close(&self) {
        // After a reload under way, so that it starts nothing afterwards.
        let _reload = self.inner.reloading.lock().await;
        let clients: Vec<Client> = self
            .inner
            .slots()
            .iter()
            .filter_map(|slot| {
                slot.set_supervisor(None);
                let old = std::mem::replace(&mut *slot.state.write().unwrap(), SlotState::Closed);
                slot.changed.send_modify(|n| *n += 1);
                match old {
                    SlotState::Connected(c) => Some(c),
                    _ => None,
                }
            })
            .collect();
        futures::future::join_all(clients.iter().map(Client::close)).await;
        self.inner.rebuild_index();
        // After the last events (tools removed): streams end here.
        self.inner.options.events.close();
        // Spans and metrics so far go out now (bounded; nothing when off).
        crate::telemetry::flush_async().await;
    }

    /// Replaces the host's roots (paths or `file://` URIs,
    /// [`crate::roots::Root::parse`]) and sends
    /// `notifications/roots/list_changed` to every connected server that
    /// keeps a session (a 2026-07-28 server asks again with each request
    /// that needs them). A hub connected without
    /// [`HubOptions::roots`] declared no roots capability, so this is
    /// `INVALID_INPUT` there; a bad root is `INVALID_INPUT` naming it and
    /// changes nothing.
    pub fn set_roots<S: AsRef<str>>(&self, roots: &[S]) -> Result<(), Error> {
        let Some(store) = &self.inner.roots else {
            return Err(Error::InvalidInput(
                "set_roots: this hub was connected without roots, so its servers were told \
                 it has none to share; pass roots when connecting"
                    .into(),
            ));
        };
        store.replace(crate::roots::Root::parse_all(roots)?);
        for slot in self.inner.slots().iter() {
            if let Some(client) = slot.client() {
                client.notify_roots_changed();
            }
        }
        Ok(())
    }

    /// The host's roots as servers see them now (empty when the hub was
    /// connected without [`HubOptions::roots`]).
    pub fn roots(&self) -> Vec<crate::roots::Root> {
        self.inner
            .roots
            .as_ref()
            .map(|r| r.list().to_vec())
            .unwrap_or_default()
    }

    /// Whether [`close`](Hub::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner
            .slots()
            .iter()
            .any(|s| matches!(*s.state.read().unwrap(), SlotState::Closed))
    }
}

fn closed() -> Error {
    Error::TransportClosed("the hub is closed".into())
}

impl HubInner {
    /// Sets server `slot`'s state, wakes the calls waiting for it, tells the
    /// host (`server_state`, restart `attempt`) and re-lists the tools.
    fn set_state(&self, s: &Slot, state: SlotState, attempt: u32) {
        let event = state_event(&s.config.name, &state, attempt);
        {
            let mut current = s.state.write().unwrap();
            if matches!(*current, SlotState::Closed) {
                return;
            }
            let mut history = s.history.lock().unwrap_or_else(|e| e.into_inner());
            history.connected_at =
                matches!(state, SlotState::Connected(_)).then(std::time::SystemTime::now);
            // The supervisor sets the next try's time once it knows it.
            history.next_try_at = None;
            if matches!(state, SlotState::Restarting { .. }) {
                history.restarts = history.restarts.saturating_add(1);
            }
            *current = state;
        }
        s.changed.send_modify(|n| *n += 1);
        if let Some(event) = event {
            self.options.events.send(event);
        }
        self.rebuild_index();
    }

    /// Records how server `slot` started (or failed to) and hands it to a
    /// new supervisor task.
    fn start_supervising(self: &Arc<Self>, slot: &Arc<Slot>, started: Result<Client, Error>) {
        let mut restarts = restarts::Restarts::new(&slot.config.supervision);
        let step = match started {
            Ok(client) => {
                self.set_state(slot, SlotState::Connected(client), 0);
                Some(supervisor::Step::Watch)
            }
            Err(e) => {
                tracing::warn!(server = %slot.config.name, error = %e, "server failed to connect");
                supervisor::after_failure(self, slot, &mut restarts, e, Arc::default())
            }
        };
        let task = step.map(|step| {
            tokio::spawn(supervisor::supervise(
                Arc::downgrade(self),
                Arc::downgrade(slot),
                restarts,
                step,
            ))
            .abort_handle()
        });
        slot.set_supervisor(task);
    }

    /// The current server list (cheap: shared, replaced whole by a reload).
    fn slots(&self) -> Arc<Vec<Arc<Slot>>> {
        self.slots.read().unwrap().clone()
    }

    /// The server whose prefix `name` is under, the longest such (server
    /// `a_b` over server `a`).
    fn prefix_owner(&self, name: &str) -> Option<Arc<Slot>> {
        self.slots()
            .iter()
            .filter(|slot| slot.prefixes(name))
            .max_by_key(|slot| slot.config.name.len())
            .cloned()
    }

    /// Recomputes hub names after any server's tool list changed.
    fn rebuild_index(&self) {
        let _one_at_a_time = self.rebuilding.lock().unwrap_or_else(|p| p.into_inner());
        // A restarting server keeps its tools, under the same names.
        let slots = self.slots();
        type Listed<'a> = (&'a Arc<Slot>, &'a str, Arc<Vec<protocol::Tool>>);
        let lists: Vec<Listed> = slots
            .iter()
            .filter_map(|slot| match &*slot.state.read().unwrap() {
                SlotState::Connected(c) => Some((slot, slot.config.name.as_str(), c.tools())),
                SlotState::Restarting { tools, .. } => {
                    Some((slot, slot.config.name.as_str(), tools.clone()))
                }
                _ => None,
            })
            .collect();
        let pairs: Vec<(&str, &str)> = lists
            .iter()
            .flat_map(|(_, server, tools)| tools.iter().map(move |t| (*server, t.name.as_str())))
            .collect();
        // Which names need a suffix follows from the configured servers, not
        // from the ones that happen to be up.
        let configured: Vec<&str> = slots.iter().map(|s| s.config.name.as_str()).collect();
        let names = tool_names::assign_in(&pairs, &configured);
        let mut index = ToolIndex::default();
        let mut names = names.into_iter();
        for (slot, server, tools) in &lists {
            for pos in 0..tools.len() {
                let name = names.next().expect("one name per tool");
                index.by_name.insert(name.clone(), index.entries.len());
                index.entries.push(IndexEntry {
                    name,
                    slot: (*slot).clone(),
                    server: (*server).to_owned(),
                    tools: tools.clone(),
                    pos,
                    shared: OnceLock::new(),
                });
            }
        }
        let old = std::mem::replace(&mut *self.index.write().unwrap(), Arc::new(index));
        if self.options.events.has_streams() {
            let new = self.index.read().unwrap().clone();
            for event in tools_changed(&old, &new) {
                self.options.events.send(event);
            }
        }
    }
}

impl Drop for HubInner {
    fn drop(&mut self) {
        // The supervisors hold clients while they watch them: without this
        // the servers would outlive the last handle on the hub.
        for slot in self.slots().iter() {
            slot.set_supervisor(None);
        }
    }
}

/// The `server_state` event of a server that now is in `state`.
fn state_event(server: &str, state: &SlotState, attempt: u32) -> Option<HubEvent> {
    let (state, error) = match state {
        SlotState::Connected(_) => ("connected", None),
        SlotState::Restarting { error, .. } => ("restarting", Some(error)),
        SlotState::Failed(e) => ("failed", Some(e)),
        SlotState::Disabled => ("disabled", None),
        SlotState::Idle => ("idle", None),
        SlotState::Closed => return None,
    };
    Some(HubEvent::ServerState {
        server: server.to_owned(),
        state: state.to_owned(),
        error: error.map(|e| crate::secrets::redact(&e.to_string()).into_owned()),
        code: error.map(|e| e.code().to_owned()),
        attempt,
    })
}

/// One `tools_changed` event per server whose hub names differ between two
/// indexes.
fn tools_changed(old: &ToolIndex, new: &ToolIndex) -> Vec<HubEvent> {
    let by_server = |index: &ToolIndex| {
        let mut map: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        for e in &index.entries {
            map.entry(e.server.clone())
                .or_default()
                .insert(e.name.clone());
        }
        map
    };
    let (old, new) = (by_server(old), by_server(new));
    let servers: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let empty = Default::default();
    servers
        .into_iter()
        .filter_map(|server| {
            let (before, after) = (
                old.get(server).unwrap_or(&empty),
                new.get(server).unwrap_or(&empty),
            );
            let added: Vec<String> = after.difference(before).cloned().collect();
            let removed: Vec<String> = before.difference(after).cloned().collect();
            (!added.is_empty() || !removed.is_empty()).then(|| HubEvent::ToolsChanged {
                server: server.clone(),
                added,
                removed,
            })
        })
        .collect()
}

/// The hub is what a [`CallPolicy`](crate::client::CallPolicy) calls
/// through (see [`CallOptions::policy`]).
impl ToolRouter for Hub {
    fn hub_id(&self) -> u64 {
        self.id()
    }

    fn tool(&self, name: &str) -> Option<HubTool> {
        Hub::tool(self, name)
    }

    fn tool_shared(&self, name: &str) -> Option<Arc<HubTool>> {
        let index = self.inner.index.read().unwrap();
        index
            .by_name
            .get(name)
            .map(|&i| index.entries[i].shared_tool())
    }

    fn tools_of_server(&self, server: &str) -> Vec<HubTool> {
        self.list_tools()
            .into_iter()
            .filter(|t| t.server == server)
            .collect()
    }

    fn event_sender(&self) -> Option<EventSender> {
        Some(self.inner.options.events.clone())
    }

    fn call_unchecked<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<&'a Value>,
        opts: &'a CallOptions,
    ) -> BoxFuture<'a, Result<ToolResult, Error>> {
        Box::pin(Hub::call_unchecked(self, name, arguments, opts))
    }
}

/// The error for arguments of tool `name` that are not JSON.
fn not_json(name: &str, e: serde_json::Error) -> Error {
    Error::InvalidInput(format!("arguments of tool '{name}' are not JSON: {e}"))
}
