//! `mcpmux`: MCP servers from the shell — list servers and tools, call a
//! tool, read resources, get prompts. Machine output with `--json`; every
//! failure prints `{"error": ..., "code": ...}` on stderr and exits 2.

/// The process's allocator. Serving a call, the gateway and the engine
/// allocate on one tokio worker and free on another (requests, answers,
/// parsed JSON); the system allocator spent about a fifth of the gateway's
/// CPU on that (`malloc_consolidate`, `_int_free`), mimalloc's per-thread
/// heaps much less (measured with `cargo bench -p mcpmux-core --bench
/// gateway`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod auth;
mod config_loop;
mod elicit;
mod events_cmd;
mod gateway;
mod human;
mod policy_cmd;
mod review;
mod serve;
mod tasks_cmd;
mod trust_cmd;
mod watch;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mcpmux_core::{CallOptions, Config, Error, Hub};
use serde_json::Value;

/// Exit status for any failure (1 is kept for a tool's own `isError`).
const EXIT_FAILURE: u8 = 2;
/// Exit status when a tool reported `isError: true`.
const EXIT_TOOL_ERROR: u8 = 1;

#[derive(Parser)]
#[command(
    name = "mcpmux",
    version,
    about = "Connect to MCP servers, list their tools and call them."
)]
struct Cli {
    /// Config file (TOML or JSON). Default: $MCPMUX_CONFIG, ./mcpmux.toml, ./.mcp.json.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Per-request timeout in seconds for every server (overrides the config).
    #[arg(long, global = true, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// How long listing commands (servers, tools, resources, prompts, policy, watch, and read/prompt/complete without --server) wait for servers to come up before they list what is up [default: 10]; `call` waits for its server, the gateway answers within 5 s.
    #[arg(long, global = true, value_name = "SECONDS")]
    startup_timeout: Option<f64>,
    /// A directory (or file:// URI) shared with every server as a root (`roots/list`); repeatable. Declares the roots capability.
    #[arg(long = "roots", global = true, value_name = "DIR")]
    roots: Vec<String>,
    /// Refuse to connect to loopback, private, link-local (169.254.169.254), CGNAT, unique-local, multicast and unspecified addresses, judged on the resolved address: servers, redirects, OAuth endpoints, LLM providers. Adds to deny_private of the config's network table.
    #[arg(long, global = true)]
    deny_private: bool,
    /// A network still reached with deny_private (CIDR such as 10.1.2.0/24, or one address); repeatable or comma-separated. Adds to allow_networks of the config's network table.
    #[arg(
        long = "allow-networks",
        global = true,
        value_name = "CIDR",
        value_delimiter = ','
    )]
    allow_networks: Vec<String>,
    /// Only https and wss URLs (http to loopback too, unless deny_private is on). Adds to require_https of the config's network table.
    #[arg(long, global = true)]
    require_https: bool,
    /// Log to stderr (-v info, -vv debug). MCPMUX_LOG sets a filter instead.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List configured servers and their state.
    Servers,
    /// List every tool of every connected server.
    Tools {
        /// Print the list for an LLM API: anthropic, openai, openai-responses, mcp.
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
    },
    /// Call a tool by its hub name (mcp_SERVER_TOOL); exit 1 when the result is an error.
    ///
    /// The call options of every front end (docs/call-options.md):
    /// --timeout (global), --max-total-timeout, --task, --task-ttl,
    /// --progress, --validate-output; the W3C trace context comes from $TRACEPARENT and
    /// $TRACESTATE.
    Call {
        /// The tool's hub name, as `mcpmux tools` shows it.
        tool: String,
        /// Arguments as a JSON object; `-` reads them from stdin.
        args: Option<String>,
        /// Run a tool whose execution.taskSupport is "optional" as an MCP
        /// task (tools that require one always run as tasks).
        #[arg(long)]
        task: bool,
        /// Upper bound of the whole call in seconds, however much progress arrives (default: the server's max_total_timeout_seconds).
        #[arg(long, value_name = "SECONDS")]
        max_total_timeout: Option<f64>,
        /// How long the server keeps a task this call creates, in seconds (default: the server chooses).
        #[arg(long, value_name = "SECONDS")]
        task_ttl: Option<f64>,
        /// Print each progress notification on stderr as a JSON line ({"progress", "total"?, "message"?}).
        #[arg(long)]
        progress: bool,
        /// What a result whose structuredContent does not satisfy the tool's outputSchema becomes: error (OUTPUT_INVALID, exit status 2; the default), warn (printed, with a warning on stderr) or off.
        #[arg(long, value_name = "error|warn|off")]
        validate_output: Option<String>,
    },
    /// Search the tools (BM25 over names, titles, descriptions and parameter names), best first.
    Search {
        /// Words to look for.
        query: String,
        /// Most results; 0 finds nothing.
        #[arg(long, value_name = "N", default_value_t = mcpmux_core::contract::SEARCH_DEFAULT_LIMIT as u64)]
        limit: u64,
    },
    /// List resources and resource templates.
    Resources {
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
    },
    /// Read a resource by URI.
    Read {
        /// The resource URI.
        uri: String,
        /// The server to ask (default: the one that lists the URI).
        #[arg(long)]
        server: Option<String>,
    },
    /// List prompts.
    Prompts {
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
    },
    /// Show which tools a review session's model is offered, per server, and why others are refused.
    Policy {
        /// The session scope to evaluate (matched against each server's `scopes`; default: the config's `[session]` scope).
        #[arg(long)]
        scope: Option<String>,
        #[command(subcommand)]
        action: Option<policy_cmd::PolicyAction>,
    },
    /// Get a prompt with arguments.
    Prompt {
        /// The prompt's name.
        name: String,
        /// Arguments as a JSON object of strings; `-` reads them from stdin.
        args: Option<String>,
        /// The server to ask (needed when several offer the prompt).
        #[arg(long)]
        server: Option<String>,
    },
    /// Review sessions: begin, wait, reply, end (JSON on stdout).
    Review {
        #[command(subcommand)]
        action: review::ReviewCommand,
    },
    /// An MCP server on stdio exposing review_begin, review_wait, review_reply, review_end.
    Serve,
    /// Serve every configured server's tools, resources and prompts, behind the config's policy, as one MCP server on stdio.
    Gateway(gateway::GatewayArgs),
    /// Print the hub's events (server states, tool/resource/prompt list changes, resource updates, server logs) until interrupted; --json prints JSON Lines.
    Watch {
        /// Also ask every server that offers logging for messages at this level or above (debug, info, notice, warning, error, critical, alert, emergency).
        #[arg(long, value_name = "LEVEL")]
        log_level: Option<String>,
    },
    /// Complete a prompt argument or a resource-template variable (completion/complete).
    Complete {
        /// The argument (or template variable) to complete.
        argument: String,
        /// What has been typed so far.
        #[arg(default_value = "")]
        value: String,
        /// Complete an argument of this prompt.
        #[arg(long, value_name = "NAME")]
        prompt: Option<String>,
        /// Complete a variable of this resource template (its URI template).
        #[arg(long, value_name = "URI_TEMPLATE")]
        resource: Option<String>,
        /// Arguments already chosen, as a JSON object.
        #[arg(long, value_name = "JSON")]
        context: Option<String>,
        /// The server to ask (default: the one offering the prompt or template).
        #[arg(long)]
        server: Option<String>,
    },
    /// The events extension: list event types, poll one from a cursor, stream one until interrupted, subscribe or unsubscribe a webhook.
    Events {
        #[command(subcommand)]
        action: events_cmd::EventsCommand,
    },
    /// Tasks by handle: start a tool as a task and print its handle; get, wait for the result of, cancel or list tasks, also from a later process (a server over HTTP keeps them).
    Task {
        #[command(subcommand)]
        action: tasks_cmd::TaskCommand,
    },
    /// OAuth for remote servers: login SERVER, status, logout SERVER.
    Auth {
        #[command(subcommand)]
        action: auth::AuthCommand,
    },
    /// Trust a config found in the current directory (./mcpmux.toml, ./.mcp.json) after showing what it would run; --list, --revoke PATH.
    Trust(trust_cmd::TrustArgs),
}

