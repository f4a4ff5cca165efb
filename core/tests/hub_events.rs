//! The hub's event stream against real peers: server-everything's state,
//! its log messages, a demo server whose tools go away on close, and a
//! server that fails to start.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::events::EventSender;
use mcpmux_core::{CallOptions, Hub, HubEvent, HubOptions};

/// Only catches hangs: each event comes far sooner.
const HANG: Duration = Duration::from_secs(60);

/// The next event that `pick` accepts (others are skipped).
async fn next_matching(
    stream: &mut mcpmux_core::EventStream,
    what: &str,
    pick: impl Fn(&HubEvent) -> bool,
) -> HubEvent {
    tokio::time::timeout(HANG, async {
        loop {
            match stream.recv().await {
                Some(e) if pick(&e) => return e,
                Some(_) => continue,
                None => panic!("{what}: the stream ended"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: no such event within {HANG:?}"))
}

#[tokio::test]
async fn events_tell_states_logs_and_tool_changes() {
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let config = config(&[
        stdio_entry("everything", "node", &[&everything_entry(), "stdio"], ""),
        stdio_entry(
            "broken",
            "/nonexistent/mcpmux-no-such-server",
            &[],
            "restart = \"never\"",
        ),
    ]);
    let hub = Hub::connect_with(config, HubOptions::default().with_events(events))
        .await
        .unwrap();

    // Both servers' first states, seen by a stream made before connect.
    let mut states = Vec::new();
    for _ in 0..2 {
        let e = next_matching(&mut stream, "server_state", |e| {
            matches!(e, HubEvent::ServerState { .. })
        })
        .await;
        states.push(e.to_json());
    }
    states.sort_by_key(|s| s["server"].as_str().unwrap_or_default().to_owned());
    assert_eq!(states[0]["server"], "broken");
    assert_eq!(states[0]["state"], "failed");
    assert_eq!(states[0]["code"], "CONNECT_FAILED");
    assert_eq!(states[1]["server"], "everything");
    assert_eq!(states[1]["state"], "connected");
    assert!(states[1].get("error").is_none(), "{states:?}");

    // A server's log message (server-everything sends one at once when
    // simulated logging is turned on).
    let mut later = hub.events();
    hub.call_tool(
        "mcp_everything_toggle-simulated-logging",
        None,
        &CallOptions::default(),
    )
    .await
    .unwrap();
    let log = next_matching(&mut later, "log", |e| matches!(e, HubEvent::Log { .. })).await;
    let log = log.to_json();
    assert_eq!(log["server"], "everything");
    assert!(log["level"].is_string(), "{log}");
    assert!(
        log["data"].as_str().unwrap_or_default().contains("message"),
        "{log}"
    );

    // Closing removes every tool: one tools_changed per server with tools.
    let before = hub.list_tools().len();
    hub.close().await;
    let gone = next_matching(&mut later, "tools_changed", |e| {
        matches!(e, HubEvent::ToolsChanged { .. })
    })
    .await
    .to_json();
    assert_eq!(gone["server"], "everything");
    assert_eq!(gone["added"], serde_json::json!([]));
    assert_eq!(gone["removed"].as_array().unwrap().len(), before, "{gone}");
}

#[tokio::test]
async fn ping_log_level_completions_and_subscriptions_against_server_everything() {
    let hub = Hub::connect(config(&[stdio_entry(
        "everything",
        "node",
        &[&everything_entry(), "stdio"],
        "",
    )]))
    .await
    .unwrap();
    let rtt = hub.ping("everything").await.unwrap();
    assert!(rtt < HANG, "{rtt:?}");
    assert_eq!(hub.ping("nope").await.unwrap_err().code(), "UNKNOWN_SERVER");

    hub.set_log_level("everything", "error").await.unwrap();
    let e = hub.set_log_level("everything", "loud").await.unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("loud"), "{e}");

    // Prompt arguments, the second narrowed by the first (context).
    let prompt = serde_json::json!({"type": "ref/prompt", "name": "completable-prompt"});
    let c = hub
        .complete(
            &prompt,
            &serde_json::json!({"name": "department", "value": "E"}),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(c["values"], serde_json::json!(["Engineering"]), "{c}");
    let c = hub
        .complete(
            &prompt,
            &serde_json::json!({"name": "name", "value": ""}),
            Some(&serde_json::json!({"arguments": {"department": "Sales"}})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        c["values"],
        serde_json::json!(["David", "Eve", "Frank"]),
        "{c}"
    );
    // A resource template's variable.
    let template = serde_json::json!({"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"});
    let c = hub
        .complete(
            &template,
            &serde_json::json!({"name": "resourceId", "value": "7"}),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(c["values"], serde_json::json!(["7"]), "{c}");
    let e = hub
        .complete(
            &serde_json::json!({"type": "ref/prompt", "name": "no-such-prompt"}),
            &serde_json::json!({"name": "x", "value": ""}),
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("no-such-prompt"), "{e}");

    // A subscribed resource's updates arrive as events.
    let resources = hub.list_resources(None).await.unwrap();
    let uri = resources[0]["uri"].as_str().unwrap().to_owned();
    let mut events = hub.events();
    hub.subscribe(&uri, None).await.unwrap();
    hub.call_tool(
        "mcp_everything_toggle-subscriber-updates",
        None,
        &CallOptions::default(),
    )
    .await
    .unwrap();
    let update = next_matching(&mut events, "resource_updated", |e| {
        matches!(e, HubEvent::ResourceUpdated { .. })
    })
    .await;
    assert_eq!(
        update,
        HubEvent::ResourceUpdated {
            server: "everything".into(),
            uri: uri.clone()
        }
    );
    hub.unsubscribe(&uri, Some("everything")).await.unwrap();
    hub.close().await;
}

/// `execution`, `icons` and `_meta` of a tool reach the host as the server
/// sent them (server-everything's `simulate-research-query` requires tasks).
#[tokio::test]
async fn tool_listings_keep_execution_as_sent() {
    let hub = Hub::connect(config(&[stdio_entry(
        "everything",
        "node",
        &[&everything_entry(), "stdio"],
        "",
    )]))
    .await
    .unwrap();
    let tools = hub.list_tools();
    let research = tools
        .iter()
        .find(|t| t.tool == "simulate-research-query")
        .expect("server-everything lists simulate-research-query");
    assert_eq!(
        research.execution,
        Some(serde_json::json!({"taskSupport": "required"}))
    );
    // As sent, whatever it says (the SDK marks other tools "forbidden").
    let echo = tools.iter().find(|t| t.tool == "echo").unwrap();
    let listed = serde_json::to_value(echo).unwrap();
    assert_eq!(listed["execution"]["taskSupport"], "forbidden", "{listed}");
    let mcp = hub.tools_for("mcp").unwrap();
    let research = mcp
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == research.name.as_str())
        .unwrap();
    assert_eq!(
        research["execution"]["taskSupport"], "required",
        "{research}"
    );
    hub.close().await;
}
