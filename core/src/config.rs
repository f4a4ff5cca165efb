//! Configuration: the TOML `[[mcp.servers]]` and JSON `mcpServers` shapes,
//! loaded into one [`Config`], with `${VAR}` / `${VAR:-default}` expansion
//! and validation that names the file, the server and the field at fault.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::Error;

mod entry;
mod gateway;
mod keys;
mod layers;
mod network;
pub mod private_file;
mod raw;
mod source;
mod supervision;
mod telemetry;
pub mod trust;

pub use gateway::GatewayConfig;
pub use layers::{register_layer, ConfigLayer};
pub use source::ConfigSource;
pub use supervision::{Restart, Supervision};

/// Default time allowed for one request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default cap on one message from a server.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Progress may extend a request to at most this many times its timeout,
/// unless `max_total_timeout_seconds` says otherwise.
pub const DEFAULT_MAX_TOTAL_FACTOR: u32 = 10;
/// The largest config file [`Config::load`] reads (16 MiB); a larger one is
/// `CONFIG_INVALID` rather than read into memory whole.
pub const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;
/// The largest number of seconds any timeout setting takes (about 31
/// years): every value up to it converts to a `Duration` and can be added
/// to the clock without overflow.
pub const MAX_SECONDS: f64 = 1e9;

/// `secs` as a `Duration` when it is a positive, finite number of seconds
/// no larger than [`MAX_SECONDS`]; `None` for 0, negatives, NaN, infinities
/// and larger values (which would panic `Duration::from_secs_f64`). Every
/// front end checks user-given seconds with this.
pub fn seconds(secs: f64) -> Option<Duration> {
    (secs > 0.0 && secs <= MAX_SECONDS).then(|| Duration::from_secs_f64(secs))
}

/// A whole configuration: the servers to connect, in file order.
#[derive(Clone, Default)]
pub struct Config {
    /// The servers, in the order they appear.
    pub servers: Vec<ServerConfig>,
    /// The file the configuration came from, when it came from a file.
    pub source: Option<PathBuf>,
    /// The `[session]` table (JSON: top-level `"session"` object) as
    /// written, after `${VAR}` expansion of its strings; read by the
    /// session module and the policy. Empty when absent.
    pub session: Map<String, Value>,
    /// Every value a `${VAR}` reference expanded to (not defaults written in
    /// the file, nor `crate::secrets::PLAIN_VARS` such as `HOME`),
    /// anywhere in the file: secrets that
    /// `crate::secrets` keeps out of errors, logs and session files.
    pub expanded_values: Vec<String>,
    /// The `[session]` table as written, before `${VAR}` expansion: the
    /// session stores these references in `session.json`, not values.
    pub session_raw: Map<String, Value>,
    /// The `[telemetry]` table (JSON: top-level `"telemetry"` object),
    /// checked and `${VAR}`-expanded: OpenTelemetry settings that the
    /// `OTEL_*` variables override (see docs/telemetry.md). Empty when absent.
    pub telemetry: Map<String, Value>,
    /// The `[network]` table (JSON: top-level `"network"` object): where
    /// the hub's servers, their OAuth endpoints and the session's LLM
    /// providers may be reached. Refuses nothing when absent.
    pub network: crate::NetworkPolicy,
    /// The `[gateway]` table (JSON: top-level `"gateway"` object): the
    /// settings of `mcpmux gateway --http` a fleet's replicas share.
    pub gateway: GatewayConfig,
}

/// One server entry.
#[derive(Clone, PartialEq)]
pub struct ServerConfig {
    /// Unique name; used in tool-name prefixes.
    pub name: String,
    /// How to reach the server.
    pub transport: TransportConfig,
    /// `false` keeps the server in the list without connecting it.
    pub enabled: bool,
    /// Time allowed for one request without a response or progress.
    pub timeout: Duration,
    /// Upper bound on one request however much progress it reports.
    pub max_total_timeout: Duration,
    /// Largest message accepted from the server.
    pub max_message_bytes: usize,
    /// A pinned protocol version instead of negotiation from the latest.
    pub protocol_version: Option<String>,
    /// Restarts, keep-alive pings, lazy start, log level.
    pub supervision: Supervision,
    /// The entry's keys that the engine itself does not read: those of the
    /// registered [`ConfigLayer`]s (the policy's `allow_tools`, ..., checked
    /// at load time by the policy crate) and, in `mcpServers` entries, the
    /// keys other MCP clients write (`autoApprove`, ...). Any other key
    /// fails the load.
    pub extra: Map<String, Value>,
    /// How the entry was written, so that hints name it in the file's own
    /// syntax.
    pub written_as: EntrySyntax,
}

