//! The typed Rust API keeps the strings every front end sees: a hub's
//! server states and tool formats are enums that serialize exactly as the
//! strings of `servers --json` and `tools --format`, and parse back with
//! `INVALID_INPUT` naming a bad value. `list_tools` is a plain call.

mod common;

use common::*;
use mcpmux_core::{Hub, ServerState, ToolFormat};
use serde_json::json;

#[tokio::test]
async fn server_states_serialize_as_before() {
    let hub = Hub::connect(config(&[
        demo_entry("up", ""),
        demo_entry("off", "enabled = false"),
        stdio_entry(
            "down",
            "/nonexistent/mcpmux-no-such-server",
            &[],
            "restart = \"never\"",
        ),
    ]))
    .await
    .unwrap();
    let servers = hub.servers();
    let states: Vec<ServerState> = servers.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        [
            ServerState::Connected,
            ServerState::Disabled,
            ServerState::Failed
        ],
        "{servers:?}"
    );
    let as_json = serde_json::to_value(&servers).unwrap();
    let names: Vec<&str> = as_json
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["connected", "disabled", "failed"]);
    // Hosts that compared with the strings keep compiling and working.
    assert!(servers[0].state == "connected");
    assert_eq!(format!("[{:<9}]", servers[1].state), "[disabled ]");

    // Not async any more: no `.await`.
    let tools = hub.list_tools();
    assert!(tools.iter().any(|t| t.name == "mcp_up_echo"), "{tools:?}");
    hub.close().await;
}

#[test]
fn server_state_parses_and_names_a_bad_value() {
    for s in ServerState::ALL {
        assert_eq!(s.as_str().parse::<ServerState>().unwrap(), s);
        let back: ServerState = serde_json::from_value(json!(s.as_str())).unwrap();
        assert_eq!(back, s);
    }
    let e = "Connected".parse::<ServerState>().unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("'Connected'"), "{e}");
}

#[tokio::test]
async fn typed_and_string_tool_formats_agree() {
    let hub = Hub::connect(config(&[demo_entry("demo", "")]))
        .await
        .unwrap();
    for format in ToolFormat::ALL {
        assert_eq!(
            hub.tools_for(format.as_str()).unwrap(),
            hub.tools_as(format),
            "{format}"
        );
    }
    let e = hub.tools_for("gemini").unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("'gemini'"), "{e}");
    hub.close().await;
}
