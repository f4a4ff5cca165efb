//! The session verbs as MCP tools, `review_begin`, `review_wait`,
//! `review_reply` and `review_end`: what `mcpmux serve` offers, and
//! `mcpmux gateway` beside the servers' tools when the config has a
//! `[session]` table. Each returns its JSON result as one text block; a
//! failure is `{"error", "code"}` text with `isError: true`.

use serde_json::{json, Value};

use super::{params, SessionContext};
use mcpmux_core::error::Error;

/// The tools, their input schemas generated from the verbs' parameter
/// types ([`params::schema`]), so each takes exactly the fields core
/// accepts. An MCP client has no host callback, so the `host` reviewer is
/// not offered, and `working_dir` is required (the server's own directory
/// is not the caller's).
pub fn review_tools() -> Vec<Value> {
    let tool = |verb: &str, name: &str, description: &str| -> Value {
        let mut schema = params::schema(verb).unwrap_or_else(|_| json!({}));
        if verb == "begin" {
            if let Some(Value::Array(e)) = schema.pointer_mut("/properties/reviewer/enum") {
                e.retain(|r| r != "host");
            }
            if let Some(Value::Array(r)) = schema.get_mut("required") {
                r.push("working_dir".into());
            }
        }
        json!({"name": name, "description": description, "inputSchema": schema})
    };
    vec![
        tool("begin", "review_begin", "Start a review session and its round 1 in the background. Returns {session_dir, round, status} (and analysis_prompt for peer skills). Then call review_wait."),
        tool("wait", "review_wait", "Wait up to max_wait_seconds for the current round. Returns status, review {verdict, blocks}, activities since the last wait, and next / next_reason telling what to do."),
        tool("reply", "review_reply", "Answer the review (fixes made, rebuttals) and start the next round on the same thread."),
        tool("end", "review_end", "End the session: stops a running round, writes meta.json when finalized."),
    ]
}

/// Whether `name` is one of [`review_tools`].
pub fn is_review_tool(name: &str) -> bool {
    name.strip_prefix("review_")
        .is_some_and(|verb| params::VERBS.contains(&verb))
}

/// Runs review tool `name` with `arguments` (`null` = none); the MCP
/// `CallToolResult`.
pub async fn call_review_tool(ctx: &SessionContext, name: &str, arguments: &Value) -> Value {
    let args = match arguments {
        Value::Null => json!({}),
        a => a.clone(),
    };
    let result = match name.strip_prefix("review_") {
        Some(verb) if params::VERBS.contains(&verb) => super::call(ctx, verb, &args).await,
        _ => Err(Error::UnknownTool(format!("unknown tool '{name}'"))),
    };
    match result {
        Ok(v) => json!({"content": [{"type": "text", "text": v.to_string()}], "isError": false}),
        Err(e) => {
            json!({"content": [{"type": "text", "text": e.to_json().to_string()}], "isError": true})
        }
    }
}
