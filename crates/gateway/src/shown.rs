//! What a gateway's client sees of a tool's result: UI URIs under the
//! names the gateway serves them by (MCP Apps), and text framed as
//! untrusted data under `--frame-output`. Shared by a call's answer and a
//! fleet task's result read from its server (`fleet_tasks`).

use mcpmux_policy::output;
use serde_json::Value;

use super::Gateway;

/// A result of hub tool `hub_name` (`name` to the client) as its client
/// gets it: UI URIs under the names the gateway serves them by, and text
/// framed under `--frame-output`.
pub(crate) fn shown_result(
    gateway: &Gateway,
    hub_name: &str,
    name: &str,
    mut value: Value,
) -> Value {
    super::apps::rename_in_result(&mut value, || {
        mcpmux_core::client::ToolRouter::tool_shared(&gateway.inner.hub, hub_name)
            .map(|t| t.server.clone())
    });
    if gateway.inner.options.frame_output {
        frame_text_blocks(&mut value, name);
    }
    value
}

/// `--frame-output`: each text block of a result framed as untrusted data.
fn frame_text_blocks(result: &mut Value, tool: &str) {
    if let Some(Value::Array(blocks)) = result.get_mut("content") {
        for block in blocks {
            if block["type"] == "text" {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    block["text"] = output::frame(tool, text).into();
                }
            }
        }
    }
}
