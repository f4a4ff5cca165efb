//! A Rust task whose stdio call is the only one in flight on its connection
//! may wait awake, reading the server's stdout itself between turns of its
//! worker (`jsonrpc::peer::awake`). Each connection's first lone call
//! waits asleep, its second awake, later ones as measured, and every 32nd
//! the other way: sequences of lone calls go through both ways. Whoever
//! reads, every answer must reach its own caller whole, server requests
//! in the middle of a call must be answered, hostile output must be held to
//! the cap and a server's exit reported.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use mcpmux_core::runtime::builder;
use mcpmux_core::{CallOptions, Hub};
use serde_json::json;

fn text(result: &mcpmux_core::ToolResult) -> String {
    result.value()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    builder("mcpmux-test-rt", Some(workers), None)
        .unwrap()
        .build()
        .unwrap()
}

#[test]
fn lone_calls_from_tasks_get_their_own_answers_both_ways() {
    for workers in [1, 2] {
        let rt = runtime(workers);
        let hub: Hub = rt
            .block_on(Hub::connect(config(&[
                demo_entry("demo", ""),
                script_entry("asker", "asks_client.py", ""),
            ])))
            .unwrap();
        let h = hub.clone();
        rt.block_on(rt.spawn(async move {
            let opts = CallOptions::default();
            for n in 0..300 {
                let want = format!("call {n}");
                let r = h
                    .call_tool("mcp_demo_echo", Some(&json!({ "text": want })), &opts)
                    .await
                    .unwrap();
                assert_eq!(text(&r), want);
                if n % 60 == 1 {
                    // An answer of many reads.
                    let big = h
                        .call_tool("mcp_demo_big", Some(&json!({ "bytes": 300_000 })), &opts)
                        .await
                        .unwrap();
                    assert_eq!(text(&big).len(), 300_000);
                }
            }
            // The server pings us in the middle of each call: whoever reads
            // the ping must answer it for the call to finish.
            for _ in 0..40 {
                let r = h.call_tool("mcp_asker_ping_client", None, &opts).await;
                let r = r.unwrap();
                assert!(text(&r).contains("result"), "{}", r.json());
            }
        }))
        .unwrap();

        // Progress notifications reach the callback of a lone call, then
        // its answer (on a fresh hub: its second call waits awake first).
        let (seen, opts) = counting_progress();
        let fresh: Hub = rt
            .block_on(Hub::connect(config(&[demo_entry("demo", "")])))
            .unwrap();
        let f = fresh.clone();
        let slow = rt
            .block_on(rt.spawn(async move {
                let args = json!({"seconds": 0.3, "steps": 3});
                let first = f.call_tool("mcp_demo_slow", Some(&args), &opts).await;
                let second = f.call_tool("mcp_demo_slow", Some(&args), &opts).await;
                (first.unwrap(), second.unwrap())
            }))
            .unwrap();
        assert!(text(&slow.0).starts_with("done"), "{}", slow.0.json());
        assert!(text(&slow.1).starts_with("done"), "{}", slow.1.json());
        assert_eq!(seen.load(Ordering::SeqCst), 6);
        rt.block_on(fresh.close());
        rt.block_on(hub.close());
    }
}

#[test]
fn lone_calls_to_hostile_servers_keep_to_the_cap_and_see_the_exit() {
    let rt = runtime(1);
    let entries = [
        script_entry(
            "huge",
            "huge_line.py",
            "max_message_bytes = 1048576\nenv = { HUGE_LINE_BYTES = \"67108864\" }",
        ),
        script_entry("garbage", "garbage_stdout.py", ""),
        demo_entry("demo", ""),
    ];
    let hub: Hub = rt
        .block_on(Hub::connect(config_without_restarts(&entries)))
        .unwrap();
    let h = hub.clone();
    rt.block_on(rt.spawn(async move {
        let opts = CallOptions::default().with_timeout(Duration::from_secs(60));
        // Each tool twice: one call per way of waiting.
        for _ in 0..2 {
            let e = h
                .call_tool("mcp_huge_flood", None, &opts)
                .await
                .unwrap_err();
            assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
            assert!(e.to_string().contains("exceeds the limit"), "{e}");
            let e = h
                .call_tool("mcp_garbage_garble", None, &opts)
                .await
                .unwrap_err();
            assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
            assert!(e.to_string().contains("not JSON-RPC"), "{e}");
        }
        // The second call on the demo server waits awake: the server exits
        // under it, and the end of its stdout is still reported.
        let r = h
            .call_tool("mcp_demo_echo", Some(&json!({"text": "first"})), &opts)
            .await
            .unwrap();
        assert_eq!(text(&r), "first");
        let e = h
            .call_tool("mcp_demo_crash", None, &opts)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    }))
    .unwrap();
    rt.block_on(hub.close());
}
