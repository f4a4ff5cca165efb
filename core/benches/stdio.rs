//! Stdio benchmark: what mcpmux costs over a bare pipe to a stdio MCP server.
//!
//! A plain program (no harness) that prints a report. Every figure is printed
//! next to a reference measured in the same run against the same server, with
//! the ratio, the target, and PASS/MISS (informational: the program exits 0
//! whether targets are met or not, and non-zero only when something fails).
//!
//! 1. **Sequential `tools/call` latency** — `Hub::call_tool("mcp_demo_echo")`
//!    one call at a time from a task (mean, p50, p99, calls/s), against the
//!    *floor*: a blocking loop on a std thread that spawns the same server,
//!    does the `initialize` handshake by hand, then writes one request line
//!    and reads one response line per call. Target: mean ≤ 1.2× floor.
//! 2. **Throughput with 64 calls in flight** on one connection (64 tokio
//!    tasks calling in a loop), against the *ceiling*: the same raw pipe driven
//!    by a writer thread (at most 64 requests outstanding) and a reader.
//!    Target: ≥ 50% of the ceiling.
//! 3. **Connect time** — wall time of `Hub::connect` for 1 and for 20 servers
//!    (the demo server with `DEMO_INIT_DELAY_MS=200`: a sleep, not work),
//!    median of 3, then `close`. Target: 20 servers ≤ 1.5× one server. Also
//!    printed: the same connects done by hand over raw pipes, and the CPU the
//!    server processes themselves need, which bounds this figure on a
//!    machine with few CPUs.
//! 4. **Resident memory per idle connection** — this process's RSS
//!    (`/proc/self/statm`) with 1 and with 100 demo servers connected,
//!    `(RSS100 - RSS1) / 99`. The rmcp figure (≈ 30 KB) is quoted, not measured.
//!    Measured first, while the heap is fresh; a second pass with
//!    `malloc_trim(0)` before each reading is printed as a note (glibc).
//!
//! Figures 1 and 2 alternate reference and mcpmux in 4 rounds so that both
//! see the same machine, and also print the CPU time (user + system, from
//! `getrusage`) this process spends per call: on a busy or small machine
//! that is steadier than wall time. The server runs on the same machine, so
//! run the benchmark on an otherwise idle one.
//!
//! The server is the bundled demo server: `$MCPMUX_DEMO_SERVER`, else
//! `<workspace>/target/release/mcpmux-demo-server`, built with
//! `cargo build --release -p mcpmux-demo-server` when missing.
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
/// Rounds of the latency and throughput figures; each round measures the
/// reference and mcpmux back to back, in alternating order.
const ROUNDS: usize = 4;
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
    demo: PathBuf,
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
        match &self.only {
            Some(only) => only.iter().any(|s| s == section),
            None => true,
        }
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
    let only: Option<Vec<String>> = std::env::var("MCPMUX_BENCH_ONLY").ok().map(|v| {
        v.split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    });
    const SECTIONS: [&str; 4] = ["latency", "throughput", "connect", "memory"];
    if let Some(bad) = only
        .iter()
        .flatten()
        .find(|s| !SECTIONS.contains(&s.as_str()))
    {
        return Err(format!(
            "MCPMUX_BENCH_ONLY: unknown section '{bad}' (known: {})",
            SECTIONS.join(", ")
        )
        .into());
    }
    let demo = demo_server(&workspace)?;

    let (rt, runtime) = build_runtime(&runtime_kind)?;
    let setup = Setup {
        demo,
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
        bench_connect(&setup, &rt, &mut report)?;
    }

    println!();
    println!("mcpmux stdio benchmark");
    println!("  server:  {}", setup.demo.display());
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
    let per_round = calls / ROUNDS;

    let mut raw = RawServer::start(&setup.demo)?;
    raw_sequential(&mut raw, warmup)?;
    rt.block_on(hub_sequential(hub, warmup))?;
    // Rounds alternate between the two so that both see the same machine.
    let (mut floor, mut ours) = (Latencies::default(), Latencies::default());
    let (mut floor_cpu, mut ours_cpu) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        for side in [round % 2, 1 - round % 2] {
            let cpu = cpu_time();
            if side == 0 {
                floor.extend(raw_sequential(&mut raw, per_round)?);
                floor_cpu += cpu_time().saturating_sub(cpu);
            } else {
                ours.extend(rt.block_on(hub_sequential(hub, per_round))?);
                ours_cpu += cpu_time().saturating_sub(cpu);
            }
        }
    }
    raw.finish()?;
    floor.sort();
    ours.sort();

    report.section(
        1,
        format!(
            "sequential tools/call latency ({} calls after {warmup} warm-up, {ROUNDS} alternating rounds)",
            per_round * ROUNDS
        ),
    );
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
    let n = (per_round * ROUNDS).max(1) as f64;
    report.row(Row::info(
        "client CPU per call (µs)",
        ours_cpu.as_secs_f64() * 1e6 / n,
        floor_cpu.as_secs_f64() * 1e6 / n,
        "floor",
    ));
    report.note(
        "floor = blocking loop on a std thread over the same server's pipes: \
         write one request line, read_line one response"
            .to_owned(),
    );
    Ok(())
}

