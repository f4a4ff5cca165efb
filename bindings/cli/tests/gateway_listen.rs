//! `subscriptions/listen` of a 2026-07-28 client through `mcpmux gateway`:
//! the gateway acknowledges what it can tell, then relays list changes and
//! updates of the resources granted, each tagged with the request's id.
//! Behind it: the official Rust SDK's server (tests/servers/rmcp-tasks) on
//! 2026-07-28, whose own changes reach the gateway on the hub's listen
//! stream.

mod common;

use std::time::{Duration, Instant};

use common::http_gateway::HttpGateway;
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
        None => gw.next_such(name, pick),
    }
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
    let ack = gw.next_such("acknowledgment", |m| {
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

/// A gateway in front of `tests/servers/events_server.py` on 2026-07-28,
/// offering resource subscriptions, with `env` (TOML inline-table members)
/// besides.
fn gateway_before_events_server(env: &str) -> (Sandbox, Raw) {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        &format!(
            "protocol_version = \"2026-07-28\"\ntimeout_seconds = 1\nallow_all = true\n\
             env = {{ REVISION = \"2026-07-28\", RESOURCES = \"1\"{env} }}"
        ),
    ));
    let gw = Raw::start(&sb, &[]);
    (sb, gw)
}

fn listen_for(gw: &mut Raw, id: u64, uris: &[String]) -> Value {
    gw.send(
        json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
            "notifications": {"resourceSubscriptions": uris},
            "_meta": meta()
        }}),
    );
    gw.next_such("acknowledgment", |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
            && m["params"]["_meta"][SUBSCRIPTION] == id
    })
}

/// A client asking for more resources than a stream may hold is granted
/// the first 1024 distinct ones.
#[test]
fn a_stream_is_granted_at_most_1024_resources() {
    let (_sb, mut gw) = gateway_before_events_server("");
    let mut uris: Vec<String> = (0..1500).map(|i| format!("file:///r{i:04}")).collect();
    uris.insert(1, uris[0].clone());
    let ack = listen_for(&mut gw, 7, &uris);
    let granted = ack["params"]["notifications"]["resourceSubscriptions"]
        .as_array()
        .unwrap_or_else(|| panic!("no resources granted: {ack}"));
    assert_eq!(granted.len(), 1024, "{}", granted.len());
    assert!(granted.iter().all(|u| u.as_str() < Some("file:///r1024")));
}

/// A server behind that never acknowledges its own stream cannot hold the
/// client's acknowledgment for one timeout per URI: the URIs are asked for
/// together, and those not taken in time are left out.
#[test]
fn a_server_that_never_acknowledges_delays_the_acknowledgment_boundedly() {
    let (_sb, mut gw) = gateway_before_events_server(", LISTEN = \"silent\"");
    let uris: Vec<String> = (0..200).map(|i| format!("file:///s{i}")).collect();
    let started = Instant::now();
    let ack = listen_for(&mut gw, 8, &uris);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "acknowledged after {:?}",
        started.elapsed()
    );
    assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");
    // The gateway still answers.
    let state = gw.request(
        "tools/call",
        json!({"name": "mcp_ev_state", "arguments": {}, "_meta": meta()}),
    );
    assert!(state.get("result").is_some(), "{state}");
}

/// Over Streamable HTTP, a 2026-07-28 client's `subscriptions/listen` is
/// answered with an SSE stream that carries the acknowledgment and the
/// changes: `mcpmux watch` through `mcpmux gateway --http` sees a tool the
/// server behind adds.
#[test]
fn over_http_a_2026_client_hears_of_a_change_behind_the_gateway() {
    let sb = Sandbox::with_config(&stdio_server(
        "tasks",
        std::path::Path::new(&mcpmux_test_support::rmcp_tasks_server()),
        &[],
        "protocol_version = \"2026-07-28\"\nallow_all = true\nconfirm_read_only = [\"*\"]",
    ));
    // Unpinned: a tool that appears later is offered without an approval.
    let gw = HttpGateway::start_with(&sb, "tok-listen-secret", &["--no-pin-tools"]);
    let client = Sandbox::with_config(&format!(
        "[[mcp.servers]]\nname = \"gw\"\nurl = {}\nprotocol_version = \"2026-07-28\"\n\
         headers = {{ Authorization = \"Bearer tok-listen-secret\" }}\n",
        q(&gw.url)
    ));
    let watching = client.mcpmux(&["--json", "watch"]).spawn();
    // The watcher's listen stream is opened by a task of its own.
    std::thread::sleep(Duration::from_millis(2000));
    client
        .mcpmux(&["call", "mcp_gw_mcp_tasks_add_tool", r#"{"name":"fresh"}"#])
        .run()
        .ok();
    std::thread::sleep(Duration::from_millis(2000));
    watching.signal("INT");
    let out = watching.wait();
    let changed: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tools_changed")
        .collect();
    assert!(
        changed.iter().any(|v| v["server"] == "gw"
            && v["added"]
                .as_array()
                .is_some_and(|a| a.iter().any(|t| t == "mcp_gw_mcp_tasks_fresh"))),
        "{out}"
    );
}
