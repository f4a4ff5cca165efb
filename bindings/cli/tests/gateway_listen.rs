//! `subscriptions/listen` of a 2026-07-28 client through `mcpmux gateway`:
//! the gateway acknowledges what it can tell, then relays list changes and
//! updates of the resources granted, each tagged with the request's id.
//! Behind it: the official Rust SDK's server (tests/servers/rmcp-tasks) on
//! 2026-07-28, whose own changes reach the gateway on the hub's listen
//! stream.

mod common;

use std::time::{Duration, Instant};

use common::raw_gateway::Raw;
use common::*;
use serde_json::{json, Value};

const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    })
}

/// Calls `name` until its text ends with `want` (the hub's own stream to
/// the server is opened by a task of its own), then waits for a message
/// `pick` accepts: one that came while waiting for the answers counts.
fn call_until(
    gw: &mut Raw,
    name: &str,
    arguments: Value,
    want: &str,
    pick: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut found = None;
    let mut id = 1000;
    let mut told = false;
    while !told {
        id += 1;
        gw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta()}}));
        loop {
            let msg = gw
                .next_message(Duration::from_secs(10))
                .unwrap_or_else(|| panic!("no answer to {name}"));
            if msg["id"] == id {
                let said = msg["result"]["content"][0]["text"].as_str().unwrap_or("");
                told = said.ends_with(want);
                assert!(told || Instant::now() < deadline, "{name}: {msg}");
                break;
            }
            if found.is_none() && pick(&msg) {
                found = Some(msg);
            }
        }
        if !told {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    match found {
        Some(msg) => msg,
        None => next_such(gw, name, pick),
    }
}

/// The next message `pick` accepts, within 20 s.
fn next_such(gw: &mut Raw, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        match gw.next_message(Duration::from_secs(5)) {
            Some(msg) if pick(&msg) => return msg,
            Some(_) => {}
            None => break,
        }
    }
    panic!("no {what} came");
}

#[test]
fn a_listen_stream_gets_list_changes_and_updates_of_granted_resources() {
    let sb = Sandbox::with_config(&stdio_server(
        "tasks",
        std::path::Path::new(&mcpmux_test_support::rmcp_tasks_server()),
        &[],
        "protocol_version = \"2026-07-28\"\nallow_all = true\nconfirm_read_only = [\"*\"]",
    ));
    let mut gw = Raw::start(&sb, &[]);
    gw.send(
        json!({"jsonrpc": "2.0", "id": 50, "method": "subscriptions/listen", "params": {
            "notifications": {
                "toolsListChanged": true,
                "resourceSubscriptions": ["file:///watched"]
            },
            "_meta": meta()
        }}),
    );
    let ack = next_such(&mut gw, "acknowledgment", |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    });
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION], 50, "{ack}");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///watched"]}),
        "{ack}"
    );

    // The server adds a tool: its change reaches the hub, then the client.
    call_until(
        &mut gw,
        "mcp_tasks_add_tool",
        json!({"name": "t"}),
        "told 1",
        |m| {
            m["method"] == "notifications/tools/list_changed"
                && m["params"]["_meta"][SUBSCRIPTION] == 50
        },
    );
    // An update of the granted resource.
    let update = call_until(
        &mut gw,
        "mcp_tasks_touch",
        json!({"uri": "file:///watched"}),
        "told 1",
        |m| {
            m["method"] == "notifications/resources/updated"
                && m["params"]["_meta"][SUBSCRIPTION] == 50
        },
    );
    assert_eq!(update["params"]["uri"], "file:///watched", "{update}");

    // Not an object: refused with an answer, not a hang.
    let bad = gw.request(
        "subscriptions/listen",
        json!({"notifications": [1], "_meta": meta()}),
    );
    assert!(bad.get("error").is_some(), "{bad}");
}