fn main() -> ExitCode {
    // The policy's and the sessions' config keys are checked on every load.
    mcpmux_sessions::register_config_layers();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(&Error::InvalidInput(usage_error(&e))),
    };
    init_logging(cli.verbose);
    // Before any thread starts: it sets the environment the servers inherit.
    // A detached review round runs under the mcpmux that began it, with the
    // same config: not a loop.
    let run_round = matches!(
        &cli.command,
        Command::Review {
            action: review::ReviewCommand::RunRound { .. }
        }
    );
    if !run_round && !matches!(cli.command, Command::Trust(_)) {
        if let Err(e) = config_loop::enter(cli.config.as_deref()) {
            return fail(&e);
        }
    }
    // Two workers unless $MCPMUX_WORKER_THREADS says otherwise: a command
    // runs a handful of servers for a few seconds.
    let mut builder = match mcpmux_core::runtime::builder("mcpmux-cli", None, Some(2)) {
        Ok(builder) => builder,
        Err(e) => return fail(&e),
    };
    let runtime = match builder.build() {
        Ok(rt) => rt,
        Err(e) => return fail(&Error::Internal(format!("cannot start the runtime: {e}"))),
    };
    // Core's block_on: the main thread stays awake for a fast answer and
    // reads it itself (`MCPMUX_STAY_AWAKE_US`), like Python's and C's.
    // A caller's trace context (`TRACEPARENT` / `TRACESTATE`, as OTel's
    // environment carriers name it): the run's spans are its children.
    let carrier = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (traceparent, tracestate) = (carrier("TRACEPARENT"), carrier("TRACESTATE"));
    let traced =
        mcpmux_core::telemetry::in_context(traceparent.as_deref(), tracestate.as_deref(), run(cli));
    let outcome = mcpmux_core::runtime::block_on(runtime.handle(), traced);
    // Spans and metrics go out before the process ends (at most
    // telemetry::FLUSH_LIMIT; nothing to do when telemetry is off).
    mcpmux_core::telemetry::shutdown();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(&e),
    }
}

