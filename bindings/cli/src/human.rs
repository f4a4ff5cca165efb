//! Plain-text rendering of command results for people (without `--json`).

use mcpmux_core::{HubTool, ServerStatus};
use serde_json::Value;

/// One line per server: name, state, type, tool count, protocol, error.
pub fn servers(servers: &[ServerStatus]) -> String {
    let width = servers
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:width$}  {:9}  {:9}  {:>5}  PROTOCOL",
        "NAME", "STATE", "TYPE", "TOOLS"
    );
    for s in servers {
        out.push_str(&format!(
            "\n{:width$}  {:9}  {:9}  {:>5}  {}",
            s.name,
            s.state,
            s.transport,
            s.tool_count,
            s.protocol_version.as_deref().unwrap_or("-")
        ));
        if let Some(e) = &s.error {
            out.push_str(&format!("\n{:width$}  error: {e}", ""));
        }
    }
    out
}

/// One line per tool: hub name and the first line of its description.
pub fn tools(tools: &[HubTool]) -> String {
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    tools
        .iter()
        .map(|t| {
            let desc = t
                .description
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("");
            format!("{:width$}  {desc}", t.name).trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of each content block; other blocks (and structured content
/// when there is no content) as JSON.
pub fn tool_result(result: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    if result["isError"] == true {
        parts.push("error:".into());
    }
    let content = result["content"].as_array().cloned().unwrap_or_default();
    for block in &content {
        match block["type"].as_str() {
            Some("text") => parts.push(block["text"].as_str().unwrap_or("").to_owned()),
            _ => parts.push(block.to_string()),
        }
    }
    if content.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            parts.push(s.to_string());
        }
    }
    parts.join("\n")
}

/// Resources and templates, one per line, with their server.
pub fn resources(resources: &[Value], templates: &[Value]) -> String {
    let mut lines: Vec<String> = resources
        .iter()
        .map(|r| {
            let app = match r["app_of"].as_array() {
                Some(tools) if !tools.is_empty() => {
                    let names: Vec<&str> = tools.iter().filter_map(Value::as_str).collect();
                    format!("  app of {}", names.join(", "))
                }
                _ => String::new(),
            };
            format!(
                "{}  {}  ({}){app}",
                text(&r["uri"]),
                text(&r["name"]),
                text(&r["server"])
            )
        })
        .collect();
    lines.extend(templates.iter().map(|t| {
        format!(
            "{}  {}  ({}, template)",
            text(&t["uriTemplate"]),
            text(&t["name"]),
            text(&t["server"])
        )
    }));
    lines.join("\n")
}

/// The text of each content of a `resources/read` result.
pub fn resource_contents(result: &Value) -> String {
    let contents = result["contents"].as_array().cloned().unwrap_or_default();
    contents
        .iter()
        .map(|c| match c.get("text").and_then(Value::as_str) {
            Some(t) => t.to_owned(),
            None => format!(
                "[{} bytes of base64 {}]",
                c["blob"].as_str().map_or(0, str::len),
                c["mimeType"].as_str().unwrap_or("data")
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prompts, one per line, with their arguments and server.
pub fn prompts(prompts: &[Value]) -> String {
    prompts
        .iter()
        .map(|p| {
            let args: Vec<String> = p["arguments"]
                .as_array()
                .map(|a| a.iter().map(|x| text(&x["name"])).collect())
                .unwrap_or_default();
            format!(
                "{}({})  {}  ({})",
                text(&p["name"]),
                args.join(", "),
                text(&p["description"]),
                text(&p["server"])
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The messages of a `prompts/get` result as `role: text`.
pub fn prompt_messages(result: &Value) -> String {
    let messages = result["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .map(|m| {
            let content = &m["content"];
            let body = match content["type"].as_str() {
                Some("text") => text(&content["text"]),
                _ => content.to_string(),
            };
            format!("{}: {body}", text(&m["role"]))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("").to_owned()
}
