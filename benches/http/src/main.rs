//! Streamable HTTP benchmark: `tools/call` calls/s of mcpmux's Streamable
//! HTTP client against the official Rust SDK `rmcp`'s, on loopback, against
//! the same minimal server, in the same run.
//!
//! Run it with
//!
//! ```text
//! CARGO_TARGET_DIR=target cargo run --release -p mcpmux-bench-http
//! MCPMUX_BENCH_QUICK=1 cargo run --release -p mcpmux-bench-http   # CI smoke run
//! ```
//!
//! It prints a report and exits 0 whether the targets are met or not (PASS or
//! MISS is informational); it exits non-zero only when something fails (the
//! server does not start, a client does not connect, a call fails or returns
//! something other than the echo).
//!
//! What it measures, for each client:
//!
//! 1. **Sequential calls/s** — one task making `tools/call echo` calls one at
//!    a time (3,000 calls after 300 warm-up). Target: mcpmux not slower than
//!    rmcp (ratio ≥ 1.0).
//! 2. **Calls/s with 64 in flight** — 64 tasks sharing one connected client,
//!    each calling in a loop until 20,000 calls are done (after 2,000 warm-up).
//!    Over HTTP/1.1 a client opens as many TCP connections as it has POSTs
//!    in flight. Target: mcpmux ≥ 1.5× rmcp.
//!
//! The clients:
//!
//! - **mcpmux** — `Hub::connect` with one `type = "http"` server pinned to
//!   `protocol_version = "2025-11-25"` (so no `server/discover` probe), then
//!   `Hub::call_tool("mcp_bench_echo", …)`.
//! - **rmcp** — rmcp's Streamable HTTP client as its documentation shows it:
//!   `StreamableHttpClientTransport::from_uri(url)` and `().serve(transport)`,
//!   then `Peer::call_tool`. Its default reqwest client keeps no idle
//!   connections (a new TCP connection per POST) and its default config runs
//!   at most 16 POSTs at a time.
//! - **rmcp-pooled** — the same with one change: a default (pooled,
//!   keep-alive) `reqwest::Client` given to `with_client`. Its
//!   `max_concurrent_requests` stays rmcp's default, 16 (64 measured no
//!   faster here; see `MCPMUX_BENCH_RMCP_CONCURRENCY`).
//!
//! Each target is checked against the *faster* of the two rmcp variants for
//! that figure, so mcpmux does not win by rmcp's defaults alone; both are
//! printed. Each figure runs in 10 short rounds (300 sequential calls, or
//! 2,000 calls with 64 in flight, per client per round) that rotate the
//! order of the three clients, so that all see the same machine even when
//! its load changes. Also printed: the p50 latency, the CPU
//! time this process spends per call (user + system, `getrusage`), and the
//! CPU time the server process spends per call (`/proc/<pid>/stat`): on a
//! busy 2-core machine the CPU figures are steadier than wall time, and the
//! server's share bounds what any client can reach. (The server's CPU time
//! comes in 10 ms clock ticks: in a quick run its figures are coarse.)
//!
//! The server is this same binary run as a separate process
//! (`mcpmux-bench-http --serve`): a minimal Streamable HTTP MCP server on
//! hyper (HTTP/1.1, keep-alive, `TCP_NODELAY`) on 127.0.0.1 with an
//! ephemeral port, on a multi-thread tokio runtime with the default worker
//! count. It answers `initialize` (echoing the offered version when it is
//! 2025-03-26, 2025-06-18 or 2025-11-25; capabilities `{tools:{}}`; an
//! `Mcp-Session-Id`), notifications and responses with 202, `tools/list`
//! (one tool, `echo`), `tools/call echo` (a plain `application/json` body),
//! `ping`, and everything else — `server/discover` included — with JSON-RPC
//! error -32601; GET with 405 and DELETE with 200. It exits when its stdin
//! closes, so it never outlives the benchmark.
//!
//! Environment:
//!
//! - `MCPMUX_BENCH_QUICK=1` — 10× fewer calls (CI smoke run).
//! - `MCPMUX_BENCH_RUNTIME` — the clients' runtime: `multi` (default:
//!   multi-thread, default worker count), `multi:N` (N workers) or `current`.
//! - `MCPMUX_BENCH_ONLY` — `sequential` or `inflight` (default: both).
//! - `MCPMUX_BENCH_RMCP_CONCURRENCY` — rmcp-pooled's `max_concurrent_requests`
//!   (default: rmcp's, 16).
//!
//! For profiling one client:
//! `mcpmux-bench-http --profile mcpmux|rmcp|rmcp-pooled sequential|inflight[:TASKS] [CALLS]`
//! runs only that (default 100,000 calls; `inflight` is 64 tasks) and prints
//! calls/s and CPU per call, e.g. under `perf record -g --call-graph dwarf`.