/// `calls` sequential echo calls through the hub, from a task on a worker
/// thread (as application code would make them).
async fn hub_sequential(hub: &Hub, calls: usize) -> Res<Latencies> {
    let hub = hub.clone();
    tokio::spawn(async move {
        let args = echo_args();
        let opts = CallOptions::default();
        let mut samples = Vec::with_capacity(calls);
        let start = Instant::now();
        let mut last = None;
        for _ in 0..calls {
            let t = Instant::now();
            let result = hub.call_tool("mcp_demo_echo", Some(&args), &opts).await?;
            samples.push(t.elapsed());
            last = Some(result);
        }
        let total = start.elapsed();
        if let Some(result) = last {
            if result.is_error() || !result.json().contains(ECHO_TEXT) {
                return Err(format!("unexpected echo result: {}", result.json()).into());
            }
        }
        Ok::<_, BoxError>(Latencies { samples, total })
    })
    .await?
}

/// Per-call latencies and the wall time they took together.
#[derive(Default)]
struct Latencies {
    samples: Vec<Duration>,
    total: Duration,
}

impl Latencies {
    fn extend(&mut self, other: Latencies) {
        self.samples.extend(other.samples);
        self.total += other.total;
    }

    fn sort(&mut self) {
        self.samples.sort_unstable();
    }

    fn mean_us(&self) -> f64 {
        let sum: Duration = self.samples.iter().sum();
        sum.as_secs_f64() * 1e6 / self.samples.len().max(1) as f64
    }

    /// Percentile `p` (nearest rank) of the sorted samples.
    fn pct_us(&self, p: f64) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.samples.len() as f64).ceil() as usize;
        self.samples[rank.clamp(1, self.samples.len()) - 1].as_secs_f64() * 1e6
    }

    fn per_second(&self) -> f64 {
        self.samples.len() as f64 / self.total.as_secs_f64()
    }
}

