//! `mcpmux gateway`: the hub, behind the config's operator policy, served as
//! one MCP server on stdio (newline-delimited JSON-RPC), so that any MCP
//! client can use every configured server through it.

use std::io::Write;
use std::path::PathBuf;

use std::net::SocketAddr;

use mcpmux_core::{Config, Error, Hub};
use mcpmux_gateway::http::check_bind;
use mcpmux_gateway::{
    serve_http_until, serve_status, serve_stdio, Gateway, GatewayMode, GatewayOptions, HttpOptions,
    Relay, SessionKeys, StatusAccess, DEFAULT_CLIENT_BUDGET_BYTES, DEFAULT_TOTAL_BUDGET_BYTES,
};
use mcpmux_policy::SessionPolicy;
use serde_json::{json, Value};

/// The command's flags.
#[derive(clap::Args)]
pub struct GatewayArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8766) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Clients must send `Authorization: Bearer <value of VAR>` (needed to bind anything but loopback).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// With --http: also serve requests whose Host is NAME (or NAME:PORT), as behind a reverse proxy; repeatable. Other Hosts than loopback ones are refused (403).
    #[arg(long, value_name = "NAME")]
    pub allowed_host: Vec<String>,
    /// With --http: most connections served at once (the next ones wait until one closes).
    #[arg(long, value_name = "N", default_value_t = mcpmux_gateway::http::DEFAULT_MAX_CONNECTIONS, value_parser = clap::value_parser!(usize))]
    pub max_connections: usize,
    /// The session scope the policy evaluates (matched against each server's `scopes`; default: the config's `[session]` scope).
    #[arg(long)]
    pub scope: Option<String>,
    /// Which tools are listed: full (every tool the policy offers) or search (search_tools, describe_tool, call_tool).
    #[arg(long, value_name = "MODE", default_value = "full")]
    pub mode: String,
    /// Keep the server's own tool names (a config with one server: a transparent proxy).
    #[arg(long)]
    pub no_prefix: bool,
    /// Append one JSON line per call to FILE (the audit.jsonl format).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Frame text results as untrusted data, as a review session shows them to its model.
    #[arg(long)]
    pub frame_output: bool,
    /// Offer every tool of every enabled server, whatever the policy's allow lists and the servers' annotations say (deny_tools, scopes, redaction, limits, --frame-output and --audit still apply).
    #[arg(long)]
    pub expose_all: bool,
    /// Do not pin tool definitions of servers whose config says nothing (`pin_tools`): a tool that changed since it was approved, or a new one, is then offered as it is.
    #[arg(long)]
    pub no_pin_tools: bool,
    /// Do not offer the review tools (review_begin, review_wait, review_reply, review_end) that a config with a `[session]` table otherwise adds.
    #[arg(long)]
    pub no_review_tools: bool,
    /// Keep the whole of results cut at max_output_bytes in DIR (0700; files 0600), for the read_result tool and `mcpmux://results/<id>`; default: the config's `[session]` result_dir, else a temporary directory removed at exit.
    #[arg(long, value_name = "DIR")]
    pub result_dir: Option<PathBuf>,
    /// MiB of answers held for one client (not yet read, or a batch being assembled); past it, its requests get JSON-RPC -32000 "gateway busy".
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_CLIENT_BUDGET_BYTES >> 20)]
    pub client_budget_mib: usize,
    /// MiB of answers held for every client together; past it, requests get JSON-RPC -32000 "gateway busy".
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_TOTAL_BUDGET_BYTES >> 20)]
    pub total_budget_mib: usize,
    /// With --http: seal session ids with the key in FILE (lines `<key id> <64 hex digits>`: the current key, then optionally the previous one, which only opens), so that every replica given the same file carries on any replica's sessions. Mode 0600. Default: the config's `[gateway]` session_key_file.
    #[arg(long, value_name = "FILE")]
    pub session_key_file: Option<PathBuf>,
    /// With --http: this replica's name, the prefix of the session ids it hands out (1 to 32 of A-Z a-z 0-9 - _; default: the config's `[gateway]` replica, else random).
    #[arg(long, value_name = "NAME")]
    pub replica: Option<String>,
    /// With --http: on SIGTERM or Ctrl-C, answer /readyz with 503 and refuse new sessions, finish the requests in flight (at most N seconds), then exit (default: the config's `[gateway]` drain_seconds, else 0: exit at once).
    #[arg(long, value_name = "N")]
    pub drain_seconds: Option<u64>,
    /// With --http: also serve a live status page at /status (and /status.json) on the same listener: servers, tools with the policy's decision, the latest calls, clients. Loopback clients only, unless --status-token-file is given.
    #[arg(long)]
    pub status: bool,
    /// Serve the status page at http://ADDR/status (a stdio gateway; with --http use --status).
    #[arg(long, value_name = "ADDR")]
    pub status_addr: Option<String>,
    /// The status page then needs `Authorization: Bearer <the token in FILE>` on every request, from any address, and offers an Approve button for quarantined tools. FILE holds the token on one line; mode 0600.
    #[arg(long, value_name = "FILE")]
    pub status_token_file: Option<PathBuf>,
}

