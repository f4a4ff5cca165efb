//! The MCP shapes the engine itself reads (initialize, tools, pages) and
//! protocol-version negotiation. Everything else passes through as JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Protocol revisions with the stateful `initialize` handshake, newest first.
pub const STATEFUL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Every revision mcpmux knows, newest first. The stateless 2026-07-28
/// revision is recognized in configuration; it needs a network transport.
pub const KNOWN_VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// The revision offered first in `initialize`.
pub const LATEST_STATEFUL_VERSION: &str = "2025-11-25";

/// Whether `version` is a revision mcpmux knows.
pub fn is_known_version(version: &str) -> bool {
    KNOWN_VERSIONS.contains(&version)
}

/// Whether the revision uses the stateless lifecycle (no `initialize`).
pub fn is_stateless(version: &str) -> bool {
    version >= "2026-07-28"
}

/// Checks the server's answer to our offer. The specification lets a server
/// answer with another version it supports; the client must support it too.
pub fn accept_version(offered: &str, answered: &str) -> Result<(), String> {
    if STATEFUL_VERSIONS.contains(&answered) {
        Ok(())
    } else {
        Err(format!(
            "server answered protocol version '{answered}' to our '{offered}'; mcpmux supports {}",
            STATEFUL_VERSIONS.join(", ")
        ))
    }
}

/// The result of `initialize`, as far as the engine reads it.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct InitializeResult {
    /// The negotiated revision.
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
    /// The server's capabilities (kept as sent).
    #[serde(default)]
    pub capabilities: Value,
    /// `name`, `version` and optional `title` etc. of the server (kept as sent).
    #[serde(rename = "serverInfo", default)]
    pub server_info: Value,
    /// Optional instructions for using the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl InitializeResult {
    /// Whether the server declared capability `name` (e.g. `"tools"`).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some_and(|c| !c.is_null())
    }
}

/// One tool as a server lists it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Tool {
    /// The server's own name for the tool.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (kept intact).
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the tool declares one.
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Value>,
    /// Hints such as `readOnlyHint` and `destructiveHint` (kept as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object" })
}

/// One page of a paginated list: the items under `key` and the next cursor.
#[derive(Debug, Deserialize)]
pub struct Page {
    /// The cursor for the next page, when there is one.
    #[serde(rename = "nextCursor", default)]
    pub next_cursor: Option<String>,
    /// Every other member of the result, including the items.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

/// The name and version mcpmux reports in `clientInfo`.
pub fn default_client_info() -> Value {
    serde_json::json!({ "name": "mcpmux", "version": env!("CARGO_PKG_VERSION") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert!(accept_version("2025-11-25", "2025-06-18").is_ok());
        assert!(accept_version("2025-11-25", "2024-11-05").is_ok());
        let e = accept_version("2025-11-25", "1999-01-01").unwrap_err();
        assert!(e.contains("1999-01-01"));
        assert!(is_stateless("2026-07-28"));
        assert!(!is_stateless("2025-11-25"));
    }

    #[test]
    fn tool_defaults() {
        let t: Tool = serde_json::from_str(r#"{"name":"x"}"#).unwrap();
        assert_eq!(t.input_schema["type"], "object");
        assert!(t.annotations.is_none());
    }
}
