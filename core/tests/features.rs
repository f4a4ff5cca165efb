//! Cargo features: a config naming a transport or an auth type whose
//! feature this build leaves out fails to load with `CONFIG_INVALID` naming
//! the server and the feature (not a parse error); with the feature on it
//! loads. A server config built by hand for a compiled-out transport fails
//! its connect with the same explanation. Runs in every build: tests/run.sh
//! runs it with default features and with `--no-default-features`.

mod common;

use common::*;
use mcpmux_core::config::{NetworkConfig, TransportConfig};
use mcpmux_core::{Config, Hub, ServerState};

/// Loads `text`; `Ok` when `feature` is on, else `CONFIG_INVALID` naming
/// server `name` and the feature.
fn loads_only_with(feature: &str, on: bool, name: &str, text: &str) {
    match Config::parse(text) {
        Ok(c) => assert!(on, "'{feature}' is off but the config loaded: {c:?}"),
        Err(e) => {
            assert!(!on, "'{feature}' is on but the config failed: {e}");
            assert_eq!(e.code(), "CONFIG_INVALID", "{e}");
            let m = e.to_string();
            assert!(
                m.contains(&format!("server '{name}'"))
                    && m.contains(&format!("'{feature}' feature")),
                "{m}"
            );
        }
    }
}

#[test]
fn websocket_servers_need_the_websocket_feature() {
    let on = cfg!(feature = "websocket");
    let toml = "[[mcp.servers]]\nname = \"sock\"\ntype = \"websocket\"\nurl = \"wss://mcp.example.com/ws\"\n";
    loads_only_with("websocket", on, "sock", toml);
    let json = r#"{"mcpServers":{"sock2":{"type":"ws","url":"ws://127.0.0.1:1/ws"}}}"#;
    loads_only_with("websocket", on, "sock2", json);
}

#[test]
fn sse_servers_need_the_sse_feature() {
    let on = cfg!(feature = "sse");
    let declared = "[[mcp.servers]]\nname = \"team\"\ntype = \"sse\"\nurl = \"https://mcp.example.com/events\"\n";
    loads_only_with("sse", on, "team", declared);
    // Inferred from a URL ending in /sse: the same rule.
    let inferred = r#"{"mcpServers":{"legacy":{"url":"https://mcp.example.com/sse"}}}"#;
    loads_only_with("sse", on, "legacy", inferred);
}

#[test]
fn oauth_needs_the_oauth_feature() {
    let on = cfg!(feature = "oauth");
    let oauth = "[[mcp.servers]]\nname = \"cloud\"\ntype = \"http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.auth]\ntype = \"oauth\"\n";
    loads_only_with("oauth", on, "cloud", oauth);
    // Bearer and header auth are plain headers: always there.
    let bearer = "[[mcp.servers]]\nname = \"b\"\ntype = \"http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.auth]\ntype = \"bearer\"\ntoken = \"t\"\n";
    Config::parse(bearer).unwrap();
}

/// A `ServerConfig` made by hand (not through the loader) for a transport
/// that is compiled out: the server fails, and its error says why.
#[tokio::test]
async fn a_hand_built_config_for_a_compiled_out_transport_fails_its_connect() {
    let mut config = config_without_restarts(&[demo_entry("demo", ""), demo_entry("sock", "")]);
    config.servers[1].transport = TransportConfig::WebSocket(NetworkConfig {
        url: "ws://127.0.0.1:9/mcp".parse().unwrap(),
        headers: Default::default(),
        auth: None,
    });
    let hub = Hub::connect(config).await.unwrap();
    let servers = hub.servers();
    assert_eq!(servers[0].state, ServerState::Connected, "{servers:?}");
    assert_eq!(servers[1].state, ServerState::Failed, "{servers:?}");
    let error = servers[1].error.clone().unwrap();
    // With the feature on, port 9 refuses the connection; off, the error
    // names the feature.
    assert_eq!(
        error.contains("'websocket' feature"),
        !cfg!(feature = "websocket"),
        "{error}"
    );
    hub.close().await;
}
