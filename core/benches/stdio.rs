//! Stdio benchmark: what mcpmux costs over a bare pipe to a stdio MCP server.
//!
//! A plain program (no harness) that prints a report. Every figure is printed
//! next to a reference measured in the same run against the same server, with
//! the ratio, the target, and PASS/MISS (informational: the program exits 0
//! whether targets are met or not, and non-zero only when something fails).
//!
//! 1. **Sequential `tools/call` latency** — `Hub::call_tool("mcp_demo_echo")`
//!    one call at a time (mean, p50, p99 and calls/s), against the *floor*: a
//!    blocking std thread that spawns the same server, does the `initialize`
//!    handshake by hand, then writes one request line and reads one response
//!    line per call. Target: mean ≤ 1.2× floor.
//! 2. **Throughput with 64 calls in flight** on one connection (64 tokio
//!    tasks), against the *ceiling*: the same raw pipe driven by a writer
//!    thread (at most 64 requests outstanding) and a reader thread.
//!    Target: ≥ 50% of the ceiling.
//! 3. **Connect time** — wall time of `Hub::connect` for 1 and for 20 servers
//!    whose `initialize` answer is delayed 200 ms (`tests/servers/slow_init.py`),
//!    median of 3. Target: 20 servers ≤ 1.5× one server.
//! 4. **Resident memory per idle connection** — this process's RSS
//!    (`/proc/self/statm`) with 1 and with 100 demo servers connected,
//!    `(RSS100 - RSS1) / 99`. The rmcp figure (≈ 30 KB) is quoted, not measured.
//!
//! The server is the bundled demo server: `$MCPMUX_DEMO_SERVER`, else
//! `<workspace>/target/release/mcpmux-demo-server`, built with
//! `cargo build --release -p mcpmux-demo-server` when missing. Python servers
//! run with `<workspace>/.deps/venv/bin/python` when it exists, else `python3`.
//!
//! Run it with
//!
//! ```text
//! cargo bench -p mcpmux-core --bench stdio
//! ```
//!
//! Environment:
//!
//! - `MCPMUX_BENCH_QUICK=1` — 10× fewer iterations (CI smoke run).
//! - `MCPMUX_BENCH_RUNTIME` — `multi` (default: multi-thread, default worker
//!   count), `multi:N` (N workers) or `current` (current-thread runtime).
//! - `MCPMUX_BENCH_ONLY` — comma-separated subset of `latency`, `throughput`,
//!   `connect`, `memory` (default: all), e.g. for profiling one section.

use std::error::Error as StdError;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpmux_core::{CallOptions, Config, Hub};
use serde_json::Value;

type BoxError = Box<dyn StdError + Send + Sync>;
type Res<T> = Result<T, BoxError>;

/// Text echoed by every call.
const ECHO_TEXT: &str = "hello from the mcpmux benchmark";
/// Calls in flight for the throughput figures.
const IN_FLIGHT: usize = 64;
/// Servers for the connect figure, and their `initialize` delay.
const CONNECT_SERVERS: usize = 20;
const INIT_DELAY_MS: u64 = 200;
/// Repeats of each connect measurement (the median is reported).
const CONNECT_REPEATS: usize = 3;
/// Connections for the memory figure.
const MEMORY_SERVERS: usize = 100;
/// rmcp's resident memory per idle connection, as quoted in the issue.
const RMCP_KB_PER_CONNECTION: f64 = 30.0;

fn main() {
    if let Err(e) = run() {
        eprintln!("stdio bench failed: {e}");
        std::process::exit(1);
    }
}

/// What this run measures and how.
struct Setup {
    workspace: PathBuf,
    demo: PathBuf,
    python: PathBuf,
    quick: bool,
    runtime: String,
    only: Option<Vec<String>>,
}

impl Setup {
    fn scale(&self, n: usize) -> usize {
        if self.quick {
            n / 10
        } else {
            n
        }
    }

    fn wants(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|s| s == section))
    }

    fn demo_config(&self, names: impl IntoIterator<Item = String>) -> Res<Config> {
        let mut toml = String::new();
        for name in names {
            server_entry(&mut toml, &name, &self.demo, &[], &[]);
        }
        Ok(Config::parse(&toml)?)
    }
}

