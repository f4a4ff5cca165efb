//! `mcpmux serve`: an MCP server on stdio (newline-delimited JSON-RPC)
//! exposing the session verbs as the tools `review_begin`, `review_wait`,
//! `review_reply` and `review_end`. Each returns its JSON result as one text
//! block; a failure is `{"error", "code"}` text with `isError: true`.
//! Rounds run in detached processes, so they outlive `serve`.

use std::sync::Arc;

use mcpmux_core::{protocol, Error};
use mcpmux_sessions::mcp_tools::{call_review_tool, review_tools};
use mcpmux_sessions::SessionContext;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// Serves until stdin closes.
pub async fn serve(ctx: SessionContext) -> Result<(), Error> {
    let ctx = Arc::new(ctx);
    let out = Arc::new(Mutex::new(tokio::io::stdout()));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut calls = tokio::task::JoinSet::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                send(&out, json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("parse error: {e}")}})).await;
                continue;
            }
        };
        let Some(id) = msg.get("id").cloned() else {
            continue; // a notification (notifications/initialized, cancelled, ...)
        };
        if msg.get("method").is_none() {
            continue; // a response to nothing we asked
        }
        let method = msg["method"].as_str().unwrap_or("").to_owned();
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        match method.as_str() {
            "initialize" => {
                let asked = params["protocolVersion"].as_str().unwrap_or("");
                // The revisions core speaks over stdio; an unknown one gets
                // the newest.
                let version = if protocol::STATEFUL_VERSIONS.contains(&asked) {
                    asked
                } else {
                    protocol::LATEST_STATEFUL_VERSION
                };
                send(&out, reply(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "mcpmux", "version": mcpmux_core::VERSION},
                    "instructions": "Review sessions: review_begin, then review_wait until next is not `running`; act on next (respond → review_reply, done → review_end)."
                }))).await;
            }
            "ping" => send(&out, reply(json!({}))).await,
            "tools/list" => send(&out, reply(json!({"tools": review_tools()}))).await,
            "tools/call" => {
                let ctx = ctx.clone();
                let out = out.clone();
                calls.spawn(async move {
                    let name = params["name"].as_str().unwrap_or("");
                    let arguments = params.get("arguments").unwrap_or(&Value::Null);
                    let result = call_review_tool(&ctx, name, arguments).await;
                    send(&out, json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
                });
            }
            other => {
                send(&out, json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method not found: {other}")}})).await;
            }
        }
    }
    // stdin closed: let answers in flight go out, rounds run on detached.
    while calls.join_next().await.is_some() {}
    Ok(())
}

async fn send(out: &Mutex<tokio::io::Stdout>, msg: Value) {
    let mut line = msg.to_string();
    line.push('\n');
    let mut out = out.lock().await;
    let _ = out.write_all(line.as_bytes()).await;
    let _ = out.flush().await;
}
