//! `Hub::reload`: a server whose entry is unchanged keeps its process, a
//! removed one is closed (its process gone), an added one is started (its
//! tools appear), a changed one is restarted (a new process); the host hears
//! of it through `server_state` and `tools_changed` events. Processes are
//! found by a marker in their environment.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::events::EventSender;
use mcpmux_core::{CallOptions, EventStream, Hub, HubEvent, HubOptions};
use serde_json::{json, Value};

/// Only catches hangs.
const HANG: Duration = Duration::from_secs(60);

/// The next event matching `want` (as JSON); `want` sees every event up to it.
async fn next_event(stream: &mut EventStream, mut want: impl FnMut(&Value) -> bool) -> Value {
    tokio::time::timeout(HANG, async {
        loop {
            match stream.recv().await {
                Some(HubEvent::Lagged { .. }) => panic!("events lost"),
                Some(e) => {
                    let e = e.to_json();
                    if want(&e) {
                        return e;
                    }
                }
                None => panic!("the event stream ended"),
            }
        }
    })
    .await
    .expect("no such event within the hang limit")
}

fn one_pid(tag: &str) -> u32 {
    let pids = pids_with(tag);
    assert_eq!(pids.len(), 1, "{tag}: {pids:?}");
    pids[0]
}

#[tokio::test]
async fn reload_keeps_unchanged_servers_and_replaces_the_rest() {
    let (keep, gone, change, added) = (
        marker("reload-keep"),
        marker("reload-gone"),
        marker("reload-change"),
        marker("reload-added"),
    );
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let hub = Hub::connect_with(
        config(&[
            demo_entry("keep", &marker_env(&keep)),
            demo_entry("gone", &marker_env(&gone)),
            demo_entry(
                "change",
                &format!("timeout_seconds = 30\n{}", marker_env(&change)),
            ),
        ]),
        HubOptions::default().with_events(events),
    )
    .await
    .unwrap();
    let (keep_pid, gone_pid, change_pid) = (one_pid(&keep), one_pid(&gone), one_pid(&change));
    assert!(hub.tool("mcp_gone_echo").is_some());
    assert!(hub.tool("mcp_added_echo").is_none());

    hub.reload(config(&[
        demo_entry("keep", &marker_env(&keep)),
        demo_entry(
            "change",
            &format!("timeout_seconds = 31\n{}", marker_env(&change)),
        ),
        demo_entry("added", &marker_env(&added)),
    ]))
    .await
    .unwrap();

    assert_eq!(
        one_pid(&keep),
        keep_pid,
        "the unchanged server was restarted"
    );
    assert!(wait_gone(gone_pid, HANG), "the removed server still runs");
    assert!(
        wait_gone(change_pid, HANG),
        "the changed server's old process runs"
    );
    assert_ne!(one_pid(&change), change_pid);
    one_pid(&added);
    let names: Vec<String> = hub.servers().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["keep", "change", "added"]);
    assert!(hub.servers().iter().all(|s| s.state == "connected"));
    assert_eq!(hub.config().servers.len(), 3);
    assert!(hub.tool("mcp_gone_echo").is_none());
    let r = hub
        .call_tool(
            "mcp_added_add",
            Some(&json!({"a": 1, "b": 2})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.value()["content"][0]["text"], "3");
    for server in ["keep", "change"] {
        let r = hub
            .call_tool(
                &format!("mcp_{server}_echo"),
                Some(&json!({"text": "hi"})),
                &CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(r.value()["content"][0]["text"], "hi");
    }

    // The host was told: the removed server's tools went and it was
    // removed (the changed one, which kept its name, was not), the added
    // one connected and its tools came.
    let removed = next_event(&mut stream, |e| {
        e["type"] == "tools_changed"
            && e["server"] == "gone"
            && e["removed"].as_array().is_some_and(|r| !r.is_empty())
    })
    .await;
    assert!(
        removed["removed"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp_gone_echo")),
        "{removed}"
    );
    let mut removals = Vec::new();
    next_event(&mut stream, |e| {
        if e["type"] == "server_state" && e["state"] == "removed" {
            removals.push(e.clone());
        }
        e["type"] == "server_state" && e["server"] == "added" && e["state"] == "connected"
    })
    .await;
    assert_eq!(
        removals,
        [json!({"type": "server_state", "server": "gone", "state": "removed", "attempt": 0})]
    );
    let came = next_event(&mut stream, |e| {
        e["type"] == "tools_changed" && e["server"] == "added"
    })
    .await;
    assert!(
        came["added"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp_added_echo")),
        "{came}"
    );
    hub.close().await;
    for tag in [&keep, &change, &added] {
        assert_eq!(pids_with(tag), Vec::<u32>::new());
    }
}

#[tokio::test]
async fn reload_renames_nothing_it_keeps_and_a_closed_hub_refuses_it() {
    let hub = Hub::connect(config(&[demo_entry("a", "")])).await.unwrap();
    let before: Vec<String> = hub.list_tools().into_iter().map(|t| t.name).collect();
    // Same config again: nothing changes, nothing restarts.
    hub.reload(config(&[demo_entry("a", "")])).await.unwrap();
    let after: Vec<String> = hub.list_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(before, after);
    // A lazy server added by a reload waits for its first use.
    hub.reload(config(&[
        demo_entry("a", ""),
        demo_entry("b", "lazy = true"),
    ]))
    .await
    .unwrap();
    assert_eq!(hub.servers()[1].state, "idle");
    hub.close().await;
    let e = hub
        .reload(config(&[demo_entry("a", "")]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
}