use std::convert::Infallible;
use std::error::Error as StdError;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use mcpmux_core::{CallOptions, Config, Hub};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::value::RawValue;
use serde_json::Value;

type BoxError = Box<dyn StdError + Send + Sync>;
type Res<T> = Result<T, BoxError>;

/// Text echoed by every call.
const ECHO_TEXT: &str = "hello from the mcpmux HTTP benchmark";
/// Rounds per figure; each round measures every client once, in rotating order.
const ROUNDS: usize = 10;
/// Calls in flight for the second figure.
const IN_FLIGHT: usize = 64;
/// Calls of the sequential figure (all rounds together) and its warm-up.
const SEQ_CALLS: usize = 3_000;
const SEQ_WARMUP: usize = 300;
/// Calls of the in-flight figure (all rounds together) and its warm-up.
const PAR_CALLS: usize = 20_000;
const PAR_WARMUP: usize = 2_000;
/// The protocol version pinned in the mcpmux config (skips `server/discover`).
const PINNED_VERSION: &str = "2025-11-25";
/// Longest wait for a client to connect, and for one round of calls.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const ROUND_TIMEOUT: Duration = Duration::from_secs(300);
/// The rmcp version requirement of this crate's manifest.
const RMCP_REQUIREMENT: &str = "rmcp 3.11";
/// Targets: mcpmux calls/s over the faster rmcp variant's.
const SEQ_TARGET: f64 = 1.0;
const PAR_TARGET: f64 = 1.5;

fn main() {
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("--serve") => serve(),
        Some("--profile") => profile(args.next(), args.next(), args.next()),
        None => run(),
        Some(other) => Err(format!(
            "unknown argument '{other}' (expected no argument, --serve or --profile)"
        )
        .into()),
    };
    if let Err(e) = result {
        eprintln!("http bench failed: {e}");
        std::process::exit(1);
    }
}

// ------------------------------------------------------------------ server

