//! Gateway benchmark: what a hop through `mcpmux gateway --http` costs,
//! measured in the same run.
//!
//! The downstream server is a Streamable HTTP MCP server: the bundled demo
//! server (stdio) served by a first gateway (`down`), the fastest HTTP MCP
//! server at hand. A hub calls it directly; a second gateway serves that
//! hub, and another hub calls through it. With 64 calls in flight:
//!
//! - **direct**: hub → HTTP → `down` → demo server;
//! - **gateway**: hub → HTTP → gateway (policy) → HTTP → `down` → demo
//!   server;
//! - and, for scale, the demo server over stdio with no HTTP at all.
//!
//! The sides alternate in 4 rounds so that all see the same machine; the
//! report prints calls/s for each and the ratio gateway/direct. Target: the
//! gateway keeps at least 75% of direct throughput. Informational: the
//! program exits 0 whether the target is met or not, non-zero only when
//! something fails. Everything runs on this process's runtime, so the
//! gateways' work and the clients' share its CPUs: run it on an otherwise
//! idle machine.
//!
//! ```text
//! cargo bench -p mcpmux-core --bench gateway
//! ```
//!
//! `MCPMUX_BENCH_QUICK=1`: 10× fewer calls. The demo server is
//! `$MCPMUX_DEMO_SERVER`, else `<workspace>/target/release/mcpmux-demo-server`
//! (built when missing).

#[path = "stdio/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::path::Path;
use std::time::Duration;

use harness::{demo_server, BoxError, Res, ROUNDS};
use mcpmux_core::gateway::{serve_http, Gateway, GatewayOptions, HttpOptions};
use mcpmux_core::policy::SessionPolicy;
use mcpmux_core::{Config, Hub};

/// Calls in flight.
const IN_FLIGHT: usize = 64;
/// The share of direct throughput the gateway should keep.
const TARGET: f64 = 0.75;

fn main() {
    if let Err(e) = run() {
        eprintln!("gateway bench failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()?;
    let quick = std::env::var("MCPMUX_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let demo = demo_server(&workspace)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let stdio = Hub::connect(Config::parse(&format!(
            "[[mcp.servers]]\nname = \"demo\"\ncommand = {:?}\nallow_all = true\n",
            demo.display().to_string()
        ))?)
        .await?;
        let (down, down_task) = serve(&stdio).await?;
        let direct = Hub::connect(Config::parse(&format!(
            "[[mcp.servers]]\nname = \"down\"\nurl = \"{down}\"\nallow_all = true\n"
        ))?)
        .await?;
        let (gw, gw_task) = serve(&direct).await?;
        let through = Hub::connect(Config::parse(&format!(
            "[[mcp.servers]]\nname = \"gw\"\nurl = \"{gw}\"\n"
        ))?)
        .await?;
        let sides: [(&str, &Hub, &'static str); 3] = [
            ("stdio   (hub -> demo server)", &stdio, "mcp_demo_echo"),
            ("direct  (hub -> HTTP -> down)", &direct, "mcp_down_mcp_demo_echo"),
            (
                "gateway (hub -> HTTP -> gateway -> HTTP -> down)",
                &through,
                "mcp_gw_mcp_down_mcp_demo_echo",
            ),
        ];
        let calls = if quick { 2_000 } else { 20_000 };
        let per_round = calls / ROUNDS;
        for (_, hub, tool) in &sides {
            pipelined(hub, tool, per_round / 4).await?;
        }
        let mut times = [Duration::ZERO; 3];
        for round in 0..ROUNDS {
            for i in 0..sides.len() {
                let side = (i + round) % sides.len();
                let (_, hub, tool) = sides[side];
                times[side] += pipelined(hub, tool, per_round).await?;
            }
        }
        let total = (per_round * ROUNDS) as f64;
        let rates: Vec<f64> = times.iter().map(|t| total / t.as_secs_f64()).collect();
        println!("gateway benchmark: {IN_FLIGHT} calls in flight, {total} calls per side, {ROUNDS} alternating rounds");
        for ((label, _, _), rate) in sides.iter().zip(&rates) {
            println!("  {label:<50} {rate:>10.0} calls/s");
        }
        let ratio = rates[2] / rates[1];
        println!(
            "  ratio gateway/direct {ratio:.2} (target >= {TARGET:.2}): {}",
            if ratio >= TARGET { "PASS" } else { "MISS" }
        );
        through.close().await;
        gw_task.abort();
        direct.close().await;
        down_task.abort();
        stdio.close().await;
        Ok::<_, BoxError>(())
    })
}

/// Serves `hub` through a gateway on a free loopback port; its URL and task.
async fn serve(
    hub: &Hub,
) -> Res<(
    String,
    tokio::task::JoinHandle<Result<(), mcpmux_core::Error>>,
)> {
    let policy = SessionPolicy::for_hub(hub, None, None)?;
    let gateway = Gateway::new(hub.clone(), policy, GatewayOptions::default())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let options = HttpOptions {
        token: None,
        max_message_bytes: 16 << 20,
    };
    Ok((url, tokio::spawn(serve_http(gateway, listener, options))))
}

/// `calls` echo calls to `tool` by `IN_FLIGHT` tasks; the wall time.
async fn pipelined(hub: &Hub, tool: &'static str, calls: usize) -> Res<Duration> {
    harness::pipelined_calls(hub, tool, calls, IN_FLIGHT).await
}
