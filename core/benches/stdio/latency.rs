//! Figure 1: sequential `tools/call` latency against the raw-pipe floors.

use std::io::BufRead;
use std::time::{Duration, Instant};

use mcpmux_core::{CallOptions, Hub};

use crate::harness::*;
use crate::report::*;

/// How the raw floor waits for the server's answer.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Wait {
    /// A blocking `read`: the thread sleeps until the answer arrives.
    Blocking,
    /// The pipe is non-blocking and the thread busy-polls it.
    Spinning,
}

pub(crate) fn bench_latency(
    setup: &Setup,
    rt: &tokio::runtime::Runtime,
    hub: &Hub,
    report: &mut Report,
) -> Res<()> {
    let rounds = setup.rounds();
    let block = setup.block();
    let warmup = block / 4;

    let mut raw = RawServer::start(&setup.demo)?;
    let mut spin = RawServer::start(&setup.demo)?;
    raw_sequential(&mut raw, warmup, Wait::Blocking)?;
    raw_sequential(&mut spin, warmup, Wait::Spinning)?;
    rt.block_on(hub_sequential(hub, warmup))?;
    // Per round: the mean and p50 of each side, in µs.
    let mut means: [Vec<f64>; 3] = Default::default();
    let mut p50s: [Vec<f64>; 3] = Default::default();
    let mut cpu: [Duration; 3] = Default::default();
    let mut calls = [0usize; 3];
    for round in 0..rounds {
        for side in (0..3).map(|i| (round + i) % 3) {
            let before = cpu_time();
            let mut l = match side {
                0 => raw_sequential(&mut raw, block, Wait::Blocking)?,
                1 => raw_sequential(&mut spin, block, Wait::Spinning)?,
                _ => rt.block_on(hub_sequential(hub, block))?,
            };
            cpu[side] += cpu_time().saturating_sub(before);
            calls[side] += l.samples.len();
            l.sort();
            means[side].push(l.mean_us());
            p50s[side].push(l.pct_us(50.0));
        }
    }
    raw.finish()?;
    spin.finish()?;
    let [floor, spinning, ours] = means;
    let [floor50, spin50, ours50] = p50s;

    report.section(
        1,
        format!(
            "sequential tools/call latency ({rounds} interleaved rounds of ~{} ms per side; {} mcpmux calls)",
            block.as_millis(),
            calls[2]
        ),
    );
    report.row(Row::latency(
        "sequential latency, mean (µs)",
        ours.clone(),
        floor.clone(),
        "blocking floor",
        Some(Target::AtMost(1.0)),
    ));
    report.row(Row::latency(
        "sequential latency, mean (µs)",
        ours,
        spinning.clone(),
        "spinning floor",
        None,
    ));
    report.row(Row::latency(
        "spinning floor, mean (µs)",
        spinning,
        floor,
        "blocking floor",
        None,
    ));
    report.row(Row::latency(
        "sequential latency, p50 (µs)",
        ours50.clone(),
        floor50,
        "blocking floor p50",
        None,
    ));
    report.row(Row::latency(
        "sequential latency, p50 (µs)",
        ours50,
        spin50,
        "spinning floor p50",
        None,
    ));
    let per_call = |i: usize| cpu[i].as_secs_f64() * 1e6 / calls[i].max(1) as f64;
    report.note(format!(
        "client CPU per call (µs): mcpmux {:.2}, blocking floor {:.2}, spinning floor {:.2}",
        per_call(2),
        per_call(0),
        per_call(1)
    ));
    report.note(
        "blocking floor = a loop on a std thread over the same server's pipes: write one \
         request line, read one response line (a blocking read); spinning floor = the same \
         with a non-blocking pipe busy-polled (no thread is ever put to sleep)"
            .to_owned(),
    );
    Ok(())
}

/// Sequential echo calls through the hub for about `block`, from a task on
/// a worker thread (as application code would make them).
pub(crate) async fn hub_sequential(hub: &Hub, block: Duration) -> Res<Latencies> {
    let hub = hub.clone();
    tokio::spawn(async move {
        let args = echo_args();
        let opts = CallOptions::default();
        let mut samples = Vec::with_capacity(100_000);
        let start = Instant::now();
        let mut last = None;
        while start.elapsed() < block {
            let t = Instant::now();
            let result = hub.call_tool("mcp_demo_echo", Some(&args), &opts).await?;
            samples.push(t.elapsed());
            last = Some(result);
        }
        if let Some(result) = last {
            if result.is_error() || !result.json().contains(ECHO_TEXT) {
                return Err(format!("unexpected echo result: {}", result.json()).into());
            }
        }
        Ok::<_, BoxError>(Latencies { samples })
    })
    .await?
}

/// The floor: one request line out, one response line in, on the calling
/// thread, for about `block`; the read blocks or spins (`wait`).
pub(crate) fn raw_sequential(
    server: &mut RawServer,
    block: Duration,
    wait: Wait,
) -> Res<Latencies> {
    server.set_nonblocking(wait == Wait::Spinning)?;
    let mut out = Vec::with_capacity(512);
    let mut line = Vec::with_capacity(512);
    let mut samples = Vec::with_capacity(100_000);
    let start = Instant::now();
    while start.elapsed() < block {
        let id = server.take_ids(1).start;
        let t = Instant::now();
        out.clear();
        request_line(&mut out, id);
        server.send(&out)?;
        line.clear();
        loop {
            match server.stdout.read_until(b'\n', &mut line) {
                Ok(0) => return Err("raw server closed its stdout".into()),
                Ok(_) if line.ends_with(b"\n") => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        samples.push(t.elapsed());
    }
    server.set_nonblocking(false)?;
    if !samples.is_empty() && !String::from_utf8_lossy(&line).contains(ECHO_TEXT) {
        return Err(format!(
            "raw server: unexpected echo answer: {}",
            String::from_utf8_lossy(&line)
        )
        .into());
    }
    Ok(Latencies { samples })
}