/// One line for a command-line error: clap's first paragraph (which for a
/// missing argument also names it), or a short note when no command was given
/// (clap's message is then the whole help text).
fn usage_error(e: &clap::Error) -> String {
    use clap::error::ErrorKind;
    let message = match e.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            // Every command, from the parser itself: none can be left out.
            use clap::CommandFactory;
            let commands: Vec<String> = Cli::command()
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name().to_owned())
                .collect();
            format!("missing command (one of: {})", commands.join(", "))
        }
        _ => {
            let text = e.to_string();
            let first: Vec<&str> = text
                .lines()
                .map(str::trim)
                .skip_while(|l| l.is_empty())
                .take_while(|l| !l.is_empty())
                .collect();
            let first = first.join(" ");
            let first = first.trim_start_matches("error: ");
            if first.is_empty() {
                "invalid arguments".to_owned()
            } else {
                first.to_owned()
            }
        }
    };
    format!("{message} (see mcpmux --help)")
}

/// The network flags as a policy (`--allow-networks` entries checked:
/// INVALID_INPUT naming a bad one).
fn network_flags(cli: &Cli) -> Result<mcpmux_core::NetworkPolicy, Error> {
    mcpmux_core::NetworkPolicy::from_options(
        cli.deny_private,
        &cli.allow_networks,
        cli.require_https,
        "--allow-networks",
    )
}

fn fail(e: &Error) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "{}", e.to_json());
    ExitCode::from(EXIT_FAILURE)
}