/// Runs the minimal server: prints `listening on ADDR` on stdout, serves
/// until stdin closes.
fn serve() -> Res<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "listening on {}", listener.local_addr()?)?;
            out.flush()?;
        }
        // The benchmark holds our stdin; when it closes (or the benchmark
        // dies), stop.
        std::thread::spawn(|| {
            let mut buf = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
        let sessions = Arc::new(AtomicUsize::new(0));
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    eprintln!("[bench server] accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let sessions = sessions.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| handle(req, sessions.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

/// One HTTP request to the server.
async fn handle(
    req: Request<Incoming>,
    sessions: Arc<AtomicUsize>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    match *req.method() {
        Method::POST => {}
        Method::DELETE => return Ok(empty(StatusCode::OK)),
        _ => return Ok(empty(StatusCode::METHOD_NOT_ALLOWED)),
    }
    let body = match req.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Ok(empty(StatusCode::BAD_REQUEST)),
    };
    Ok(answer(&body, &sessions))
}

/// The answer to one POSTed JSON-RPC message.
fn answer(body: &[u8], sessions: &AtomicUsize) -> Response<Full<Bytes>> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<String>,
        #[serde(default)]
        params: Value,
    }
    let Ok(message) = serde_json::from_slice::<Message>(body) else {
        return json(
            StatusCode::BAD_REQUEST,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
                .to_owned(),
        );
    };
    // Notifications and the client's responses.
    let (Some(id), Some(method)) = (message.id, message.method) else {
        return empty(StatusCode::ACCEPTED);
    };
    let id = id.get();
    let params = &message.params;
    let result = |result: String| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
    let error = |code: i64, text: &str| {
        let text = serde_json::to_string(text).unwrap_or_default();
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{text}}}}}"#)
    };
    match method.as_str() {
        "initialize" => {
            let offered = params["protocolVersion"].as_str().unwrap_or("");
            let version = match offered {
                "2025-03-26" | "2025-06-18" | "2025-11-25" => offered,
                _ => "2025-11-25",
            };
            let body = result(format!(
                r#"{{"protocolVersion":"{version}","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"mcpmux-bench-http-server","version":"0.1.0"}}}}"#
            ));
            let mut response = json(StatusCode::OK, body);
            let session = format!("bench-session-{}", sessions.fetch_add(1, Ordering::Relaxed));
            if let Ok(value) = hyper::header::HeaderValue::from_str(&session) {
                response.headers_mut().insert("mcp-session-id", value);
            }
            response
        }
        "tools/list" => json(
            StatusCode::OK,
            result(
                r#"{"tools":[{"name":"echo","description":"Echoes its text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}"#
                    .to_owned(),
            ),
        ),
        "tools/call" => {
            if params["name"] != "echo" {
                return json(StatusCode::OK, error(-32602, "unknown tool"));
            }
            let text = params["arguments"]["text"].as_str().unwrap_or("");
            let text = serde_json::to_string(text).unwrap_or_default();
            json(
                StatusCode::OK,
                result(format!(
                    r#"{{"content":[{{"type":"text","text":{text}}}],"isError":false}}"#
                )),
            )
        }
        "ping" => json(StatusCode::OK, result("{}".to_owned())),
        _ => json(StatusCode::OK, error(-32601, "Method not found")),
    }
}

fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The server as a child process of this benchmark.
struct ServerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
}

impl ServerProcess {
    fn start() -> Res<ServerProcess> {
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("the server has no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(addr) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the server did not start (it said {line:?})").into());
        };
        Ok(ServerProcess {
            url: format!("http://{addr}/mcp"),
            child,
            stdin,
        })
    }

    /// CPU time (user + system) the server process has used so far.
    fn cpu_time(&self) -> Duration {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())) else {
            return Duration::ZERO;
        };
        // Fields after the command name: state is field 3, utime 14, stime 15.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            return Duration::ZERO;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        Duration::from_secs_f64((ticks(11) + ticks(12)) as f64 / hz)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        drop(self.stdin.take()); // the server exits when its stdin closes
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------------ clients

/// The three clients under test.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mcpmux,
    Rmcp,
    RmcpPooled,
}

const KINDS: [Kind; 3] = [Kind::Mcpmux, Kind::Rmcp, Kind::RmcpPooled];

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Mcpmux => "mcpmux",
            Kind::Rmcp => "rmcp",
            Kind::RmcpPooled => "rmcp-pooled",
        }
    }
}

/// A connected client; clones share the connection.
#[derive(Clone)]
enum Caller {
    Mcpmux(Hub),
    Rmcp(rmcp::Peer<RoleClient>),
}

/// What has to stay alive (and be closed) for a caller to work.
enum Connection {
    Mcpmux(Hub),
    Rmcp(RunningService<RoleClient, ()>),
}

