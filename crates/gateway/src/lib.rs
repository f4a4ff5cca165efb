//! The hub served as one MCP server (`mcpmux gateway`): the tools,
//! resources, templates and prompts of every configured server, behind the
//! operator policy of the config, to any MCP client.
//!
//! [`Gateway`] holds what every downstream connection shares (the hub, the
//! policy, the options); each connection (`connection.rs`) answers one
//! client's requests, relays progress and cancellation, and forwards the
//! hub's change notifications. [`stdio`] serves one client over
//! newline-delimited JSON-RPC on a reader and a writer. What the gateway
//! holds for its clients is counted against a budget per client and a
//! total one (`budget.rs`), a tool's result from the moment a server's
//! reader reads it (`admission.rs`).

mod access;
mod admission;
mod apps;
mod budget;
mod connection;
mod events;
mod fleet_tasks;
pub mod http;
mod input_required;
mod listen;
mod out;
mod pin_watch;
pub mod relay;
mod results;
pub mod session_token;
mod shown;
mod stateful_tasks;
pub mod status;
pub mod stdio;
mod tasks;

use std::sync::Arc;

use serde_json::{json, Value};

use mcpmux_core::error::Error;
use mcpmux_core::hub::{Hub, HubTool};
use mcpmux_core::tool_format::{render_as, ToolFormat};
use mcpmux_policy::SessionPolicy;

pub use budget::{DEFAULT_CLIENT_BUDGET_BYTES, DEFAULT_TOTAL_BUDGET_BYTES};
pub use http::{serve_http, serve_http_until, HttpOptions, MAX_SESSIONS};
pub use relay::Relay;
pub use session_token::SessionKeys;
pub use status::{serve_status, StatusAccess};
pub use stdio::serve_stdio;

/// Which tools a gateway lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GatewayMode {
    /// Every tool the policy offers (`--mode full`, the default).
    #[default]
    Full,
    /// Three tools, `search_tools`, `describe_tool` and `call_tool`, over
    /// the tools the policy offers (`--mode search`): for configurations
    /// with hundreds of tools.
    Search,
}

impl std::str::FromStr for GatewayMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "full" => Ok(GatewayMode::Full),
            "search" => Ok(GatewayMode::Search),
            other => Err(Error::InvalidInput(format!(
                "unknown gateway mode '{other}' (expected full or search)"
            ))),
        }
    }
}

/// How a gateway presents the hub, and what it may hold for its clients.
/// Build them from [`GatewayOptions::new`] (or `Default`) with the `with_*`
/// methods, or set the public fields; new fields may come in any release.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Which tools are listed.
    pub mode: GatewayMode,
    /// `false` (`--no-prefix`): tools keep the server's own names; needs a
    /// config with exactly one enabled server (a transparent proxy).
    pub no_prefix: bool,
    /// Text results are framed as untrusted data (`--frame-output`).
    pub frame_output: bool,
    /// Offer every tool of every enabled server (`--expose-all`): the
    /// policy's allow lists and annotation checks are set aside
    /// ([`PolicySettings::expose_all`](mcpmux_policy::PolicySettings::expose_all));
    /// `deny_tools`, `scopes`, redaction, limits, framing and audit still apply.
    pub expose_all: bool,
    /// Bytes of answers the gateway holds for one client (waiting to be
    /// written, or a batch being assembled; a tool's result from the
    /// moment a server's reader reads it, with the copies handling it
    /// makes; `--client-budget-mib`); past it, the client's further
    /// requests get JSON-RPC -32000 "gateway busy", and servers' readers
    /// hold off while copies take it past. One answer larger than this
    /// still goes out when the client holds nothing else. Default
    /// [`DEFAULT_CLIENT_BUDGET_BYTES`].
    pub client_budget_bytes: usize,
    /// Bytes of answers the gateway holds for every client together
    /// (`--total-budget-mib`). Default [`DEFAULT_TOTAL_BUDGET_BYTES`].
    pub total_budget_bytes: usize,
    /// This replica's name in a fleet (`--replica`): the ids it hands out
    /// that only it can serve (task ids, `requestState`) name it, so that
    /// another replica can say where they live. `None`: ids name none.
    pub replica: Option<String>,
    /// Where the whole of results cut at `max_output_bytes` is kept for
    /// `read_result` (`--result-dir`); `None`: the policy's `result_dir`,
    /// else a temporary directory removed when the gateway goes.
    pub result_dir: Option<std::path::PathBuf>,
    /// Pin tool definitions of servers whose config says nothing
    /// (`pin_tools`; on by default, `--no-pin-tools` turns it off): a tool
    /// that changed since it was approved, or is new, is not listed and a
    /// call is refused with `TOOL_CHANGED` ([`mcpmux_policy::pins`]).
    pub pin_tools: bool,
    /// Keep what the status page shows of the calls (`--status`,
    /// `--status-addr`): the latest calls and per-tool figures, fed by the
    /// policy's audit. Off by default: then nothing is kept per call.
    pub status: bool,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            mode: GatewayMode::default(),
            no_prefix: false,
            frame_output: false,
            expose_all: false,
            client_budget_bytes: DEFAULT_CLIENT_BUDGET_BYTES,
            total_budget_bytes: DEFAULT_TOTAL_BUDGET_BYTES,
            replica: None,
            result_dir: None,
            pin_tools: true,
            status: false,
        }
    }
}