/// A server process driven by hand over its pipes.
struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
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
            next_id: 1,
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

    /// Ids for the next `n` requests.
    fn take_ids(&mut self, n: usize) -> std::ops::Range<u64> {
        let first = self.next_id;
        self.next_id += n as u64;
        first..self.next_id
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

/// The floor: `calls` times one request line out, one response line in,
/// blocking, on the calling thread.
fn raw_sequential(server: &mut RawServer, calls: usize) -> Res<Latencies> {
    let mut out = Vec::with_capacity(512);
    let mut line = String::with_capacity(512);
    let mut samples = Vec::with_capacity(calls);
    let start = Instant::now();
    for id in server.take_ids(calls) {
        let t = Instant::now();
        out.clear();
        request_line(&mut out, id);
        server.send(&out)?;
        line.clear();
        if server.stdout.read_line(&mut line)? == 0 {
            return Err("raw server closed its stdout".into());
        }
        samples.push(t.elapsed());
    }
    let total = start.elapsed();
    if calls > 0 && !line.contains(ECHO_TEXT) {
        return Err(format!("raw server: unexpected echo answer: {line}").into());
    }
    Ok(Latencies { samples, total })
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
    let per_round = calls / ROUNDS;

    let mut raw = RawServer::start(&setup.demo)?;
    raw_window(&mut raw, warmup)?;
    rt.block_on(hub_pipelined(hub, warmup))?;
    let (mut ceiling, mut ours) = (Duration::ZERO, Duration::ZERO);
    let (mut ceiling_cpu, mut ours_cpu) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        for side in [round % 2, 1 - round % 2] {
            let cpu = cpu_time();
            if side == 0 {
                ceiling += raw_window(&mut raw, per_round)?;
                ceiling_cpu += cpu_time().saturating_sub(cpu);
            } else {
                ours += rt.block_on(hub_pipelined(hub, per_round))?;
                ours_cpu += cpu_time().saturating_sub(cpu);
            }
        }
    }
    raw.finish()?;

    let total = (per_round * ROUNDS) as f64;
    report.section(
        2,
        format!(
            "throughput, {IN_FLIGHT} calls in flight on one connection ({total} calls, {ROUNDS} alternating rounds)"
        ),
    );
    report.row(Row::target(
        "throughput (calls/s)",
        total / ours.as_secs_f64(),
        total / ceiling.as_secs_f64(),
        "ceiling",
        Target::AtLeast(0.5),
    ));
    report.row(Row::info(
        "client CPU per call (µs)",
        ours_cpu.as_secs_f64() * 1e6 / total,
        ceiling_cpu.as_secs_f64() * 1e6 / total,
        "ceiling",
    ));
    report.note(format!(
        "mcpmux = {IN_FLIGHT} tokio tasks calling in a loop; ceiling = raw pipe, a writer thread \
         keeping <= {IN_FLIGHT} requests outstanding and a reader thread"
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

/// The ceiling: `calls` calls over the raw pipe, a writer thread keeping at
/// most `IN_FLIGHT` requests outstanding (several lines per write when the
/// window allows, one otherwise) while this thread reads the responses.
/// Returns the wall time.
fn raw_window(server: &mut RawServer, calls: usize) -> Res<Duration> {
    let ids = server.take_ids(calls);
    let mut stdin = server.stdin.take().expect("stdin open");
    // One token per outstanding request: the writer puts, the reader takes.
    let (window_tx, window_rx) = std::sync::mpsc::sync_channel::<()>(IN_FLIGHT);
    let start = Instant::now();
    let writer = std::thread::spawn(move || -> std::io::Result<ChildStdin> {
        let mut buf = Vec::with_capacity(64 * 1024);
        for id in ids {
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
    if calls > 0 && !line.contains(ECHO_TEXT) {
        return Err(format!("raw server: unexpected echo answer: {line}").into());
    }
    Ok(elapsed)
}

// ---------------------------------------------------------------- 3. connect

fn bench_connect(setup: &Setup, rt: &tokio::runtime::Runtime, report: &mut Report) -> Res<()> {
    let delay = INIT_DELAY_MS.to_string();
    let config = |n: usize| -> Res<Config> {
        let mut toml = String::new();
        for i in 0..n {
            server_entry(
                &mut toml,
                &format!("slow{i}"),
                &setup.demo,
                &[],
                &[("DEMO_INIT_DELAY_MS", &delay)],
            );
        }
        Ok(Config::parse(&toml)?)
    };
    let connect = |n: usize| -> Res<Duration> {
        let config = config(n)?;
        rt.block_on(async {
            let start = Instant::now();
            let hub = Hub::connect(config).await?;
            let elapsed = start.elapsed();
            let checked = ensure_connected(&hub);
            hub.close().await;
            checked.map(|()| elapsed)
        })
    };
    let raw = |n: usize| raw_connect(&setup.demo, &delay, n);

    let mut times: [Vec<Duration>; 4] = Default::default();
    // CPU the raw servers use between them (they are waited for, so they count).
    let mut startup_cpu = Duration::ZERO;
    for _ in 0..CONNECT_REPEATS {
        times[0].push(connect(1)?);
        times[1].push(connect(CONNECT_SERVERS)?);
        times[2].push(raw(1)?);
        let cpu = children_cpu_time();
        times[3].push(raw(CONNECT_SERVERS)?);
        startup_cpu += children_cpu_time().saturating_sub(cpu);
    }
    let [one, many, raw_one, raw_many] = times.map(|mut v| {
        v.sort_unstable();
        v[v.len() / 2].as_secs_f64() * 1e3
    });
    report.section(
        3,
        format!(
            "connect time, initialize delayed {INIT_DELAY_MS} ms (median of {CONNECT_REPEATS})"
        ),
    );
    report.row(Row::target(
        &format!("Hub::connect, {CONNECT_SERVERS} vs 1 server (ms)"),
        many,
        one,
        "Hub::connect, 1 server",
        Target::AtMost(1.5),
    ));
    report.row(Row::info(
        "Hub::connect, 1 server (ms)",
        one,
        raw_one,
        "raw spawn + handshake",
    ));
    report.row(Row::info(
        &format!("Hub::connect, {CONNECT_SERVERS} servers (ms)"),
        many,
        raw_many,
        "raw spawn + handshake",
    ));
    report.row(Row::info(
        &format!("raw, {CONNECT_SERVERS} servers (ms)"),
        raw_many,
        raw_one,
        "raw, 1 server",
    ));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_server = startup_cpu.as_secs_f64() * 1e3 / (CONNECT_REPEATS * CONNECT_SERVERS) as f64;
    let busy = per_server * CONNECT_SERVERS as f64 / cpus as f64;
    report.note(format!(
        "the raw servers use {per_server:.0} ms of CPU each (start-up and exit); \
         {CONNECT_SERVERS} of them on {cpus} CPUs keep every CPU busy for {busy:.0} ms \
         ({:.2}x the 1-server connect) whatever the client does",
        busy / one
    ));
    report.note(
        "raw = std::process spawns of the same servers, initialize + tools/list written \
         to all at once, answers read by hand"
            .to_owned(),
    );
    Ok(())
}

/// The same connect done by hand: spawn `n` servers, send each `initialize`,
/// then per server read the answer, send `initialized` and `tools/list` and
/// read that answer. Returns the wall time until every server is ready.
fn raw_connect(server: &Path, delay: &str, n: usize) -> Res<Duration> {
    const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-pipe","version":"0"}}}
"#;
    const READY: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
        {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n";
    let start = Instant::now();
    let mut servers = Vec::with_capacity(n);
    for _ in 0..n {
        let mut child = Command::new(server)
            .env("DEMO_INIT_DELAY_MS", delay)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        stdin.write_all(INITIALIZE)?;
        servers.push((child, stdin, stdout));
    }
    let mut line = String::new();
    for (_, stdin, stdout) in &mut servers {
        for request in [None, Some(READY)] {
            if let Some(request) = request {
                stdin.write_all(request)?;
            }
            // Skip notifications; stop at the response.
            loop {
                line.clear();
                if stdout.read_line(&mut line)? == 0 {
                    return Err("raw connect: server closed its stdout".into());
                }
                if line.contains(r#""id""#) {
                    break;
                }
            }
        }
    }
    let elapsed = start.elapsed();
    for (mut child, stdin, _) in servers {
        drop(stdin);
        child.wait()?;
    }
    Ok(elapsed)
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
    report.section(
        4,
        format!(
            "resident memory per idle connection (RSS with 1 vs {MEMORY_SERVERS} demo servers)"
        ),
    );
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

/// CPU time (user + system) used so far by all threads of this process.
fn cpu_time() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU time (user + system) used by the children waited for so far.
fn children_cpu_time() -> Duration {
    rusage(libc::RUSAGE_CHILDREN)
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

    fn ratio(&self) -> f64 {
        self.ours / self.reference
    }

    fn ratio_text(&self) -> String {
        match self.target {
            Some(Target::AtLeast(_)) => format!("{:.0}%", self.ratio() * 100.0),
            _ => format!("{:.2}x", self.ratio()),
        }
    }

    fn target_text(&self) -> String {
        match self.target {
            None => "-".to_owned(),
            Some(Target::AtMost(x)) => format!("<= {x:.2}x"),
            Some(Target::AtLeast(x)) => format!(">= {:.0}%", x * 100.0),
        }
    }

    fn verdict(&self) -> &'static str {
        let ratio = self.ratio();
        match self.target {
            None => "info",
            Some(Target::AtMost(x)) if ratio <= x => "PASS",
            Some(Target::AtLeast(x)) if ratio >= x => "PASS",
            Some(_) => "MISS",
        }
    }
}

enum Line {
    Row(Row),
    Note(String),
}

struct Section {
    order: u32,
    title: String,
    lines: Vec<Line>,
}

/// The figures, grouped in numbered sections (printed in number order,
/// whatever order they were measured in).
#[derive(Default)]
struct Report {
    sections: Vec<Section>,
}

impl Report {
    fn section(&mut self, order: u32, title: String) {
        self.sections.push(Section {
            order,
            title,
            lines: Vec::new(),
        });
    }

    fn push(&mut self, line: Line) {
        self.sections
            .last_mut()
            .expect("a section comes first")
            .lines
            .push(line);
    }

    fn row(&mut self, row: Row) {
        self.push(Line::Row(row));
    }

    fn note(&mut self, text: String) {
        self.push(Line::Note(text));
    }

    fn print(&self) {
        println!(
            "{:<36} {:>10}  {:>10}  {:<28} {:>7}  {:<20} result",
            "figure", "mcpmux", "reference", "(reference is)", "ratio", "target"
        );
        println!("{}", "-".repeat(127));
        let (mut pass, mut miss) = (0, 0);
        let mut sections: Vec<&Section> = self.sections.iter().collect();
        sections.sort_by_key(|s| s.order);
        for section in sections {
            println!("\n{}. {}", section.order, section.title);
            for line in &section.lines {
                match line {
                    Line::Note(text) => println!("     note: {text}"),
                    Line::Row(r) => {
                        let verdict = r.verdict();
                        match verdict {
                            "PASS" => pass += 1,
                            "MISS" => miss += 1,
                            _ => {}
                        }
                        println!(
                            "   {:<33} {:>10}  {:>10}  {:<28} {:>7}  {:<20} {verdict}",
                            r.name,
                            num(r.ours),
                            num(r.reference),
                            r.reference_kind,
                            r.ratio_text(),
                            r.target_text(),
                        );
                    }
                }
            }
        }
        println!();
        println!(
            "targets: {pass} PASS, {miss} MISS (informational; the exit status is 0 either way)"
        );
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
