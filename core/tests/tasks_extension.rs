//! The 2026-07-28 tasks extension (SEP-2663) against a real server built on
//! the official Rust SDK, rmcp (`tests/servers/rmcp-tasks`): mcpmux declares
//! `io.modelcontextprotocol/tasks` with every request, follows a task the
//! server answers with (`resultType: "task"`) through `tasks/get`, answers
//! its `inputRequests` with `tasks/update`, cancels it with `tasks/cancel`
//! on a timeout, and the handle API works on this revision too.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcpmux_core::events::EventSender;
use mcpmux_core::{CallOptions, ClientHandlers, Hub, HubEvent, HubOptions};
use serde_json::{json, Value};

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
        .to_owned()
}

/// A log the server writes each request method (and cancel) to.
fn logged(extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rmcp.log");
    let entry = rmcp_tasks_entry(
        "tasks",
        &format!(
            "env = {{ RMCP_TASKS_LOG = {} }}\n{extra}",
            q(&log.display().to_string())
        ),
    );
    (dir, entry)
}

fn log_lines(dir: &tempfile::TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.path().join("rmcp.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_call_the_server_makes_a_task_is_followed_to_its_result() {
    let (dir, entry) = logged("");
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let hub = Hub::connect_with(config(&[entry]), HubOptions::default().with_events(events))
        .await
        .unwrap();
    let status = &hub.servers()[0];
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(
        status.capabilities.as_ref().unwrap()["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object(),
        "the server's extensions are visible: {:?}",
        status.capabilities
    );
    let r = hub
        .call_tool(
            "mcp_tasks_slow_sum",
            Some(&json!({"a": 2, "b": 40, "ms": 300})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r.value()), "sum: 42");
    assert_eq!(r.value()["structuredContent"], json!({"sum": 42}));
    let lines = log_lines(&dir);
    assert!(
        lines.iter().any(|l| l == "method tasks/get"),
        "polled with tasks/get: {lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("tasks/result")),
        "{lines:?}"
    );
    // One event per status: working, then completed.
    let mut statuses = Vec::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(200), stream.recv()).await
    {
        if let HubEvent::TaskStatus { status, .. } = event {
            statuses.push(status);
        }
    }
    assert_eq!(
        statuses.first().map(String::as_str),
        Some("working"),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.last().map(String::as_str),
        Some("completed"),
        "{statuses:?}"
    );
    hub.close().await;
}

#[tokio::test]
async fn input_requests_are_answered_by_the_hosts_handler_with_tasks_update() {
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let handlers = ClientHandlers {
        elicitation: Some(Arc::new(move |req| {
            let seen = seen.clone();
            Box::pin(async move {
                seen.fetch_add(1, Ordering::SeqCst);
                assert_eq!(req.params["message"], "What is your name?");
                Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
            })
        })),
        ..ClientHandlers::default()
    };
    let (dir, entry) = logged("");
    let hub = Hub::connect_with(
        config(&[entry]),
        HubOptions::default().with_handlers(handlers),
    )
    .await
    .unwrap();
    let r = hub
        .call_tool("mcp_tasks_ask_name", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text_of(&r.value()), "Hello, Ada");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "each input key answered once"
    );
    let lines = log_lines(&dir);
    assert_eq!(
        lines.iter().filter(|l| *l == "method tasks/update").count(),
        1,
        "{lines:?}"
    );
    hub.close().await;
}

