//! Renders hub tools for LLM APIs: `anthropic` (Messages), `openai` (Chat
//! Completions), `openai-responses` (Responses) and `mcp` (MCP's own shape).

use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::tool_names::HubTool;

/// The format names [`render`] accepts.
pub const FORMATS: &[&str] = &["anthropic", "openai", "openai-responses", "mcp"];

/// The tools as a JSON array in `format`.
pub fn render(tools: &[HubTool], format: &str) -> Result<Value, Error> {
    let one: fn(&HubTool) -> Value = match format {
        "anthropic" => |t| {
            let mut o = Map::new();
            o.insert("name".into(), t.name.clone().into());
            if let Some(d) = &t.description {
                o.insert("description".into(), d.clone().into());
            }
            o.insert("input_schema".into(), object_schema(&t.input_schema));
            Value::Object(o)
        },
        "openai" => |t| json!({ "type": "function", "function": function_body(t) }),
        "openai-responses" => |t| {
            let mut o = function_body(t);
            o.insert("type".into(), "function".into());
            Value::Object(o)
        },
        "mcp" => |t| {
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
            Value::Object(o)
        },
        other => {
            return Err(Error::InvalidInput(format!(
                "unknown tool format '{other}' (expected one of: {})",
                FORMATS.join(", ")
            )))
        }
    };
    Ok(Value::Array(tools.iter().map(one).collect()))
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
}
