//! Figure 1: sequential `tools/call` latency against the raw-pipe floor.

use std::io::BufRead;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

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
    let mut raw_async = AsyncRawServer::start(rt, &setup.demo)?;
    raw_sequential(&mut raw, warmup)?;
    rt.block_on(raw_async.sequential(warmup))?;
    rt.block_on(hub_sequential(hub, warmup))?;
    // Rounds rotate among the three so that all see the same machine.
    let mut floor = Latencies::default();
    let mut ours = Latencies::default();
    let mut async_floor = Latencies::default();
    let (mut floor_cpu, mut ours_cpu) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        for side in (0..3).map(|i| (round + i) % 3) {
            let cpu = cpu_time();
            match side {
                0 => {
                    floor.extend(raw_sequential(&mut raw, per_round)?);
                    floor_cpu += cpu_time().saturating_sub(cpu);
                }
                1 => {
                    ours.extend(rt.block_on(hub_sequential(hub, per_round))?);
                    ours_cpu += cpu_time().saturating_sub(cpu);
                }
                _ => async_floor.extend(rt.block_on(raw_async.sequential(per_round))?),
            }
        }
    }
    raw.finish()?;
    raw_async.finish()?;
    floor.sort();
    ours.sort();
    async_floor.sort();

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
        Target::AtMost(1.1),
    ));
    report.row(Row::info(
        "mean latency (µs), async floor",
        ours.mean_us(),
        async_floor.mean_us(),
        "async floor",
    ));
    report.row(Row::info(
        "p50 latency (µs), async floor",
        ours.pct_us(50.0),
        async_floor.pct_us(50.0),
        "async floor",
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
         write one request line, read_line one response; async floor = the same \
         loop in a task on this runtime, through tokio's pipes (what any async \
         client pays: its thread sleeps in epoll, not in read)"
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

/// The async floor: the raw request/response loop of [`raw_sequential`] in a
/// task on the bench's runtime, reading and writing through tokio's pipes.
/// What any client on an async runtime pays before doing any work: its
/// thread waits in `epoll_wait`, not in `read`, and the kernel wakes it
/// differently.
pub(crate) struct AsyncRawServer {
    server: RawServer,
    pipes: Option<(pipe::Sender, tokio::io::BufReader<pipe::Receiver>)>,
}

impl AsyncRawServer {
    /// Spawns `program`, does the handshake (blocking), then moves its pipes
    /// into `rt`'s reactor.
    pub(crate) fn start(rt: &tokio::runtime::Runtime, program: &std::path::Path) -> Res<Self> {
        let server = RawServer::start(program)?;
        let stdin = server
            .stdin
            .as_ref()
            .expect("stdin open")
            .as_fd()
            .try_clone_to_owned()?;
        // The handshake's lines were read whole: nothing is buffered.
        let stdout = server.stdout.get_ref().as_fd().try_clone_to_owned()?;
        let _enter = rt.enter();
        let pipes = (
            pipe::Sender::from_owned_fd(stdin)?,
            tokio::io::BufReader::new(pipe::Receiver::from_owned_fd(stdout)?),
        );
        Ok(AsyncRawServer {
            server,
            pipes: Some(pipes),
        })
    }

    /// `calls` times one request line out, one response line in, from a
    /// task (as [`hub_sequential`] makes its calls).
    pub(crate) async fn sequential(&mut self, calls: usize) -> Res<Latencies> {
        let ids = self.server.take_ids(calls);
        let (mut tx, mut rx) = self.pipes.take().expect("pipes present");
        let (pipes, result) = tokio::spawn(async move {
            let result = async {
                let mut out = Vec::with_capacity(512);
                let mut line = String::with_capacity(512);
                let mut samples = Vec::with_capacity(calls);
                let start = Instant::now();
                for id in ids {
                    let t = Instant::now();
                    out.clear();
                    request_line(&mut out, id);
                    tx.write_all(&out).await?;
                    line.clear();
                    if rx.read_line(&mut line).await? == 0 {
                        return Err::<_, BoxError>("raw server closed its stdout".into());
                    }
                    samples.push(t.elapsed());
                }
                let total = start.elapsed();
                if calls > 0 && !line.contains(ECHO_TEXT) {
                    return Err(format!("raw server: unexpected echo answer: {line}").into());
                }
                Ok(Latencies { samples, total })
            }
            .await;
            ((tx, rx), result)
        })
        .await?;
        self.pipes = Some(pipes);
        result
    }

    /// Closes the pipes and waits for the server to exit.
    pub(crate) fn finish(mut self) -> Res<()> {
        drop(self.pipes.take());
        self.server.finish()
    }
}
