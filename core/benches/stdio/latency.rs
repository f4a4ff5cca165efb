//! Figure 1: sequential `tools/call` latency against the raw-pipe floor.

use std::io::BufRead;
use std::time::{Duration, Instant};

use mcpmux_core::{CallOptions, Hub};

use crate::harness::*;
use crate::report::*;

pub(crate) fn bench_latency(
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
pub(crate) async fn hub_sequential(hub: &Hub, calls: usize) -> Res<Latencies> {
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

/// The floor: `calls` times one request line out, one response line in,
/// blocking, on the calling thread.
pub(crate) fn raw_sequential(server: &mut RawServer, calls: usize) -> Res<Latencies> {
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