/// How a server entry was written: in a JSON or a TOML file, as a
/// `mcpServers.<name>` entry or a `[[mcp.servers]]` one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EntrySyntax {
    /// The file is JSON (`"key": value`), not TOML (`key = value`).
    pub json: bool,
    /// The entry is `mcpServers.<name>`, not an `mcp.servers` array item.
    pub mcp_servers: bool,
}

impl ServerConfig {
    /// The transport name as shown to users: `stdio`, `http`, `sse`, `websocket`.
    pub fn type_name(&self) -> &'static str {
        self.transport.type_name()
    }

    /// Whether the hub name `name` is under this server's prefix
    /// `mcp_<server>_` (sanitized as hub names are): a name this server's
    /// tools have, or would have once it lists them.
    pub fn prefixes(&self, name: &str) -> bool {
        name.starts_with(&crate::tool_names::sanitize(&format!("mcp_{}_", self.name)))
    }

    /// The env and header values of this server that are secrets (before
    /// [`crate::secrets`]' length filter): what a client registers when it
    /// connects without a hub.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.transport {
            TransportConfig::Stdio(s) => out.extend(
                s.env
                    .iter()
                    .filter(|(k, _)| !crate::secrets::is_plain_var(k))
                    .map(|(_, v)| v.clone()),
            ),
            TransportConfig::Http(n) | TransportConfig::Sse(n) | TransportConfig::WebSocket(n) => {
                for value in n.headers.values() {
                    out.push(value.clone());
                    // `Bearer <token>`: a server may echo the token alone.
                    if let Some((_, token)) = value.trim().rsplit_once(char::is_whitespace) {
                        out.push(token.to_owned());
                    }
                }
                if let Some(password) = n.url.password() {
                    out.push(password.to_owned());
                }
            }
        }
        out
    }
}

/// How to reach one server.
#[derive(Clone, PartialEq)]
pub enum TransportConfig {
    /// A child process over stdin/stdout.
    Stdio(StdioConfig),
    /// Streamable HTTP.
    Http(NetworkConfig),
    /// Legacy HTTP+SSE (2024-11-05).
    Sse(NetworkConfig),
    /// WebSocket with subprotocol `mcp`.
    WebSocket(NetworkConfig),
}

impl TransportConfig {
    /// The transport name as shown to users.
    pub fn type_name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Which transport this is.
    pub fn kind(&self) -> TransportKind {
        match self {
            TransportConfig::Stdio(_) => TransportKind::Stdio,
            TransportConfig::Http(_) => TransportKind::Http,
            TransportConfig::Sse(_) => TransportKind::Sse,
            TransportConfig::WebSocket(_) => TransportKind::Websocket,
        }
    }
}

/// The kind of a server's transport, as
/// [`ServerStatus::transport`](crate::hub::ServerStatus::transport) reports
/// it. Serialized as `stdio`, `http`,
/// `sse` or `websocket` (the config's `type` names); compares equal to
/// those strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TransportKind {
    /// A child process speaking over stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// WebSocket.
    Websocket,
}

impl TransportKind {
    /// The name users see: `stdio`, `http`, `sse`, `websocket`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
            TransportKind::Sse => "sse",
            TransportKind::Websocket => "websocket",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl PartialEq<str> for TransportKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for TransportKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A stdio server: the process to start.
#[derive(Clone, PartialEq)]
pub struct StdioConfig {
    /// Program to run (looked up in `PATH` when it has no slash).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set over the inherited environment. Values are secrets.
    pub env: BTreeMap<String, String>,
    /// Working directory; the host's when absent.
    pub cwd: Option<PathBuf>,
}

/// A network server: where it is and what headers to send.
#[derive(Clone, PartialEq)]
pub struct NetworkConfig {
    /// The endpoint URL. May carry secrets in its query; never logged.
    pub url: url::Url,
    /// Headers sent with every request. Values are secrets. An `auth` of
    /// type `bearer` or `header` is already merged in here.
    pub headers: BTreeMap<String, String>,
    /// The `auth` table (`[mcp.servers.auth]`), when given.
    pub auth: Option<crate::auth::AuthConfig>,
}

// Debug output never shows expanded values or `[session]` values (either
// may be a secret).
impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("servers", &self.servers)
            .field("source", &self.source)
            .field("session", &self.session.keys().collect::<Vec<_>>())
            .field("expanded_values", &self.expanded_values.len())
            .field("session_raw", &self.session_raw.keys().collect::<Vec<_>>())
            .finish()
    }
}

