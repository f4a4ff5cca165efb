//! Gateway benchmark: what a hop through `mcpmux gateway --http` costs,
//! measured in the same run, with everything in its own process as users
//! run it.
//!
//! For each downstream server, with 64 calls in flight from a hub in this
//! process:
//!
//! - **direct**: hub → server (over stdio, or HTTP for an HTTP server);
//! - **gateway**: hub → HTTP → `mcpmux gateway --http --no-prefix` (a
//!   process, with the policy) → server.
//!
//! Downstream servers:
//!
//! 1. **echo (stdio)**: `benches/echo-server` (`$MCPMUX_ECHO_SERVER`, else
//!    `<target>/release/mcpmux-echo-server`), direct over stdio. Target:
//!    the gateway process spends ≤ 40 µs of CPU (user + system,
//!    `/proc/<pid>/stat`) per relayed call.
//! 2. **demo behind mcpmux HTTP**: the cheapest Streamable HTTP server at
//!    hand, a second `mcpmux gateway --http` in front of the bundled demo
//!    server, direct over HTTP. Target: the gateway keeps ≥ 0.75× of
//!    direct throughput.
//! 3. **server-everything (HTTP)**, the official TypeScript SDK's reference
//!    server (`tests/peers`, `streamableHttp`), both sides over HTTP
//!    (information; skipped with a note when `tests/setup.sh` has not run).
//!
//! The sides interleave: 10 rounds (3 with `MCPMUX_BENCH_QUICK=1`,
//! `MCPMUX_BENCH_ROUNDS` to choose), each running both sides for a block
//! of about 1 s (0.25 s quick) in alternating order; each row is the
//! median of the per-round figures and their range.
//!
//! Then **telemetry on vs off**: two gateways in front of the echo server,
//! one with `OTEL_EXPORTER_OTLP_ENDPOINT` at a local sink (in this process)
//! that accepts and discards, interleaved the same way: calls/s and the
//! gateway's CPU per call (information).
//!
//! Then **fleet** (HAProxy from Debian's packages, as `tests/setup.sh`
//! unpacks it into `.deps/debian`, or `$MCPMUX_HAPROXY`): the same POSTs
//! to the same HTTP server (the echo server behind mcpmux HTTP) relayed by
//! the gateway and proxied by HAProxy, the floor for relaying an HTTP
//! request on this machine, interleaved: each process's CPU per request
//! (target: the gateway at most 1.5x HAProxy's) and calls/s; the p50
//! latency one client adds through each, against calling the server
//! directly (target: the gateway adds at most 50 µs); calls/s through
//! three replicas behind HAProxy against one (information).
//!
//! Then, unless `MCPMUX_BENCH_SCALE=0`, **scale**: 256 sessions (one hub
//! each, spread over 8 client processes of this bench) × 64 calls in
//! flight through one gateway in front of the demo server, for 10 s (2 s
//! quick) after a 5 s warm-up: throughput and the gateway's RSS
//! (information; `MCPMUX_BENCH_SCALE_SECS` sets the counted span in
//! seconds). Each session's client holds a connection per call in flight
//! and one for its GET stream, so this gateway runs with
//! `--max-connections` above all 16,640 of them, which needs a limit on
//! open files above about 18,000, and local ports for them and for the few
//! thousand the clients close meanwhile (in `TIME_WAIT` for a minute): a
//! connect that fails with "Cannot assign requested address" asks for a
//! wider `net.ipv4.ip_local_port_range` (see docs/performance-runs.md).
//!
//! `MCPMUX_BENCH_ONLY=fleet` runs the fleet figures alone (for profiling
//! the relay).
//!
//! Informational: the program exits 0 whatever the figures, non-zero only
//! when something fails. `$MCPMUX_BENCH_ROWS` appends the rows to a file for
//! `benches/run.sh` (the format of `core/benches/stdio/report.rs`).
//!
//! ```text
//! bash tests/setup.sh      # server-everything, once
//! cargo bench -p mcpmux-gateway --bench gateway
//! ```
//!
//! The binaries: `$MCPMUX_BIN` (else `<target>/release/mcpmux`) and
//! `$MCPMUX_DEMO_SERVER` (else `<target>/release/mcpmux-demo-server`),
//! built when missing; `<target>` is `$CARGO_TARGET_DIR`, else
//! `<workspace>/target`.

#[path = "../../../core/benches/stdio/harness.rs"]
#[allow(dead_code)]
mod harness;
#[path = "../../../core/benches/stdio/report.rs"]
#[allow(dead_code)]
mod report;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::{BoxError, Res};
use mcpmux_core::{Config, Hub};
use report::{Report, Row, Target};
use serde_json::{json, Value};

