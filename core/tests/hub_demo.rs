//! The hub against the bundled demo server: listing, calling, progress,
//! timeouts, cancellation, pagination, list_changed, resources, prompts.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use mcpmux_core::{CallOptions, Hub};
use serde_json::json;

async fn demo_hub(extra: &str) -> Hub {
    Hub::connect(config(&[demo_entry("demo", extra)]))
        .await
        .unwrap()
}

#[tokio::test]
async fn lists_and_calls_demo_tools() {
    let hub = demo_hub("").await;
    let servers = hub.servers();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].state, "connected", "{servers:?}");
    assert_eq!(servers[0].protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        servers[0].server_info.as_ref().unwrap()["name"],
        "mcpmux-demo-server"
    );

    let tools = hub.list_tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "mcp_demo_echo",
        "mcp_demo_add",
        "mcp_demo_slow",
        "mcp_demo_fail",
        "mcp_demo_big",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let add = tools.iter().find(|t| t.name == "mcp_demo_add").unwrap();
    assert_eq!(add.server, "demo");
    assert_eq!(add.tool, "add");
    assert!(add.output_schema.is_some());
    assert_eq!(servers[0].tool_count, tools.len());

    let echo = hub
        .call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "héllo"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(!echo.is_error());
    assert_eq!(echo.value()["content"][0]["text"], "héllo");

    let sum = hub
        .call_tool(
            "mcp_demo_add",
            Some(&json!({"a": 2, "b": 3})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(sum.value()["structuredContent"], json!({"sum": 5}));

    let fail = hub
        .call_tool("mcp_demo_fail", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(fail.is_error(), "{}", fail.json());
    assert_eq!(fail.value()["isError"], true);

    let big = hub
        .call_tool(
            "mcp_demo_big",
            Some(&json!({"bytes": 3_000_000})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        big.value()["content"][0]["text"].as_str().unwrap().len(),
        3_000_000
    );

    let unknown = hub
        .call_tool("mcp_demo_nope", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), "UNKNOWN_TOOL");
    assert!(unknown.to_string().contains("mcp_demo_nope"));

    let bad_args = hub
        .call_tool("mcp_demo_echo", Some(&json!([1])), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(bad_args.code(), "INVALID_INPUT");
    hub.close().await;
}

#[tokio::test]
async fn results_pass_through_unchanged() {
    let hub = demo_hub("").await;
    let r = hub
        .call_tool(
            "mcp_demo_add",
            Some(&json!({"a": 1.5, "b": 2})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    // Byte for byte what the demo server writes, in its key order.
    assert_eq!(
        r.json(),
        r#"{"content":[{"type":"text","text":"3.5"}],"structuredContent":{"sum":3.5}}"#
    );
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_calls_on_one_connection() {
    let hub = demo_hub("").await;
    let calls = (0..500).map(|i| {
        let hub = hub.clone();
        async move {
            let r = hub
                .call_tool(
                    "mcp_demo_echo",
                    Some(&json!({"text": format!("m{i}")})),
                    &CallOptions::default(),
                )
                .await;
            (i, r)
        }
    });
    for (i, r) in futures::future::join_all(calls).await {
        assert_eq!(r.unwrap().value()["content"][0]["text"], format!("m{i}"));
    }
    hub.close().await;
}

#[tokio::test]
async fn progress_resets_the_timeout_and_reaches_the_callback() {
    let events = EventLog::new();
    let hub = demo_hub(&events.demo_env()).await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let opts = CallOptions::default()
        .with_timeout(Duration::from_millis(700))
        .with_progress(Arc::new(move |p| {
            assert!(p.progress > 0.0);
            counter.fetch_add(1, Ordering::SeqCst);
        }));
    // 2 s of work with progress every 0.25 s: longer than the timeout, but alive.
    let r = hub
        .call_tool(
            "mcp_demo_slow",
            Some(&json!({"seconds": 2, "steps": 8})),
            &opts,
        )
        .await
        .unwrap();
    assert!(r.value()["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("done"));
    assert!(
        seen.load(Ordering::SeqCst) >= 6,
        "progress callbacks: {}",
        seen.load(Ordering::SeqCst)
    );

    // Without progress the same call times out (the server would answer
    // "done" only after 60 s), and the server is told to stop.
    let opts = CallOptions::default().with_timeout(Duration::from_millis(500));
    let e = hub
        .call_tool(
            "mcp_demo_slow",
            Some(&json!({"seconds": 60, "steps": 0})),
            &opts,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT", "{e}");
    events.wait_count("cancelled", 1).await;

    // Progress cannot extend a call past its maximum total: progress every
    // 0.1 s keeps the 0.5 s timeout from firing (more progress arrives
    // than fits in it), yet the call ends with TIMEOUT long before the
    // server's answer at 60 s.
    let extended = Arc::new(AtomicUsize::new(0));
    let counter = extended.clone();
    let opts = CallOptions::default()
        .with_timeout(Duration::from_millis(500))
        .with_max_total_timeout(Duration::from_millis(1200))
        .with_progress(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
    let e = hub
        .call_tool(
            "mcp_demo_slow",
            Some(&json!({"seconds": 60, "steps": 600})),
            &opts,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT");
    let progressed = extended.load(Ordering::SeqCst);
    assert!(
        progressed > 5,
        "progress did not keep the call past its 0.5 s timeout: {progressed} notifications"
    );
    events.wait_count("cancelled", 2).await;

    // The connection still works afterwards.
    let r = hub
        .call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "after"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.value()["content"][0]["text"], "after");
    hub.close().await;
}

#[tokio::test]
async fn server_timeout_from_config_applies() {
    let events = EventLog::new();
    let hub = demo_hub(&format!("timeout_seconds = 0.4\n{}", events.demo_env())).await;
    // The server would answer after 60 s; the configured 0.4 s fires first
    // (the default timeout is longer than the hang guard of the wait below).
    let e = hub
        .call_tool(
            "mcp_demo_slow",
            Some(&json!({"seconds": 60, "steps": 0})),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT");
    assert_eq!(events.count("slow"), 1, "{:?}", events.lines());
    events.wait_count("cancelled", 1).await;
    hub.close().await;
}

#[tokio::test]
async fn pagination_is_followed_to_the_end() {
    let hub = demo_hub("env = { DEMO_PAGE_SIZE = \"2\" }").await;
    let tools = hub.list_tools();
    assert_eq!(
        tools.len(),
        7,
        "{:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    hub.close().await;
}

#[tokio::test]
async fn list_changed_refreshes_the_tools() {
    let hub = demo_hub("").await;
    assert!(hub.tool("mcp_demo_extra_1").is_none());
    let r = hub
        .call_tool("mcp_demo_grow", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(!r.is_error());
    let end = Instant::now() + Duration::from_secs(5);
    while hub.tool("mcp_demo_extra_1").is_none() {
        assert!(
            Instant::now() < end,
            "tools were not refreshed after list_changed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = hub
        .call_tool(
            "mcp_demo_extra_1",
            Some(&json!({"text": "new"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.value()["content"][0]["text"], "new");
    hub.close().await;
}

#[tokio::test]
async fn resources_and_prompts() {
    let hub = demo_hub("").await;
    let resources = hub.list_resources(None).await.unwrap();
    assert_eq!(resources[0]["uri"], "demo://readme");
    assert_eq!(resources[0]["server"], "demo");
    let templates = hub.list_resource_templates(None).await.unwrap();
    assert_eq!(templates[0]["uriTemplate"], "demo://item/{id}");
    let read = hub.read_resource("demo://readme", None).await.unwrap();
    assert!(read["contents"][0]["text"]
        .as_str()
        .unwrap()
        .contains("demo"));
    let item = hub
        .read_resource("demo://item/42", Some("demo"))
        .await
        .unwrap();
    assert_eq!(item["contents"][0]["text"], "item 42");
    let missing = hub.read_resource("demo://nope", None).await.unwrap_err();
    assert_eq!(missing.code(), "SERVER_ERROR");
    assert_eq!(missing.rpc_code(), Some(-32002));

    let prompts = hub.list_prompts(None).await.unwrap();
    assert_eq!(prompts[0]["name"], "greet");
    let got = hub
        .get_prompt("greet", Some(&json!({"name": "Ada"})), None)
        .await
        .unwrap();
    assert!(got["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("Ada"));
    let e = hub.get_prompt("nope", None, None).await.unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    let e = hub.list_prompts(Some("ghost")).await.unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_SERVER");
    hub.close().await;
}

#[tokio::test]
async fn tools_for_every_format() {
    let hub = demo_hub("").await;
    let a = hub.tools_for("anthropic").unwrap();
    assert!(a
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "mcp_demo_echo" && t["input_schema"]["type"] == "object"));
    let o = hub.tools_for("openai").unwrap();
    assert_eq!(o[0]["type"], "function");
    assert!(o[0]["function"]["parameters"].is_object());
    let r = hub.tools_for("openai-responses").unwrap();
    assert!(r[0]["name"].is_string() && r[0]["parameters"].is_object());
    let m = hub.tools_for("mcp").unwrap();
    assert!(m[0]["inputSchema"].is_object());
    assert_eq!(hub.tools_for("bogus").unwrap_err().code(), "INVALID_INPUT");
    hub.close().await;
}

#[tokio::test]
async fn names_are_prefixed_per_server() {
    let hub = Hub::connect(config(&[demo_entry("a", ""), demo_entry("b.two", "")]))
        .await
        .unwrap();
    assert!(hub.tool("mcp_a_echo").is_some());
    let b = hub.tool("mcp_b_two_echo").expect("sanitized prefix");
    assert_eq!(b.server, "b.two");
    let r = hub
        .call_tool(
            "mcp_b_two_echo",
            Some(&json!({"text": "b"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.value()["content"][0]["text"], "b");
    hub.close().await;
}

#[tokio::test]
async fn disabled_servers_are_listed_but_not_started() {
    let hub = Hub::connect(config(&[
        demo_entry("on", ""),
        demo_entry("off", "enabled = false"),
    ]))
    .await
    .unwrap();
    let servers = hub.servers();
    assert_eq!(servers[1].name, "off");
    assert_eq!(servers[1].state, "disabled");
    let e = hub
        .call_tool("mcp_off_echo", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_TOOL");
    assert!(e.to_string().contains("disabled"), "{e}");
    hub.close().await;
}

#[tokio::test]
async fn refresh_reconnects_a_crashed_server() {
    let hub = demo_hub("restart = \"never\"").await;
    let e = hub
        .call_tool("mcp_demo_crash", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED");
    assert_eq!(hub.servers()[0].state, "failed");
    let again = hub
        .call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "x"})),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(again.code(), "TRANSPORT_CLOSED");
    hub.refresh("demo").await.unwrap();
    assert_eq!(hub.servers()[0].state, "connected");
    let r = hub
        .call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "back"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.value()["content"][0]["text"], "back");
    assert_eq!(
        hub.refresh("ghost").await.unwrap_err().code(),
        "UNKNOWN_SERVER"
    );
    hub.close().await;
}

#[tokio::test]
async fn closed_hub_fails_clearly_and_leaves_no_process() {
    let tag = marker("close");
    let hub = Hub::connect(config(&[demo_entry("demo", &marker_env(&tag))]))
        .await
        .unwrap();
    let pids = pids_with(&tag);
    assert_eq!(pids.len(), 1, "{pids:?}");
    hub.close().await;
    assert!(!alive(pids[0]), "server still running after close");
    let e = hub
        .call_tool("mcp_demo_echo", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED");
    assert!(e.to_string().contains("closed"));
}

#[tokio::test]
async fn dropping_the_hub_kills_its_servers() {
    let tag = marker("drop");
    let hub = Hub::connect(config(&[demo_entry("demo", &marker_env(&tag))]))
        .await
        .unwrap();
    let pids = pids_with(&tag);
    assert_eq!(pids.len(), 1);
    drop(hub);
    assert!(
        wait_gone(pids[0], Duration::from_secs(3)),
        "server survived the hub"
    );
}

#[tokio::test]
async fn dropping_a_call_sends_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancelled.log");
    let entry = script_entry(
        "hang",
        "hang.py",
        &format!(
            "env = {{ HANG_CANCEL_LOG = {} }}",
            q(&log.display().to_string())
        ),
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();

    // Abandoned by the caller.
    let defaults = CallOptions::default();
    let call = hub.call_tool("mcp_hang_wait_forever", None, &defaults);
    assert!(tokio::time::timeout(Duration::from_millis(300), call)
        .await
        .is_err());
    // Timed out.
    let opts = CallOptions::default().with_timeout(Duration::from_millis(200));
    let e = hub
        .call_tool("mcp_hang_wait_forever", None, &opts)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT");

    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let lines = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count();
        if lines >= 2 {
            break;
        }
        assert!(
            Instant::now() < end,
            "server saw {lines} cancellations, expected 2"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.close().await;
}

#[tokio::test]
async fn connects_servers_concurrently() {
    // Each server answers initialize only once all 6 have received theirs:
    // connected one after the other, the first would wait for the others
    // in vain (and exit, failing the connect).
    let events = EventLog::new();
    let barrier = tempfile::tempdir().unwrap();
    let env = format!(
        "env = {{ DEMO_INIT_BARRIER = {}, DEMO_EVENT_LOG = {} }}",
        q(&format!("{}:6", barrier.path().display())),
        q(&events.path().display().to_string())
    );
    let entries: Vec<String> = (0..6).map(|i| demo_entry(&format!("s{i}"), &env)).collect();
    let hub = Hub::connect(config(&entries)).await.unwrap();
    assert!(
        hub.servers().iter().all(|s| s.state == "connected"),
        "{:?}",
        hub.servers()
    );
    assert_eq!(events.count("barrier met"), 6, "{:?}", events.lines());
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_requests_larger_than_the_pipe_are_written_whole() {
    let hub = demo_hub("").await;
    // Each request is bigger than a pipe's buffer (64 KiB), so writes are
    // partial and the rest is flushed in the background, in order.
    let calls = (0..8).map(|i| {
        let hub = hub.clone();
        async move {
            let text = format!("{i}{}", "z".repeat(300_000 + i * 1000));
            let r = hub
                .call_tool(
                    "mcp_demo_echo",
                    Some(&json!({"text": text})),
                    &CallOptions::default(),
                )
                .await
                .unwrap();
            assert_eq!(r.value()["content"][0]["text"].as_str().unwrap(), text);
        }
    });
    futures::future::join_all(calls).await;
    hub.close().await;
}

#[tokio::test]
async fn arguments_as_json_text_go_out_as_sent_and_bad_text_names_the_tool() {
    let hub = demo_hub("").await;
    let opts = CallOptions::default();
    // Compact text is sent as it is; text over several lines (which a
    // stdio message cannot carry) is parsed and written again.
    for text in [
        r#"{"text":"h\u00e9llo \"quoted\"\nline"}"#,
        "{\n  \"text\": \"h\\u00e9llo \\\"quoted\\\"\\nline\"\n}\n",
        " \t{\"text\":\"h\\u00e9llo \\\"quoted\\\"\\nline\"} ",
    ] {
        let echo = hub
            .call_tool_json("mcp_demo_echo", Some(text), &opts)
            .await
            .unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(
            echo.value()["content"][0]["text"],
            "héllo \"quoted\"\nline",
            "{text:?}"
        );
    }
    let sum = hub
        .call_tool_json("mcp_demo_add", Some(r#"{"a":2,"b":3}"#), &opts)
        .await
        .unwrap();
    assert_eq!(sum.value()["structuredContent"], json!({"sum": 5}));
    // None means {}: the server's own validation answers.
    let empty = hub.call_tool_json("mcp_demo_add", None, &opts).await;
    assert!(
        empty.as_ref().map_or(true, |r| r.is_error()),
        "{:?}",
        empty.map(|r| r.json().to_owned())
    );
    for (text, why) in [
        ("[1, 2]", "must be a JSON object"),
        ("\"text\"", "must be a JSON object"),
        ("{\"text\": ", "are not JSON"),
        ("{} {}", "are not JSON"),
    ] {
        let err = hub
            .call_tool_json("mcp_demo_echo", Some(text), &opts)
            .await
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{text:?}: {err}");
        let msg = err.to_string();
        assert!(
            msg.contains("'mcp_demo_echo'") && msg.contains(why),
            "{text:?}: {msg}"
        );
    }
    // The server is still fine.
    let echo = hub
        .call_tool_json("mcp_demo_echo", Some(r#"{"text":"again"}"#), &opts)
        .await
        .unwrap();
    assert_eq!(echo.value()["content"][0]["text"], "again");
}

#[tokio::test]
async fn arguments_already_checked_as_json_go_out_as_they_are() {
    use serde_json::value::RawValue;
    let hub = demo_hub("").await;
    let opts = CallOptions::default();
    for text in [r#"{"text":"one line"}"#, "{\n\"text\": \"one line\"\n}"] {
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        let echo = hub
            .call_tool_raw("mcp_demo_echo", Some(raw), &opts)
            .await
            .unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(echo.value()["content"][0]["text"], "one line", "{text:?}");
    }
    let raw: &RawValue = serde_json::from_str("[1, 2]").unwrap();
    let err = hub
        .call_tool_raw("mcp_demo_echo", Some(raw), &opts)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        err.to_string()
            .contains("'mcp_demo_echo' must be a JSON object"),
        "{err}"
    );
}

#[tokio::test]
async fn a_timeout_past_what_the_clock_can_hold_is_accepted() {
    let hub = demo_hub("").await;
    let opts = CallOptions::default()
        .with_timeout(Duration::MAX)
        .with_max_total_timeout(Duration::MAX);
    let echo = hub
        .call_tool("mcp_demo_echo", Some(&json!({"text": "far"})), &opts)
        .await
        .unwrap();
    assert_eq!(echo.value()["content"][0]["text"], "far");
    let echo = hub
        .call_tool_json("mcp_demo_echo", Some(r#"{"text":"far"}"#), &opts)
        .await
        .unwrap();
    assert_eq!(echo.value()["content"][0]["text"], "far");
}
