//! SSE benchmark: a large tool result over Streamable HTTP as one
//! server-sent event, against the same result as a plain JSON body.
//!
//! A plain program (no harness) that prints a report. A loopback HTTP/1.1
//! server in this process (std threads, keep-alive) answers `tools/call`
//! with a result whose text is 4 MiB: on `/json` as an `application/json`
//! body, on `/sse` as one `message` event of a `text/event-stream` body
//! (written in 16 KiB pieces, so the client sees many chunks). One hub is
//! connected to both; calls alternate between them. Printed: the median
//! call time of each, and the ratio SSE / JSON. Target: ≤ 2×
//! (informational: the program exits 0 whether the target is met or not,
//! non-zero only when something fails).
//!
//! Run it with
//!
//! ```text
//! cargo bench -p mcpmux-core --bench sse
//! ```
//!
//! Environment: `MCPMUX_BENCH_QUICK=1` — fewer rounds (CI smoke run);
//! `MCPMUX_BENCH_SSE_MB` — the result size in MiB (default 4).

use std::error::Error as StdError;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpmux_core::{CallOptions, Config, Hub};
use serde_json::{json, Value};

type Res<T> = Result<T, Box<dyn StdError + Send + Sync>>;

/// Bodies of the `tools/call` answer (the id is spliced in per request).
struct Bodies {
    /// The result JSON before and after the id.
    before_id: Vec<u8>,
    after_id: Vec<u8>,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("sse benchmark failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let quick = std::env::var_os("MCPMUX_BENCH_QUICK").is_some();
    let mib: usize = std::env::var("MCPMUX_BENCH_SSE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let rounds = if quick { 3 } else { 9 };
    let text = "x".repeat(mib << 20);
    let result = serde_json::to_vec(&json!({"content": [{"type": "text", "text": text}]}))?;
    let bodies = Arc::new(Bodies {
        before_id: br#"{"jsonrpc":"2.0","id":"#.to_vec(),
        after_id: [&br#","result":"#[..], &result, b"}"].concat(),
    });
    let port = serve(bodies)?;

    let rt = tokio::runtime::Runtime::new()?;
    let toml = format!(
        "[mcp]\nmax_message_bytes = {}\ntimeout_seconds = 120\n\
         [[mcp.servers]]\nname = \"json\"\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/json\"\n\
         [[mcp.servers]]\nname = \"sse\"\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/sse\"\n",
        (mib + 1) << 20
    );
    let hub = rt.block_on(Hub::connect(Config::parse(&toml)?))?;
    for s in hub.servers() {
        if s.state != "connected" {
            return Err(format!("server {} did not connect: {:?}", s.name, s.error).into());
        }
    }
    let call = |tool: &str| -> Res<Duration> {
        let options = CallOptions::default().with_timeout(Duration::from_secs(120));
        let start = Instant::now();
        let result = rt.block_on(hub.call_tool(tool, Some(&json!({})), &options))?;
        let took = start.elapsed();
        let got = result.value()["content"][0]["text"]
            .as_str()
            .map_or(0, str::len);
        if got != mib << 20 {
            return Err(format!("{tool}: {got} bytes of text, expected {}", mib << 20).into());
        }
        Ok(took)
    };
    // Warm up: connections, allocator.
    call("mcp_json_big")?;
    call("mcp_sse_big")?;
    let (mut plain, mut sse) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            plain.push(call("mcp_json_big")?);
            sse.push(call("mcp_sse_big")?);
        } else {
            sse.push(call("mcp_sse_big")?);
            plain.push(call("mcp_json_big")?);
        }
    }
    rt.block_on(hub.close());
    let (p, s) = (median(&mut plain), median(&mut sse));
    let ratio = s.as_secs_f64() / p.as_secs_f64();
    println!("SSE benchmark: a {mib} MiB tool result over Streamable HTTP, loopback, {rounds} rounds (median)");
    println!("  plain JSON body:     {:8.1} ms", ms(p));
    println!("  one SSE event:       {:8.1} ms", ms(s));
    println!(
        "  ratio SSE / JSON:    {ratio:8.2}x   (target <= 2.0x: {})",
        if ratio <= 2.0 { "PASS" } else { "MISS" }
    );
    Ok(())
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Starts the loopback server; returns its port.
fn serve(bodies: Arc<Bodies>) -> Res<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let bodies = bodies.clone();
            std::thread::spawn(move || {
                let _ = connection(conn, &bodies);
            });
        }
    });
    Ok(port)
}

/// Answers requests on one keep-alive connection until it closes.
fn connection(conn: TcpStream, bodies: &Bodies) -> Res<()> {
    conn.set_nodelay(true)?;
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse()?;
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let mut parts = request_line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if method != "POST" {
            respond(&mut writer, "405 Method Not Allowed", "text/plain", b"")?;
            continue;
        }
        let msg: Value = serde_json::from_slice(&body)?;
        let id = msg.get("id").cloned();
        let rpc = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let Some(id) = id else {
            respond(&mut writer, "202 Accepted", "text/plain", b"")?;
            continue;
        };
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        match rpc {
            "initialize" => {
                let version = msg["params"]["protocolVersion"].clone();
                let body = answer(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "mcpmux-sse-bench", "version": "1.0.0"},
                }));
                respond(
                    &mut writer,
                    "200 OK",
                    "application/json",
                    &serde_json::to_vec(&body)?,
                )?;
            }
            "tools/list" => {
                let tool = json!({"name": "big", "description": "A large result.", "inputSchema": {"type": "object"}});
                let body = serde_json::to_vec(&answer(json!({"tools": [tool]})))?;
                respond(&mut writer, "200 OK", "application/json", &body)?;
            }
            "tools/call" => {
                let message = [
                    &bodies.before_id[..],
                    id.to_string().as_bytes(),
                    &bodies.after_id,
                ]
                .concat();
                if path.starts_with("/sse") {
                    let event = [&b"event: message\ndata: "[..], &message, b"\n\n"].concat();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n",
                        event.len()
                    );
                    writer.write_all(head.as_bytes())?;
                    for piece in event.chunks(16 * 1024) {
                        writer.write_all(piece)?;
                    }
                    writer.flush()?;
                } else {
                    respond(&mut writer, "200 OK", "application/json", &message)?;
                }
            }
            _ => {
                let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}});
                respond(
                    &mut writer,
                    "200 OK",
                    "application/json",
                    &serde_json::to_vec(&body)?,
                )?;
            }
        }
    }
}

fn respond(out: &mut TcpStream, status: &str, kind: &str, body: &[u8]) -> Res<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()?;
    Ok(())
}