impl Connection {
    /// Connects `kind` to `url`; `rmcp_concurrency` is rmcp-pooled's
    /// `max_concurrent_requests`.
    async fn open(kind: Kind, url: &str, rmcp_concurrency: usize) -> Res<Connection> {
        match kind {
            Kind::Mcpmux => {
                let s = |v: &str| serde_json::to_string(v).expect("strings serialize");
                let toml = format!(
                    "[[mcp.servers]]\nname = \"bench\"\ntype = \"http\"\nurl = {}\nprotocol_version = {}\n",
                    s(url),
                    s(PINNED_VERSION)
                );
                let hub = Hub::connect(Config::parse(&toml)?).await?;
                for status in hub.servers() {
                    if status.state != "connected" {
                        return Err(format!(
                            "mcpmux: server '{}' is {}: {}",
                            status.name,
                            status.state,
                            status.error.unwrap_or_default()
                        )
                        .into());
                    }
                }
                Ok(Connection::Mcpmux(hub))
            }
            Kind::Rmcp => {
                let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
                Ok(Connection::Rmcp(().serve(transport).await?))
            }
            Kind::RmcpPooled => {
                let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
                    .max_concurrent_requests(rmcp_concurrency);
                let http = reqwest_rmcp::Client::builder().build()?;
                let transport = StreamableHttpClientTransport::with_client(http, config);
                Ok(Connection::Rmcp(().serve(transport).await?))
            }
        }
    }

    fn caller(&self) -> Caller {
        match self {
            Connection::Mcpmux(hub) => Caller::Mcpmux(hub.clone()),
            Connection::Rmcp(service) => Caller::Rmcp(service.peer().clone()),
        }
    }

    async fn close(self) {
        match self {
            Connection::Mcpmux(hub) => hub.close().await,
            Connection::Rmcp(service) => {
                let _ = service.cancel().await;
            }
        }
    }
}

