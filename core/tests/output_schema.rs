//! Tool results checked against the tool's `outputSchema`: hostile servers
//! (the demo server's `add` with `DEMO_ADD_OUTPUT`, and
//! `tests/servers/bad_output_schema.py`) whose results break their own
//! schema, or whose schemas cannot be compiled.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::{CallOptions, Hub, HubEvent, ValidateOutput};
use serde_json::json;

async fn demo_hub(mode: &str) -> Hub {
    let env = format!("env = {{ DEMO_ADD_OUTPUT = \"{mode}\" }}");
    Hub::connect(config(&[demo_entry("demo", &env)]))
        .await
        .unwrap()
}

fn sum_args() -> serde_json::Value {
    json!({"a": 2, "b": 3})
}

#[tokio::test]
async fn a_result_that_breaks_its_schema_is_output_invalid() {
    let hub = demo_hub("wrong_type").await;
    let e = hub
        .call_tool("mcp_demo_add", Some(&sum_args()), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "OUTPUT_INVALID", "{e}");
    let m = e.to_string();
    assert!(
        m.contains("server 'demo' tool 'add'") && m.contains("'/sum'"),
        "{m}"
    );
    // The value itself is not quoted.
    assert!(!m.contains("\"5\""), "{m}");
    // The same through the raw-arguments way in (Node's and C's).
    let e = hub
        .call_tool_json(
            "mcp_demo_add",
            Some(r#"{"a":2,"b":3}"#),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "OUTPUT_INVALID", "{e}");
}

#[tokio::test]
async fn warn_returns_the_result_with_a_log_event_and_off_checks_nothing() {
    let hub = demo_hub("wrong_type").await;
    let mut events = hub.events();
    let warn = CallOptions::default().with_validate_output(ValidateOutput::Warn);
    let r = hub
        .call_tool("mcp_demo_add", Some(&sum_args()), &warn)
        .await
        .unwrap();
    assert_eq!(r.value()["structuredContent"]["sum"], "5");
    let event = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match events.recv().await {
                Some(HubEvent::Log { data, level, .. }) => return (level, data),
                Some(_) => continue,
                None => panic!("the event stream ended"),
            }
        }
    })
    .await
    .expect("a log event");
    assert_eq!(event.0, "warning");
    let text = event.1.as_str().unwrap().to_owned();
    assert!(
        text.starts_with("OUTPUT_INVALID: ") && text.contains("'/sum'"),
        "{text}"
    );
    let off = CallOptions::default().with_validate_output(ValidateOutput::Off);
    let r = hub
        .call_tool("mcp_demo_add", Some(&sum_args()), &off)
        .await
        .unwrap();
    assert_eq!(r.value()["structuredContent"]["sum"], "5");
}

#[tokio::test]
async fn a_missing_structured_content_is_output_invalid_and_a_tool_error_is_not_checked() {
    let hub = demo_hub("missing").await;
    let e = hub
        .call_tool("mcp_demo_add", Some(&sum_args()), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "OUTPUT_INVALID", "{e}");
    assert!(e.to_string().contains("no structuredContent"), "{e}");

    let hub = demo_hub("is_error").await;
    let r = hub
        .call_tool("mcp_demo_add", Some(&sum_args()), &CallOptions::default())
        .await
        .unwrap();
    assert!(r.is_error());

    // A result that satisfies its schema passes.
    let hub = demo_hub("").await;
    let r = hub
        .call_tool("mcp_demo_add", Some(&sum_args()), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.value()["structuredContent"]["sum"], 5);
}

#[tokio::test]
async fn a_schema_that_cannot_be_compiled_leaves_calls_unchecked_and_draft_07_is_read() {
    let hub = Hub::connect(config(&[script_entry("bad", "bad_output_schema.py", "")]))
        .await
        .unwrap();
    let mut events = hub.events();
    for tool in ["mcp_bad_broken", "mcp_bad_remote_ref"] {
        // Twice: the second call finds the failed compile in the cache.
        for _ in 0..2 {
            let r = hub
                .call_tool(tool, None, &CallOptions::default())
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert_eq!(r.value()["structuredContent"]["n"], "x");
        }
    }
    // Each told once (sent before its call returned), naming the tool.
    let mut told = Vec::new();
    while let Ok(Some(event)) = events.try_recv() {
        if let HubEvent::Log {
            data,
            logger,
            level,
            ..
        } = event
        {
            assert_eq!(
                (logger.as_deref(), level.as_str()),
                (Some("mcpmux"), "warning")
            );
            told.push(data.as_str().unwrap_or_default().to_owned());
        }
    }
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(
        told[0].contains("tool 'broken'") && told[0].contains("cannot be compiled"),
        "{told:?}"
    );
    assert!(told[1].contains("tool 'remote_ref'"), "{told:?}");
    let e = hub
        .call_tool("mcp_bad_draft7", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "OUTPUT_INVALID", "{e}");
    assert!(
        e.to_string().contains("tool 'draft7'") && e.to_string().contains("'/n'"),
        "{e}"
    );
}
