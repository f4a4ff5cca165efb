//! Stdio benchmark: what mcpmux costs over a bare pipe to a stdio MCP server.
//!
//! A plain program (no harness) that prints a report. Every figure is printed
//! next to a reference measured in the same run against the same server, with
//! the ratio, the target, and PASS/MISS (informational: the program exits 0
//! whether targets are met or not, and non-zero only when something fails).
//!
//! 1. **Sequential `tools/call` latency** — `Hub::call_tool("mcp_demo_echo")`
//!    one call at a time from a task, against two floors over the same
//!    server: the *blocking floor* (a std thread that does the `initialize`
//!    handshake by hand, then writes one request line and reads one
//!    response line per call, blocking in `read`) and the *spinning floor*
//!    (the same loop busy-polling a non-blocking pipe, so no thread ever
//!    sleeps). Target: mean ≤ 1.0× the blocking floor; the overhead above
//!    it in µs is printed too.
//! 2. **Throughput with 64 calls in flight** on one connection (64 tokio
//!    tasks calling in a loop), against the *pipelined ceiling*: the same
//!    raw pipe driven by a writer thread (at most 64 requests outstanding)
//!    and a reader. Target: ≥ 0.85 of the ceiling.
//! 3. **Connect time** — wall time of `Hub::connect` for 1 and for 20 servers
//!    (the demo server with `DEMO_INIT_DELAY_MS=200`: a sleep, not work),
//!    3 repeats, then `close`. Target: 20 servers ≤ 1.5× one server. Also
//!    printed: the same connects done by hand over raw pipes.
//! 4. **Resident memory per idle connection** — this process's RSS
//!    (`/proc/self/statm`) with 1 and with 100 demo servers connected,
//!    `(RSS100 - RSS1) / 99`, over 3 passes. Target: ≤ 24 KB. Measured
//!    first, while the heap is fresh; passes with `malloc_trim(0)` before
//!    each reading are printed too (glibc).
//!
//! 5. **Scale** — 100 servers of 100 tools each (the echo server of
//!    `benches/echo-server` with `ECHO_TOOLS=100`; `benches/run.sh` runs
//!    this section with it): `Hub::connect` next to one such server, RSS
//!    per server, the hub's merged, prefixed `list_tools` over the 10,000
//!    tools and `search_tools` over them (information).
//!
//! Figures 1 and 2 interleave: 10 rounds (3 with `MCPMUX_BENCH_QUICK`,
//! `MCPMUX_BENCH_ROUNDS` to choose), each measuring every side for a block
//! of about 1 s (0.25 s quick) in rotating order, so that a machine whose
//! speed moves (other load, CPU frequency, idle states) affects reference
//! and mcpmux alike. Each row shows the median of the per-round ratios and
//! their range (min–max). `$MCPMUX_BENCH_ROWS` appends the rows to a file
//! for `benches/run.sh` (see `report.rs`; `$MCPMUX_BENCH_LABEL` names the
//! server there).
//!
//! The server is the bundled demo server: `$MCPMUX_DEMO_SERVER`, else
//! `<workspace>/target/release/mcpmux-demo-server`, built with
//! `cargo build --release -p mcpmux-demo-server` when missing. Latency and
//! throughput take any stdio server whose `echo` tool answers its `text` as
//! the first text block, such as `benches/echo-server` (`benches/run.sh`
//! measures both); connect needs the demo server's `DEMO_INIT_DELAY_MS`.
//!
//! Run it with
//!
//! ```text
//! cargo bench -p mcpmux-core --bench stdio
//! ```
//!
//! Environment:
//!
//! - `MCPMUX_BENCH_QUICK=1` — 3 rounds of 0.25 s blocks (CI smoke run).
//! - `MCPMUX_BENCH_RUNTIME` — `multi` (default: multi-thread, default worker
//!   count), `multi:N` (N workers) or `current` (current-thread runtime).
//! - `MCPMUX_BENCH_ONLY` — comma-separated subset of `latency`, `throughput`,
//!   `connect`, `memory`, `scale` (default: all), e.g. for profiling one section.

//!
//! Layout: `main.rs` (this file: the sections to run and the report),
//! `harness.rs` (setup, servers, raw pipes, CPU and memory readings),
//! `report.rs`, and one file per figure: `latency.rs`, `throughput.rs`,
//! `connect.rs`, `memory.rs`.

mod connect;
mod harness;
mod latency;
mod memory;
mod report;
mod scale;
mod throughput;

use std::path::Path;

use mcpmux_core::Hub;

use connect::{bench_connect, CONNECT_SERVERS};
use harness::*;
use latency::bench_latency;
use memory::{bench_memory, MEMORY_SERVERS};
use report::Report;
use scale::{bench_scale, SCALE_SERVERS};
use throughput::{bench_throughput, IN_FLIGHT};

fn main() {
    if let Err(e) = run() {
        eprintln!("stdio bench failed: {e}");
        std::process::exit(1);
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
    const SECTIONS: [&str; 5] = ["latency", "throughput", "connect", "memory", "scale"];
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
    if setup.wants("scale") {
        eprintln!("[stdio bench] scale: {SCALE_SERVERS} servers ...");
        bench_scale(&setup, &rt, &mut report)?;
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
            "yes (3 rounds of short blocks)"
        } else {
            "no"
        }
    );
    println!();
    report.print(&server_label(&setup.demo))?;
    Ok(())
}