// Debug output never shows env values, header values or URL queries.
impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ServerConfig");
        d.field("name", &self.name).field("type", &self.type_name());
        match &self.transport {
            TransportConfig::Stdio(s) => {
                d.field("command", &s.command)
                    .field("args", &s.args)
                    .field("env", &s.env.keys().collect::<Vec<_>>())
                    .field("cwd", &s.cwd);
            }
            TransportConfig::Http(n) | TransportConfig::Sse(n) | TransportConfig::WebSocket(n) => {
                d.field(
                    "url",
                    &format_args!(
                        "{}://{}{}",
                        n.url.scheme(),
                        n.url.host_str().unwrap_or(""),
                        n.url.path()
                    ),
                )
                .field("headers", &n.headers.keys().collect::<Vec<_>>());
            }
        }
        d.field("enabled", &self.enabled)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The secrets this config holds: env and header values of every server
    /// and every value a `${VAR}` reference expanded to. The hub and the
    /// policy register them with the process's secret set, which keeps them
    /// out of errors, logs and files.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = self.expanded_values.clone();
        for server in &self.servers {
            out.extend(server.secret_values());
        }
        out
    }

    /// Parses TOML or JSON text (JSON when it starts with `{`), expanding
    /// `${VAR}` from the process environment.
    pub fn parse(text: &str) -> Result<Config, Error> {
        parse_with(text, None, &|name| std::env::var(name).ok())
    }

    /// Reads and parses a file (JSON for `.json`, TOML for `.toml`, else by content).
    pub fn load(path: impl AsRef<Path>) -> Result<Config, Error> {
        let path = path.as_ref();
        let text = read_bounded(path)?;
        let mut config = parse_with(&text, Some(path), &|name| std::env::var(name).ok())?;
        config.source = Some(path.to_owned());
        Ok(config)
    }

    /// Like [`Config::parse`], with variables looked up by `lookup` instead
    /// of the process environment.
    pub fn parse_with_vars(
        text: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, Error> {
        parse_with(text, None, lookup)
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// The text of the config file at `path`, refusing one larger than
/// [`MAX_CONFIG_BYTES`] without reading past the limit (a FIFO or a
/// device like `/dev/zero` included).
fn read_bounded(path: &Path) -> Result<String, Error> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        Error::ConfigInvalid(format!("{}: cannot read config file: {e}", path.display()))
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Error::ConfigInvalid(format!(
            "{}: config file is larger than {MAX_CONFIG_BYTES} bytes (16 MiB)",
            path.display()
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::ConfigInvalid(format!(
            "{}: cannot read config file: it is not UTF-8 text",
            path.display()
        ))
    })
}

#[derive(PartialEq)]
enum Format {
    Toml,
    Json,
}

/// One server entry as found: its name, where it is (`mcpServers.x`,
/// `mcp.servers[0]`), its keys, and the keys it may have besides the
/// engine's and the policy's (other clients' keys, in `mcpServers` only).
type Entry = (
    String,
    String,
    Map<String, Value>,
    &'static [&'static str],
    EntrySyntax,
);

/// The file's text as one JSON document, whichever format it is in (by
/// extension, else by its first character), and whether it was TOML.
fn read_document(text: &str, path: Option<&Path>, origin: &str) -> Result<(Value, bool), Error> {
    let format = match path.and_then(|p| p.extension()).and_then(|e| e.to_str()) {
        Some("json") => Format::Json,
        Some("toml") => Format::Toml,
        _ if text.trim_start().starts_with('{') => Format::Json,
        _ => Format::Toml,
    };
    let is_toml = format == Format::Toml;
    let doc: Value = match format {
        Format::Json => {
            let doc = serde_json::from_str(text)
                .map_err(|e| Error::ConfigInvalid(format!("{origin}: invalid JSON: {e}")))?;
            // A JSON object keeps only the last of repeated keys; catch a
            // server name given twice before that happens.
            if let Some(name) = repeated_json_server(text) {
                return Err(Error::ConfigInvalid(format!(
                    "{origin}: duplicate server name '{name}' (mcpServers.{name} appears twice)"
                )));
            }
            doc
        }
        Format::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| {
                Error::ConfigInvalid(format!("{origin}: invalid TOML: {}", e.message()))
            })?;
            // JSON has no NaN or infinity: converted, they would become
            // null, read as "not set".
            if let Some(at) = non_finite(&table, "") {
                return Err(Error::ConfigInvalid(format!(
                    "{origin}: '{at}' is not a finite number"
                )));
            }
            serde_json::to_value(table)
                .map_err(|e| Error::ConfigInvalid(format!("{origin}: {e}")))?
        }
    };
    Ok((doc, is_toml))
}