impl GatewayOptions {
    /// The defaults: every tool listed under its hub name, no framing, the
    /// policy's allow lists applied, the default memory budgets.
    pub fn new() -> Self {
        GatewayOptions::default()
    }

    /// Sets [`GatewayOptions::mode`].
    pub fn with_mode(mut self, mode: GatewayMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets [`GatewayOptions::no_prefix`].
    pub fn with_no_prefix(mut self, no_prefix: bool) -> Self {
        self.no_prefix = no_prefix;
        self
    }

    /// Sets [`GatewayOptions::frame_output`].
    pub fn with_frame_output(mut self, frame_output: bool) -> Self {
        self.frame_output = frame_output;
        self
    }

    /// Sets [`GatewayOptions::expose_all`].
    pub fn with_expose_all(mut self, expose_all: bool) -> Self {
        self.expose_all = expose_all;
        self
    }

    /// Sets [`GatewayOptions::client_budget_bytes`].
    pub fn with_client_budget_bytes(mut self, client_budget_bytes: usize) -> Self {
        self.client_budget_bytes = client_budget_bytes;
        self
    }

    /// Sets [`GatewayOptions::replica`].
    pub fn with_replica(mut self, replica: impl Into<String>) -> Self {
        self.replica = Some(replica.into());
        self
    }

    /// Sets [`GatewayOptions::result_dir`].
    pub fn with_result_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.result_dir = dir;
        self
    }

    /// Sets [`GatewayOptions::pin_tools`].
    pub fn with_pin_tools(mut self, pin_tools: bool) -> Self {
        self.pin_tools = pin_tools;
        self
    }

    /// Sets [`GatewayOptions::status`].
    pub fn with_status(mut self, status: bool) -> Self {
        self.status = status;
        self
    }

    /// Sets [`GatewayOptions::total_budget_bytes`].
    pub fn with_total_budget_bytes(mut self, total_budget_bytes: usize) -> Self {
        self.total_budget_bytes = total_budget_bytes;
        self
    }
}

/// The search mode's tools.
const SEARCH_TOOLS: &str = "search_tools";
const DESCRIBE_TOOL: &str = "describe_tool";
const CALL_TOOL: &str = "call_tool";
/// Results `search_tools` returns when the client gives no `limit`.
const DEFAULT_SEARCH_LIMIT: usize = mcpmux_core::contract::SEARCH_DEFAULT_LIMIT;
/// Most results one `search_tools` returns.
const MAX_SEARCH_LIMIT: usize = 100;

/// What every connection of one gateway shares. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Shared>,
}

struct Shared {
    hub: Hub,
    policy: Arc<SessionPolicy>,
    options: GatewayOptions,
    /// What every client's answers hold together.
    total: budget::Total,
    /// Relays the servers' requests to clients, when the hub was connected
    /// with its handlers.
    relay: Option<Relay>,
    /// The tasks handed out to 2026-07-28 clients (`tasks.rs`).
    tasks: tasks::Tasks,
    /// The key the replicas of a fleet share, when this gateway serves
    /// HTTP with one (`--session-key-file`): task ids any replica can
    /// serve are sealed with it (`fleet_tasks`).
    fleet_keys: std::sync::OnceLock<Arc<session_token::SessionKeys>>,
    /// Calls parked for their 2026-07-28 clients' answers.
    input_required: input_required::Pending,
    /// Where the review tools run, when offered.
    #[cfg(feature = "sessions")]
    review: Option<mcpmux_sessions::SessionContext>,
    /// The temporary directory of kept results, removed with the gateway.
    _results_dir: Option<tempfile::TempDir>,
    /// Bumped when an approval (or revocation) in the pin store changed the
    /// offered tools (`pin_watch`): each connection sends `list_changed`.
    pins_changed: tokio::sync::watch::Sender<u64>,
    /// What the status page shows of the calls, when it is on.
    status: Option<Arc<status::board::Board>>,
    /// The open client connections, for the status page.
    clients: status::Clients,
    /// The pin store's watch starts with the first client (not in `new`:
    /// the builder methods need the gateway unshared until it serves).
    pin_watch: std::sync::Once,
}