fn init_logging(verbose: u8) {
    let filter = match std::env::var("MCPMUX_LOG") {
        Ok(f) if !f.is_empty() => f,
        _ => match verbose {
            0 => "off".into(),
            1 => "info".into(),
            _ => "debug".into(),
        },
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(cli: Cli) -> Result<u8, Error> {
    // Checked before anything else, whatever the command: a value that no
    // `Duration` holds must be refused, never reach the clock and panic.
    let timeout = cli
        .timeout
        .map(|secs| mcpmux_core::contract::seconds("--timeout", secs))
        .transpose()?;
    let call_opts = call_options(&cli.command)?;
    let network = network_flags(&cli)?;
    match &cli.command {
        Command::Trust(args) => return trust_cmd::run(args, cli.config.as_deref(), cli.json),
        Command::Review { action } => {
            let config = review::optional_config(cli.config.as_deref())?;
            let ctx = review::context(config, &network)?;
            if let Some(result) = review::execute(&ctx, action).await? {
                print_json(&result)?;
            }
            return Ok(0);
        }
        Command::Serve => {
            let config = review::optional_config(cli.config.as_deref())?;
            let ctx = review::context(config, &network)?;
            serve::serve(ctx).await?;
            return Ok(0);
        }
        _ => {}
    }
    let mut config = load_config(cli.config.as_deref())?;
    // The flags add to the config's `[network]`; what the config holds
    // reaches every connection (servers, OAuth, a gateway's servers).
    config.network = config.network.merged(&network);
    if let Some(timeout) = timeout {
        for server in &mut config.servers {
            server.timeout = timeout;
            server.max_total_timeout = server.max_total_timeout.max(server.timeout);
        }
    }
    if let Command::Auth { action } = &cli.command {
        return auth::run(action, config, cli.json).await;
    }
    // Which servers start: a command aimed at one server (`call`, whose
    // hub-name prefix names it, when one does; `read`, `prompt` and `complete` with
    // `--server`) makes every server lazy, so only that one starts and an
    // unrelated hung server costs nothing. Commands that list or pick among
    // all servers start every enabled one; `watch` keeps the config's `lazy`.
    let lazy = match &cli.command {
        // A name no server's prefix claims starts every server, so that
        // the error can name the tool meant (`did you mean ...`).
        Command::Call { tool, .. } => Some(config.servers.iter().any(|s| s.prefixes(tool))),
        Command::Read { server, .. }
        | Command::Prompt { server, .. }
        | Command::Complete { server, .. } => Some(server.is_some()),
        Command::Watch { .. } => None,
        Command::Events { action } => Some(action.server().is_some()),
        Command::Task { action } => Some(match action.tool() {
            Some(tool) => config.servers.iter().any(|s| s.prefixes(tool)),
            None => action.server().is_some(),
        }),
        _ => Some(false),
    };
    if let Some(lazy) = lazy {
        for server in &mut config.servers {
            server.supervision.lazy = lazy;
        }
    }
    // Parse arguments before starting any server. They go to a server as
    // one message, so they are held to the largest message the config allows.
    let written = match &cli.command {
        Command::Call { args, .. } | Command::Prompt { args, .. } => Some(args.as_deref()),
        Command::Events { action } => Some(action.args()),
        Command::Task { action } => Some(action.args()),
        _ => None,
    };
    let args = match written {
        Some(text) => {
            let limit = config
                .servers
                .iter()
                .map(|s| s.max_message_bytes)
                .max()
                .unwrap_or(mcpmux_core::config::DEFAULT_MAX_MESSAGE_BYTES);
            parse_args(text, limit)?
        }
        None => None,
    };
    if let Command::Gateway(args) = &cli.command {
        args.options()?;
        // The gateway's own tokens are secrets like the config's: redacted
        // wherever a server echoes them (stderr lines on the status page,
        // errors), and registered before any server starts.
        let mcp_token = args.http()?.and_then(|(_, token)| token);
        let status_token = args.status_access()?.and_then(|a| a.token);
        mcpmux_core::internal::secrets::register(mcp_token.into_iter().chain(status_token));
        args.session_keys(&config)?;
        args.drain_time(&config)?;
    }
    if let Command::Tools { format: Some(f) } = &cli.command {
        if !mcpmux_core::tool_format::FORMATS.contains(&f.as_str()) {
            return Err(Error::InvalidInput(format!(
                "unknown tool format '{f}' (expected one of: {})",
                mcpmux_core::tool_format::FORMATS.join(", ")
            )));
        }
    }
    let startup_wait = startup_wait(&cli)?;
    let interrupted = shutdown_signal();
    tokio::pin!(interrupted);
    // An interrupt while servers start drops the half-made hub, which kills
    // their process groups; without this the signal's default action would
    // end mcpmux and leave the servers' own children behind.
    // Subscribed before connect, so that `watch` shows the servers start.
    let events = mcpmux_core::events::EventSender::default();
    let watching = matches!(cli.command, Command::Watch { .. }).then(|| events.subscribe());
    let streaming = matches!(
        cli.command,
        Command::Events {
            action: events_cmd::EventsCommand::Stream { .. }
        }
    )
    .then(|| events.subscribe());
    // A gateway relays the servers' requests (sampling, elicitation,
    // roots) to its clients: the hub gets the relay's handlers.
    let relay = matches!(cli.command, Command::Gateway(_)).then(mcpmux_gateway::Relay::new);
    // Over stdio the gateway has one client: its `initialize` is read
    // before the servers start, so that they are told only of what it can
    // answer (roots, sampling, elicitation). Over HTTP any may come.
    let mut stdin = None;
    let handlers = match (&relay, &cli.command) {
        (Some(relay), Command::Gateway(args)) if args.http()?.is_none() => {
            let limit = config
                .servers
                .iter()
                .map(|s| s.max_message_bytes)
                .max()
                .unwrap_or(mcpmux_core::config::DEFAULT_MAX_MESSAGE_BYTES);
            let (reader, handlers) = tokio::select! {
                first = gateway::first_message(relay, limit) => first?,
                e = &mut interrupted => return Err(e),
            };
            stdin = Some(reader);
            handlers
        }
        (Some(relay), _) => relay.handlers(),
        // A server may ask the person at the terminal (or is declined).
        (None, _) => mcpmux_core::ClientHandlers {
            elicitation: Some(elicit::handler()),
            ..Default::default()
        },
    };
    let options = {
        let mut options = mcpmux_core::HubOptions::default()
            .with_events(events)
            .with_handlers(handlers);
        options.startup_wait = startup_wait;
        // The gateway passes apps through to its clients (MCP Apps): its
        // servers are told so, or they may offer text-only tools.
        if matches!(cli.command, Command::Gateway(_)) {
            options = options.with_extension(
                mcpmux_core::apps::EXTENSION,
                serde_json::json!({ "mimeTypes": [mcpmux_core::apps::MIME_TYPE] }),
            );
        }
        // `--roots` answers `roots/list` itself, a gateway's clients' included.
        if !cli.roots.is_empty() {
            options = options.with_roots(mcpmux_core::Roots::new(&cli.roots)?);
        }
        options
    };
    let hub = tokio::select! {
        hub = Hub::connect_with(config, options) => hub?,
        e = &mut interrupted => return Err(e),
    };
    if let (Some(stream), Command::Watch { log_level }) = (watching, &cli.command) {
        if let Some(level) = log_level {
            set_log_levels(&hub, level).await?;
        }
        // Interrupting is how a watch ends: not an error.
        let outcome = tokio::select! {
            r = watch::print_events(stream, cli.json) => r,
            _ = &mut interrupted => Ok(()),
        };
        hub.close().await;
        return outcome.map(|()| 0);
    }
    if let (Some(stream), Command::Events { action }) = (streaming, &cli.command) {
        // Interrupting is how a stream ends (not an error): it prints the
        // cursor to resume from.
        let outcome =
            events_cmd::stream(&hub, action, args.as_ref(), cli.json, stream, interrupted).await;
        hub.close().await;
        return outcome.map(|()| 0);
    }
    if let Command::Gateway(args) = &cli.command {
        // Served until stdin closes or the gateway is interrupted.
        let outcome = gateway::run(
            &hub,
            args,
            cli.config.as_deref(),
            relay,
            stdin,
            &mut interrupted,
        )
        .await;
        hub.close().await;
        return outcome.map(|()| 0);
    }
    let outcome = tokio::select! {
        r = execute(&hub, &cli, args.as_ref(), call_opts) => r,
        e = &mut interrupted => Err(e),
    };
    hub.close().await;
    outcome
}

/// How long a listing command waits for its servers to come up.
const DEFAULT_STARTUP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long the gateway waits before it serves its clients: a client's
/// `initialize` is answered within 5 s whatever a server does.
const GATEWAY_STARTUP_WAIT: std::time::Duration = std::time::Duration::from_secs(4);

/// How long `Hub::connect_with` waits for the servers, by command: `call`
/// (and `read`, `prompt`, `complete` with `--server`) for its server; the
/// gateway [`GATEWAY_STARTUP_WAIT`]; the listing commands
/// `--startup-timeout` (default [`DEFAULT_STARTUP_WAIT`], shorter than the
/// default call timeout of 60 s).
fn startup_wait(cli: &Cli) -> Result<Option<std::time::Duration>, Error> {
    let flag = cli
        .startup_timeout
        .map(|secs| mcpmux_core::contract::seconds("--startup-timeout", secs))
        .transpose()?;
    let aimed = match &cli.command {
        Command::Call { .. } | Command::Task { .. } => true,
        Command::Events { action } => action.server().is_some(),
        Command::Read { server, .. }
        | Command::Prompt { server, .. }
        | Command::Complete { server, .. } => server.is_some(),
        _ => false,
    };
    if aimed {
        return Ok(None);
    }
    if matches!(cli.command, Command::Gateway(_)) {
        return Ok(Some(
            flag.map_or(GATEWAY_STARTUP_WAIT, |f| f.min(GATEWAY_STARTUP_WAIT)),
        ));
    }
    // A server's handshake is bounded by its own timeout too: with shorter
    // timeouts the listing ends when the last server has answered or failed.
    Ok(Some(flag.unwrap_or(DEFAULT_STARTUP_WAIT)))
}

/// Resolves on Ctrl-C (SIGINT) or, on Unix, SIGTERM, with the error to report.
/// The handlers are installed on the first poll and stay for the whole run.
async fn shutdown_signal() -> Error {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => tokio::select! {
                _ = int.recv() => Error::Cancelled("interrupted".into()),
                _ = term.recv() => Error::Cancelled("terminated".into()),
            },
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Error::Cancelled("interrupted".into()),
            Err(_) => std::future::pending().await,
        }
    }
}