/// The server entries of `[[mcp.servers]]` (named by their `name`) and of
/// `mcpServers` (named by their key), in file order, and whether either
/// list was there at all.
fn collect_entries(
    ctx: &Ctx<'_>,
    doc: &Map<String, Value>,
    mcp: &Map<String, Value>,
    is_toml: bool,
) -> Result<(Vec<Entry>, bool), Error> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut found_any = false;
    if let Some(list) = mcp.get("servers") {
        found_any = true;
        let Value::Array(list) = list else {
            return Err(ctx.err("'mcp.servers' must be an array of tables ([[mcp.servers]])"));
        };
        for (i, entry) in list.iter().enumerate() {
            let at = format!("mcp.servers[{i}]");
            let Value::Object(entry) = entry else {
                return Err(ctx.err(format!("{at} must be a table")));
            };
            let name = match entry.get("name") {
                Some(Value::String(n)) => ctx.expand(n, &at, "name")?,
                Some(_) => return Err(ctx.err(format!("{at}: field 'name' must be a string"))),
                None => return Err(ctx.err(format!("{at}: missing field 'name'"))),
            };
            let written_as = EntrySyntax {
                json: !is_toml,
                mcp_servers: false,
            };
            entries.push((name, at, entry.clone(), &[], written_as));
        }
    }
    if let Some(servers) = doc.get("mcpServers") {
        found_any = true;
        let Value::Object(servers) = servers else {
            return Err(ctx.err("'mcpServers' must be an object of servers by name"));
        };
        for (name, entry) in servers {
            let at = format!("mcpServers.{name}");
            let Value::Object(entry) = entry else {
                return Err(ctx.err(format!("{at} must be an object")));
            };
            let written_as = EntrySyntax {
                json: !is_toml,
                mcp_servers: true,
            };
            entries.push((
                name.clone(),
                at,
                entry.clone(),
                keys::MCP_SERVERS_COMPAT,
                written_as,
            ));
        }
    }
    Ok((entries, found_any))
}

