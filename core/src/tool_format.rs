//! Renders hub tools for LLM APIs: `anthropic` (Messages), `openai` (Chat
//! Completions), `openai-responses` (Responses) and `mcp` (MCP's own shape).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::tool_names::HubTool;

/// The format names [`ToolFormat`] parses, in [`ToolFormat::ALL`] order.
pub const FORMATS: &[&str] = &["anthropic", "openai", "openai-responses", "mcp"];

/// An LLM API's shape for a tool list. Serialized (and parsed, with
/// [`str::parse`]) as its name: `anthropic`, `openai`, `openai-responses`,
/// `mcp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ToolFormat {
    /// `anthropic`: the Messages API's `tools`.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// `openai`: Chat Completions' `tools` (`{"type": "function", "function": ...}`).
    #[serde(rename = "openai")]
    OpenAi,
    /// `openai-responses`: the Responses API's flat function tools.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// `mcp`: MCP's own `Tool` shape (`inputSchema`, `outputSchema`, ...).
    #[serde(rename = "mcp")]
    Mcp,
}

impl ToolFormat {
    /// Every format, in the order of [`FORMATS`].
    pub const ALL: [ToolFormat; 4] = [
        ToolFormat::Anthropic,
        ToolFormat::OpenAi,
        ToolFormat::OpenAiResponses,
        ToolFormat::Mcp,
    ];

    /// The format's name, as the front ends spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFormat::Anthropic => "anthropic",
            ToolFormat::OpenAi => "openai",
            ToolFormat::OpenAiResponses => "openai-responses",
            ToolFormat::Mcp => "mcp",
        }
    }
}

impl fmt::Display for ToolFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for ToolFormat {
    type Err = Error;

    /// Parses a format name; anything else is `INVALID_INPUT` naming it.
    fn from_str(s: &str) -> Result<Self, Error> {
        ToolFormat::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "unknown tool format '{s}' (expected one of: {})",
                    FORMATS.join(", ")
                ))
            })
    }
}

/// The tools as a JSON array in `format` (a name, see [`ToolFormat`]);
/// an unknown name is `INVALID_INPUT`.
pub fn render(tools: &[HubTool], format: &str) -> Result<Value, Error> {
    Ok(render_as(tools, format.parse()?))
}

/// The tools as a JSON array in `format`.
pub fn render_as(tools: &[HubTool], format: ToolFormat) -> Value {
    let one: fn(&HubTool) -> Value = match format {
        ToolFormat::Anthropic => |t| {
            let mut o = Map::new();
            o.insert("name".into(), t.name.clone().into());
            if let Some(d) = &t.description {
                o.insert("description".into(), d.clone().into());
            }
            o.insert("input_schema".into(), object_schema(&t.input_schema));
            Value::Object(o)
        },
        ToolFormat::OpenAi => |t| json!({ "type": "function", "function": function_body(t) }),
        ToolFormat::OpenAiResponses => |t| {
            let mut o = function_body(t);
            o.insert("type".into(), "function".into());
            Value::Object(o)
        },
        ToolFormat::Mcp => |t| {
            let mut o = Map::new();
            o.insert("name".into(), t.name.clone().into());
            if let Some(title) = &t.title {
                o.insert("title".into(), title.clone().into());
            }
            if let Some(d) = &t.description {
                o.insert("description".into(), d.clone().into());
            }
            o.insert("inputSchema".into(), t.input_schema.clone());
            if let Some(s) = &t.output_schema {
                o.insert("outputSchema".into(), s.clone());
            }
            if let Some(a) = &t.annotations {
                o.insert("annotations".into(), a.clone());
            }
            for (key, value) in [
                ("execution", &t.execution),
                ("icons", &t.icons),
                ("_meta", &t.meta),
            ] {
                if let Some(v) = value {
                    o.insert(key.into(), v.clone());
                }
            }
            Value::Object(o)
        },
    };
    // A model is never offered a tool only its app may call (MCP Apps);
    // the MCP form is a host's, which hides them from its model itself.
    let for_model = format != ToolFormat::Mcp;
    Value::Array(
        tools
            .iter()
            .filter(|t| !(for_model && t.is_app_only()))
            .map(one)
            .collect(),
    )
}

fn function_body(t: &HubTool) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("name".into(), t.name.clone().into());
    if let Some(d) = &t.description {
        o.insert("description".into(), d.clone().into());
    }
    o.insert("parameters".into(), object_schema(&t.input_schema));
    o
}

/// LLM APIs require an object schema; a tool without `type` gets one.
fn object_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) if m.contains_key("type") => schema.clone(),
        Value::Object(m) => {
            let mut m = m.clone();
            m.insert("type".into(), "object".into());
            m.entry("properties").or_insert_with(|| json!({}));
            Value::Object(m)
        }
        _ => json!({ "type": "object", "properties": {} }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> HubTool {
        HubTool {
            name: "mcp_demo_echo".into(),
            server: "demo".into(),
            tool: "echo".into(),
            title: Some("Echo".into()),
            description: Some("Echo text".into()),
            input_schema: json!({"type":"object","properties":{"text":{"type":"string"}}}),
            output_schema: None,
            annotations: Some(json!({"readOnlyHint": true})),
            execution: None,
            icons: None,
            meta: None,
        }
    }

    #[test]
    fn formats() {
        let t = [tool()];
        let a = render(&t, "anthropic").unwrap();
        assert_eq!(a[0]["name"], "mcp_demo_echo");
        assert_eq!(a[0]["input_schema"]["properties"]["text"]["type"], "string");
        let o = render(&t, "openai").unwrap();
        assert_eq!(o[0]["type"], "function");
        assert_eq!(o[0]["function"]["name"], "mcp_demo_echo");
        assert_eq!(o[0]["function"]["parameters"]["type"], "object");
        let r = render(&t, "openai-responses").unwrap();
        assert_eq!(r[0]["type"], "function");
        assert_eq!(r[0]["name"], "mcp_demo_echo");
        assert!(r[0].get("function").is_none());
        let m = render(&t, "mcp").unwrap();
        assert_eq!(m[0]["inputSchema"]["type"], "object");
        assert_eq!(m[0]["annotations"]["readOnlyHint"], true);
        let e = render(&t, "gemini").unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        assert!(e.to_string().contains("gemini"));
    }

    #[test]
    fn format_names_round_trip_as_today() {
        let names: Vec<&str> = ToolFormat::ALL.iter().map(|f| f.as_str()).collect();
        assert_eq!(names, FORMATS);
        for f in ToolFormat::ALL {
            assert_eq!(f.as_str().parse::<ToolFormat>().unwrap(), f);
            assert_eq!(serde_json::to_value(f).unwrap(), json!(f.as_str()));
            assert_eq!(f.to_string(), f.as_str());
            let back: ToolFormat = serde_json::from_value(json!(f.as_str())).unwrap();
            assert_eq!(back, f);
        }
        let e = "OpenAI".parse::<ToolFormat>().unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        assert!(e.to_string().contains("'OpenAI'"), "{e}");
    }
}