impl Caller {
    /// One `tools/call echo`; with `check`, also that the text came back.
    async fn call(&self, check: bool) -> Res<()> {
        match self {
            Caller::Mcpmux(hub) => {
                let args = serde_json::json!({ "text": ECHO_TEXT });
                let result = hub
                    .call_tool("mcp_bench_echo", Some(&args), &CallOptions::default())
                    .await?;
                if result.is_error() || (check && !result.json().contains(ECHO_TEXT)) {
                    return Err(format!("mcpmux: unexpected echo result: {}", result.json()).into());
                }
            }
            Caller::Rmcp(peer) => {
                let mut args = serde_json::Map::new();
                args.insert("text".to_owned(), Value::from(ECHO_TEXT));
                let result = peer
                    .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
                    .await?;
                let failed = result.is_error == Some(true);
                if failed || check {
                    let text = serde_json::to_string(&result)?;
                    if failed || !text.contains(ECHO_TEXT) {
                        return Err(format!("rmcp: unexpected echo result: {text}").into());
                    }
                }
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------- measuring

/// What one client did in one figure, over all rounds.
#[derive(Default, Clone)]
struct Tally {
    calls: usize,
    wall: Duration,
    client_cpu: Duration,
    server_cpu: Duration,
    /// Per-call latencies (sequential figure only).
    samples: Vec<Duration>,
    /// calls/s of each round.
    rounds: Vec<f64>,
}

impl Tally {
    fn per_second(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    fn client_us(&self) -> f64 {
        self.client_cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }

    fn server_us(&self) -> f64 {
        self.server_cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }

    fn p50_us(&mut self) -> Option<f64> {
        if self.samples.is_empty() {
            return None;
        }
        self.samples.sort();
        Some(self.samples[self.samples.len() / 2].as_secs_f64() * 1e6)
    }
}

/// `calls` sequential calls from one task; the per-call latencies.
async fn sequential(caller: &Caller, calls: usize) -> Res<Vec<Duration>> {
    let caller = caller.clone();
    tokio::spawn(async move {
        let mut samples = Vec::with_capacity(calls);
        for i in 0..calls {
            let t = Instant::now();
            caller.call(i == 0 || i + 1 == calls).await?;
            samples.push(t.elapsed());
        }
        Ok::<_, BoxError>(samples)
    })
    .await?
}

/// `calls` calls from `tasks` tasks calling in a loop.
async fn in_flight(caller: &Caller, calls: usize, tasks: usize) -> Res<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..tasks)
        .map(|_| {
            let caller = caller.clone();
            let next = next.clone();
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= calls {
                        return Ok::<_, BoxError>(());
                    }
                    caller.call(i == 0).await?;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Which figure.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Figure {
    Sequential,
    InFlight,
}

/// Measures one figure for every client: warm-up, then `ROUNDS` rounds in
/// rotating client order.
fn measure(
    rt: &tokio::runtime::Runtime,
    server: &ServerProcess,
    callers: &[(Kind, Caller)],
    figure: Figure,
    calls: usize,
    warmup: usize,
) -> Res<Vec<Tally>> {
    let run = |caller: &Caller, n: usize| -> Res<Vec<Duration>> {
        rt.block_on(async {
            let work = async {
                match figure {
                    Figure::Sequential => sequential(caller, n).await,
                    Figure::InFlight => in_flight(caller, n, IN_FLIGHT).await.map(|()| Vec::new()),
                }
            };
            tokio::time::timeout(ROUND_TIMEOUT, work)
                .await
                .map_err(|_| format!("{n} calls took more than {ROUND_TIMEOUT:?}"))?
        })
    };
    for (kind, caller) in callers {
        run(caller, warmup).map_err(|e| format!("{}: {e}", kind.label()))?;
    }
    let per_round = (calls / ROUNDS).max(1);
    let mut tallies = vec![Tally::default(); callers.len()];
    for round in 0..ROUNDS {
        for k in 0..callers.len() {
            let i = (round + k) % callers.len();
            let (cpu, server_cpu, start) = (cpu_time(), server.cpu_time(), Instant::now());
            let (kind, caller) = &callers[i];
            let samples = run(caller, per_round).map_err(|e| format!("{}: {e}", kind.label()))?;
            let wall = start.elapsed();
            let t = &mut tallies[i];
            t.calls += per_round;
            t.wall += wall;
            t.client_cpu += cpu_time().saturating_sub(cpu);
            t.server_cpu += server.cpu_time().saturating_sub(server_cpu);
            t.samples.extend(samples);
            t.rounds
                .push(per_round as f64 / wall.as_secs_f64().max(1e-9));
        }
    }
    Ok(tallies)
}

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

// ----------------------------------------------------------------- report

fn report(title: &str, tallies: &mut [Tally], target: f64) {
    let by = |k: Kind| KINDS.iter().position(|&x| x == k).expect("known kind");
    let (m, r, p) = (by(Kind::Mcpmux), by(Kind::Rmcp), by(Kind::RmcpPooled));
    let faster = if tallies[r].per_second() >= tallies[p].per_second() {
        r
    } else {
        p
    };
    println!("{title}");
    println!(
        "  {:<26} {:>10} {:>10} {:>11} {:>8} {:>8} {:>7}  result",
        "", "mcpmux", "rmcp", "rmcp-pooled", "÷rmcp", "÷pooled", "target"
    );
    // One row: the three figures, mcpmux's ratio to each rmcp variant, and
    // for the target row the verdict against the faster variant.
    let row = |label: &str, v: &[f64], target: Option<f64>| {
        let ratio = |i: usize| v[m] / v[i].max(1e-9);
        let (target_text, verdict) = match target {
            Some(t) if ratio(faster) >= t => (format!("≥ {t:.1}×"), "PASS"),
            Some(t) => (format!("≥ {t:.1}×"), "MISS"),
            None => (String::new(), "info"),
        };
        println!(
            "  {label:<26} {:>10.1} {:>10.1} {:>11.1} {:>7.2}× {:>7.2}× {:>7}  {verdict}",
            v[m],
            v[r],
            v[p],
            ratio(r),
            ratio(p),
            target_text
        );
    };
    let rate: Vec<f64> = tallies.iter().map(Tally::per_second).collect();
    row("calls/s", &rate, Some(target));
    let p50: Option<Vec<f64>> = tallies.iter_mut().map(Tally::p50_us).collect();
    if let Some(p50) = p50 {
        row("p50 latency (µs)", &p50, None);
    }
    let client: Vec<f64> = tallies.iter().map(Tally::client_us).collect();
    row("client CPU per call (µs)", &client, None);
    let server: Vec<f64> = tallies.iter().map(Tally::server_us).collect();
    row("server CPU per call (µs)", &server, None);
    let total: Vec<f64> = client.iter().zip(&server).map(|(c, s)| c + s).collect();
    row("client + server CPU (µs)", &total, None);
    for (kind, t) in KINDS.iter().zip(tallies.iter()) {
        let rounds: Vec<String> = t.rounds.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "    {:<12} calls/s per round: {}",
            kind.label(),
            rounds.join(", ")
        );
    }
    println!(
        "  ÷ = mcpmux's figure divided by that client's (µs rows: lower is better); the target is checked against {} (the faster rmcp variant here)",
        KINDS[faster].label()
    );
    println!();
}

// -------------------------------------------------------------------- run

/// `--profile CLIENT FIGURE [CALLS]`: one client, one figure, no report (for
/// `perf record`).
fn profile(kind: Option<String>, figure: Option<String>, calls: Option<String>) -> Res<()> {
    let usage = "usage: --profile mcpmux|rmcp|rmcp-pooled sequential|inflight[:TASKS] [CALLS]";
    let kind = KINDS
        .into_iter()
        .find(|k| Some(k.label()) == kind.as_deref())
        .ok_or(usage)?;
    let (figure, tasks) = match figure.as_deref() {
        Some("sequential") => (Figure::Sequential, 1),
        Some("inflight") => (Figure::InFlight, IN_FLIGHT),
        Some(f) => match f.strip_prefix("inflight:").and_then(|n| n.parse().ok()) {
            Some(n) if n > 0 => (Figure::InFlight, n),
            _ => return Err(usage.into()),
        },
        None => return Err(usage.into()),
    };
    let calls = match calls {
        Some(n) => n.parse().map_err(|_| usage)?,
        None => 100_000,
    };
    let runtime_kind = std::env::var("MCPMUX_BENCH_RUNTIME").unwrap_or_else(|_| "multi".into());
    let (rt, _) = build_runtime(&runtime_kind)?;
    let rmcp_concurrency = rmcp_concurrency()?;
    let server = ServerProcess::start()?;
    let connection = rt.block_on(Connection::open(kind, &server.url, rmcp_concurrency))?;
    let caller = connection.caller();
    let (cpu, server_cpu, start) = (cpu_time(), server.cpu_time(), Instant::now());
    match figure {
        Figure::Sequential => drop(rt.block_on(sequential(&caller, calls))?),
        Figure::InFlight => rt.block_on(in_flight(&caller, calls, tasks))?,
    }
    let wall = start.elapsed();
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls as f64;
    println!(
        "{} ({tasks} tasks): {calls} calls, {:.0} calls/s, client CPU {:.1} µs/call, server CPU {:.1} µs/call",
        kind.label(),
        calls as f64 / wall.as_secs_f64(),
        per_call(cpu_time().saturating_sub(cpu)),
        per_call(server.cpu_time().saturating_sub(server_cpu)),
    );
    drop(caller);
    rt.block_on(connection.close());
    Ok(())
}

/// `max_concurrent_requests` of rmcp-pooled: `$MCPMUX_BENCH_RMCP_CONCURRENCY`,
/// else rmcp's default.
fn rmcp_concurrency() -> Res<usize> {
    match std::env::var("MCPMUX_BENCH_RMCP_CONCURRENCY") {
        Err(_) => Ok(StreamableHttpClientTransportConfig::default().max_concurrent_requests),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                format!("MCPMUX_BENCH_RMCP_CONCURRENCY={v:?}: expected a positive number").into()
            }),
    }
}

fn build_runtime(kind: &str) -> Res<(tokio::runtime::Runtime, String)> {
    let (mut builder, label) = match kind {
        "current" => (
            tokio::runtime::Builder::new_current_thread(),
            "current-thread".to_owned(),
        ),
        "multi" => (
            tokio::runtime::Builder::new_multi_thread(),
            "multi-thread (default workers)".to_owned(),
        ),
        other => {
            let n: usize = other
                .strip_prefix("multi:")
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    format!("MCPMUX_BENCH_RUNTIME={other:?}: expected multi, multi:N or current")
                })?;
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            (b, format!("multi-thread ({n} workers)"))
        }
    };
    Ok((builder.enable_all().build()?, label))
}

fn run() -> Res<()> {
    let quick = std::env::var("MCPMUX_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let scale = |n: usize| if quick { n / 10 } else { n };
    let only = std::env::var("MCPMUX_BENCH_ONLY").unwrap_or_default();
    let (want_seq, want_par) = match only.trim() {
        "" => (true, true),
        "sequential" => (true, false),
        "inflight" => (false, true),
        other => {
            return Err(
                format!("MCPMUX_BENCH_ONLY={other:?}: expected sequential or inflight").into(),
            )
        }
    };
    let runtime_kind = std::env::var("MCPMUX_BENCH_RUNTIME").unwrap_or_else(|_| "multi".into());
    let (rt, runtime) = build_runtime(&runtime_kind)?;
    let rmcp_concurrency = rmcp_concurrency()?;

    let server = ServerProcess::start()?;
    eprintln!("[http bench] server at {}", server.url);
    let mut connections = Vec::new();
    for kind in KINDS {
        eprintln!("[http bench] connecting {} ...", kind.label());
        let connection = rt
            .block_on(async {
                tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    Connection::open(kind, &server.url, rmcp_concurrency),
                )
                .await
                .map_err(|_| format!("no answer in {CONNECT_TIMEOUT:?}"))?
            })
            .map_err(|e| format!("{}: connect failed: {e}", kind.label()))?;
        connections.push((kind, connection));
    }
    let callers: Vec<(Kind, Caller)> = connections.iter().map(|(k, c)| (*k, c.caller())).collect();

    let mut results = Vec::new();
    if want_seq {
        let (calls, warmup) = (scale(SEQ_CALLS), scale(SEQ_WARMUP));
        eprintln!("[http bench] sequential: {calls} calls per client after {warmup} warm-up ...");
        let tallies = measure(&rt, &server, &callers, Figure::Sequential, calls, warmup)?;
        results.push((
            format!(
                "1. sequential tools/call ({} calls per client after {warmup} warm-up, {ROUNDS} rotating rounds)",
                tallies[0].calls
            ),
            tallies,
            SEQ_TARGET,
        ));
    }
    if want_par {
        let (calls, warmup) = (scale(PAR_CALLS), scale(PAR_WARMUP));
        eprintln!(
            "[http bench] {IN_FLIGHT} in flight: {calls} calls per client after {warmup} warm-up ..."
        );
        let tallies = measure(&rt, &server, &callers, Figure::InFlight, calls, warmup)?;
        results.push((
            format!(
                "2. tools/call with {IN_FLIGHT} in flight ({} calls per client after {warmup} warm-up, {ROUNDS} rotating rounds)",
                tallies[0].calls
            ),
            tallies,
            PAR_TARGET,
        ));
    }
    drop(callers);
    for (_, connection) in connections {
        rt.block_on(connection.close());
    }
    drop(server);

    println!();
    println!(
        "mcpmux Streamable HTTP benchmark (loopback, minimal hyper server in a separate process)"
    );
    println!(
        "  clients: mcpmux (protocol_version pinned to {PINNED_VERSION}); rmcp ({RMCP_REQUIREMENT}) = from_uri defaults (no keep-alive, 16 POSTs at a time); rmcp-pooled = the same with a pooled reqwest client, max_concurrent_requests({rmcp_concurrency})"
    );
    println!(
        "  runtime: {runtime}; machine: {} CPUs; quick: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if quick { "yes (10x fewer calls)" } else { "no" }
    );
    println!();
    for (title, mut tallies, target) in results {
        report(&title, &mut tallies, target);
    }
    Ok(())
}
