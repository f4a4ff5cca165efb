//! `mcpmux-echo-server`: the smallest stdio MCP server the benchmarks need,
//! the second server of `benches/run.sh` next to the bundled demo server.
//!
//! Newline-delimited JSON-RPC 2.0 on stdin/stdout, one thread, no
//! dependency but `serde_json`, written the plain way (each line parsed into
//! a `serde_json::Value`, each answer serialized from one): what a minimal
//! hand-written server costs, where the demo server is a tuned one. It
//! answers
//!
//! - `initialize` — the offered protocol version when it knows it, else its
//!   latest; capabilities `{"tools":{}}`;
//! - `tools/list` — one tool, `echo` (`{"text": string}`); with
//!   `ECHO_TOOLS=N`, N tools: `echo` and `echo_1` … `echo_{N-1}`, each
//!   described in its own words (the scale figures list 100 servers × 100);
//! - `tools/call` of `echo` — `{"content":[{"type":"text","text":TEXT}]}`;
//!   a missing or non-string `text` is a tool error (`isError: true`), an
//!   unknown tool is JSON-RPC error -32602;
//! - `ping` — `{}`;
//! - any other request — JSON-RPC error -32601; a line that is not JSON —
//!   -32700 with a null id.
//!
//! Notifications (`notifications/initialized`, `notifications/cancelled`,
//! …) and responses are read and ignored: it sends nothing unprompted. It
//! exits 0 when stdin closes.
//!
//! Answers are written `{"jsonrpc":"2.0","id":…,"result":…}`, the
//! envelope in the order of the specification's examples (the payload's
//! members sorted, as a `Value` keeps them). `ECHO_SORTED_KEYS=1` writes the
//! envelope sorted too (`{"id":…,"jsonrpc":"2.0","result":…}`), as a server
//! that serializes a whole `Value` does: a client should not care.
//!
//! Answers go through a buffered writer that is flushed whenever no further
//! request is already buffered on stdin, so pipelined requests get their
//! answers in few writes while a lone request is answered at once.

use std::io::{self, BufRead, BufReader, BufWriter, Write};

use serde_json::{json, Value};

/// Protocol versions it accepts as offered; anything else gets the latest.
const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const LATEST_VERSION: &str = "2025-11-25";

/// Words the descriptions of `ECHO_TOOLS` tools draw on (for search).
const WORDS: [&str; 10] = [
    "weather", "files", "calendar", "billing", "search", "images", "mail", "maps", "notes",
    "tickets",
];

const PARSE_ERROR: i64 = -32700;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

fn main() -> io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut output = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = String::new();
    let sorted_keys = std::env::var_os("ECHO_SORTED_KEYS").is_some_and(|v| v == "1");
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        if let Some(answer) = answer(&line) {
            write_answer(&mut output, &answer, sorted_keys)?;
        }
        // Flush before a read that could block: pipelined requests share writes.
        if !input.buffer().contains(&b'\n') {
            output.flush()?;
        }
    }
    output.flush()
}

/// Writes one answer line.
fn write_answer(output: &mut impl Write, answer: &Value, sorted_keys: bool) -> io::Result<()> {
    if sorted_keys {
        serde_json::to_writer(&mut *output, answer)?;
        return output.write_all(b"\n");
    }
    // The envelope's members in the usual order ("jsonrpc" first): a
    // `Value` object would sort them.
    output.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
    serde_json::to_writer(&mut *output, &answer["id"])?;
    match answer.get("error") {
        Some(error) => {
            output.write_all(b",\"error\":")?;
            serde_json::to_writer(&mut *output, error)?;
        }
        None => {
            output.write_all(b",\"result\":")?;
            serde_json::to_writer(&mut *output, &answer["result"])?;
        }
    }
    output.write_all(b"}\n")
}

/// The answer to one line (none for a blank line), or `None` for a notification or a response.
fn answer(line: &str) -> Option<Value> {
    if line.trim().is_empty() {
        return None;
    }
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(e) => {
            return Some(error(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ))
        }
    };
    let id = message.get("id").cloned()?;
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // A response to something we never sent: nothing to say.
        return None;
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        "initialize" => {
            let offered = params.get("protocolVersion").and_then(Value::as_str);
            let version = offered
                .filter(|v| SUPPORTED_VERSIONS.contains(v))
                .unwrap_or(LATEST_VERSION);
            json!({
                "protocolVersion": version,
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "mcpmux-echo-server", "version": env!("CARGO_PKG_VERSION") },
            })
        }
        "ping" => json!({}),
        "tools/list" => {
            let n: usize = std::env::var("ECHO_TOOLS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            let tools: Vec<Value> = (0..n.max(1))
                .map(|i| {
                    let (name, description) = if i == 0 {
                        (
                            "echo".to_owned(),
                            "Returns its text argument as a text block.".to_owned(),
                        )
                    } else {
                        (
                            format!("echo_{i}"),
                            format!(
                                "Echo number {i}: returns its text argument, topic {} of {}.",
                                WORDS[i % WORDS.len()],
                                WORDS[(i / WORDS.len()) % WORDS.len()]
                            ),
                        )
                    };
                    json!({
                        "name": name,
                        "description": description,
                        "inputSchema": {
                            "type": "object",
                            "properties": { "text": { "type": "string" } },
                            "required": ["text"],
                        },
                    })
                })
                .collect();
            json!({ "tools": tools })
        }
        "tools/call" => match params.get("name").and_then(Value::as_str) {
            Some(name) if name == "echo" || name.starts_with("echo_") => {
                match params.pointer("/arguments/text").and_then(Value::as_str) {
                    Some(text) => json!({ "content": [{ "type": "text", "text": text }] }),
                    None => json!({
                        "content": [{ "type": "text", "text": "echo: argument `text` must be a string" }],
                        "isError": true,
                    }),
                }
            }
            Some(other) => {
                return Some(error(id, INVALID_PARAMS, &format!("Unknown tool: {other}")));
            }
            None => return Some(error(id, INVALID_PARAMS, "tools/call: no tool name")),
        },
        other => {
            return Some(error(
                id,
                METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
            ))
        }
    };
    Some(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}
