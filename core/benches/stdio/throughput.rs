//! Figure 2: throughput with many calls in flight against the raw-pipe ceiling.

use std::io::{BufRead, Write};
use std::process::ChildStdin;
use std::time::{Duration, Instant};

use mcpmux_core::Hub;

use crate::harness::*;
use crate::report::*;

/// Calls in flight for the throughput figures.
pub(crate) const IN_FLIGHT: usize = 64;

pub(crate) fn bench_throughput(
    setup: &Setup,
    rt: &tokio::runtime::Runtime,
    hub: &Hub,
    report: &mut Report,
) -> Res<()> {
    let rounds = setup.rounds();
    let block = setup.block();
    let warmup = setup.scale(10_000);

    let mut raw = RawServer::start(&setup.demo)?;
    // The warm-up also sizes each side's block (calls for about `block`).
    let ceiling_n = calls_per_block(
        warmup as f64 / raw_window(&mut raw, warmup)?.as_secs_f64(),
        block,
    );
    let ours_n = calls_per_block(
        warmup as f64 / rt.block_on(hub_pipelined(hub, warmup))?.as_secs_f64(),
        block,
    );
    let (mut ceiling, mut ours) = (Vec::new(), Vec::new());
    let (mut ceiling_cpu, mut ours_cpu) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        for side in [round % 2, 1 - round % 2] {
            let cpu = cpu_time();
            if side == 0 {
                ceiling.push(ceiling_n as f64 / raw_window(&mut raw, ceiling_n)?.as_secs_f64());
                ceiling_cpu += cpu_time().saturating_sub(cpu);
            } else {
                ours.push(ours_n as f64 / rt.block_on(hub_pipelined(hub, ours_n))?.as_secs_f64());
                ours_cpu += cpu_time().saturating_sub(cpu);
            }
        }
    }
    raw.finish()?;

    report.section(
        2,
        format!(
            "throughput, {IN_FLIGHT} calls in flight on one connection ({rounds} interleaved rounds, \
             {ours_n} mcpmux / {ceiling_n} ceiling calls per block)"
        ),
    );
    report.row(Row::ratio(
        &format!("calls/s, {IN_FLIGHT} in flight"),
        ours,
        ceiling,
        "pipelined ceiling",
        Some(Target::AtLeast(0.85)),
    ));
    report.note(format!(
        "client CPU per call (µs): mcpmux {:.2}, ceiling {:.2}",
        ours_cpu.as_secs_f64() * 1e6 / (ours_n * rounds) as f64,
        ceiling_cpu.as_secs_f64() * 1e6 / (ceiling_n * rounds) as f64,
    ));
    report.note(format!(
        "mcpmux = {IN_FLIGHT} tokio tasks calling in a loop; ceiling = raw pipe, a writer thread \
         keeping <= {IN_FLIGHT} requests outstanding and a reader thread"
    ));
    Ok(())
}

/// `calls` echo calls through the hub by `IN_FLIGHT` tasks; the wall time.
pub(crate) async fn hub_pipelined(hub: &Hub, calls: usize) -> Res<Duration> {
    pipelined_calls(hub, "mcp_demo_echo", calls, IN_FLIGHT).await
}

/// The ceiling: `calls` calls over the raw pipe, a writer thread keeping at
/// most `IN_FLIGHT` requests outstanding (several lines per write when the
/// window allows, one otherwise) while this thread reads the responses.
/// Returns the wall time.
pub(crate) fn raw_window(server: &mut RawServer, calls: usize) -> Res<Duration> {
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
