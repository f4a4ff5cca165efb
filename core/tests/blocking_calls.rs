//! `runtime::block_on`, the blocking front ends' way to wait (Python's
//! `Hub`, the C ABI): a waiting thread reads its stdio server's stdout
//! itself (leader/follower) while engine tasks read it too. Every answer
//! must still reach its own caller whole, in order, exactly once, whoever
//! read it: many blocking threads and async tasks share one connection,
//! with large answers that take many reads and progress notifications, and
//! hostile servers (a line far over the cap, a line that is not JSON-RPC).

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use mcpmux_core::runtime::{block_on, builder};
use mcpmux_core::{CallOptions, Hub};
use serde_json::json;

fn echo_text(result: &mcpmux_core::ToolResult) -> String {
    result.value()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn blocking_callers_and_tasks_share_one_stdio_connection() {
    let rt = builder("mcpmux-test-rt", Some(2), None)
        .unwrap()
        .build()
        .unwrap();
    let hub: Hub = block_on(rt.handle(), Hub::connect(config(&[demo_entry("demo", "")]))).unwrap();

    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let hub = hub.clone();
            rt.spawn(async move {
                for n in 0..300 {
                    let text = format!("task {t} call {n}");
                    let r = hub
                        .call_tool(
                            "mcp_demo_echo",
                            Some(&json!({ "text": text })),
                            &CallOptions::default(),
                        )
                        .await
                        .unwrap();
                    assert_eq!(echo_text(&r), text);
                }
            })
        })
        .collect();

    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (hub, handle) = (hub.clone(), rt.handle().clone());
            std::thread::spawn(move || {
                for n in 0..300 {
                    let text = format!("thread {t} call {n}");
                    let r = block_on(
                        &handle,
                        hub.call_tool(
                            "mcp_demo_echo",
                            Some(&json!({ "text": text })),
                            &CallOptions::default(),
                        ),
                    )
                    .unwrap();
                    assert_eq!(echo_text(&r), text);
                    if n % 50 == 0 {
                        // An answer of many reads, split across whoever reads.
                        let big = block_on(
                            &handle,
                            hub.call_tool(
                                "mcp_demo_big",
                                Some(&json!({ "bytes": 300_000 })),
                                &CallOptions::default(),
                            ),
                        )
                        .unwrap();
                        assert_eq!(echo_text(&big).len(), 300_000);
                    }
                }
            })
        })
        .collect();

    // Progress notifications reach a blocking caller's callback, then its
    // answer, whichever thread read them.
    let (seen, opts) = counting_progress();
    let slow = block_on(
        rt.handle(),
        hub.call_tool(
            "mcp_demo_slow",
            Some(&json!({"seconds": 0.5, "steps": 5})),
            &opts,
        ),
    )
    .unwrap();
    assert!(echo_text(&slow).starts_with("done"), "{}", slow.json());
    assert_eq!(seen.load(Ordering::SeqCst), 5);

    for thread in threads {
        thread.join().unwrap();
    }
    block_on(rt.handle(), async {
        for task in tasks {
            task.await.unwrap();
        }
    });
    block_on(rt.handle(), hub.close());
}

#[test]
fn a_blocking_caller_sees_its_server_exit() {
    let rt = builder("mcpmux-test-rt", Some(1), None)
        .unwrap()
        .build()
        .unwrap();
    let hub: Hub = block_on(
        rt.handle(),
        Hub::connect(config_without_restarts(&[demo_entry("demo", "")])),
    )
    .unwrap();
    let r = block_on(
        rt.handle(),
        hub.call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "before"})),
            &CallOptions::default(),
        ),
    )
    .unwrap();
    assert_eq!(echo_text(&r), "before");
    // The server exits mid-call: the end of its stdout is the reader
    // task's to report, even while this thread reads the pipe too.
    let e = block_on(
        rt.handle(),
        hub.call_tool("mcp_demo_crash", None, &CallOptions::default()),
    )
    .unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    block_on(rt.handle(), hub.close());
}

/// Peak resident memory of this process, in MiB (`VmHWM`).
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024
}

#[test]
fn a_blocking_caller_reading_a_hostile_server_keeps_to_the_cap() {
    let rt = builder("mcpmux-test-rt", Some(1), None)
        .unwrap()
        .build()
        .unwrap();
    // A 256 MiB answer line against a 1 MiB cap, and a line that is not
    // JSON-RPC: what the blocking caller reads itself is held to the cap
    // and reported like what the reader task reads.
    let entries = [
        script_entry(
            "huge",
            "huge_line.py",
            "max_message_bytes = 1048576\nenv = { HUGE_LINE_BYTES = \"268435456\" }",
        ),
        script_entry("garbage", "garbage_stdout.py", ""),
        demo_entry("demo", ""),
    ];
    let hub: Hub = block_on(rt.handle(), Hub::connect(config(&entries))).unwrap();
    let call = |name: &str| {
        let opts = CallOptions::default().with_timeout(Duration::from_secs(60));
        block_on(rt.handle(), hub.call_tool(name, None, &opts))
    };
    let e = call("mcp_huge_flood").unwrap_err();
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("exceeds the limit"), "{e}");
    let e = call("mcp_garbage_garble").unwrap_err();
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("not JSON-RPC"), "{e}");
    let r = block_on(
        rt.handle(),
        hub.call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "still here"})),
            &CallOptions::default(),
        ),
    )
    .unwrap();
    assert_eq!(echo_text(&r), "still here");
    let peak = peak_rss_mib();
    assert!(peak < 128, "peak RSS {peak} MiB: the 256 MiB line was held");
    block_on(rt.handle(), hub.close());
}