/// The call options of `call` (`--max-total-timeout`, `--task`,
/// `--task-ttl`, `--progress`, `--validate-output`), checked by core's contract before anything
/// starts; the default options for other commands.
fn call_options(command: &Command) -> Result<CallOptions, Error> {
    let Command::Call {
        task,
        max_total_timeout,
        task_ttl,
        progress,
        validate_output,
        ..
    } = command
    else {
        return Ok(CallOptions::default());
    };
    let secs = |flag: &str, v: Option<f64>| {
        v.map(|v| mcpmux_core::contract::seconds(flag, v))
            .transpose()
    };
    let on_progress = progress.then(|| {
        std::sync::Arc::new(|u: mcpmux_core::ProgressUpdate| {
            let mut v = serde_json::json!({ "progress": u.progress });
            if let Some(total) = u.total {
                v["total"] = total.into();
            }
            if let Some(message) = u.message {
                v["message"] = message.into();
            }
            let _ = writeln!(std::io::stderr(), "{v}");
        }) as mcpmux_core::ProgressCallback
    });
    Ok({
        let mut options = CallOptions::default().with_task(*task);
        options.max_total_timeout = secs("--max-total-timeout", *max_total_timeout)?;
        options.task_ttl = secs("--task-ttl", *task_ttl)?;
        options.on_progress = on_progress;
        if let Some(v) = validate_output {
            options.validate_output = mcpmux_core::ValidateOutput::parse("--validate-output", v)?;
        }
        options
    })
}