fn parse_with(
    text: &str,
    path: Option<&Path>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, Error> {
    let origin = path.map_or_else(|| "config".to_string(), |p| p.display().to_string());
    let (doc, is_toml) = read_document(text, path, &origin)?;
    let ctx = Ctx {
        origin: &origin,
        lookup,
        expanded: Default::default(),
    };
    let Value::Object(doc) = doc else {
        return Err(ctx.err("the top level must be a table/object"));
    };
    // A JSON file may be shared with other MCP clients, whose top-level
    // keys are theirs; a TOML file is mcpmux's own.
    if is_toml {
        if let Some(m) = keys::unknown(&doc, &[keys::TOP_LEVEL]) {
            return Err(ctx.err(format!("top level: {m}")));
        }
    }

    // Defaults for every server, from `[mcp]`.
    let mcp = match doc.get("mcp") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(ctx.err("'mcp' must be a table")),
    };
    if let Some(m) = keys::unknown(&mcp, &[keys::MCP, supervision::KEYS]) {
        return Err(ctx.err(format!("[mcp]: {m}")));
    }
    let defaults = entry::Defaults::read(&ctx, mcp)?;

    let (entries, found_any) = collect_entries(&ctx, &doc, &defaults.mcp, is_toml)?;
    let mut session = match doc.get("session") {
        None => Map::new(),
        Some(Value::Object(m)) => expand_session(&ctx, m)?,
        Some(_) => return Err(ctx.err("'session' must be a table")),
    };
    // `[policy]`: policy-level defaults (`pin_tools`), read as the same
    // keys of `[session]`, which wins where both say.
    let policy = policy_defaults(&ctx, doc.get("policy"))?;
    for (key, value) in &policy {
        session.entry(key.clone()).or_insert_with(|| value.clone());
    }
    let layers = layers::registered();
    check_session(&ctx, &session, &layers)?;
    let telemetry = telemetry::read(&ctx, doc.get("telemetry"))?;
    let network = network::read(&ctx, doc.get("network"))?;
    let gateway = gateway::read(&ctx, doc.get("gateway"))?;
    // A file with only a [session] table is valid: sessions then run
    // without tools.
    if !found_any && doc.get("session").is_none() {
        return Err(ctx.err("no servers: expected [[mcp.servers]] entries (TOML) or an \"mcpServers\" object (JSON)"));
    }

    let mut servers: Vec<ServerConfig> = Vec::with_capacity(entries.len());
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (name, at, entry, compat, written_as) in entries {
        if name.trim().is_empty() {
            return Err(ctx.err(format!("{at}: field 'name' is empty")));
        }
        if let Some(first) = seen.get(&name) {
            return Err(ctx.err(format!("duplicate server name '{name}' ({first} and {at})")));
        }
        seen.insert(name.clone(), at.clone());
        if let Some(m) = keys::unknown(
            &entry,
            &[
                keys::SERVER,
                supervision::KEYS,
                &layers::server_keys(&layers),
                compat,
            ],
        ) {
            return Err(ctx.err(format!("server '{name}': {m}")));
        }
        let mut server = entry::read(&ctx, &defaults, name, &entry)?;
        // The layers' keys are checked now, so a typo fails at load time.
        for layer in &layers {
            layer.check_server(ctx.origin, &server.name, &server.extra)?;
        }
        server.written_as = written_as;
        servers.push(server);
    }
    Ok(Config {
        servers,
        source: None,
        session,
        expanded_values: ctx.expanded.take(),
        session_raw: {
            let mut raw = match doc.get("session") {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            for (key, value) in policy {
                raw.entry(key).or_insert(value);
            }
            raw
        },
        telemetry,
        network,
        gateway,
    })
}

/// Keys of the `[policy]` table: the policy-level defaults that may also
/// be written in `[session]`.
const POLICY_KEYS: &[&str] = &["pin_tools"];

/// The `[policy]` table (JSON: a top-level `"policy"` object), checked:
/// only [`POLICY_KEYS`], each a boolean.
fn policy_defaults(ctx: &Ctx<'_>, value: Option<&Value>) -> Result<Map<String, Value>, Error> {
    let table = match value {
        None => return Ok(Map::new()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(ctx.err("'policy' must be a table")),
    };
    if let Some(m) = keys::unknown(table, &[POLICY_KEYS]) {
        return Err(ctx.err(format!("[policy]: {m}")));
    }
    for (key, value) in table {
        if !value.is_boolean() {
            return Err(ctx.err(format!("[policy]: '{key}' must be true or false")));
        }
    }
    Ok(table.clone())
}

/// The dotted path of the first NaN or infinite float in a TOML table.
fn non_finite(table: &toml::Table, at: &str) -> Option<String> {
    fn walk(v: &toml::Value, at: String) -> Option<String> {
        match v {
            toml::Value::Float(f) if !f.is_finite() => Some(at),
            toml::Value::Table(t) => non_finite(t, &at),
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, x)| walk(x, format!("{at}[{i}]"))),
            _ => None,
        }
    }
    table.iter().find_map(|(k, v)| {
        walk(
            v,
            if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            },
        )
    })
}

/// Expands `${VAR}` in the string values of the `[session]` table (nested
/// tables and arrays included), naming `session.<key>` on errors.
fn expand_session(ctx: &Ctx<'_>, table: &Map<String, Value>) -> Result<Map<String, Value>, Error> {
    fn walk(ctx: &Ctx<'_>, v: &Value, at: &str) -> Result<Value, Error> {
        Ok(match v {
            Value::String(s) => Value::String(ctx.expand(s, "session", at)?),
            Value::Array(a) => Value::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, x)| walk(ctx, x, &format!("{at}[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), walk(ctx, x, &format!("{at}.{k}"))?)))
                    .collect::<Result<_, Error>>()?,
            ),
            other => other.clone(),
        })
    }
    table
        .iter()
        .map(|(k, v)| Ok((k.clone(), walk(ctx, v, k)?)))
        .collect::<Result<_, Error>>()
        // `expand` words its errors for servers; say where this one is.
        .map_err(|e| match e {
            Error::ConfigInvalid(m) => Error::ConfigInvalid(m.replacen(
                "server 'session': field '",
                "[session]: field '",
                1,
            )),
            other => other,
        })
}