fn run() -> Res<()> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()?;
    let quick = std::env::var("MCPMUX_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let runtime_kind = std::env::var("MCPMUX_BENCH_RUNTIME").unwrap_or_else(|_| "multi".into());
    let only = std::env::var("MCPMUX_BENCH_ONLY").ok().map(|v| {
        v.split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    });
    let venv = workspace.join(".deps/venv/bin/python");
    let python = if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    };
    let demo = demo_server(&workspace)?;

    let (rt, runtime) = build_runtime(&runtime_kind)?;
    let setup = Setup {
        workspace,
        demo,
        python,
        quick,
        runtime,
        only,
    };

    let mut report = Report::default();
    // Memory first, while the heap is still fresh.
    if setup.wants("memory") {
        eprintln!("[stdio bench] memory: 1 and {MEMORY_SERVERS} idle connections ...");
        rt.block_on(bench_memory(&setup, &mut report))?;
    }
    if setup.wants("latency") || setup.wants("throughput") {
        let hub = rt.block_on(Hub::connect(setup.demo_config(["demo".to_owned()])?))?;
        ensure_connected(&hub)?;
        if setup.wants("latency") {
            eprintln!("[stdio bench] sequential latency ...");
            bench_latency(&setup, &rt, &hub, &mut report)?;
        }
        if setup.wants("throughput") {
            eprintln!("[stdio bench] throughput, {IN_FLIGHT} in flight ...");
            bench_throughput(&setup, &rt, &hub, &mut report)?;
        }
        rt.block_on(hub.close());
    }
    if setup.wants("connect") {
        eprintln!("[stdio bench] connect time, 1 and {CONNECT_SERVERS} slow servers ...");
        rt.block_on(bench_connect(&setup, &mut report))?;
    }

    println!();
    println!("mcpmux stdio benchmark");
    println!("  server:  {}", setup.demo.display());
    println!("  python:  {}", setup.python.display());
    println!(
        "  runtime: {}; machine: {} CPUs; quick: {}",
        setup.runtime,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if setup.quick {
            "yes (10x fewer iterations)"
        } else {
            "no"
        }
    );
    println!();
    report.print();
    Ok(())
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

/// Finds the demo server, building it when it is missing.
fn demo_server(workspace: &Path) -> Res<PathBuf> {
    if let Some(path) = std::env::var_os("MCPMUX_DEMO_SERVER") {
        let path = PathBuf::from(path);
        if !path.exists() {
            return Err(format!("MCPMUX_DEMO_SERVER={} does not exist", path.display()).into());
        }
        return Ok(path);
    }
    let path = workspace.join("target/release/mcpmux-demo-server");
    if !path.exists() {
        eprintln!("[stdio bench] building the demo server (cargo build --release -p mcpmux-demo-server) ...");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "-p", "mcpmux-demo-server"])
            .current_dir(workspace)
            .status()?;
        if !status.success() || !path.exists() {
            return Err(format!("building the demo server failed ({status})").into());
        }
    }
    Ok(path)
}

/// Appends one `[[mcp.servers]]` stdio entry.
fn server_entry(
    toml: &mut String,
    name: &str,
    command: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) {
    // A JSON string is a valid TOML basic string.
    let s = |v: &str| serde_json::to_string(v).expect("strings serialize");
    let args: Vec<String> = args.iter().map(|a| s(a)).collect();
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {}", s(v))).collect();
    let _ = writeln!(
        toml,
        "[[mcp.servers]]\nname = {}\ntype = \"stdio\"\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n",
        s(name),
        s(&command.to_string_lossy()),
        args.join(", "),
        env.join(", "),
    );
}

fn ensure_connected(hub: &Hub) -> Res<()> {
    for s in hub.servers() {
        if s.state != "connected" {
            return Err(format!(
                "server '{}' is {}: {}",
                s.name,
                s.state,
                s.error.unwrap_or_default()
            )
            .into());
        }
    }
    Ok(())
}