impl GatewayArgs {
    /// The options, checked before any server starts.
    pub fn options(&self) -> Result<GatewayOptions, Error> {
        let mib = |flag: &str, value: usize| -> Result<usize, Error> {
            value
                .checked_mul(1 << 20)
                .filter(|&bytes| bytes > 0)
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "{flag} {value}: expected a number of MiB, at least 1"
                    ))
                })
        };
        Ok(GatewayOptions::default()
            .with_status(self.status || self.status_addr.is_some())
            .with_mode(self.mode.parse::<GatewayMode>()?)
            .with_no_prefix(self.no_prefix)
            .with_frame_output(self.frame_output)
            .with_expose_all(self.expose_all)
            .with_result_dir(self.result_dir.clone())
            .with_pin_tools(!self.no_pin_tools)
            .with_client_budget_bytes(mib("--client-budget-mib", self.client_budget_mib)?)
            .with_total_budget_bytes(mib("--total-budget-mib", self.total_budget_mib)?))
    }

    /// The keys session ids are sealed with (`--session-key-file`, else
    /// `[gateway] session_key_file` of `config`, relative to its file's
    /// directory, else a random key of this process) under `--replica`'s
    /// name (else `[gateway] replica`), checked before any server starts.
    pub fn session_keys(&self, config: &Config) -> Result<SessionKeys, Error> {
        let replica = self
            .replica
            .as_deref()
            .or(config.gateway.replica.as_deref());
        let from_config = config.gateway.session_key_file.as_ref().map(|path| {
            match config.source.as_deref().and_then(std::path::Path::parent) {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path.clone(),
            }
        });
        match self.session_key_file.clone().or(from_config) {
            Some(path) => SessionKeys::from_file(&path, replica),
            None => SessionKeys::ephemeral(replica),
        }
    }

    /// `--drain-seconds` (else `[gateway] drain_seconds` of `config`),
    /// checked against the timeout cap.
    pub fn drain_time(&self, config: &Config) -> Result<std::time::Duration, Error> {
        let (seconds, name) = match self.drain_seconds {
            Some(s) => (s, "--drain-seconds"),
            None => (
                config.gateway.drain_seconds.unwrap_or(0),
                "[gateway] drain_seconds",
            ),
        };
        if seconds == 0 {
            return Ok(std::time::Duration::ZERO);
        }
        mcpmux_core::contract::seconds(name, seconds as f64)
    }

    /// Who may see the status page, checked before any server starts:
    /// `None` when it is not served. `--status` needs `--http`,
    /// `--status-addr` a stdio gateway, `--status-token-file` one of them;
    /// the token file must be a regular file of at most 4 KiB, readable by
    /// its owner only, holding a non-empty token. The token never appears
    /// in an error.
    pub fn status_access(&self) -> Result<Option<StatusAccess>, Error> {
        if self.status && self.http.is_none() {
            return Err(Error::InvalidInput(
                "--status needs --http (a stdio gateway serves the page with --status-addr ADDR)"
                    .into(),
            ));
        }
        if self.status_addr.is_some() && self.http.is_some() {
            return Err(Error::InvalidInput(
                "--status-addr is for a stdio gateway; with --http, serve the page on the same \
                 listener with --status"
                    .into(),
            ));
        }
        let wanted = self.status || self.status_addr.is_some();
        let Some(path) = &self.status_token_file else {
            return Ok(wanted.then(StatusAccess::loopback_only));
        };
        if !wanted {
            return Err(Error::InvalidInput(
                "--status-token-file needs --status (with --http) or --status-addr".into(),
            ));
        }
        let bad = |why: String| {
            Error::ConfigInvalid(format!("--status-token-file {}: {why}", path.display()))
        };
        let file = mcpmux_core::internal::files::open_regular(
            path,
            std::fs::OpenOptions::new().read(true),
        )
        .map_err(|e| bad(e.to_string()))?;
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = file
                .metadata()
                .map_err(|e| bad(e.to_string()))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(bad(format!(
                    "others may read it (mode {:o}); chmod 600 it",
                    mode & 0o777
                )));
            }
        }
        let bytes = mcpmux_core::internal::files::read_capped(file, 4096)
            .map_err(|e| bad(e.to_string()))?;
        let token = String::from_utf8(bytes)
            .map_err(|_| bad("not UTF-8 text".into()))?
            .trim()
            .to_owned();
        if token.is_empty() || token.contains(char::is_whitespace) {
            return Err(bad("expected one token on one line".into()));
        }
        Ok(Some(StatusAccess::with_token(token)))
    }

    /// Where to serve HTTP and the token, checked before any server
    /// starts: a bad address is `INVALID_INPUT`; an unset or empty token
    /// variable, or a non-loopback address without one, `CONFIG_INVALID`.
    /// The token's value never appears in an error.
    pub fn http(&self) -> Result<Option<(SocketAddr, Option<String>)>, Error> {
        let token = match &self.token_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(value) if !value.is_empty() => Some(value),
                _ => {
                    return Err(Error::ConfigInvalid(format!(
                        "--token-env {var}: the variable is unset or empty"
                    )))
                }
            },
        };
        let Some(addr) = &self.http else {
            if token.is_some() {
                return Err(Error::InvalidInput(
                    "--token-env needs --http (stdio has no token)".into(),
                ));
            }
            if !self.allowed_host.is_empty() {
                return Err(Error::InvalidInput(
                    "--allowed-host needs --http (stdio has no Host)".into(),
                ));
            }
            return Ok(None);
        };
        if self.max_connections == 0 {
            return Err(Error::InvalidInput(
                "--max-connections must be at least 1".into(),
            ));
        }
        let addr: SocketAddr = addr.parse().map_err(|_| {
            Error::InvalidInput(format!(
                "--http {addr}: expected an address and port, e.g. 127.0.0.1:8766"
            ))
        })?;
        check_bind(&addr, token.is_some())?;
        Ok(Some((addr, token)))
    }
}