impl Gateway {
    /// A gateway over `hub`, each call going through `policy` (made for
    /// this hub's config). `--no-prefix` with other than one enabled
    /// server is `INVALID_INPUT`.
    pub fn new(
        hub: Hub,
        mut policy: SessionPolicy,
        options: GatewayOptions,
    ) -> Result<Gateway, Error> {
        if options.expose_all {
            policy.set_expose_all(true);
        }
        policy.set_pin_default(options.pin_tools);
        if options.no_prefix {
            let config = hub.config();
            let enabled: Vec<&str> = config
                .servers
                .iter()
                .filter(|s| s.enabled)
                .map(|s| s.name.as_str())
                .collect();
            if enabled.len() != 1 {
                return Err(Error::InvalidInput(format!(
                    "--no-prefix needs exactly one enabled server; the config has {} ({})",
                    enabled.len(),
                    enabled.join(", ")
                )));
            }
        }
        let results_dir = results::prepare(&mut policy, options.result_dir.as_deref())?;
        let board = options.status.then(|| {
            let board = Arc::new(status::board::Board::default());
            let fed = board.clone();
            policy.on_audit(move |event| fed.record(event, status::current_client()));
            board
        });
        let gateway = Gateway {
            inner: Arc::new(Shared {
                hub,
                _results_dir: results_dir,
                policy: Arc::new(policy),
                total: budget::Total::new(options.total_budget_bytes),
                options,
                relay: None,
                tasks: Default::default(),
                fleet_keys: std::sync::OnceLock::new(),
                input_required: Default::default(),
                #[cfg(feature = "sessions")]
                review: None,
                pins_changed: tokio::sync::watch::Sender::new(0),
                pin_watch: std::sync::Once::new(),
                status: board,
                clients: status::Clients::default(),
            }),
        };
        Ok(gateway)
    }

    /// Relays the servers' requests (sampling, elicitation, roots) to this
    /// gateway's clients through `relay`, whose handlers the hub was
    /// connected with ([`Relay::handlers`]). Call it before serving (a
    /// gateway already shared is `INTERNAL`).
    pub fn relay_to_clients(mut self, relay: Relay) -> Result<Gateway, Error> {
        let shared = Arc::get_mut(&mut self.inner).ok_or_else(|| {
            Error::Internal("relay_to_clients: the gateway is already serving".into())
        })?;
        shared.relay = Some(relay);
        Ok(self)
    }

    /// Also offers the review tools of `mcpmux serve` (`review_begin`,
    /// `review_wait`, `review_reply`, `review_end`), run with `ctx`. Call it
    /// before serving (a gateway already shared is `INTERNAL`).
    #[cfg(feature = "sessions")]
    pub fn offer_review_tools(
        mut self,
        ctx: mcpmux_sessions::SessionContext,
    ) -> Result<Gateway, Error> {
        let shared = Arc::get_mut(&mut self.inner).ok_or_else(|| {
            Error::Internal("offer_review_tools: the gateway is already serving".into())
        })?;
        shared.review = Some(ctx);
        Ok(self)
    }

    /// The review tools' context, when they are offered.
    #[cfg(feature = "sessions")]
    fn review(&self) -> Option<&mcpmux_sessions::SessionContext> {
        self.inner.review.as_ref()
    }

    /// What the status page shows of the calls, when it is on.
    fn status_board(&self) -> Option<&Arc<status::board::Board>> {
        self.inner.status.as_ref()
    }

    /// The hub behind the gateway.
    pub fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    /// Bytes of answers the gateway holds now for all its clients, with
    /// every copy (waiting to be written, being assembled, or being handled
    /// since a server's reader read them): at most
    /// [`GatewayOptions::total_budget_bytes`], but for the copies of the
    /// answers readers had read when they held off.
    pub fn held_bytes(&self) -> usize {
        self.inner.total.held()
    }

    /// Enabled servers whose tools the policy offers none of, each with
    /// the keys that would offer some: shown at start, since their tools
    /// are silently missing otherwise.
    pub fn servers_offering_nothing(&self) -> Vec<String> {
        let offered = self.offered();
        let hub = &self.inner.hub;
        let listed = hub.list_tools();
        hub.config()
            .servers
            .iter()
            .filter(|s| s.enabled)
            .filter(|s| listed.iter().any(|t| t.server == s.name))
            .filter(|s| !offered.iter().any(|t| t.server == s.name))
            .map(|s| s.name.clone())
            .collect()
    }

