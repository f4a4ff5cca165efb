//! The MCP shapes the engine itself reads (initialize, tools, pages) and
//! protocol-version negotiation. Everything else passes through as JSON.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
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
pub(crate) fn is_stateless(version: &str) -> bool {
    version >= "2026-07-28"
}

/// Checks the server's answer to our offer. The specification lets a server
/// answer with another version it supports; the client must support it too.
pub(crate) fn accept_version(offered: &str, answered: &str) -> Result<(), String> {
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
///
/// Schemas and annotations are kept as the JSON text the server sent: a
/// connection may hold hundreds of tools, and text is a tenth of the memory
/// of parsed values. [`Tool::input_schema`] and friends parse on demand.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Tool {
    /// The server's own name for the tool.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments, as sent.
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema_json: Box<RawValue>,
    /// JSON Schema of `structuredContent`, as sent.
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema_json: Option<Box<RawValue>>,
    /// Hints such as `readOnlyHint` and `destructiveHint`, as sent.
    #[serde(
        rename = "annotations",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub annotations_json: Option<Box<RawValue>>,
    /// `execution` (e.g. `taskSupport`), as sent.
    #[serde(rename = "execution", default, skip_serializing_if = "Option::is_none")]
    pub execution_json: Option<Box<RawValue>>,
    /// `icons`, as sent.
    #[serde(rename = "icons", default, skip_serializing_if = "Option::is_none")]
    pub icons_json: Option<Box<RawValue>>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta_json: Option<Box<RawValue>>,
}

impl Tool {
    /// `execution`, parsed.
    pub fn execution(&self) -> Option<Value> {
        self.execution_json.as_deref().map(parse)
    }

    /// `icons`, parsed.
    pub fn icons(&self) -> Option<Value> {
        self.icons_json.as_deref().map(parse)
    }

    /// `_meta`, parsed.
    pub fn meta(&self) -> Option<Value> {
        self.meta_json.as_deref().map(parse)
    }

    /// The input schema, parsed.
    pub fn input_schema(&self) -> Value {
        parse(&self.input_schema_json)
    }

    /// The output schema, parsed.
    pub fn output_schema(&self) -> Option<Value> {
        self.output_schema_json.as_deref().map(parse)
    }

    /// The annotations, parsed.
    pub fn annotations(&self) -> Option<Value> {
        self.annotations_json.as_deref().map(parse)
    }
}

fn parse(raw: &RawValue) -> Value {
    // RawValue always holds valid JSON.
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

fn empty_object_schema() -> Box<RawValue> {
    RawValue::from_string(r#"{"type":"object"}"#.to_owned()).expect("valid JSON")
}

/// The name and version mcpmux reports in `clientInfo`.
pub(crate) fn default_client_info() -> Value {
    serde_json::json!({ "name": "mcpmux", "version": env!("CARGO_PKG_VERSION") })
}

/// The log levels of MCP (`logging/setLevel`, `notifications/message`),
/// most verbose first.
pub const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

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
        assert_eq!(t.input_schema()["type"], "object");
        assert!(t.annotations().is_none());
        let t: Tool = serde_json::from_str(r#"{"name":"x","inputSchema":{"type":"object","properties":{"a":{}}},"annotations":{"readOnlyHint":true}}"#).unwrap();
        assert_eq!(
            t.input_schema_json.get(),
            r#"{"type":"object","properties":{"a":{}}}"#
        );
        assert_eq!(t.annotations().unwrap()["readOnlyHint"], true);
    }
}