/// Serves `hub` on stdin/stdout until stdin closes, or over HTTP (`--http`)
/// until interrupted. Runs on the CLI's runtime; `hub` is closed by the
/// caller.
pub async fn run(
    hub: &Hub,
    args: &GatewayArgs,
    config_flag: Option<&std::path::Path>,
    relay: Option<Relay>,
    stdin: Option<StdinReader>,
    interrupted: impl std::future::Future<Output = Error>,
) -> Result<(), Error> {
    let mut options = args.options()?;
    let status = args.status_access()?;
    // Over HTTP: the session key and this replica's name, which also
    // prefixes the ids only this replica can serve.
    let keys = match args.http()? {
        Some(_) => Some(args.session_keys(&hub.config())?),
        None => None,
    };
    if let Some(keys) = &keys {
        options = options.with_replica(keys.replica());
    }
    let settings = args.scope.as_ref().map(|s| json!({ "scope": s }));
    let policy = SessionPolicy::for_hub(hub, settings.as_ref(), args.audit.clone())?;
    let mut gateway = Gateway::new(hub.clone(), policy, options)?;
    if let Some(relay) = relay {
        gateway = gateway.relay_to_clients(relay)?;
    }
    if !args.no_review_tools && !hub.config().session.is_empty() {
        // The same sessions as `mcpmux review` and `mcpmux serve`: rounds
        // run in detached processes of this program with this config.
        // Under the hub's network policy (the config's and the flags').
        let ctx = crate::review::context(
            crate::review::optional_config(config_flag)?,
            &hub.config().network,
        )?;
        gateway = gateway.offer_review_tools(ctx)?;
    }
    // The operator hears of each quarantined tool (never its new text).
    let mut events = hub.events();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let mcpmux_core::HubEvent::ToolQuarantined {
                server,
                tool,
                changes,
            } = event
            {
                let _ = writeln!(
                    std::io::stderr(),
                    "mcpmux gateway: tool '{tool}' of server '{server}' is quarantined ({}): \
                     review it with 'mcpmux policy approve --list {server}', approve it with \
                     'mcpmux policy approve {server} {tool}'",
                    changes.join(", ")
                );
            }
        }
    });
    for note in gateway.startup_notes() {
        let _ = writeln!(std::io::stderr(), "mcpmux gateway: {note}");
    }
    if let Some(note) = hub.failed_servers_note() {
        let _ = writeln!(std::io::stderr(), "mcpmux gateway: {note}");
    }
    let max_message_bytes = hub
        .config()
        .servers
        .iter()
        .map(|s| s.max_message_bytes)
        .max()
        .unwrap_or(mcpmux_core::config::DEFAULT_MAX_MESSAGE_BYTES);
    if let Some((addr, token)) = args.http()? {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::InvalidInput(format!("--http {addr}: cannot listen: {e}")))?;
        let local = listener.local_addr().unwrap_or(addr);
        // The actual address (port 0 picks one), for people and scripts.
        let _ = writeln!(
            std::io::stderr(),
            "mcpmux gateway: serving MCP at http://{local}/mcp"
        );
        if status.is_some() {
            let _ = writeln!(
                std::io::stderr(),
                "mcpmux gateway: status page at http://{local}/status"
            );
        }
        let options = {
            let mut options = HttpOptions::default()
                .with_max_message_bytes(max_message_bytes)
                .with_allowed_hosts(args.allowed_host.clone())
                .with_max_connections(args.max_connections)
                .with_session_keys(match keys {
                    Some(keys) => keys,
                    None => args.session_keys(&hub.config())?,
                })
                .with_drain_time(args.drain_time(&hub.config())?);
            options.token = token;
            options.status = status;
            options
        };
        let shutdown = async {
            let why = interrupted.await;
            let _ = writeln!(std::io::stderr(), "mcpmux gateway: {why}; draining");
        };
        return serve_http_until(gateway, listener, options, shutdown).await;
    }
    let stdin = stdin.unwrap_or_else(|| {
        use tokio::io::AsyncReadExt;
        std::io::Cursor::new(Vec::new()).chain(tokio::io::BufReader::new(tokio::io::stdin()))
    });
    // The status page of a stdio gateway, on a listener of its own.
    let status_page = match (&args.status_addr, status) {
        (Some(addr), Some(access)) => {
            let parsed: SocketAddr = addr.parse().map_err(|_| {
                Error::InvalidInput(format!(
                    "--status-addr {addr}: expected an address and port, e.g. 127.0.0.1:8767"
                ))
            })?;
            let listener = tokio::net::TcpListener::bind(parsed).await.map_err(|e| {
                Error::InvalidInput(format!("--status-addr {addr}: cannot listen: {e}"))
            })?;
            if !parsed.ip().is_loopback() && access.token.is_none() {
                return Err(Error::ConfigInvalid(format!(
                    "--status-addr {addr}: serving the status page on an address other than \
                     loopback needs --status-token-file"
                )));
            }
            let local = listener.local_addr().unwrap_or(parsed);
            let _ = writeln!(
                std::io::stderr(),
                "mcpmux gateway: status page at http://{local}/status"
            );
            let serving = tokio::spawn(serve_status(gateway.clone(), listener, access));
            Some(AbortOnDrop(serving.abort_handle()))
        }
        _ => None,
    };
    let served = tokio::select! {
        r = serve_stdio(gateway, stdin, tokio::io::stdout(), max_message_bytes) => r,
        _ = interrupted => Ok(()),
    };
    drop(status_page);
    served
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The stdio gateway's input: the client's first message (read before the
/// servers start, to learn what the client can answer), then the rest of
/// stdin.
pub type StdinReader =
    tokio::io::Chain<std::io::Cursor<Vec<u8>>, tokio::io::BufReader<tokio::io::Stdin>>;

/// Reads the stdio client's first line (at most `limit` bytes) and the
/// capabilities its `initialize` declares (`{}` when the first message is
/// something else). Returns the line, to be served first, and the hub
/// handlers for what the client can answer.
pub async fn first_message(
    relay: &Relay,
    limit: usize,
) -> Result<(StdinReader, mcpmux_core::ClientHandlers), Error> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    (&mut stdin)
        .take(limit as u64 + 1)
        .read_until(b'\n', &mut line)
        .await
        .map_err(|e| Error::TransportClosed(format!("gateway: reading stdin: {e}")))?;
    let capabilities = serde_json::from_slice::<Value>(&line)
        .ok()
        .filter(|m| m["method"] == "initialize")
        .map(|m| m["params"]["capabilities"].clone())
        .unwrap_or_else(|| json!({}));
    let handlers = relay.handlers_for(&capabilities);
    Ok((std::io::Cursor::new(line).chain(stdin), handlers))
}