async fn execute(
    hub: &Hub,
    cli: &Cli,
    args: Option<&Value>,
    call_opts: CallOptions,
) -> Result<u8, Error> {
    let json = cli.json;
    match &cli.command {
        Command::Servers => {
            let servers = hub.servers();
            if json {
                print_json(&servers)
            } else {
                print(&human::servers(&servers))
            }
        }
        Command::Tools { format } => {
            print_failed_servers_note(hub);
            if let Some(format) = format {
                print_json(&hub.tools_for(format)?)
            } else if json {
                print_json(&hub.list_tools())
            } else {
                print(&human::tools(&hub.list_tools()))
            }
        }
        Command::Call { tool, .. } => {
            // With --validate-output warn, the hub's warning is printed:
            // the CLI logs nothing else unless asked (-v).
            let mut warnings = (call_opts.validate_output == mcpmux_core::ValidateOutput::Warn)
                .then(|| hub.events());
            let result = hub.call_tool(tool, args, &call_opts).await?;
            while let Some(Ok(Some(event))) = warnings.as_mut().map(|w| w.try_recv()) {
                if let mcpmux_core::HubEvent::Log {
                    logger: Some(logger),
                    data: Value::String(text),
                    ..
                } = &event
                {
                    if logger == "mcpmux" && text.starts_with("OUTPUT_INVALID") {
                        let _ = writeln!(std::io::stderr(), "warning: {text}");
                    }
                }
            }
            if json {
                print(result.json())?;
            } else {
                print(&human::tool_result(&result.value()))?;
            }
            return Ok(if result.is_error() {
                EXIT_TOOL_ERROR
            } else {
                0
            });
        }
        Command::Search { query, limit } => {
            print_failed_servers_note(hub);
            let found = hub.search_tools(query, mcpmux_core::contract::search_limit(Some(*limit)));
            if json {
                print_json(&found)
            } else {
                print(&human::tools(&found))
            }
        }
        Command::Resources { server } => {
            print_failed_servers_note(hub);
            let resources = hub.list_resources(server.as_deref()).await?;
            let templates = hub.list_resource_templates(server.as_deref()).await?;
            if json {
                print_json(
                    &serde_json::json!({ "resources": resources, "resourceTemplates": templates }),
                )
            } else {
                print(&human::resources(&resources, &templates))
            }
        }
        Command::Read { uri, server } => {
            let result = hub.read_resource(uri, server.as_deref()).await?;
            if json {
                print_json(&result)
            } else {
                print(&human::resource_contents(result.json()))
            }
        }
        Command::Prompts { server } => {
            print_failed_servers_note(hub);
            let prompts = hub.list_prompts(server.as_deref()).await?;
            if json {
                print_json(&prompts)
            } else {
                print(&human::prompts(&prompts))
            }
        }
        Command::Policy { scope, action } => {
            let config = load_config(cli.config.as_deref())?;
            // Without --scope, the scope a session would have: [session] scope.
            let scope = scope.clone().or_else(|| {
                config
                    .session
                    .get("scope")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            if let Some(action) = action {
                let out = policy_cmd::act(hub, &config, scope.as_deref(), action)?;
                if json {
                    print_json(&out)
                } else {
                    print(&policy_cmd::human_action(&out))
                }
            } else {
                let report = policy_cmd::report(hub, &config, scope.as_deref()).await?;
                if json {
                    print_json(&report)
                } else {
                    print(&policy_cmd::human(&report))
                }
            }
        }
        Command::Review { .. } | Command::Serve => unreachable!("handled in run"),
        Command::Prompt { name, server, .. } => {
            let result = hub.get_prompt(name, args, server.as_deref()).await?;
            if json {
                print_json(&result)
            } else {
                print(&human::prompt_messages(result.json()))
            }
        }
        Command::Complete {
            argument,
            value,
            prompt,
            resource,
            context,
            server,
        } => {
            let reference = watch::reference(prompt.as_deref(), resource.as_deref())?;
            let context = watch::context(context.as_deref())?;
            let argument = serde_json::json!({ "name": argument, "value": value });
            let completion = hub
                .complete(&reference, &argument, context.as_ref(), server.as_deref())
                .await?;
            if json {
                print_json(&completion)
            } else {
                let values: Vec<&str> = completion["values"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                print(&values.join("\n"))
            }
        }
        Command::Events { action } => events_cmd::run(hub, action, args, json).await,
        Command::Task { action } => return tasks_cmd::run(hub, action, args, json).await,
        // Handled before any server starts (see `run`), and `watch` right after.
        Command::Auth { .. } | Command::Watch { .. } | Command::Gateway(_) | Command::Trust(_) => {
            Ok(())
        }
    }?;
    Ok(0)
}

/// Names on stderr the servers missing from a listing (failed, or still
/// starting when the startup bound ran out): stdout stays the plain list.
fn print_failed_servers_note(hub: &Hub) {
    if let Some(note) = hub.failed_servers_note() {
        let _ = writeln!(std::io::stderr(), "mcpmux: {note}");
    }
}

/// Asks every connected server that offers logging for `level`: a bad level
/// is INVALID_INPUT before any is asked.
async fn set_log_levels(hub: &Hub, level: &str) -> Result<(), Error> {
    if !mcpmux_core::protocol::LOG_LEVELS.contains(&level) {
        return Err(Error::InvalidInput(format!(
            "--log-level '{level}' is not a log level (one of: {})",
            mcpmux_core::protocol::LOG_LEVELS.join(", ")
        )));
    }
    for server in hub.servers() {
        if server.state == "connected" {
            if let Err(e) = hub.set_log_level(&server.name, level).await {
                tracing::debug!(server = %server.name, error = %e, "no log level set");
            }
        }
    }
    Ok(())
}

/// Finds the config: `--config`, then `MCPMUX_CONFIG`, then a trusted
/// `./mcpmux.toml`, then a trusted `./.mcp.json` (`trust_cmd::load`).
/// The CLI takes a file only (a detached review round is handed the same
/// path), read by core's one rule for a path.
fn load_config(flag: Option<&std::path::Path>) -> Result<Config, Error> {
    trust_cmd::load(flag)?
        .map(|(config, _)| config)
        .ok_or_else(trust_cmd::no_config)
}

/// The ARGS_JSON argument, or stdin for `-` (read up to `limit` bytes and
/// no further: an endless stdin is refused, not buffered).
fn parse_args(text: Option<&str>, limit: usize) -> Result<Option<Value>, Error> {
    let Some(text) = text else { return Ok(None) };
    let owned;
    let text = if text == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(limit as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::InvalidInput(format!("cannot read arguments from stdin: {e}")))?;
        if buf.len() > limit {
            return Err(Error::InvalidInput(format!(
                "arguments on stdin are larger than {limit} bytes (max_message_bytes)"
            )));
        }
        owned = String::from_utf8(buf)
            .map_err(|_| Error::InvalidInput("arguments on stdin are not UTF-8 text".into()))?;
        owned.as_str()
    } else {
        text
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::InvalidInput(format!("ARGS_JSON is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(Error::InvalidInput(
            "ARGS_JSON must be a JSON object".into(),
        ));
    }
    Ok(Some(value))
}

fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Internal(e.to_string()))?;
    print(&text)
}

fn print(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not our failure.
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    Ok(())
}