/// Calls in flight.
const IN_FLIGHT: usize = 64;
/// The share of direct throughput the gateway should keep.
const TARGET: f64 = 0.75;
/// The gateway's CPU time per relayed call it should stay under, in µs.
const CPU_TARGET_US: f64 = 40.0;
/// Sessions of the scale figure.
const SCALE_SESSIONS: usize = 256;
/// How long the scale load runs before its calls count: its 16,640
/// connections take a few seconds to open on 2 cores.
const SCALE_WARM_UP: Duration = Duration::from_secs(5);
/// How long its calls count, unless `MCPMUX_BENCH_SCALE_SECS` says: with
/// 16,384 calls in flight one call takes seconds, so a short block counts
/// mostly the calls of its first seconds.
const SCALE_BLOCK: Duration = Duration::from_secs(10);
/// The processes the scale figure's sessions are spread over.
const SCALE_CLIENTS: usize = 8;
/// Set in a scale client process (see [`scale_client`]).
const SCALE_CLIENT_VAR: &str = "MCPMUX_BENCH_SCALE_CLIENT";

fn main() {
    if let Ok(spec) = std::env::var(SCALE_CLIENT_VAR) {
        if let Err(e) = scale_client(&spec) {
            eprintln!("gateway bench scale client failed: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = run() {
        eprintln!("gateway bench failed: {e}");
        std::process::exit(1);
    }
}

/// One downstream server and the two ways to call it.
struct Pair {
    label: &'static str,
    direct: Hub,
    through: Hub,
    /// The gateway process in front of the server.
    gateway: Server,
    args: Value,
    /// Which rows of this pair carry a target.
    judge_cpu: bool,
    judge_throughput: bool,
}

fn run() -> Res<()> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()?;
    let quick = std::env::var("MCPMUX_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let mcpmux = binary(
        &workspace,
        &target_dir,
        "MCPMUX_BIN",
        "mcpmux",
        "mcpmux-cli",
    )?;
    let demo = binary(
        &workspace,
        &target_dir,
        "MCPMUX_DEMO_SERVER",
        "mcpmux-demo-server",
        "mcpmux-demo-server",
    )?;
    let echo = std::env::var_os("MCPMUX_ECHO_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir.join("release/mcpmux-echo-server"));
    if !echo.exists() {
        return Err(format!(
            "{} is missing: cargo build --release --manifest-path benches/echo-server/Cargo.toml",
            echo.display()
        )
        .into());
    }
    let everything = workspace
        .join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let scratch = tempfile::tempdir()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let rounds = harness::rounds(quick);
    let block = harness::block(quick);
    let mut report = Report::default();
    let fleet_only = std::env::var("MCPMUX_BENCH_ONLY").is_ok_and(|v| v == "fleet");
    if fleet_only {
        rt.block_on(fleet(
            &echo,
            &mcpmux,
            &workspace,
            scratch.path(),
            rounds,
            block,
            &mut report,
        ))?;
        println!("mcpmux gateway benchmark (fleet only)");
        println!();
        report.print("gateway")?;
        return Ok(());
    }
    rt.block_on(async {
        report.section(
            1,
            format!(
                "gateway hop, {IN_FLIGHT} calls in flight ({rounds} interleaved rounds of ~{} ms per side)",
                block.as_millis()
            ),
        );
        // 1. the echo server over stdio (direct: the hub over stdio).
        let p = pair(
            "echo (stdio)",
            &stdio_entry(&echo),
            &mcpmux,
            scratch.path(),
            harness::echo_args(),
        )
        .await?;
        measure(&Pair { judge_cpu: true, ..p }, rounds, block, &mut report).await?;
        // 2. the cheapest HTTP server: mcpmux's own (a gateway in front of
        // the demo server over stdio); direct is the hub over HTTP.
        let (_down, down_port) = start_gateway(&stdio_entry(&demo), &mcpmux, scratch.path(), "down")?;
        let p = pair(
            "demo behind mcpmux HTTP",
            &format!("url = \"http://127.0.0.1:{down_port}/mcp\"\n"),
            &mcpmux,
            scratch.path(),
            harness::echo_args(),
        )
        .await?;
        measure(
            &Pair {
                judge_throughput: true,
                ..p
            },
            rounds,
            block,
            &mut report,
        )
        .await?;
        // 3. server-everything over Streamable HTTP.
        if everything.exists() {
            let port = free_port()?;
            let _everything_server = Server::start(
                Command::new("node")
                    .arg(&everything)
                    .arg("streamableHttp")
                    .env("PORT", port.to_string()),
                port,
            )?;
            let p = pair(
                "server-everything (HTTP)",
                &format!("url = \"http://127.0.0.1:{port}/mcp\"\n"),
                &mcpmux,
                scratch.path(),
                json!({ "message": harness::ECHO_TEXT }),
            )
            .await?;
            measure(&p, rounds, block, &mut report).await?;
        } else {
            report.note(format!(
                "server-everything skipped: {} is missing (run `bash tests/setup.sh`)",
                everything.display()
            ));
        }
        telemetry(&echo, &mcpmux, scratch.path(), rounds, block, &mut report).await?;
        fleet(&echo, &mcpmux, &workspace, scratch.path(), rounds, block, &mut report).await?;
        if std::env::var("MCPMUX_BENCH_SCALE").map_or(true, |v| v != "0") {
            scale(&demo, &mcpmux, scratch.path(), block, &mut report).await?;
        }
        Ok::<_, BoxError>(())
    })?;
    println!("mcpmux gateway benchmark");
    println!();
    report.print("gateway")?;
    Ok(())
}

/// The `[[mcp.servers]]` lines of a stdio server.
fn stdio_entry(server: &Path) -> String {
    format!("command = {:?}\n", server.display().to_string())
}

/// Hubs calling a downstream server (`entry`: its `[[mcp.servers]]` lines
/// after the name) directly and through a new gateway process in front of
/// it.
async fn pair(
    label: &'static str,
    entry: &str,
    mcpmux: &Path,
    scratch: &Path,
    args: Value,
) -> Res<Pair> {
    eprintln!("[gateway bench] {label} ...");
    let (gateway, port) = start_gateway(entry, mcpmux, scratch, label)?;
    // (The hub's config has no policy keys: those are the gateway's.)
    let direct = connect_retried(
        || {
            Ok(Config::parse(&format!(
                "[[mcp.servers]]\nname = \"direct\"\n{entry}"
            ))?)
        },
        port,
    )
    .await?;
    let through = connect_gateway("gw", port).await?;
    harness::ensure_connected(&direct)?;
    Ok(Pair {
        label,
        direct,
        through,
        gateway,
        args,
        judge_cpu: false,
        judge_throughput: false,
    })
}

/// A `mcpmux gateway --http --no-prefix` process in front of `entry`.
fn start_gateway(entry: &str, mcpmux: &Path, scratch: &Path, label: &str) -> Res<(Server, u16)> {
    start_gateway_with(entry, mcpmux, scratch, label, &[], &[])
}

/// [`start_gateway`] with extra environment variables and arguments.
fn start_gateway_with(
    entry: &str,
    mcpmux: &Path,
    scratch: &Path,
    label: &str,
    env: &[(&str, String)],
    args: &[String],
) -> Res<(Server, u16)> {
    let name: String = label.chars().filter(char::is_ascii_alphanumeric).collect();
    let config = scratch.join(format!("{name}.toml"));
    // The echo tools are not marked read-only: the policy needs them named.
    std::fs::write(
        &config,
        format!(
            "[[mcp.servers]]\nname = \"down\"\n{entry}allow_all = true\nconfirm_read_only = [\"echo\"]\n"
        ),
    )?;
    let port = free_port()?;
    let mut command = Command::new(mcpmux);
    command
        .arg("--config")
        .arg(&config)
        .args(["gateway", "--no-prefix", "--http"])
        .arg(format!("127.0.0.1:{port}"))
        .args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    let gateway = Server::start(&mut command, port)?;
    Ok((gateway, port))
}

/// A hub connected to the gateway at `port` (its server named `name`),
/// retried a few times: under load a fresh gateway can drop a first
/// connection.
async fn connect_gateway(name: &str, port: u16) -> Res<Hub> {
    connect_retried(|| gateway_client(name, port), port).await
}

/// `Hub::connect` of `config()`, retried a few times (see
/// [`connect_gateway`]); `port` names the server in messages.
async fn connect_retried(config: impl Fn() -> Res<Config>, port: u16) -> Res<Hub> {
    let mut attempt = 0;
    loop {
        let hub = Hub::connect(config()?).await;
        let checked = match hub {
            Ok(hub) => match harness::ensure_connected(&hub) {
                Ok(()) => return Ok(hub),
                Err(e) => {
                    hub.close().await;
                    e
                }
            },
            Err(e) => e.into(),
        };
        attempt += 1;
        if attempt == 5 {
            return Err(checked);
        }
        eprintln!(
            "[gateway bench] connecting to the gateway at {port} failed ({checked}); retrying"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A hub config with one server, the gateway at `port`, named `name`.
fn gateway_client(name: &str, port: u16) -> Res<Config> {
    Ok(Config::parse(&format!(
        "[[mcp.servers]]\nname = \"{name}\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
    ))?)
}

/// Measures both sides of `pair`, interleaved, into `report`.
async fn measure(pair: &Pair, rounds: usize, block: Duration, report: &mut Report) -> Res<()> {
    let sides = [
        (&pair.direct, "mcp_direct_echo", None),
        (&pair.through, "mcp_gw_echo", Some(&pair.gateway)),
    ];
    let ([direct, through], [_, cpu_us]) = interleave(sides, &pair.args, rounds, block).await?;
    report.row(Row::ratio(
        &format!(
            "calls/s, {IN_FLIGHT} in flight, gateway vs direct [{}]",
            pair.label
        ),
        through,
        direct,
        "direct",
        pair.judge_throughput.then_some(Target::AtLeast(TARGET)),
    ));
    report.row(Row::absolute(
        &format!("gateway CPU per relayed call (µs) [{}]", pair.label),
        cpu_us,
        "µs",
        "-",
        pair.judge_cpu.then_some(Target::AtMost(CPU_TARGET_US)),
    ));
    Ok(())
}

/// A side of a figure: a hub, its echo tool, and the gateway process whose
/// CPU time to read (if any).
type Side<'a> = (&'a Hub, &'static str, Option<&'a Server>);

/// Runs two sides in `rounds` interleaved rounds of about `block` each
/// (alternating which goes first): per side, the calls/s of each round and
/// the gateway's CPU µs per call of each round (empty without a gateway).
async fn interleave(
    sides: [Side<'_>; 2],
    args: &Value,
    rounds: usize,
    block: Duration,
) -> Res<([Vec<f64>; 2], [Vec<f64>; 2])> {
    // Warm-up, which also sizes each side's block.
    let mut per_block = [0usize; 2];
    for (i, (hub, tool, _)) in sides.iter().enumerate() {
        let n = 2_000;
        let t = pipelined(hub, tool, args, n).await?;
        per_block[i] = harness::calls_per_block(n as f64 / t.as_secs_f64(), block);
    }
    let mut rates: [Vec<f64>; 2] = Default::default();
    let mut cpu_us: [Vec<f64>; 2] = Default::default();
    for round in 0..rounds {
        for i in 0..sides.len() {
            let side = (i + round) % sides.len();
            let (hub, tool, gateway) = sides[side];
            let n = per_block[side];
            let cpu = gateway.map(Server::cpu_time).transpose()?;
            let t = pipelined(hub, tool, args, n).await?;
            rates[side].push(n as f64 / t.as_secs_f64());
            if let (Some(gateway), Some(cpu)) = (gateway, cpu) {
                let used = gateway.cpu_time()?.saturating_sub(cpu);
                cpu_us[side].push(used.as_secs_f64() * 1e6 / n as f64);
            }
        }
    }
    Ok((rates, cpu_us))
}

/// Telemetry on vs off: two gateways in front of the echo server over
/// stdio, one exporting OTLP to a local sink that accepts and discards.
async fn telemetry(
    echo: &Path,
    mcpmux: &Path,
    scratch: &Path,
    rounds: usize,
    block: Duration,
    report: &mut Report,
) -> Res<()> {
    eprintln!("[gateway bench] telemetry on vs off ...");
    let sink = otlp_sink()?;
    let entry = stdio_entry(echo);
    let (off, off_port) = start_gateway(&entry, mcpmux, scratch, "telemetry-off")?;
    let (on, on_port) = start_gateway_with(
        &entry,
        mcpmux,
        scratch,
        "telemetry-on",
        &[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{sink}"),
        )],
        &[],
    )?;
    let hub_off = connect_gateway("off", off_port).await?;
    let hub_on = connect_gateway("on", on_port).await?;
    let sides = [
        (&hub_off, "mcp_off_echo", Some(&off)),
        (&hub_on, "mcp_on_echo", Some(&on)),
    ];
    let ([rate_off, rate_on], [cpu_off, cpu_on]) =
        interleave(sides, &harness::echo_args(), rounds, block).await?;
    report.section(
        2,
        format!(
            "telemetry on vs off: two gateways in front of the echo server over stdio, {IN_FLIGHT} in flight \
             (on = OTEL_EXPORTER_OTLP_ENDPOINT at a local sink that accepts and discards)"
        ),
    );
    report.row(Row::ratio(
        "calls/s, telemetry on vs off [echo (stdio)]",
        rate_on,
        rate_off,
        "telemetry off",
        None,
    ));
    report.row(Row::latency(
        "gateway CPU per relayed call, telemetry on (µs) [echo (stdio)]",
        cpu_on,
        cpu_off,
        "telemetry off",
        None,
    ));
    report.note(format!(
        "the sink received {} OTLP requests",
        OTLP_REQUESTS.load(std::sync::atomic::Ordering::Relaxed)
    ));
    hub_on.close().await;
    hub_off.close().await;
    Ok(())
}

static OTLP_REQUESTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A local OTLP/HTTP sink on threads: answers every request `200 OK` with an
/// empty body and discards it. Returns its port.
fn otlp_sink() -> Res<u16> {
    use std::io::{BufRead, BufReader, Read};
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = match stream.try_clone() {
                    Ok(w) => w,
                    Err(_) => return,
                };
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = line.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    OTLP_REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if writer
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    Ok(port)
}

/// Scale: `SCALE_SESSIONS` hubs, each its own session of one gateway in
/// front of the demo server, each with `IN_FLIGHT` calls in flight, for
/// `SCALE_BLOCK` (2 s in a quick run) after `SCALE_WARM_UP`. The hubs live in
/// `SCALE_CLIENTS` processes of this bench ([`scale_client`]), as sessions
/// arrive from many processes: each process's HTTP pool then holds its own
/// sessions' connections, and no process needs 16,640 descriptors.
async fn scale(
    demo: &Path,
    mcpmux: &Path,
    scratch: &Path,
    block: Duration,
    report: &mut Report,
) -> Res<()> {
    eprintln!("[gateway bench] scale: {SCALE_SESSIONS} sessions x {IN_FLIGHT} in flight ...");
    // Every session's client opens a connection per call in flight (HTTP/1.1)
    // and one for its GET stream. Past `--max-connections` the gateway
    // serves one answer per connection while the rest queue in the listen
    // backlog: that measures the cap, not the gateway, so the cap here is
    // above every connection the load opens (and a little under the open
    // files the gateway may hold, which it inherits from this process).
    let connections = SCALE_SESSIONS * (IN_FLIGHT + 1);
    let files = open_files_limit()?;
    let cap = files.saturating_sub(1024) as usize;
    if cap < connections + 1024 {
        return Err(format!(
            "scale needs {} open files in the gateway (a connection per call in flight), the limit is {files}: \
             raise it (`ulimit -n {}`) or set MCPMUX_BENCH_SCALE=0",
            connections + 2048,
            connections + 2048
        )
        .into());
    }
    let (gateway, port) = start_gateway_with(
        &stdio_entry(demo),
        mcpmux,
        scratch,
        "scale",
        &[],
        &["--max-connections".into(), cap.to_string()],
    )?;
    let rss_idle = gateway.rss_kb()?;
    let run_for = match std::env::var("MCPMUX_BENCH_SCALE_SECS") {
        Ok(secs) => Duration::from_secs(secs.parse().map_err(|_| {
            format!("MCPMUX_BENCH_SCALE_SECS={secs:?}: not a whole number of seconds")
        })?),
        Err(_) if block < harness::block(false) => Duration::from_secs(2),
        Err(_) => SCALE_BLOCK,
    };
    let mut clients = Vec::with_capacity(SCALE_CLIENTS);
    for _ in 0..SCALE_CLIENTS {
        clients.push(ScaleClient::start(
            port,
            SCALE_SESSIONS / SCALE_CLIENTS,
            run_for,
        )?);
    }
    for client in &mut clients {
        client.expect("ready")?;
    }
    let rss_sessions = gateway.rss_kb()?;
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let deadline = Instant::now() + SCALE_WARM_UP + run_for;
    for client in &mut clients {
        client.send("go")?;
    }
    // The gateway's RSS under load, sampled while the calls run.
    let sampler = {
        let (pid, peak) = (gateway.child.id(), peak.clone());
        std::thread::spawn(move || {
            while Instant::now() < deadline {
                if let Ok(kb) = rss_kb_of(pid) {
                    peak.fetch_max(kb, std::sync::atomic::Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let (mut calls, mut drained) = (0u64, Duration::ZERO);
    for client in &mut clients {
        let (n, after) = client.finish()?;
        calls += n;
        drained = drained.max(after);
    }
    let _ = sampler.join();
    drop(gateway);
    report.section(
        3,
        format!(
            "scale: {SCALE_SESSIONS} sessions x {IN_FLIGHT} calls in flight through one gateway (demo server behind; \
             {SCALE_CLIENTS} client processes; {:.1} s counted after a {:.0} s warm-up; the calls in flight at the end \
             took {:.1} s more)",
            run_for.as_secs_f64(),
            SCALE_WARM_UP.as_secs_f64(),
            drained.as_secs_f64()
        ),
    );
    report.row(Row::absolute(
        &format!("calls/s, {SCALE_SESSIONS} sessions x {IN_FLIGHT} in flight"),
        vec![calls as f64 / run_for.as_secs_f64()],
        "calls/s",
        "-",
        None,
    ));
    report.row(Row::absolute(
        &format!("gateway RSS, {SCALE_SESSIONS} sessions under load (MB)"),
        vec![peak.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1024.0],
        "MB",
        "-",
        None,
    ));
    report.row(Row::absolute(
        "gateway RSS per idle session (KB)",
        vec![(rss_sessions as f64 - rss_idle as f64) / SCALE_SESSIONS as f64],
        "KB",
        "-",
        None,
    ));
    Ok(())
}

/// One client process of the scale figure, spoken to a line at a time:
/// it says `ready` once its sessions are open, starts on `go`, and ends
/// with `calls N drained_ms M`.
struct ScaleClient {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl ScaleClient {
    /// This bench again, as a client of the gateway at `port` with
    /// `sessions` hubs, counting for `run_for` after the warm-up.
    fn start(port: u16, sessions: usize, run_for: Duration) -> Res<Self> {
        let mut child = Command::new(std::env::current_exe()?)
            .env(
                SCALE_CLIENT_VAR,
                format!("{port},{sessions},{}", run_for.as_millis()),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().ok_or("scale client: no stdin")?;
        let stdout = std::io::BufReader::new(child.stdout.take().ok_or("scale client: no stdout")?);
        Ok(ScaleClient {
            child,
            stdin,
            stdout,
        })
    }

    fn line(&mut self) -> Res<String> {
        use std::io::BufRead;
        let mut line = String::new();
        self.stdout.read_line(&mut line)?;
        if line.is_empty() {
            let status = self.child.wait()?;
            return Err(format!("scale client exited ({status}) early").into());
        }
        Ok(line.trim().to_owned())
    }

    fn expect(&mut self, word: &str) -> Res<()> {
        let line = self.line()?;
        if line != word {
            return Err(format!("scale client said {line:?}, not {word:?}").into());
        }
        Ok(())
    }

    fn send(&mut self, word: &str) -> Res<()> {
        writeln!(self.stdin, "{word}")?;
        Ok(self.stdin.flush()?)
    }

    /// The calls it counted, and how long its last calls ran past the end.
    fn finish(&mut self) -> Res<(u64, Duration)> {
        let line = self.line()?;
        let status = self.child.wait()?;
        if !status.success() {
            return Err(format!("scale client failed ({status})").into());
        }
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["calls", n, "drained_ms", ms] => Ok((n.parse()?, Duration::from_millis(ms.parse()?))),
            _ => Err(format!("scale client said {line:?}").into()),
        }
    }
}

impl Drop for ScaleClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The client process of [`scale`] (`$MCPMUX_BENCH_SCALE_CLIENT` is
/// `port,sessions,run_ms`): opens the sessions, says `ready`, waits for
/// `go`, runs `IN_FLIGHT` calls per session until the warm-up and `run_ms`
/// have passed, and says `calls N drained_ms M` (calls answered within the
/// counted span; how long the last ones took past it).
fn scale_client(spec: &str) -> Res<()> {
    use std::io::BufRead;
    let parts: Vec<u64> = spec
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| format!("{SCALE_CLIENT_VAR}={spec:?}: want port,sessions,run_ms"))?;
    let [port, sessions, run_ms] = parts[..] else {
        return Err(format!("{SCALE_CLIENT_VAR}={spec:?}: want port,sessions,run_ms").into());
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut hubs = Vec::with_capacity(sessions as usize);
        for _ in 0..sessions {
            hubs.push(connect_gateway("gw", port as u16).await?);
        }
        println!("ready");
        let mut go = String::new();
        std::io::stdin().lock().read_line(&mut go)?;
        let counted_from = Instant::now() + SCALE_WARM_UP;
        let deadline = counted_from + Duration::from_millis(run_ms);
        let args = std::sync::Arc::new(harness::echo_args());
        let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut tasks = Vec::new();
        for hub in &hubs {
            for _ in 0..IN_FLIGHT {
                let (hub, args, done) = (hub.clone(), args.clone(), done.clone());
                tasks.push(tokio::spawn(async move {
                    let opts = mcpmux_core::CallOptions::default();
                    while Instant::now() < deadline {
                        let r = hub.call_tool("mcp_gw_echo", Some(&args), &opts).await?;
                        if r.is_error() {
                            return Err::<(), BoxError>(format!("echo: {}", r.json()).into());
                        }
                        // Only calls answered within the counted span count.
                        let now = Instant::now();
                        if now >= counted_from && now <= deadline {
                            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                    Ok(())
                }));
            }
        }
        for t in tasks {
            t.await??;
        }
        let drained = Instant::now().saturating_duration_since(deadline);
        println!(
            "calls {} drained_ms {}",
            done.load(std::sync::atomic::Ordering::Relaxed),
            drained.as_millis()
        );
        for hub in hubs {
            hub.close().await;
        }
        Ok::<_, BoxError>(())
    })
}

/// This process's soft limit on open files (its children inherit it).
fn open_files_limit() -> Res<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!("getrlimit: {}", std::io::Error::last_os_error()).into());
    }
    Ok(limit.rlim_cur)
}

/// VmRSS of process `pid`, in KB.
fn rss_kb_of(pid: u32) -> Res<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no VmRSS in /proc status".into())
}

/// `calls` calls of `tool` with `args` by `IN_FLIGHT` tasks; the wall time.
async fn pipelined(hub: &Hub, tool: &'static str, args: &Value, calls: usize) -> Res<Duration> {
    harness::pipelined_calls_with(hub, tool, args, calls, IN_FLIGHT).await
}

/// A server process listening on a loopback port; killed on drop.
struct Server {
    child: Child,
}

impl Server {
    /// Starts `command` (its output discarded) and waits until `port`
    /// accepts connections.
    fn start(command: &mut Command, port: u16) -> Res<Server> {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut server = Server { child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = server.child.try_wait()? {
                return Err(format!("{command:?} exited with {status} before listening").into());
            }
            if Instant::now() > deadline {
                return Err(format!("{command:?} did not listen on {port} within 30 s").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// The process's resident set, in KB.
    fn rss_kb(&self) -> Res<u64> {
        rss_kb_of(self.child.id())
    }

    /// The CPU time (user + system) the process has used.
    fn cpu_time(&self) -> Res<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        // Fields after the command name (which may hold spaces): utime and
        // stime are the 12th and 13th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields
            .get(11..13)
            .ok_or("short /proc stat")?
            .iter()
            .map(|f| f.parse::<u64>().unwrap_or(0))
            .sum();
        // SAFETY: sysconf takes no pointer.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Ok(Duration::from_micros(ticks * 1_000_000 / hz))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `path` exists and was built before the running bench binary
/// (which cargo rebuilt when the code changed).
fn is_older_than_this_bench(path: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let this = std::env::current_exe().ok();
    match (modified(path), this.as_deref().and_then(modified)) {
        (Some(binary), Some(bench)) => binary < bench,
        _ => false,
    }
}

/// The CPU per request the gateway may spend, as a multiple of HAProxy's.
const FLEET_CPU_TARGET: f64 = 1.5;
/// The p50 latency the gateway may add at one client, in µs.
const FLEET_LATENCY_TARGET_US: f64 = 50.0;
/// Calls per latency block (one client, one call at a time).
const LATENCY_CALLS: usize = 400;

/// HAProxy: `$MCPMUX_HAPROXY`, else the one `tests/setup.sh` unpacks.
fn haproxy_binary(workspace: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MCPMUX_HAPROXY") {
        return Some(PathBuf::from(path));
    }
    let path = workspace.join(".deps/debian/usr/sbin/haproxy");
    path.exists().then_some(path)
}

/// HAProxy in HTTP mode in front of the servers at `ports` (least_conn).
fn start_haproxy(haproxy: &Path, scratch: &Path, label: &str, ports: &[u16]) -> Res<(Server, u16)> {
    let port = free_port()?;
    let servers: String = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("    server s{i} 127.0.0.1:{p}\n"))
        .collect();
    let config = scratch.join(format!("{label}.cfg"));
    std::fs::write(
        &config,
        format!(
            "global\n    maxconn 4096\ndefaults\n    mode http\n    timeout connect 2s\n    \
             timeout client 60s\n    timeout server 60s\n    option http-keep-alive\n\
             frontend f\n    bind 127.0.0.1:{port}\n    default_backend b\n\
             backend b\n    balance leastconn\n{servers}"
        ),
    )?;
    let lib = haproxy
        .parent()
        .and_then(Path::parent)
        .map(|usr| usr.join("lib/x86_64-linux-gnu"))
        .unwrap_or_default();
    let server = Server::start(
        Command::new(haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .env("LD_LIBRARY_PATH", lib),
        port,
    )?;
    Ok((server, port))
}

/// Per-call latencies of `calls` calls one at a time.
async fn one_at_a_time(hub: &Hub, tool: &str, args: &Value, calls: usize) -> Res<Vec<Duration>> {
    let opts = mcpmux_core::CallOptions::default();
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        let result = hub.call_tool(tool, Some(args), &opts).await?;
        samples.push(start.elapsed());
        if result.is_error() {
            return Err(format!("{tool}: {}", result.json()).into());
        }
    }
    Ok(samples)
}

/// The fleet figures (see the module doc).
async fn fleet(
    echo: &Path,
    mcpmux: &Path,
    workspace: &Path,
    scratch: &Path,
    rounds: usize,
    block: Duration,
    report: &mut Report,
) -> Res<()> {
    let Some(haproxy) = haproxy_binary(workspace) else {
        report.note(
            "fleet skipped: HAProxy is missing (run `bash tests/setup.sh`, or set $MCPMUX_HAPROXY)"
                .into(),
        );
        return Ok(());
    };
    eprintln!("[gateway bench] fleet ...");
    let (_down, down_port) = start_gateway(&stdio_entry(echo), mcpmux, scratch, "fleetdown")?;
    let down_entry = format!("url = \"http://127.0.0.1:{down_port}/mcp\"\n");
    let (gateway, gateway_port) = start_gateway(&down_entry, mcpmux, scratch, "fleetgw")?;
    let (balancer, balancer_port) = start_haproxy(&haproxy, scratch, "fleetha", &[down_port])?;
    let url_hub = |name: &'static str, port: u16| {
        connect_retried(
            move || {
                Ok(Config::parse(&format!(
                    "[[mcp.servers]]\nname = \"{name}\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
                ))?)
            },
            port,
        )
    };
    let direct = url_hub("direct", down_port).await?;
    let via_gateway = connect_gateway("gw", gateway_port).await?;
    let via_haproxy = url_hub("ha", balancer_port).await?;
    let args = harness::echo_args();

    // 1. CPU per request, the same POSTs relayed and proxied.
    let sides = [
        (&via_gateway, "mcp_gw_echo", Some(&gateway)),
        (&via_haproxy, "mcp_ha_echo", Some(&balancer)),
    ];
    let ([gw_rate, ha_rate], [gw_cpu, ha_cpu]) = interleave(sides, &args, rounds, block).await?;
    report.section(
        6,
        format!(
            "gateway fleet: the echo server behind mcpmux HTTP, reached through one gateway or HAProxy \
             (the floor for relaying an HTTP request), {IN_FLIGHT} in flight; latency at one client; \
             three replicas behind HAProxy vs one"
        ),
    );
    report.row(Row::ratio(
        "CPU per request, gateway vs HAProxy (same POSTs)",
        gw_cpu,
        ha_cpu,
        "HAProxy",
        Some(Target::AtMost(FLEET_CPU_TARGET)),
    ));
    report.row(Row::ratio(
        &format!("calls/s, {IN_FLIGHT} in flight, gateway vs HAProxy"),
        gw_rate,
        ha_rate,
        "HAProxy",
        None,
    ));

    // 2. Latency at one client: p50 of each block, the three alternating.
    let sides = [
        (&direct, "mcp_direct_echo"),
        (&via_gateway, "mcp_gw_echo"),
        (&via_haproxy, "mcp_ha_echo"),
    ];
    let mut p50: [Vec<f64>; 3] = Default::default();
    for round in 0..rounds {
        for i in 0..sides.len() {
            let side = (i + round) % sides.len();
            let (hub, tool) = sides[side];
            let mut latencies = harness::Latencies {
                samples: one_at_a_time(hub, tool, &args, LATENCY_CALLS).await?,
            };
            latencies.sort();
            p50[side].push(latencies.pct_us(50.0));
        }
    }
    let added =
        |through: &[f64]| -> Vec<f64> { through.iter().zip(&p50[0]).map(|(t, d)| t - d).collect() };
    report.row(Row::absolute(
        "p50 latency the gateway adds at one client (µs)",
        added(&p50[1]),
        "µs",
        "direct",
        Some(Target::AtMost(FLEET_LATENCY_TARGET_US)),
    ));
    report.row(Row::absolute(
        "p50 latency HAProxy adds at one client (µs)",
        added(&p50[2]),
        "µs",
        "direct",
        None,
    ));
    drop((via_gateway, via_haproxy, direct));
    drop(gateway);
    drop(balancer);

    // 3. Three replicas behind HAProxy against one.
    let mut replicas = Vec::new();
    let mut ports = Vec::new();
    for i in 0..3 {
        let (replica, port) = start_gateway(&down_entry, mcpmux, scratch, &format!("fleetr{i}"))?;
        replicas.push(replica);
        ports.push(port);
    }
    let (_one, one_port) = start_haproxy(&haproxy, scratch, "fleetone", &ports[..1])?;
    let (_three, three_port) = start_haproxy(&haproxy, scratch, "fleetthree", &ports)?;
    let one = url_hub("one", one_port).await?;
    let three = url_hub("three", three_port).await?;
    let sides = [
        (&three, "mcp_three_echo", None),
        (&one, "mcp_one_echo", None),
    ];
    let ([three_rate, one_rate], _) = interleave(sides, &args, rounds, block).await?;
    report.row(Row::ratio(
        &format!("calls/s, {IN_FLIGHT} in flight, three replicas vs one (behind HAProxy, 2 cores)"),
        three_rate,
        one_rate,
        "one replica",
        None,
    ));
    Ok(())
}

/// A loopback port free right now.
fn free_port() -> Res<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `$env_var`, else `<target>/release/<name>`, built (`cargo build
/// --release -p <package>`) when missing.
fn binary(
    workspace: &Path,
    target_dir: &Path,
    env_var: &str,
    name: &str,
    package: &str,
) -> Res<PathBuf> {
    if let Some(path) = std::env::var_os(env_var) {
        return Ok(PathBuf::from(path));
    }
    let path = target_dir.join("release").join(name);
    if is_older_than_this_bench(&path) {
        let _ = writeln!(
            std::io::stderr(),
            "[gateway bench] warning: {} is older than this bench and may not be this \
             checkout's code: `cargo build --release -p {package}` first, or set ${env_var} \
             (benches/run.sh does)",
            path.display()
        );
    }
    if !path.exists() {
        let _ = writeln!(
            std::io::stderr(),
            "[gateway bench] building {name} (cargo build --release -p {package}) ..."
        );
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "-p", package])
            .current_dir(workspace)
            .status()?;
        if !status.success() || !path.exists() {
            return Err(format!("building {name} failed ({status})").into());
        }
    }
    Ok(path)
}
