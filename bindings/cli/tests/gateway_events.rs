//! The events extension through `mcpmux gateway`: a server's event types
//! under the gateway's names, polled with the server's cursor, and streamed
//! to the client as `notifications/events/*` tagged with its request id,
//! against tests/servers/events_server.py.

mod common;

use std::time::Duration;

use common::raw_gateway::Raw;
use common::*;
use serde_json::{json, Value};

#[test]
fn events_are_listed_polled_and_streamed_under_the_gateways_names() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "allow_all = true\nconfirm_read_only = [\"*\"]\nenv = { PRELOAD = \"3\", HEARTBEAT_MS = \"200\" }",
    ));
    let mut gw = Raw::start(&sb, &[]);
    assert!(
        gw.initialize_answer()["result"]["capabilities"]["extensions"]
            ["io.modelcontextprotocol/events"]
            .is_object(),
        "{}",
        gw.initialize_answer()
    );
    let listed = gw.request("events/list", json!({}));
    let names: Vec<&str> = listed["result"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp_ev_ticket.created"), "{listed}");
    assert!(names.contains(&"mcp_ev_build.finished"), "{listed}");

    let page = gw.request(
        "events/poll",
        json!({"name": "mcp_ev_ticket.created", "arguments": {}, "cursor": "pos-0", "maxEvents": 2}),
    );
    let result = &page["result"];
    assert_eq!(result["events"].as_array().map(Vec::len), Some(2), "{page}");
    assert_eq!(result["events"][0]["name"], "mcp_ev_ticket.created");
    assert_eq!(result["hasMore"], true);
    let cursor = result["cursor"].as_str().unwrap().to_owned();
    let rest = gw.request(
        "events/poll",
        json!({"name": "mcp_ev_ticket.created", "arguments": {}, "cursor": cursor}),
    );
    assert_eq!(
        rest["result"]["events"].as_array().map(Vec::len),
        Some(1),
        "{rest}"
    );
    let unknown = gw.request("events/poll", json!({"name": "nope", "cursor": null}));
    assert!(unknown.get("error").is_some(), "{unknown}");

    // A stream: the server's occurrences reach the client, tagged.
    gw.send(
        json!({"jsonrpc": "2.0", "id": 900, "method": "events/stream",
        "params": {"name": "mcp_ev_ticket.created", "arguments": {}, "cursor": "pos-0"}}),
    );
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while seen.len() < 3 && std::time::Instant::now() < deadline {
        let Some(msg) = gw.next_message(Duration::from_secs(5)) else {
            break;
        };
        if msg["method"] == "notifications/events/event" {
            assert_eq!(
                msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 900,
                "{msg}"
            );
            assert_eq!(msg["params"]["name"], "mcp_ev_ticket.created");
            seen.push(msg);
        }
    }
    assert_eq!(seen.len(), 3, "the three preloaded occurrences: {seen:?}");
    gw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 900}}));
    let state: Value = {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let r = gw.request(
                "tools/call",
                json!({"name": "mcp_ev_state", "arguments": {}}),
            );
            let text = r["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("{}")
                .to_owned();
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if v["streams"].as_array().is_some_and(Vec::is_empty)
                || std::time::Instant::now() > deadline
            {
                break v;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    assert_eq!(
        state["streams"],
        json!([]),
        "the server's stream ended with the client's: {state}"
    );
}

#[test]
fn a_stream_the_server_ends_answers_with_its_subscription_id() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "allow_all = true\nconfirm_read_only = [\"*\"]\nenv = { PRELOAD = \"1\", HEARTBEAT_MS = \"200\" }",
    ));
    let mut gw = Raw::start(&sb, &[]);
    gw.send(
        json!({"jsonrpc": "2.0", "id": 901, "method": "events/stream",
        "params": {"name": "mcp_ev_ticket.created", "arguments": {}, "cursor": "pos-0"}}),
    );
    // Once the preloaded occurrence came, the stream is open upstream.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        match gw.next_message(Duration::from_secs(5)) {
            Some(msg) if msg["method"] == "notifications/events/event" => break,
            Some(_) => {}
            None => panic!("no occurrence came"),
        }
    }
    gw.send(json!({"jsonrpc": "2.0", "id": 902, "method": "tools/call",
        "params": {"name": "mcp_ev_end_streams", "arguments": {}}}));
    let mut ended = Value::Null;
    while std::time::Instant::now() < deadline {
        match gw.next_message(Duration::from_secs(5)) {
            Some(msg) if msg["id"] == 901 => {
                ended = msg;
                break;
            }
            Some(_) => {}
            None => break,
        }
    }
    assert_eq!(
        ended["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 901,
        "the stream's result names it (SEP-3415 StreamEventsResult): {ended}"
    );
}