/// Expands `${VAR}` and `${VAR:-default}` in `text` from the process
/// environment, as in a config file's `[session]` table; an unset variable
/// is `CONFIG_INVALID` naming `[session]`, the field `field` and the
/// variable. Used for `${VAR}` references kept in a session's files.
pub fn expand_session_value(text: &str, field: &str) -> Result<String, Error> {
    let ctx = Ctx {
        origin: "config",
        lookup: &|name| std::env::var(name).ok(),
        expanded: Default::default(),
    };
    ctx.expand(text, "session", field).map_err(|e| match e {
        Error::ConfigInvalid(m) => {
            Error::ConfigInvalid(m.replacen("server 'session': field '", "[session]: field '", 1))
        }
        other => other,
    })
}

/// Checks the `[session]` table now, so that a typo or a wrong type fails
/// the load (and every front end) rather than being ignored until, or even
/// during, a session: its keys against those the registered layers read,
/// then the values as each layer reads them. With no layer that reads it,
/// nothing in this process would: the table is kept as written.
fn check_session(
    ctx: &Ctx<'_>,
    session: &Map<String, Value>,
    layers: &[&'static dyn ConfigLayer],
) -> Result<(), Error> {
    let known = layers::session_keys(layers);
    if session.is_empty() || known.is_empty() {
        return Ok(());
    }
    if let Some(m) = keys::unknown(session, &[&known]) {
        return Err(ctx.err(format!("[session]: {m}")));
    }
    for layer in layers {
        layer.check_session(ctx.origin, session)?;
    }
    Ok(())
}

struct Ctx<'a> {
    origin: &'a str,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// Values looked up so far (see [`Config::expanded_values`]).
    expanded: std::cell::RefCell<Vec<String>>,
}

