//! `lazy = true` (and `[mcp] lazy`): the server is not started by connect,
//! shows as `idle` with no tools listed, and starts on its first use — a call
//! to one of its tools (routed by the `mcp_<server>_` prefix), or a request
//! aimed at it — exactly once however many calls arrive together. Processes
//! are found by a marker in their environment, never by timing.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::{CallOptions, Hub};
use serde_json::json;

async fn add(hub: &Hub, tool: &str) -> Result<String, mcpmux_core::Error> {
    let r = hub
        .call_tool(
            tool,
            Some(&json!({"a": 2, "b": 3})),
            &CallOptions::default(),
        )
        .await?;
    Ok(r.value()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

#[tokio::test]
async fn a_lazy_server_starts_on_the_first_call_to_one_of_its_tools() {
    let tag = marker("lazy-call");
    let hub = Hub::connect(config(&[demo_entry(
        "demo",
        &format!("lazy = true\n{}", marker_env(&tag)),
    )]))
    .await
    .unwrap();
    assert_eq!(pids_with(&tag), Vec::<u32>::new(), "started by connect");
    assert_eq!(hub.servers()[0].state, "idle");
    assert_eq!(hub.servers()[0].state.as_str(), "idle");
    assert!(hub.list_tools().is_empty(), "tools listed before the start");

    assert_eq!(add(&hub, "mcp_demo_add").await.unwrap(), "5");
    assert_eq!(pids_with(&tag).len(), 1);
    assert_eq!(hub.servers()[0].state, "connected");
    assert!(hub.list_tools().iter().any(|t| t.name == "mcp_demo_echo"));
    // A name the started server does not offer is still unknown.
    let e = add(&hub, "mcp_demo_nope").await.unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_TOOL", "{e}");
    hub.close().await;
    assert_eq!(pids_with(&tag), Vec::<u32>::new());
}

#[tokio::test]
async fn calls_arriving_together_start_one_process() {
    let tag = marker("lazy-together");
    let hub = Hub::connect(config(&[demo_entry(
        "demo",
        &format!("lazy = true\n{}", marker_env(&tag)),
    )]))
    .await
    .unwrap();
    let calls = (0..4).map(|_| add(&hub, "mcp_demo_add"));
    for r in futures::future::join_all(calls).await {
        assert_eq!(r.unwrap(), "5");
    }
    assert_eq!(pids_with(&tag).len(), 1, "more than one start");
    hub.close().await;
}

#[tokio::test]
async fn mcp_lazy_is_the_default_and_an_unrelated_hung_server_is_never_started() {
    let hung = marker("lazy-hung");
    let demo = marker("lazy-demo");
    let text = format!(
        "[mcp]\nlazy = true\ntimeout_seconds = 300\n{}{}",
        script_entry("hung", "hang_in_init.py", &marker_env(&hung)),
        demo_entry("demo", &marker_env(&demo)),
    );
    let hub = Hub::connect(mcpmux_core::Config::parse(&text).unwrap())
        .await
        .unwrap();
    let states: Vec<String> = hub.servers().iter().map(|s| s.state.to_string()).collect();
    assert_eq!(states, ["idle", "idle"]);
    // Bounded only to catch a hang: the hung server's 300 s start would.
    let sum = tokio::time::timeout(Duration::from_secs(120), add(&hub, "mcp_demo_add"))
        .await
        .expect("the call waited for the hung server");
    assert_eq!(sum.unwrap(), "5");
    assert_eq!(pids_with(&demo).len(), 1);
    assert_eq!(
        pids_with(&hung),
        Vec::<u32>::new(),
        "the hung server started"
    );
    assert_eq!(hub.servers()[0].state, "idle");
    hub.close().await;
}

#[tokio::test]
async fn requests_aimed_at_a_lazy_server_start_it() {
    let tag = marker("lazy-ping");
    let hub = Hub::connect(config(&[
        demo_entry("demo", &format!("lazy = true\n{}", marker_env(&tag))),
        demo_entry("other", "lazy = true"),
    ]))
    .await
    .unwrap();
    // Asked for nothing in particular: lazy servers are not started.
    assert!(hub.list_prompts(None).await.unwrap().is_empty());
    assert_eq!(pids_with(&tag), Vec::<u32>::new());
    // Without starting: the plain client lookup says why.
    let Err(e) = hub.client("demo") else {
        panic!("a client for a server not started")
    };
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    assert!(e.to_string().contains("lazy"), "{e}");
    hub.ping("demo").await.unwrap();
    assert_eq!(pids_with(&tag).len(), 1);
    assert_eq!(hub.servers()[0].state, "connected");
    assert_eq!(hub.servers()[1].state, "idle", "the other one started too");
    hub.close().await;
}