fn echo_args() -> Value {
    serde_json::json!({ "text": ECHO_TEXT })
}

// ---------------------------------------------------------------- 1. latency

fn bench_latency(
    setup: &Setup,
    rt: &tokio::runtime::Runtime,
    hub: &Hub,
    report: &mut Report,
) -> Res<()> {
    let warmup = setup.scale(2_000);
    let calls = setup.scale(20_000);

    let floor = {
        let demo = setup.demo.clone();
        std::thread::spawn(move || raw_sequential(&demo, warmup, calls))
            .join()
            .map_err(|_| "the floor thread panicked")??
    };

    // The loop runs in a task on a worker thread, like application code.
    let hub = hub.clone();
    let ours = rt.block_on(async move {
        tokio::spawn(async move {
            let args = echo_args();
            let opts = CallOptions::default();
            let first = hub.call_tool("mcp_demo_echo", Some(&args), &opts).await?;
            if first.is_error() || !first.json().contains(ECHO_TEXT) {
                return Err(format!("unexpected echo result: {}", first.json()).into());
            }
            for _ in 0..warmup {
                hub.call_tool("mcp_demo_echo", Some(&args), &opts).await?;
            }
            let mut samples = Vec::with_capacity(calls);
            let start = Instant::now();
            for _ in 0..calls {
                let t = Instant::now();
                hub.call_tool("mcp_demo_echo", Some(&args), &opts).await?;
                samples.push(t.elapsed());
            }
            Ok::<_, BoxError>(Latencies::new(samples, start.elapsed()))
        })
        .await?
    })?;

    report.section(format!(
        "1. sequential tools/call latency ({calls} calls after {warmup} warm-up)"
    ));
    report.row(Row::target(
        "mean latency (µs)",
        ours.mean_us(),
        floor.mean_us(),
        "floor",
        Target::AtMost(1.2),
    ));
    report.row(Row::info(
        "p50 latency (µs)",
        ours.pct_us(50.0),
        floor.pct_us(50.0),
        "floor",
    ));
    report.row(Row::info(
        "p99 latency (µs)",
        ours.pct_us(99.0),
        floor.pct_us(99.0),
        "floor",
    ));
    report.row(Row::info(
        "sequential throughput (calls/s)",
        ours.per_second(),
        floor.per_second(),
        "floor",
    ));
    Ok(())
}

struct Latencies {
    sorted: Vec<Duration>,
    total: Duration,
}

impl Latencies {
    fn new(mut samples: Vec<Duration>, total: Duration) -> Latencies {
        samples.sort_unstable();
        Latencies {
            sorted: samples,
            total,
        }
    }

    fn mean_us(&self) -> f64 {
        let sum: Duration = self.sorted.iter().sum();
        sum.as_secs_f64() * 1e6 / self.sorted.len().max(1) as f64
    }

    fn pct_us(&self, p: f64) -> f64 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1].as_secs_f64() * 1e6
    }

    fn per_second(&self) -> f64 {
        self.sorted.len() as f64 / self.total.as_secs_f64()
    }
}

/// A server process driven by hand over its pipes.
struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl RawServer {
    /// Spawns `program` and runs the `initialize` handshake.
    fn start(program: &Path) -> Res<RawServer> {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("piped"));
        let mut server = RawServer {
            child,
            stdin: Some(stdin),
            stdout,
        };
        server.send(
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-pipe","version":"0"}}}
"#,
        )?;
        let mut line = String::new();
        server.stdout.read_line(&mut line)?;
        if !line.contains(r#""result""#) {
            return Err(format!("raw handshake: unexpected initialize answer: {line}").into());
        }
        server.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        // The demo server announces itself once with a log notification.
        line.clear();
        server.stdout.read_line(&mut line)?;
        if !line.contains("notifications/message") {
            return Err(format!("raw handshake: expected a log notification, got: {line}").into());
        }
        Ok(server)
    }

    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stdin.as_mut().expect("stdin open").write_all(bytes)
    }

    fn finish(mut self) -> Res<()> {
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if !status.success() {
            return Err(format!("raw server exited with {status}").into());
        }
        Ok(())
    }
}