#[tokio::test]
async fn without_a_handler_an_elicitation_is_declined() {
    let (_dir, entry) = logged("");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let r = hub
        .call_tool("mcp_tasks_ask_name", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(r.is_error(), "{}", r.value());
    assert_eq!(text_of(&r.value()), "declined");
    hub.close().await;
}

#[tokio::test]
async fn a_task_that_never_ends_is_cancelled_when_the_call_runs_out_of_time() {
    let (dir, entry) = logged("");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let started = std::time::Instant::now();
    let e = hub
        .call_tool(
            "mcp_tasks_never_ends",
            None,
            &CallOptions::default()
                .with_timeout(Duration::from_secs(1))
                .with_max_total_timeout(Duration::from_secs(1)),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT", "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let cancelled = wait_until(Duration::from_secs(5), || {
        log_lines(&dir).iter().any(|l| l.starts_with("cancel "))
    })
    .await;
    assert!(cancelled, "tasks/cancel sent: {:?}", log_lines(&dir));
    // The listen stream may be cancelled (its task ids changed); the call's
    // request never is.
    let lines = log_lines(&dir);
    let calls: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("call-id "))
        .collect();
    assert!(!calls.is_empty(), "{lines:?}");
    assert!(
        !lines
            .iter()
            .filter_map(|l| l.strip_prefix("cancelled "))
            .any(|id| calls.contains(&id)),
        "a task is never cancelled with notifications/cancelled: {lines:?}"
    );
    hub.close().await;
}

#[tokio::test]
async fn a_dropped_call_cancels_its_task() {
    let (dir, entry) = logged("");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let opts = CallOptions::default();
    let call = hub.call_tool("mcp_tasks_never_ends", None, &opts);
    // Long enough for the task to be created and polled once.
    let _ = tokio::time::timeout(Duration::from_millis(600), call).await;
    let cancelled = wait_until(Duration::from_secs(5), || {
        log_lines(&dir).iter().any(|l| l.starts_with("cancel "))
    })
    .await;
    assert!(
        cancelled,
        "tasks/cancel after a drop: {:?}",
        log_lines(&dir)
    );
    hub.close().await;
}

#[tokio::test]
async fn a_failed_task_is_the_servers_error() {
    let (_dir, entry) = logged("");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let e = hub
        .call_tool("mcp_tasks_fails", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "SERVER_ERROR", "{e}");
    assert!(e.to_string().contains("the task failed on purpose"), "{e}");
    hub.close().await;
}

#[tokio::test]
async fn the_handle_api_works_on_this_revision_and_says_what_it_lacks() {
    let (_dir, entry) = logged("");
    let hub = Hub::connect(config(std::slice::from_ref(&entry)))
        .await
        .unwrap();
    let handle = hub
        .call_tool_as_task(
            "mcp_tasks_slow_sum",
            Some(&json!({"a": 1, "b": 2, "ms": 200})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(handle.server, "tasks");
    let task = hub.task("tasks", &handle.task_id).await.unwrap();
    assert_eq!(task.task_id, handle.task_id);
    let result = hub
        .task_result("tasks", &handle.task_id, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text_of(&result.value()), "sum: 3");
    let e = hub.list_tasks("tasks").await.unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(
        e.to_string().contains("2026-07-28") && e.to_string().contains("tasks/list"),
        "{e}"
    );
    // A call the server answers at once cannot become a handle.
    let e = hub
        .call_tool_as_task(
            "mcp_tasks_quick",
            Some(&json!({"text": "x"})),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    // Cancel a running one, then see it cancelled.
    let endless = hub
        .call_tool_as_task("mcp_tasks_never_ends", None, &CallOptions::default())
        .await
        .unwrap();
    let after = hub.cancel_task("tasks", &endless.task_id).await.unwrap();
    assert_eq!(after.task_id, endless.task_id);
    hub.close().await;

    // The id outlives the hub: another connection resumes it.
    let handle = {
        let hub = Hub::connect(config(std::slice::from_ref(&entry)))
            .await
            .unwrap();
        let h = hub
            .call_tool_as_task(
                "mcp_tasks_slow_sum",
                Some(&json!({"a": 5, "b": 5, "ms": 100})),
                &CallOptions::default(),
            )
            .await
            .unwrap();
        // The same process must hold the task: this hub stays open.
        let again = hub
            .task_result("tasks", &h.task_id, &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(text_of(&again.value()), "sum: 10");
        hub.close().await;
        h
    };
    assert!(!handle.task_id.is_empty());
}

#[tokio::test]
async fn plain_calls_still_answer_at_once() {
    let (_dir, entry) = logged("");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let r = hub
        .call_tool(
            "mcp_tasks_quick",
            Some(&json!({"text": "hi"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r.value()), "quick: hi");
    hub.close().await;
}

#[tokio::test]
async fn hostile_tasks_fail_the_call_with_a_clear_error_in_bounded_time() {
    let (dir, entry) = logged("timeout_seconds = 20");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let handlers_none = CallOptions::default().with_max_total_timeout(Duration::from_secs(20));
    let e = hub
        .call_tool("mcp_tasks_huge_id", None, &handlers_none)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("taskId"), "{e}");
    let started = std::time::Instant::now();
    let e = hub
        .call_tool("mcp_tasks_many_inputs", None, &handlers_none)
        .await
        .unwrap_err();
    assert!(
        ["PROTOCOL_ERROR", "LIMIT_EXCEEDED"].contains(&e.code()),
        "{}: {e}",
        e.code()
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    // The task given up on is cancelled, not left running.
    let cancelled = wait_until(Duration::from_secs(5), || {
        log_lines(&dir).iter().any(|l| l.starts_with("cancel "))
    })
    .await;
    assert!(cancelled, "tasks/cancel sent: {:?}", log_lines(&dir));
    // The server is still usable afterwards.
    let r = hub
        .call_tool(
            "mcp_tasks_quick",
            Some(&json!({"text": "ok"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r.value()), "quick: ok");
    hub.close().await;
}

async fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}

/// Over Streamable HTTP every `tasks/*` request names its task in
/// `Mcp-Name` (rmcp refuses one without: HTTP 400, -32020).
#[tokio::test]
async fn over_http_tasks_requests_carry_the_task_id_in_mcp_name() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rmcp.log");
    let server = RmcpTasksHttp::start(&[("RMCP_TASKS_LOG", &log)]);
    let entry = server.entry("tasks");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    assert_eq!(
        hub.servers()[0].protocol_version.as_deref(),
        Some("2026-07-28"),
        "{:?}",
        hub.servers()[0]
    );
    let r = hub
        .call_tool(
            "mcp_tasks_slow_sum",
            Some(&json!({"a": 20, "b": 22, "ms": 200})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r.value()), "sum: 42");
    let handle = hub
        .call_tool_as_task("mcp_tasks_never_ends", None, &CallOptions::default())
        .await
        .unwrap();
    hub.cancel_task("tasks", &handle.task_id).await.unwrap();
    hub.close().await;
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("header mcp-name {}", handle.task_id)),
        "{text}"
    );
    assert!(!text.contains("header mcp-name <missing>"), "{text}");
}

/// SEP-2663's status notifications: the client asks for the task it
/// follows on its `subscriptions/listen` stream (`taskIds`), and a server
/// that pushes the task (`notifications/tasks`, result inline) ends the
/// call without a poll, though it asked for polls 30 s apart
/// (`tests/servers/task_push_server.py`, written from the SEP: the
/// official SDKs do not route these yet).
#[tokio::test]
async fn a_task_the_server_pushes_ends_the_call_without_a_poll() {
    let entry = stdio_entry(
        "push",
        &python(),
        &[&server_script("task_push_server.py")],
        "protocol_version = \"2026-07-28\"",
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        hub.call_tool(
            "mcp_push_slow",
            Some(&json!({"ms": 300})),
            &CallOptions::default(),
        ),
    )
    .await
    .expect("the pushed task ends the call")
    .unwrap();
    assert_eq!(text_of(&r.value()), "done after 300 ms");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}: the call polled",
        started.elapsed()
    );
    let state = hub
        .call_tool("mcp_push_state", None, &CallOptions::default())
        .await
        .unwrap();
    let state: Value = serde_json::from_str(&text_of(&state.value())).unwrap();
    assert_eq!(state["gets"], 0, "{state}");
    assert!(
        state["asked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|ids| ids.as_array().is_some_and(|a| a.len() == 1)),
        "{state}"
    );
    hub.close().await;
}

/// A task id outlives the host's connection: over Streamable HTTP the
/// server (rmcp) outlives the hub, and a new hub resumes the task by id
/// (`task`, `task_result`) after the first one closed.
#[tokio::test]
async fn a_new_hub_resumes_a_task_by_id_after_the_first_closed() {
    let server = RmcpTasksHttp::start(&[]);
    let task_id = {
        let hub = Hub::connect(config(&[server.entry("tasks")]))
            .await
            .unwrap();
        let handle = hub
            .call_tool_as_task(
                "mcp_tasks_slow_sum",
                Some(&json!({"a": 30, "b": 12, "ms": 500})),
                &CallOptions::default(),
            )
            .await
            .unwrap();
        hub.close().await;
        handle.task_id
    };
    let hub = Hub::connect(config(&[server.entry("tasks")]))
        .await
        .unwrap();
    let seen = hub.task("tasks", &task_id).await.unwrap();
    assert_eq!(seen.task_id, task_id);
    let result = hub
        .task_result("tasks", &task_id, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text_of(&result.value()), "sum: 42");
    hub.close().await;
}