#[test]
fn a_streams_error_and_termination_keep_the_servers_code_and_data() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "allow_all = true\nconfirm_read_only = [\"*\"]\nenv = { PRELOAD = \"1\", HEARTBEAT_MS = \"200\" }",
    ));
    let mut gw = Raw::start(&sb, &[]);
    gw.send(
        json!({"jsonrpc": "2.0", "id": 903, "method": "events/stream",
        "params": {"name": "mcp_ev_ticket.created", "arguments": {}, "cursor": "pos-0"}}),
    );
    gw.next_such("occurrence", |m| {
        m["method"] == "notifications/events/event"
    });
    // A transient error: the stream stays open.
    gw.send(json!({"jsonrpc": "2.0", "id": 904, "method": "tools/call",
        "params": {"name": "mcp_ev_fail_streams", "arguments": {
            "kind": "error", "code": -32025, "message": "Forbidden",
            "data": {"reason": "token revoked"}}}}));
    let error = gw.next_such("events/error", |m| {
        m["method"] == "notifications/events/error"
    });
    assert_eq!(
        error["params"]["error"],
        json!({"code": -32025, "message": "Forbidden", "data": {"reason": "token revoked"}}),
        "{error}"
    );
    assert_eq!(
        error["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        903
    );
    // The end: NotFound with its data, then the stream's result.
    gw.send(json!({"jsonrpc": "2.0", "id": 905, "method": "tools/call",
        "params": {"name": "mcp_ev_fail_streams", "arguments": {
            "kind": "terminated", "code": -32023, "message": "Event type not found",
            "data": {"kind": "event", "name": "ticket.created"}}}}));
    let terminated = gw.next_such("events/terminated", |m| {
        m["method"] == "notifications/events/terminated"
    });
    assert_eq!(
        terminated["params"]["error"],
        json!({"code": -32023, "message": "Event type not found",
               "data": {"kind": "event", "name": "ticket.created"}}),
        "{terminated}"
    );
    let ended = gw.next_such("the stream's result", |m| m["id"] == 903);
    assert_eq!(
        ended["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 903,
        "{ended}"
    );
}

/// A change of a server's event types reaches the gateway's client as
/// `notifications/events/list_changed`, and the gateway says it will
/// (`listChanged: true`) only when a server behind it does.
#[test]
fn a_change_of_event_types_is_relayed_to_the_gateways_client() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "allow_all = true\nconfirm_read_only = [\"*\"]\nenv = { LIST_CHANGED = \"1\" }",
    ));
    let mut gw = Raw::start(&sb, &[]);
    let caps = &gw.initialize_answer()["result"]["capabilities"]["extensions"]
        ["io.modelcontextprotocol/events"];
    assert_eq!(caps["listChanged"], true, "{}", gw.initialize_answer());
    gw.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "mcp_ev_change_types", "arguments": {}}}));
    gw.next_such("notifications/events/list_changed", |m| {
        m["method"] == "notifications/events/list_changed"
    });

    let quiet = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "allow_all = true\nconfirm_read_only = [\"*\"]",
    ));
    let gw = Raw::start(&quiet, &[]);
    let caps = &gw.initialize_answer()["result"]["capabilities"]["extensions"]
        ["io.modelcontextprotocol/events"];
    assert_eq!(caps["listChanged"], false, "{}", gw.initialize_answer());
}

/// A client's `maxAgeMs` and `ttlMs: null` reach the server through the
/// gateway (they were dropped before).
#[test]
fn max_age_and_no_expiry_are_forwarded() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "allow_all = true\nconfirm_read_only = [\"*\"]\nenv = { PRELOAD = \"3\", PRELOAD_AGE_MS = \"600000\" }",
    ));
    let mut gw = Raw::start(&sb, &[]);
    let page = gw.request(
        "events/poll",
        json!({"name": "mcp_ev_ticket.created", "arguments": {}, "cursor": "pos-0", "maxAgeMs": 60000}),
    );
    assert_eq!(page["result"]["events"], json!([]), "{page}");
    assert_eq!(page["result"]["truncated"], true, "{page}");
    let bad = gw.request(
        "events/poll",
        json!({"name": "mcp_ev_ticket.created", "cursor": "pos-0", "maxAgeMs": "soon"}),
    );
    assert!(bad.get("error").is_some(), "{bad}");
    let sub = gw.request(
        "events/subscribe",
        json!({"name": "mcp_ev_build.finished", "arguments": {}, "ttlMs": null,
               "delivery": {"mode": "webhook", "url": "https://hooks.example.com/x",
                            "secret": "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}}),
    );
    assert!(sub["result"]["id"].is_string(), "{sub}");
    assert_eq!(sub["result"]["refreshBefore"], Value::Null, "{sub}");
}
