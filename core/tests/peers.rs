//! The hub against real peers: the reference `server-everything` (npm) and a
//! server built with the official Python SDK (FastMCP).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcpmux_core::{CallOptions, Hub};
use serde_json::json;

async fn everything() -> Hub {
    let hub = Hub::connect(config(&[stdio_entry(
        "everything",
        "node",
        &[&everything_entry(), "stdio"],
        "",
    )]))
    .await
    .unwrap();
    assert_eq!(hub.servers()[0].state, "connected", "{:?}", hub.servers());
    hub
}

#[tokio::test]
async fn server_everything_tools() {
    let hub = everything().await;
    let tools = hub.list_tools();
    let names: Vec<&str> = tools.iter().map(|t| t.tool.as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(tools.iter().all(|t| t.name.starts_with("mcp_everything_")));

    let r = hub
        .call_tool(
            "mcp_everything_echo",
            Some(&json!({"message": "hi there"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(!r.is_error());
    assert!(
        r.value()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi there"),
        "{}",
        r.json()
    );

    let sum = hub
        .call_tool(
            "mcp_everything_get-sum",
            Some(&json!({"a": 2, "b": 40})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(sum.json().contains("42"), "{}", sum.json());

    let structured = hub
        .call_tool(
            "mcp_everything_get-structured-content",
            Some(&json!({"location": "New York"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        structured.value()["structuredContent"].is_object(),
        "{}",
        structured.json()
    );

    // A tool's own failure is a result, not an error.
    let bad = hub
        .call_tool(
            "mcp_everything_get-sum",
            Some(&json!({"a": "x"})),
            &CallOptions::default(),
        )
        .await;
    match bad {
        Ok(r) => assert!(r.is_error(), "{}", r.json()),
        Err(e) => assert_eq!(e.code(), "SERVER_ERROR", "{e}"),
    }
    hub.close().await;
}

#[tokio::test]
async fn server_everything_progress() {
    let hub = everything().await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    // Shorter than the operation: only progress keeps it alive.
    let opts = CallOptions::default()
        .with_timeout(Duration::from_millis(1500))
        .with_progress(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
    let r = hub
        .call_tool(
            "mcp_everything_trigger-long-running-operation",
            Some(&json!({"duration": 3, "steps": 3})),
            &opts,
        )
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.json());
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    hub.close().await;
}

#[tokio::test]
async fn server_everything_resources_and_prompts() {
    let hub = everything().await;
    let resources = hub.list_resources(None).await.unwrap();
    assert!(!resources.is_empty());
    let uri = resources[0]["uri"].as_str().unwrap().to_owned();
    let read = hub.read_resource(&uri, None).await.unwrap();
    assert_eq!(read["contents"][0]["uri"], uri.as_str());

    let prompts = hub.list_prompts(None).await.unwrap();
    let names: Vec<&str> = prompts.iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(names.contains(&"simple-prompt"), "{names:?}");
    let p = hub.get_prompt("simple-prompt", None, None).await.unwrap();
    assert!(!p["messages"].as_array().unwrap().is_empty());
    let args = hub
        .get_prompt(
            "args-prompt",
            Some(&json!({"city": "Paris", "state": "TX"})),
            Some("everything"),
        )
        .await
        .unwrap();
    assert!(args.to_string().contains("Paris"), "{args}");
    hub.close().await;
}

#[tokio::test]
async fn fastmcp_server() {
    let hub = Hub::connect(config(&[script_entry("py", "fastmcp_server.py", "")]))
        .await
        .unwrap();
    assert_eq!(hub.servers()[0].state, "connected", "{:?}", hub.servers());
    let tools = hub.list_tools();
    let weather = tools
        .iter()
        .find(|t| t.tool == "weather")
        .expect("weather tool");
    assert!(weather.output_schema.is_some());

    let greet = hub
        .call_tool(
            "mcp_py_greet",
            Some(&json!({"name": "Ada"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(greet.json().contains("Ada"));
    let add = hub
        .call_tool(
            "mcp_py_add",
            Some(&json!({"a": 2, "b": 3})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(add.value()["structuredContent"], json!({"result": 5}));
    let w = hub
        .call_tool(
            "mcp_py_weather",
            Some(&json!({"city": "Oslo"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(w.value()["structuredContent"]["city"], "Oslo");
    let boom = hub
        .call_tool("mcp_py_boom", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(boom.is_error(), "{}", boom.json());

    let read = hub.read_resource("info://server", None).await.unwrap();
    assert!(read["contents"].is_array());
    let prompt = hub
        .get_prompt("review", Some(&json!({"code": "x = 1"})), None)
        .await
        .unwrap();
    assert!(prompt.to_string().contains("x = 1"));
    hub.close().await;
}
