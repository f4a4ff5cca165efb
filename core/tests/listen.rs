//! `subscriptions/listen` on the 2026-07-28 revision, against a real server
//! on the official Rust SDK (rmcp, `tests/servers/rmcp-tasks`): the client
//! opens the stream for the list changes the server offers, so a tool the
//! server adds reaches the hub; `Hub::subscribe` on this revision joins the
//! URI to the stream (there is no `resources/subscribe`), and unsubscribing
//! takes it off. Over stdio and over Streamable HTTP.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::events::{EventSender, EventStream};
use mcpmux_core::{CallOptions, Hub, HubEvent, HubOptions};
use serde_json::{json, Value};

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
        .to_owned()
}

/// The next event `pick` accepts, within 10 s.
async fn next_event<T>(stream: &mut EventStream, mut pick: impl FnMut(HubEvent) -> Option<T>) -> T {
    let wait = async {
        loop {
            match stream.recv().await {
                Some(event) => {
                    if let Some(found) = pick(event) {
                        return found;
                    }
                }
                None => panic!("the hub's events ended"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("no such event within 10 s")
}

async fn call(hub: &Hub, tool: &str, args: Value) -> String {
    let r = hub
        .call_tool(tool, Some(&args), &CallOptions::default())
        .await
        .unwrap();
    text_of(&r.value())
}

/// Calls `touch` until `want` streams took the update (a new stream is
/// opened by a task of its own: the server may not have it yet).
async fn touch_until(hub: &Hub, uri: &str, want: &str) -> String {
    let mut said = String::new();
    for _ in 0..100 {
        said = call(hub, "mcp_tasks_touch", json!({ "uri": uri })).await;
        if said == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    said
}

async fn the_stream_carries_list_changes_and_resource_updates(entry: String) {
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let hub = Hub::connect_with(config(&[entry]), HubOptions::default().with_events(events))
        .await
        .unwrap();
    assert_eq!(
        hub.servers()[0].protocol_version.as_deref(),
        Some("2026-07-28")
    );
    assert!(!hub.list_tools().iter().any(|t| t.name == "mcp_tasks_fresh"));

    // The stream is opened by a task: add tools until one is told.
    let mut told = String::new();
    for i in 0..100 {
        told = call(
            &hub,
            "mcp_tasks_add_tool",
            json!({ "name": format!("t{i}") }),
        )
        .await;
        if told.ends_with("told 1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(told.ends_with("told 1"), "{told}");
    call(&hub, "mcp_tasks_add_tool", json!({ "name": "fresh" })).await;
    next_event(&mut stream, |e| match e {
        HubEvent::ToolsChanged { added, .. } if added.iter().any(|t| t == "mcp_tasks_fresh") => {
            Some(())
        }
        _ => None,
    })
    .await;
    assert!(hub.list_tools().iter().any(|t| t.name == "mcp_tasks_fresh"));

    // A resource subscription joins the stream once the server took it.
    hub.subscribe("file:///watched", Some("tasks"))
        .await
        .unwrap();
    assert_eq!(
        touch_until(&hub, "file:///watched", "told 1").await,
        "told 1"
    );
    let uri = next_event(&mut stream, |e| match e {
        HubEvent::ResourceUpdated { uri, .. } => Some(uri),
        _ => None,
    })
    .await;
    assert_eq!(uri, "file:///watched");
    // A URI nobody subscribed to reaches no stream.
    assert_eq!(
        call(&hub, "mcp_tasks_touch", json!({"uri": "file:///other"})).await,
        "told 0"
    );

    // Unsubscribed, the next stream leaves it out; list changes still come.
    hub.unsubscribe("file:///watched", Some("tasks"))
        .await
        .unwrap();
    assert_eq!(
        touch_until(&hub, "file:///watched", "told 0").await,
        "told 0"
    );
    // Over HTTP the server learns that the old stream was closed on its
    // next write to it: the count may be 2 once, then must settle at 1.
    let mut told = String::new();
    for i in 0..100 {
        told = call(
            &hub,
            "mcp_tasks_add_tool",
            json!({ "name": format!("later{i}") }),
        )
        .await;
        if told.ends_with("told 1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(told.ends_with("told 1"), "one stream stays open: {told}");
    hub.close().await;
}

#[tokio::test]
async fn over_stdio_the_stream_carries_list_changes_and_resource_updates() {
    the_stream_carries_list_changes_and_resource_updates(rmcp_tasks_entry("tasks", "")).await;
}

#[tokio::test]
async fn over_http_the_stream_carries_list_changes_and_resource_updates() {
    let server = RmcpTasksHttp::start(&[]);
    the_stream_carries_list_changes_and_resource_updates(server.entry("tasks")).await;
}

/// A server without `subscriptions/listen` (a 2026-07-28 server that does
/// not offer resource subscriptions) is not asked, and subscribing is a
/// clear error naming it, in bounded time.
#[tokio::test]
async fn subscribing_where_the_server_offers_no_subscriptions_is_invalid_input() {
    let entry = stdio_entry(
        "ev",
        &python(),
        &[&server_script("events_server.py")],
        "protocol_version = \"2026-07-28\"\nenv = { REVISION = \"2026-07-28\" }",
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        hub.subscribe("file:///x", Some("ev")),
    )
    .await
    .expect("answered in time")
    .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT", "{e}");
    assert!(e.to_string().contains("'ev'"), "{e}");
    hub.close().await;
}

/// A 2026-07-28 events server (`tests/servers/events_server.py`) that offers
/// resource subscriptions, with `env` (TOML inline-table members) besides.
fn subscribing_entry(env: &str) -> String {
    stdio_entry(
        "ev",
        &python(),
        &[&server_script("events_server.py")],
        &format!(
            "protocol_version = \"2026-07-28\"\ntimeout_seconds = 1\n\
             env = {{ REVISION = \"2026-07-28\", RESOURCES = \"1\"{env} }}"
        ),
    )
}

async fn ev_state(hub: &Hub) -> Value {
    serde_json::from_str(&call(hub, "mcp_ev_state", json!({})).await).unwrap()
}

/// A hostile server that never acknowledges the stream: subscribing fails
/// with `TIMEOUT` after the server's timeout, the URI is not kept, and the
/// connection goes on serving calls.
#[tokio::test]
async fn a_server_that_never_acknowledges_costs_a_timeout_not_a_hang() {
    let hub = Hub::connect(config(&[subscribing_entry(", LISTEN = \"silent\"")]))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        hub.subscribe("file:///x", Some("ev")),
    )
    .await
    .expect("answered in time")
    .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT", "{e}");
    assert!(e.to_string().contains("'ev'"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Calls still work, and the unanswered stream was cancelled: with the
    // URI gone there is nothing left to listen for.
    let mut state = ev_state(&hub).await;
    for _ in 0..100 {
        if state["listeners"] == json!([]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        state = ev_state(&hub).await;
    }
    assert_eq!(state["listeners"], json!([]), "{state}");
    assert_eq!(state["listens"], 1, "{state}");
    assert_eq!(state["most_uris"], 1, "{state}");
    tokio::time::timeout(Duration::from_secs(10), hub.close())
        .await
        .expect("closed in time");
}

/// The host's resource subscriptions on one connection are bounded: the
/// 1025th is `LIMIT_EXCEEDED` (no stream asks for it), one freed place
/// takes a new URI.
#[tokio::test]
async fn at_most_1024_resources_are_listened_for() {
    const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1024;
    let hub = Hub::connect(config(&[subscribing_entry("")]))
        .await
        .unwrap();
    let uris: Vec<String> = (0..MAX_RESOURCE_SUBSCRIPTIONS)
        .map(|i| format!("file:///r{i}"))
        .collect();
    // Concurrent subscriptions share the streams that open for them.
    for chunk in uris.chunks(128) {
        let all = chunk.iter().map(|u| hub.subscribe(u, Some("ev")));
        for answer in futures::future::join_all(all).await {
            answer.unwrap();
        }
    }
    let e = hub
        .subscribe("file:///one-more", Some("ev"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "LIMIT_EXCEEDED", "{e}");
    assert!(e.to_string().contains("1024"), "{e}");
    assert_eq!(ev_state(&hub).await["most_uris"], 1024);
    hub.unsubscribe("file:///r0", Some("ev")).await.unwrap();
    hub.subscribe("file:///one-more", Some("ev")).await.unwrap();
    hub.close().await;
}