impl Ctx<'_> {
    fn err(&self, message: impl fmt::Display) -> Error {
        Error::ConfigInvalid(format!("{}: {message}", self.origin))
    }

    fn field_err(&self, server: &str, field: &str, message: impl fmt::Display) -> Error {
        self.err(format!("server '{server}': field '{field}' {message}"))
    }

    /// Expands `${VAR}` and `${VAR:-default}` (the default expanded in
    /// turn, so `${A:-${B}}` falls back to `B`); an unset variable without a
    /// default is an error naming the variable (never its value).
    fn expand(&self, text: &str, server: &str, field: &str) -> Result<String, Error> {
        self.expand_nested(text, server, field, 0)
    }

    fn expand_nested(
        &self,
        text: &str,
        server: &str,
        field: &str,
        depth: usize,
    ) -> Result<String, Error> {
        if !text.contains("${") {
            return Ok(text.to_owned());
        }
        if depth > MAX_DEFAULT_NESTING {
            return Err(self.field_err(
                server,
                field,
                format!("nests '${{' more than {MAX_DEFAULT_NESTING} deep"),
            ));
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = closing_brace(after) else {
                return Err(self.field_err(server, field, "has an unterminated '${'"));
            };
            let inner = &after[..end];
            let (var, default) = match inner.split_once(":-") {
                Some((v, d)) => (v, Some(d)),
                None => (inner, None),
            };
            if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(self.field_err(
                    server,
                    field,
                    format!("has an invalid variable reference '${{{var}}}'"),
                ));
            }
            match ((self.lookup)(var), default) {
                (Some(value), _) if !(value.is_empty() && default.is_some()) => {
                    out.push_str(&value);
                    if !crate::secrets::is_plain_var(var) {
                        self.expanded.borrow_mut().push(value);
                    }
                }
                (_, Some(default)) => {
                    out.push_str(&self.expand_nested(default, server, field, depth + 1)?)
                }
                (_, None) => {
                    return Err(self.field_err(
                        server,
                        field,
                        format!("uses environment variable {var}, which is not set"),
                    ))
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// How deep `${A:-${B:-...}}` defaults may nest.
const MAX_DEFAULT_NESTING: usize = 8;

/// The position of the `}` that closes a `${` whose text starts `after`,
/// skipping the `${...}` pairs nested in a default.
fn closing_brace(after: &str) -> Option<usize> {
    let bytes = after.as_bytes();
    let mut open = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                open += 1;
                i += 1;
            }
            b'}' if open == 0 => return Some(i),
            b'}' => open -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The first server name that appears twice in a JSON `mcpServers` object.
fn repeated_json_server(text: &str) -> Option<String> {
    struct Names(Option<String>);
    impl<'de> serde::Deserialize<'de> for Names {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Names;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("an object of servers")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Names, A::Error> {
                    let mut seen = std::collections::HashSet::new();
                    let mut repeated = None;
                    while let Some(key) = map.next_key::<String>()? {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        if !seen.insert(key.clone()) && repeated.is_none() {
                            repeated = Some(key);
                        }
                    }
                    Ok(Names(repeated))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    #[derive(serde::Deserialize)]
    struct Doc {
        #[serde(rename = "mcpServers")]
        servers: Option<Names>,
    }
    serde_json::from_str::<Doc>(text).ok()?.servers?.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_include_headers_tokens_and_expansions() {
        let text = r#"
            [[mcp.servers]]
            name = "a"
            command = "run"
            args = ["--key", "${MY_KEY}", "${HOME}"]
            env = { TOKEN = "env-secret-1", LEVEL = "debug", PATH = "/usr/local/bin" }
            [[mcp.servers]]
            name = "b"
            type = "http"
            url = "https://h.example/mcp"
            headers = { Authorization = "Bearer header-tok-42" }
        "#;
        let config = Config::parse_with_vars(text, &|v| match v {
            "MY_KEY" => Some("expanded-77".into()),
            "HOME" => Some("/home/alice".into()),
            _ => None,
        })
        .unwrap();
        let s = crate::secrets::KnownSecrets::new(config.secret_values());
        let out =
            s.redact("env-secret-1 header-tok-42 expanded-77 debug /home/alice /usr/local/bin");
        assert_eq!(
            out,
            format!("[REDACTED:config] [REDACTED:config] [REDACTED:config] debug /home/alice /usr/local/bin")
        );
    }

    fn vars(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret-value".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<Config, Error> {
        Config::parse_with_vars(text, &vars)
    }

    fn err(text: &str) -> String {
        let e = parse(text).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        e.to_string()
    }

    #[test]
    fn toml_shape() {
        let c = parse(
            r#"
            [[mcp.servers]]
            name = "fs"
            type = "stdio"
            command = "npx"
            args = ["-y", "server", "${HOME_DIR:-/tmp}"]
            timeout_seconds = 5
            [mcp.servers.env]
            TOKEN = "${TOKEN}"

            [[mcp.servers]]
            name = "search"
            type = "http"
            url = "https://search.internal/mcp"
            enabled = false
            [mcp.servers.headers]
            Authorization = "Bearer ${TOKEN}"
            "#,
        )
        .unwrap();
        assert_eq!(c.servers.len(), 2);
        let fs = &c.servers[0];
        assert_eq!(fs.timeout, Duration::from_secs(5));
        assert_eq!(fs.max_total_timeout, Duration::from_secs(50));
        let TransportConfig::Stdio(s) = &fs.transport else {
            panic!()
        };
        assert_eq!(s.args, ["-y", "server", "/tmp"]);
        assert_eq!(s.env["TOKEN"], "s3cret-value");
        assert!(
            !format!("{fs:?}").contains("s3cret"),
            "Debug must hide env values"
        );
        let search = &c.servers[1];
        assert!(!search.enabled);
        assert_eq!(search.type_name(), "http");
        assert!(!format!("{search:?}").contains("s3cret"));
    }

    #[test]
    #[cfg(all(feature = "sse", feature = "websocket"))]
    fn json_shape_and_type_inference() {
        let c = parse(
            r#"{"mcpServers": {
                "github": {"command": "npx", "args": ["-y", "x"], "env": {"T": "${TOKEN}"}},
                "team": {"url": "https://mcp.example.com/sse", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "api": {"url": "https://mcp.example.com/mcp"},
                "sock": {"type": "ws", "url": "wss://mcp.example.com/ws"}
            }}"#,
        )
        .unwrap();
        let ty = |n: &str| c.server(n).unwrap().type_name();
        assert_eq!(ty("github"), "stdio");
        assert_eq!(ty("team"), "sse");
        assert_eq!(ty("api"), "http");
        assert_eq!(ty("sock"), "websocket");
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let dup =
            err(r#"{"mcp":{"servers":[{"name":"a","command":"x"},{"name":"a","command":"y"}]}}"#);
        assert!(dup.contains("duplicate server name 'a'"), "{dup}");
        let ty = err("[[mcp.servers]]\nname = \"a\"\ntype = \"carrier-pigeon\"\ncommand = \"x\"");
        assert!(
            ty.contains("server 'a'") && ty.contains("'type'") && ty.contains("carrier-pigeon"),
            "{ty}"
        );
        let cmd = err("[[mcp.servers]]\nname = \"a\"\ntype = \"stdio\"");
        assert!(
            cmd.contains("server 'a'") && cmd.contains("'command'"),
            "{cmd}"
        );
        let url = err("[[mcp.servers]]\nname = \"a\"\ntype = \"http\"");
        assert!(url.contains("server 'a'") && url.contains("'url'"), "{url}");
        let bad = err(r#"{"mcpServers":{"b":{"type":"http","url":"not a url"}}}"#);
        assert!(
            bad.contains("server 'b'") && bad.contains("'url'") && bad.contains("not a valid URL"),
            "{bad}"
        );
        if cfg!(feature = "websocket") {
            let scheme = err(r#"{"mcpServers":{"b":{"type":"websocket","url":"https://x/ws"}}}"#);
            assert!(scheme.contains("scheme 'https'"), "{scheme}");
        }
        let var = err(r#"{"mcpServers":{"c":{"command":"x","env":{"K":"${NOT_SET_ANYWHERE}"}}}}"#);
        assert!(
            var.contains("server 'c'") && var.contains("env.K") && var.contains("NOT_SET_ANYWHERE"),
            "{var}"
        );
        let none = err("# nothing\n");
        assert!(none.contains("no servers"), "{none}");
        let other = err("[other]\nx = 1");
        assert!(other.contains("unknown key 'other'"), "{other}");
        let syntax = err("[[mcp.servers]\nname=");
        assert!(syntax.contains("invalid TOML"), "{syntax}");
    }

    #[test]
    fn expansion_defaults_and_secrets() {
        let c = parse(r#"{"mcpServers":{"a":{"command":"${EMPTY:-fallback}","args":["${TOKEN}x${MISSING:-}"]}}}"#).unwrap();
        let TransportConfig::Stdio(s) = &c.servers[0].transport else {
            panic!()
        };
        assert_eq!(s.command, "fallback");
        assert_eq!(s.args, ["s3cret-valuex"]);
        let e = err(r#"{"mcpServers":{"a":{"command":"x","env":{"A":"${TOKEN"}}}}"#);
        assert!(e.contains("env.A") && e.contains("unterminated"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn session_table_alone_is_a_config() {
        let c = parse(
            "[session]\nreviewer = \"openai\"\nmodel = \"${MODEL:-gpt}\"\nargs = [\"${TOKEN}\"]\n",
        )
        .unwrap();
        assert!(c.servers.is_empty());
        assert_eq!(c.session["reviewer"], "openai");
        assert_eq!(c.session["model"], "gpt");
        assert_eq!(c.session["args"][0], "s3cret-value");
        let j = parse(r#"{"mcpServers": {"a": {"command": "x"}}, "session": {"max_turns": 3}}"#)
            .unwrap();
        assert_eq!(j.session["max_turns"], 3);
        let e = err("[session]\nmodel = \"${NOT_SET_ANYWHERE}\"\n");
        assert!(
            e.contains("[session]: field 'model'") && e.contains("NOT_SET_ANYWHERE"),
            "{e}"
        );
        let e = err("session = 3\n");
        assert!(e.contains("'session' must be a table"), "{e}");
    }

    #[test]
    fn the_policy_table_gives_session_defaults() {
        let server = "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n";
        let c = Config::parse(&format!("{server}[policy]\npin_tools = true\n")).unwrap();
        assert_eq!(c.session.get("pin_tools"), Some(&Value::Bool(true)));
        let c = Config::parse(&format!(
            "{server}[policy]\npin_tools = true\n[session]\npin_tools = false\n"
        ))
        .unwrap();
        assert_eq!(c.session.get("pin_tools"), Some(&Value::Bool(false)));
        let e = Config::parse(&format!("{server}[policy]\npin_tool = true\n"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("[policy]") && e.contains("pin_tools"), "{e}");
        let e = Config::parse(&format!("{server}[policy]\npin_tools = 1\n"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("true or false"), "{e}");
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        std::fs::write(
            &path,
            r#"{"mcpServers":{"a":{"type":"nope","command":"x"}}}"#,
        )
        .unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(e.contains("servers.json"), "{e}");
        let missing = Config::load(dir.path().join("absent.toml")).unwrap_err();
        assert_eq!(missing.code(), "CONFIG_INVALID");
    }
}