    /// What to tell the operator at start about the policy, one line each:
    /// under `--expose-all` what it did; otherwise the servers offering
    /// nothing with the keys that would offer their tools (in the config's
    /// own syntax), the rule for tools not marked read-only when it
    /// applies, and a summary line naming `--expose-all`.
    pub fn startup_notes(&self) -> Vec<String> {
        let offered = self.offered();
        let hub = &self.inner.hub;
        mcpmux_policy::hints::startup_notes(
            &self.inner.policy,
            &hub.config(),
            &hub.list_tools(),
            &offered,
        )
    }

    /// The tools the policy offers now, in hub order (of those the hub can
    /// call: see `Hub::callable_tools`).
    fn offered(&self) -> Vec<HubTool> {
        // Its clients are hosts: app-only tools are theirs to hide.
        self.inner
            .policy
            .offered_to_host(&self.inner.hub.callable_tools())
    }

    /// The `tools` of a `tools/list` answer.
    fn tools_list(&self) -> Vec<Value> {
        #[cfg_attr(not(feature = "sessions"), allow(unused_mut))]
        let mut tools = self.hub_tools_list();
        if results::offered(self) {
            tools.push(self.inner.policy.read_result_tool());
        }
        #[cfg(feature = "sessions")]
        if self.review().is_some() {
            tools.extend(mcpmux_sessions::mcp_tools::review_tools());
        }
        tools
    }

    /// The hub's part of a `tools/list` answer.
    fn hub_tools_list(&self) -> Vec<Value> {
        match self.inner.options.mode {
            GatewayMode::Full => self.listed(&self.offered()),
            GatewayMode::Search => search_mode_tools(),
        }
    }

    /// `tools` as the client sees them: MCP form, under the names it
    /// knows, `execution` as the server sent it except a `taskSupport` of
    /// `"required"`: the gateway runs such a tool as a task itself
    /// (polling, answering, cancelling) and answers the client's plain
    /// `tools/call` with the task's result, so to its clients it needs no
    /// task augmentation (and a client that refuses to call a tool that
    /// requires one can call it).
    fn listed(&self, tools: &[HubTool]) -> Vec<Value> {
        let Value::Array(mut listed) = render_as(tools, ToolFormat::Mcp) else {
            return Vec::new();
        };
        for (tool, hub_tool) in listed.iter_mut().zip(tools) {
            tool["name"] = self.shown_name(hub_tool).into();
            if let Some(meta) = tool.get_mut("_meta") {
                apps::rename_in_meta(meta, &hub_tool.server);
            }
            if let Some(Value::Object(execution)) = tool.get_mut("execution") {
                if execution.get("taskSupport").and_then(Value::as_str) == Some("required") {
                    execution.remove("taskSupport");
                    if execution.is_empty() {
                        tool.as_object_mut().map(|t| t.remove("execution"));
                    }
                }
            }
        }
        listed
    }

    /// The hub name of the tool a client calls `name`, if the hub has it
    /// (whether the policy offers it is the policy's to say when called).
    /// Runs on every call: it looks the name up, never lists the tools.
    /// The server of the tool the client knows as `name`.
    fn server_of(&self, name: &str) -> Option<String> {
        let hub_name = self.resolve(name)?;
        mcpmux_core::client::ToolRouter::tool_shared(&self.inner.hub, &hub_name)
            .map(|t| t.server.clone())
    }

    fn resolve(&self, name: &str) -> Option<String> {
        if !self.inner.options.no_prefix {
            return mcpmux_core::client::ToolRouter::tool_shared(&self.inner.hub, name)
                .map(|t| t.name.clone());
        }
        // With --no-prefix the config has exactly one enabled server.
        let hub = &self.inner.hub;
        let config = hub.config();
        config
            .servers
            .iter()
            .filter(|s| s.enabled)
            .find_map(|s| hub.hub_name(&s.name, name))
    }

    /// The name a client knows a hub tool by.
    fn shown_name(&self, tool: &HubTool) -> String {
        if self.inner.options.no_prefix {
            tool.tool.clone()
        } else {
            tool.name.clone()
        }
    }
}

/// The three tools of [`GatewayMode::Search`].
fn search_mode_tools() -> Vec<Value> {
    vec![
        json!({
            "name": SEARCH_TOOLS,
            "description": "Search the available tools. Returns the best matches for the query (name, description, input schema), best first. Then call one with call_tool.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in a few words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": "Most results (default 10)."}
                },
                "required": ["query"]
            },
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": DESCRIBE_TOOL,
            "description": "Describe one tool by name: its description and input schema.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            },
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": CALL_TOOL,
            "description": "Call a tool found with search_tools, with its arguments.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "object"}
                },
                "required": ["name"]
            }
        }),
    ]
}
