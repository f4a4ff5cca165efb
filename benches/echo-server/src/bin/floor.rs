//! `mcpmux-bench-floor`: the blocking floor of sequential `tools/call`
//! latency against one stdio MCP server, the reference that
//! `benches/run.sh` puts next to the Python and Node front ends' sequential
//! latency (the Rust figure measures the same floor inside
//! `cargo bench -p mcpmux-core --bench stdio`, interleaved with its own).
//!
//! ```text
//! mcpmux-bench-floor SERVER [CALLS [ROUNDS]]
//! ```
//!
//! Spawns `SERVER` (no arguments, stderr discarded), runs the `initialize`
//! handshake by hand, then on this thread writes one `tools/call echo`
//! request line and reads one response line per call: `CALLS / 10` warm-up
//! calls, then `ROUNDS` rounds of `CALLS` calls (defaults 20,000 and 3). The
//! request line is the one the mcpmux engine writes (a progress token in
//! `_meta`). Prints each round's mean latency and, last, the best round as
//! `floor_mean_us <µs>` (the front ends report their best round too).
//! Exits non-zero when the server fails or answers something other than
//! the echo.

use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

type Res<T> = Result<T, Box<dyn Error>>;

const TEXT: &str = "hello from the mcpmux floor";

fn main() {
    if let Err(e) = run() {
        eprintln!("mcpmux-bench-floor: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: mcpmux-bench-floor SERVER [CALLS [ROUNDS]]";
    let server = args.next().ok_or(usage)?;
    let number = |arg: Option<String>, default: usize| -> Res<usize> {
        match arg {
            None => Ok(default),
            Some(a) => Ok(a.parse().ok().filter(|&n| n > 0).ok_or(usage)?),
        }
    };
    let calls = number(args.next(), 20_000)?;
    let rounds = number(args.next(), 3)?;

    let mut child = Command::new(&server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {server}: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("piped"));
    handshake(&mut stdin, &mut stdout)?;

    let mut next_id = 2u64;
    sequential(&mut stdin, &mut stdout, &mut next_id, (calls / 10).max(1))?;
    let mut best = f64::INFINITY;
    for round in 1..=rounds {
        let mean = sequential(&mut stdin, &mut stdout, &mut next_id, calls)?;
        println!("round {round}: {calls} calls, mean {mean:.2} µs");
        best = best.min(mean);
    }
    drop(stdin);
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("{server} exited with {status}").into());
    }
    println!("floor_mean_us {best:.3}");
    Ok(())
}

/// `initialize`, `notifications/initialized`, then a `ping` whose answer
/// ends the handshake (whatever notifications the server sends first).
fn handshake(stdin: &mut ChildStdin, stdout: &mut BufReader<ChildStdout>) -> Res<()> {
    stdin.write_all(
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpmux-bench-floor","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"ping"}
"#,
    )?;
    let mut line = String::new();
    let mut initialized = false;
    loop {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            return Err("the server closed its stdout during the handshake".into());
        }
        let message: serde_json::Value = serde_json::from_str(&line)?;
        match message.get("id").and_then(serde_json::Value::as_u64) {
            Some(0) if message.get("result").is_some() => initialized = true,
            Some(1) if initialized && message.get("result").is_some() => return Ok(()),
            Some(_) => return Err(format!("unexpected answer in the handshake: {line}").into()),
            None => {} // a notification
        }
    }
}

/// `calls` sequential calls; their mean latency in µs.
fn sequential(
    stdin: &mut ChildStdin,
    stdout: &mut BufReader<ChildStdout>,
    next_id: &mut u64,
    calls: usize,
) -> Res<f64> {
    let mut out = Vec::with_capacity(512);
    let mut line = String::with_capacity(512);
    let start = Instant::now();
    for _ in 0..calls {
        let id = *next_id;
        *next_id += 1;
        out.clear();
        writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}},"_meta":{{"progressToken":{id}}}}}}}"#
        )?;
        stdin.write_all(&out)?;
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            return Err("the server closed its stdout".into());
        }
    }
    let elapsed = start.elapsed();
    if !line.contains(TEXT) || !line.contains(&format!(r#""id":{}"#, *next_id - 1)) {
        return Err(format!("unexpected answer to the last call: {line}").into());
    }
    Ok(elapsed.as_secs_f64() * 1e6 / calls as f64)
}