/// Writes the `tools/call` line the engine would send for request `id`.
fn request_line(buf: &mut Vec<u8>, id: u64) {
    let _ = writeln!(
        buf,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}},"_meta":{{"progressToken":{id}}}}}}}"#
    );
}

/// The floor: one request line out, one response line in, blocking.
fn raw_sequential(program: &Path, warmup: usize, calls: usize) -> Res<Latencies> {
    let mut server = RawServer::start(program)?;
    let mut out = Vec::with_capacity(512);
    let mut line = String::with_capacity(512);
    let mut id = 1u64;
    let mut call = |server: &mut RawServer| -> Res<()> {
        out.clear();
        request_line(&mut out, id);
        id += 1;
        server.send(&out)?;
        line.clear();
        if server.stdout.read_line(&mut line)? == 0 {
            return Err("raw server closed its stdout".into());
        }
        Ok(())
    };
    for _ in 0..warmup {
        call(&mut server)?;
    }
    let mut samples = Vec::with_capacity(calls);
    let start = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        call(&mut server)?;
        samples.push(t.elapsed());
    }
    let total = start.elapsed();
    if !line.contains(ECHO_TEXT) {
        return Err(format!("raw server: unexpected echo answer: {line}").into());
    }
    server.finish()?;
    Ok(Latencies::new(samples, total))
}

// ------------------------------------------------------------- 2. throughput

fn bench_throughput(
    setup: &Setup,
    rt: &tokio::runtime::Runtime,
    hub: &Hub,
    report: &mut Report,
) -> Res<()> {
    let warmup = setup.scale(10_000);
    let calls = setup.scale(200_000);

    let ceiling = {
        let demo = setup.demo.clone();
        std::thread::spawn(move || raw_pipelined(&demo, warmup, calls))
            .join()
            .map_err(|_| "the ceiling thread panicked")??
    };

    let _ = rt.block_on(hub_pipelined(hub, warmup))?;
    let ours = rt.block_on(hub_pipelined(hub, calls))?;

    report.section(format!(
        "2. throughput, {IN_FLIGHT} calls in flight on one connection ({calls} calls)"
    ));
    report.row(Row::target(
        "throughput (calls/s)",
        calls as f64 / ours.as_secs_f64(),
        calls as f64 / ceiling.as_secs_f64(),
        "ceiling",
        Target::AtLeast(0.5),
    ));
    Ok(())
}

