//! Figure 3: connect time for 1 and for many slow servers, against the same
//! connects done by hand over raw pipes.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcpmux_core::{Config, Hub};

use crate::harness::*;
use crate::report::*;

/// Servers for the connect figure, and their `initialize` delay.
pub(crate) const CONNECT_SERVERS: usize = 20;

pub(crate) const INIT_DELAY_MS: u64 = 200;

/// Repeats of each connect measurement (the median is reported).
pub(crate) const CONNECT_REPEATS: usize = 3;

pub(crate) fn bench_connect(
    setup: &Setup,
    rt: &tokio::runtime::Runtime,
    report: &mut Report,
) -> Res<()> {
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

    let mut times: [Vec<f64>; 4] = Default::default();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // CPU the raw servers use between them (they are waited for, so they count).
    let mut startup_cpu = Duration::ZERO;
    for _ in 0..CONNECT_REPEATS {
        times[0].push(ms(connect(1)?));
        times[1].push(ms(connect(CONNECT_SERVERS)?));
        times[2].push(ms(raw(1)?));
        let cpu = children_cpu_time();
        times[3].push(ms(raw(CONNECT_SERVERS)?));
        startup_cpu += children_cpu_time().saturating_sub(cpu);
    }
    let one = median(&times[0]);
    report.section(
        3,
        format!(
            "connect time, initialize delayed {INIT_DELAY_MS} ms ({CONNECT_REPEATS} interleaved repeats)"
        ),
    );
    report.row(Row::ratio(
        &format!("Hub::connect, {CONNECT_SERVERS} slow servers (ms)"),
        times[1].clone(),
        times[0].clone(),
        "Hub::connect, 1 server",
        Some(Target::AtMost(1.5)),
    ));
    report.row(Row::ratio(
        "Hub::connect, 1 slow server (ms)",
        times[0].clone(),
        times[2].clone(),
        "raw spawn + handshake",
        None,
    ));
    report.row(Row::ratio(
        &format!("Hub::connect, {CONNECT_SERVERS} slow servers (ms)"),
        times[1].clone(),
        times[3].clone(),
        "raw spawn + handshake",
        None,
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
pub(crate) fn raw_connect(server: &Path, delay: &str, n: usize) -> Res<Duration> {
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
