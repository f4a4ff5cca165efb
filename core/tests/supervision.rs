//! Supervision against real processes: a stdio server that crashes or is
//! killed comes back by itself and the next call works; calls made while it
//! restarts wait for it; `restart = "never"` and a spent restart budget
//! leave it failed; a server that fails at start is connected once it can
//! start; a Streamable HTTP server stopped and started again on the same
//! port is reconnected (keep-alive pings notice it). Every wait is for an
//! event, bounded only to catch hangs.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::events::EventSender;
use mcpmux_core::{CallOptions, EventStream, Hub, HubEvent, HubOptions};
use serde_json::{json, Value};

/// Only catches hangs: every event here comes within a few seconds.
const HANG: Duration = Duration::from_secs(60);

/// Supervision on (not yet the default).
const ON: &str = "restart = \"on-failure\"";

async fn connect(entries: &[String]) -> (Hub, EventStream) {
    let events = EventSender::default();
    let stream = events.subscribe();
    let hub = Hub::connect_with(config(entries), HubOptions::default().with_events(events))
        .await
        .unwrap();
    (hub, stream)
}

/// The next `server_state` event of `server` (as JSON).
async fn next_state(stream: &mut EventStream, server: &str) -> Value {
    tokio::time::timeout(HANG, async {
        loop {
            match stream.recv().await {
                Some(e @ HubEvent::ServerState { .. }) => {
                    let e = e.to_json();
                    if e["server"] == server {
                        return e;
                    }
                }
                Some(_) => continue,
                None => panic!("the event stream ended"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no server_state of {server} within {HANG:?}"))
}

async fn echo(hub: &Hub, tool: &str, text: &str) -> Result<String, mcpmux_core::Error> {
    let r = hub
        .call_tool(tool, Some(&json!({"text": text})), &CallOptions::default())
        .await?;
    Ok(r.value()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

#[tokio::test]
async fn a_crashed_stdio_server_is_restarted_and_the_next_call_works() {
    // No `restart` key: "on-failure" is the default.
    let (hub, mut events) = connect(&[demo_entry("demo", "")]).await;
    assert_eq!(next_state(&mut events, "demo").await["state"], "connected");
    let names_before: Vec<String> = hub.list_tools().into_iter().map(|t| t.name).collect();

    let crash = hub
        .call_tool("mcp_demo_crash", None, &CallOptions::default())
        .await;
    assert!(crash.is_err(), "{crash:?}");
    let restarting = next_state(&mut events, "demo").await;
    assert_eq!(restarting["state"], "restarting", "{restarting}");
    assert_eq!(restarting["attempt"], 1, "{restarting}");
    assert_eq!(restarting["code"], "TRANSPORT_CLOSED", "{restarting}");
    // Meanwhile the tools keep their names, and a call waits for the restart.
    let names_during: Vec<String> = hub.list_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names_during, names_before);
    assert_eq!(
        echo(&hub, "mcp_demo_echo", "waited").await.unwrap(),
        "waited"
    );
    let back = next_state(&mut events, "demo").await;
    assert_eq!(back["state"], "connected", "{back}");
    assert_eq!(back["attempt"], 1, "{back}");
    assert_eq!(hub.servers()[0].state, "connected");
    hub.close().await;
}

#[tokio::test]
async fn a_stdio_server_killed_with_sigkill_is_back_within_the_backoff() {
    let tag = marker("sigkill");
    let (hub, mut events) =
        connect(&[demo_entry("demo", &format!("{ON}\n{}", marker_env(&tag)))]).await;
    assert_eq!(next_state(&mut events, "demo").await["state"], "connected");
    let pids = pids_with(&tag);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pids[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(next_state(&mut events, "demo").await["state"], "restarting");
    assert_eq!(next_state(&mut events, "demo").await["state"], "connected");
    assert_eq!(echo(&hub, "mcp_demo_echo", "again").await.unwrap(), "again");
    let now = pids_with(&tag);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], pids[0]);
    hub.close().await;
    assert_eq!(pids_with(&tag), Vec::<u32>::new());
}

#[tokio::test]
async fn restart_never_leaves_a_crashed_server_failed() {
    let (hub, mut events) = connect(&[demo_entry("demo", "restart = \"never\"")]).await;
    assert_eq!(next_state(&mut events, "demo").await["state"], "connected");
    let _ = hub
        .call_tool("mcp_demo_crash", None, &CallOptions::default())
        .await;
    let failed = next_state(&mut events, "demo").await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(hub.servers()[0].state, "failed");
    let e = echo(&hub, "mcp_demo_echo", "x").await.unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    // refresh starts it again.
    hub.refresh("demo").await.unwrap();
    assert_eq!(echo(&hub, "mcp_demo_echo", "back").await.unwrap(), "back");
    hub.close().await;
}

#[tokio::test]
async fn a_server_that_keeps_failing_at_start_is_failed_after_max_restarts() {
    let (hub, mut events) = connect(&[stdio_entry(
        "never",
        &python(),
        &["-c", "import sys; sys.exit(3)"],
        &format!("{ON}\nmax_restarts = 2"),
    )])
    .await;
    // The start failure is the first restart's reason; then one more.
    for attempt in 1..=2 {
        let e = next_state(&mut events, "never").await;
        assert_eq!(e["state"], "restarting", "{e}");
        assert_eq!(e["attempt"], attempt, "{e}");
        assert_eq!(e["code"], "CONNECT_FAILED", "{e}");
    }
    let e = next_state(&mut events, "never").await;
    assert_eq!(e["state"], "failed", "{e}");
    assert_eq!(e["code"], "CONNECT_FAILED", "{e}");
    assert_eq!(hub.servers()[0].state, "failed");
    hub.close().await;
}

/// Server `later`: fails at start until the returned flag file exists,
/// then is the demo server (restarts on, up to 20), with `extra` keys.
fn appears_later(dir: &std::path::Path, extra: &str) -> (String, std::path::PathBuf) {
    let flag = dir.join("up");
    let entry = stdio_entry(
        "later",
        &python(),
        &[
            &root()
                .join("tests/servers/appears_later.py")
                .display()
                .to_string(),
            &demo_server(),
        ],
        &format!(
            "{ON}\nmax_restarts = 20\n{extra}\nenv = {{ APPEARS_WHEN = {} }}",
            q(&flag.display().to_string())
        ),
    );
    (entry, flag)
}

#[tokio::test]
async fn a_server_that_fails_at_start_is_connected_once_it_can_start() {
    let dir = tempfile::tempdir().unwrap();
    let (entry, flag) = appears_later(dir.path(), "");
    let (hub, mut events) = connect(&[entry]).await;
    let first = next_state(&mut events, "later").await;
    assert_eq!(first["state"], "restarting", "{first}");
    assert_eq!(hub.servers()[0].state, "restarting");
    std::fs::write(&flag, "").unwrap();
    let up = tokio::time::timeout(HANG, async {
        loop {
            let e = next_state(&mut events, "later").await;
            if e["state"] != "restarting" {
                return e;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(up["state"], "connected", "{up}");
    assert_eq!(echo(&hub, "mcp_later_echo", "hi").await.unwrap(), "hi");
    hub.close().await;
}

#[tokio::test]
async fn a_streamable_http_server_restarted_on_the_same_port_is_reconnected() {
    let first = sdk_server("streamable-http", &[]);
    let port = first.port.to_string();
    let url = first.http("/mcp");
    let (hub, mut events) = connect(&[net_entry(
        "web",
        "http",
        &url,
        &format!("{ON}\nping_interval_seconds = 0.3\ntimeout_seconds = 2"),
    )])
    .await;
    assert_eq!(next_state(&mut events, "web").await["state"], "connected");
    drop(first); // killed
    let down = next_state(&mut events, "web").await;
    assert_eq!(down["state"], "restarting", "{down}");
    let _second = sdk_server("streamable-http", &["--port", &port]);
    let up = tokio::time::timeout(HANG, async {
        loop {
            let e = next_state(&mut events, "web").await;
            if e["state"] != "restarting" {
                return e;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(up["state"], "connected", "{up}");
    let tools = hub.list_tools();
    let echo_tool = tools
        .iter()
        .find(|t| t.tool == "echo")
        .expect("the SDK server's echo tool");
    let r = hub
        .call_tool(
            &echo_tool.name,
            Some(&json!({"text": "over http"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(r.json().contains("over http"), "{}", r.json());
    hub.close().await;
}

#[tokio::test]
async fn a_call_to_a_server_restarting_after_a_failed_start_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let (entry, flag) = appears_later(dir.path(), "timeout_seconds = 60");
    let (hub, mut events) = connect(&[entry]).await;
    let first = next_state(&mut events, "later").await;
    assert_eq!(first["state"], "restarting", "{first}");
    // Its tools were never listed, yet a call by name waits for it.
    let call = {
        let hub = hub.clone();
        tokio::spawn(async move { echo(&hub, "mcp_later_echo", "waited").await })
    };
    std::fs::write(&flag, "").unwrap();
    let result = tokio::time::timeout(HANG, call).await.unwrap().unwrap();
    assert_eq!(result.unwrap(), "waited");
    hub.close().await;
}