/// `calls` echo calls through the hub by `IN_FLIGHT` tasks; the wall time.
async fn hub_pipelined(hub: &Hub, calls: usize) -> Res<Duration> {
    let next = Arc::new(AtomicUsize::new(0));
    let args = Arc::new(echo_args());
    let start = Instant::now();
    let tasks: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (hub, next, args) = (hub.clone(), next.clone(), args.clone());
            tokio::spawn(async move {
                let opts = CallOptions::default();
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    hub.call_tool("mcp_demo_echo", Some(&args), &opts).await?;
                }
                Ok::<_, BoxError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(start.elapsed())
}

/// The ceiling: the same raw pipe, pipelined. Returns the wall time of
/// `calls` calls after `warmup` calls.
fn raw_pipelined(program: &Path, warmup: usize, calls: usize) -> Res<Duration> {
    let mut server = RawServer::start(program)?;
    raw_window(&mut server, 1, warmup)?;
    let elapsed = raw_window(&mut server, warmup as u64 + 1, calls)?;
    server.finish()?;
    Ok(elapsed)
}

/// `calls` calls with ids from `first_id`: a writer thread keeps at most
/// `IN_FLIGHT` requests outstanding (several lines per write when the window
/// allows, one otherwise) while this thread reads the responses.
fn raw_window(server: &mut RawServer, first_id: u64, calls: usize) -> Res<Duration> {
    let mut stdin = server.stdin.take().expect("stdin open");
    // One token per outstanding request: the writer puts, the reader takes.
    let (window_tx, window_rx) = std::sync::mpsc::sync_channel::<()>(IN_FLIGHT);
    let start = Instant::now();
    let writer = std::thread::spawn(move || -> std::io::Result<ChildStdin> {
        let mut buf = Vec::with_capacity(64 * 1024);
        for id in first_id..first_id + calls as u64 {
            if window_tx.try_send(()).is_err() {
                // Window full: send what is queued, then wait for a slot.
                stdin.write_all(&buf)?;
                buf.clear();
                if window_tx.send(()).is_err() {
                    break;
                }
            }
            request_line(&mut buf, id);
            if buf.len() >= 64 * 1024 {
                stdin.write_all(&buf)?;
                buf.clear();
            }
        }
        stdin.write_all(&buf)?;
        Ok(stdin)
    });
    let mut line = String::with_capacity(512);
    for _ in 0..calls {
        line.clear();
        if server.stdout.read_line(&mut line)? == 0 {
            return Err("raw server closed its stdout".into());
        }
        window_rx.recv()?;
    }
    let elapsed = start.elapsed();
    server.stdin = Some(writer.join().map_err(|_| "the writer thread panicked")??);
    if !line.contains(ECHO_TEXT) {
        return Err(format!("raw server: unexpected echo answer: {line}").into());
    }
    Ok(elapsed)
}

// ---------------------------------------------------------------- 3. connect

async fn bench_connect(setup: &Setup, report: &mut Report) -> Res<()> {
    let script = setup.workspace.join("tests/servers/slow_init.py");
    let script = script.to_string_lossy();
    let delay = INIT_DELAY_MS.to_string();
    let config = |n: usize| -> Res<Config> {
        let mut toml = String::new();
        for i in 0..n {
            server_entry(
                &mut toml,
                &format!("slow{i}"),
                &setup.python,
                &[&script],
                &[("INIT_DELAY_MS", &delay)],
            );
        }
        Ok(Config::parse(&toml)?)
    };
    let mut one = Vec::new();
    let mut many = Vec::new();
    for _ in 0..CONNECT_REPEATS {
        for (n, times) in [(1, &mut one), (CONNECT_SERVERS, &mut many)] {
            let config = config(n)?;
            let start = Instant::now();
            let hub = Hub::connect(config).await?;
            times.push(start.elapsed());
            let checked = ensure_connected(&hub);
            hub.close().await;
            checked?;
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    let (one, many) = (median(&mut one), median(&mut many));
    report.section(format!(
        "3. connect time, initialize delayed {INIT_DELAY_MS} ms (median of {CONNECT_REPEATS})"
    ));
    report.row(Row::target(
        &format!("Hub::connect, {CONNECT_SERVERS} servers (ms)"),
        many,
        one,
        "1 server",
        Target::AtMost(1.5),
    ));
    Ok(())
}

// ----------------------------------------------------------------- 4. memory

async fn bench_memory(setup: &Setup, report: &mut Report) -> Res<()> {
    let (rss1, rss100) = memory_pass(setup, false).await?;
    let trimmed = if cfg!(all(target_os = "linux", target_env = "gnu")) {
        Some(memory_pass(setup, true).await?)
    } else {
        None
    };
    let per = |(a, b): (u64, u64)| (b as f64 - a as f64) / (MEMORY_SERVERS - 1) as f64 / 1024.0;
    report.section(format!(
        "4. resident memory per idle connection (RSS with 1 vs {MEMORY_SERVERS} demo servers)"
    ));
    report.row(Row::info(
        "RSS per connection (KB)",
        per((rss1, rss100)),
        RMCP_KB_PER_CONNECTION,
        "rmcp (quoted, not measured)",
    ));
    report.note(format!(
        "process RSS with 1 connection: {:.1} MB; with {MEMORY_SERVERS}: {:.1} MB",
        rss1 as f64 / 1048576.0,
        rss100 as f64 / 1048576.0
    ));
    if let Some(t) = trimmed {
        report.note(format!(
            "second pass with malloc_trim(0) before each reading (freed heap returned to the OS): {:.1} KB per connection",
            per(t)
        ));
    }
    Ok(())
}

/// Connects 1 server, reads RSS, connects 99 more (a second hub), reads RSS.
async fn memory_pass(setup: &Setup, trim: bool) -> Res<(u64, u64)> {
    // Everything allocated up front, so that only the connections themselves
    // lie between the two readings.
    let first = setup.demo_config(["mem0".to_owned()])?;
    let rest = setup.demo_config((1..MEMORY_SERVERS).map(|i| format!("mem{i}")))?;
    let settle = Duration::from_millis(300);
    let reading = || {
        if trim {
            malloc_trim();
        }
        rss_bytes()
    };

    let hub1 = Hub::connect(first).await?;
    tokio::time::sleep(settle).await;
    let rss1 = reading()?;
    let hub99 = Hub::connect(rest).await?;
    tokio::time::sleep(settle).await;
    let rss100 = reading()?;

    let checked = ensure_connected(&hub1).and(ensure_connected(&hub99));
    hub99.close().await;
    hub1.close().await;
    checked?;
    Ok((rss1, rss100))
}

/// Hands freed heap memory back to the OS (glibc only).
fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory malloc no longer uses.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Resident set size of this process.
fn rss_bytes() -> Res<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .ok_or("/proc/self/statm: no resident field")?
        .parse()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * page.max(1) as u64)
}

// ----------------------------------------------------------------- report

enum Target {
    AtMost(f64),
    AtLeast(f64),
}

struct Row {
    name: String,
    ours: f64,
    reference: f64,
    reference_kind: String,
    target: Option<Target>,
}

impl Row {
    fn target(name: &str, ours: f64, reference: f64, kind: &str, target: Target) -> Row {
        Row {
            name: name.to_owned(),
            ours,
            reference,
            reference_kind: kind.to_owned(),
            target: Some(target),
        }
    }

    fn info(name: &str, ours: f64, reference: f64, kind: &str) -> Row {
        Row {
            target: None,
            ..Row::target(name, ours, reference, kind, Target::AtMost(0.0))
        }
    }
}

enum Line {
    Section(String),
    Row(Row),
    Note(String),
}

#[derive(Default)]
struct Report {
    lines: Vec<Line>,
}

impl Report {
    fn section(&mut self, title: String) {
        self.lines.push(Line::Section(title));
    }

    fn row(&mut self, row: Row) {
        self.lines.push(Line::Row(row));
    }

    fn note(&mut self, text: String) {
        self.lines.push(Line::Note(text));
    }

    fn print(&self) {
        println!(
            "{:<34} {:>12}  {:>12}  {:<28} {:>8}  {:<22} {}",
            "figure", "mcpmux", "reference", "(reference is)", "ratio", "target", "result"
        );
        println!("{}", "-".repeat(132));
        let (mut pass, mut miss) = (0, 0);
        for line in &self.lines {
            match line {
                Line::Section(title) => println!("\n{title}"),
                Line::Note(text) => println!("  note: {text}"),
                Line::Row(r) => {
                    let ratio = r.ours / r.reference;
                    let (target, verdict) = match r.target {
                        None => ("-".to_owned(), "info"),
                        Some(Target::AtMost(x)) => (
                            format!("<= {x:.2}x {}", r.reference_kind),
                            if ratio <= x { "PASS" } else { "MISS" },
                        ),
                        Some(Target::AtLeast(x)) => (
                            format!(">= {:.0}% of {}", x * 100.0, r.reference_kind),
                            if ratio >= x { "PASS" } else { "MISS" },
                        ),
                    };
                    match verdict {
                        "PASS" => pass += 1,
                        "MISS" => miss += 1,
                        _ => {}
                    }
                    let ratio = match r.target {
                        Some(Target::AtLeast(_)) => format!("{:.0}%", ratio * 100.0),
                        _ => format!("{ratio:.2}x"),
                    };
                    println!(
                        "  {:<32} {:>12}  {:>12}  {:<28} {:>8}  {:<22} {}",
                        r.name,
                        num(r.ours),
                        num(r.reference),
                        r.reference_kind,
                        ratio,
                        target,
                        verdict
                    );
                }
            }
        }
        println!();
        println!("targets: {pass} PASS, {miss} MISS (informational; exit status 0 either way)");
    }
}

fn num(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{x:.0}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}
