//! MCP tasks against the real peer server-everything: its
//! `simulate-research-query` requires a task (`execution.taskSupport:
//! "required"`), so a plain `tools/call` is refused (-32601); `call_tool`
//! runs it as a task, answers the clarification it asks for (`ambiguous`)
//! through the host's elicitation handler, and the handle API polls, waits,
//! lists and cancels.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcpmux_core::events::EventSender;
use mcpmux_core::{
    CallOptions, ClientHandlers, Hub, HubEvent, HubOptions, RequestHandler, TaskStatus,
};
use serde_json::{json, Value};

/// Only catches hangs: the research takes about four seconds.
const HANG: Duration = Duration::from_secs(120);

const RESEARCH: &str = "simulate-research-query";

fn everything() -> String {
    stdio_entry("everything", "node", &[&everything_entry(), "stdio"], "")
}

/// The hub name of server-everything's research tool.
fn research_name(hub: &Hub) -> String {
    hub.list_tools()
        .into_iter()
        .find(|t| t.tool == RESEARCH)
        .expect("server-everything lists simulate-research-query")
        .name
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
        .to_owned()
}

/// An elicitation handler that picks `choice` and counts its calls.
fn choose(choice: &'static str, calls: Arc<AtomicUsize>) -> RequestHandler {
    Arc::new(move |req| {
        let calls = calls.clone();
        Box::pin(async move {
            calls.fetch_add(1, Ordering::SeqCst);
            assert_eq!(req.method, "elicitation/create");
            assert!(
                req.params["requestedSchema"]["properties"]["interpretation"].is_object(),
                "{}",
                req.params
            );
            Ok(json!({"action": "accept", "content": {"interpretation": choice}}))
        })
    })
}

async fn with_timeout<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {HANG:?}"))
}

/// The next `task_status` event for `task_id` with `status`.
async fn status_event(stream: &mut mcpmux_core::EventStream, task_id: &str, status: &str) {
    with_timeout(&format!("task_status {status}"), async {
        loop {
            match stream.recv().await {
                Some(HubEvent::TaskStatus {
                    task_id: id,
                    status: s,
                    server,
                    ..
                }) if id == task_id && s == status => {
                    assert_eq!(server, "everything");
                    return;
                }
                Some(_) => continue,
                None => panic!("the stream ended before task_status {status}"),
            }
        }
    })
    .await
}

/// The tool that requires a task is listed to the model and callable
/// through a plain `call_tool` (refused with -32601 before tasks worked).
#[tokio::test]
async fn required_task_tool_is_listed_and_callable() {
    let hub = Hub::connect(config(&[everything()])).await.unwrap();
    let name = research_name(&hub);
    for format in ["mcp", "anthropic", "openai"] {
        let listed = hub.tools_for(format).unwrap().to_string();
        assert!(listed.contains(&name), "{format}: {listed}");
    }
    let result = with_timeout(
        "call_tool",
        hub.call_tool(
            &name,
            Some(&json!({"topic": "rust"})),
            &CallOptions::default(),
        ),
    )
    .await
    .unwrap();
    let value = result.value();
    assert!(!result.is_error(), "{value}");
    let text = text_of(&value);
    assert!(text.contains("Research Report: rust"), "{text}");
    hub.close().await;
}

/// `ambiguous: true` makes the task ask for a clarification
/// (`input_required`); the host's elicitation handler answers it and the
/// report uses the answer.
#[tokio::test]
async fn input_required_is_answered_by_the_elicitation_handler() {
    let calls = Arc::new(AtomicUsize::new(0));
    let options = HubOptions::default().with_handlers(ClientHandlers {
        elicitation: Some(choose("historical", calls.clone())),
        ..ClientHandlers::default()
    });
    let hub = Hub::connect_with(config(&[everything()]), options)
        .await
        .unwrap();
    let name = research_name(&hub);
    let result = with_timeout(
        "call_tool",
        hub.call_tool(
            &name,
            Some(&json!({"topic": "python", "ambiguous": true})),
            &CallOptions::default(),
        ),
    )
    .await
    .unwrap();
    let text = text_of(&result.value());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{text}");
    assert!(text.contains("Clarification**: historical"), "{text}");
    hub.close().await;
}

/// The handle API: start, poll, list, wait for the result; start another
/// and cancel it; a cancelled task's result is CANCELLED. Every status
/// change reaches the host as a `task_status` event.
#[tokio::test]
async fn handle_api_and_task_status_events() {
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let options = HubOptions::default().with_events(events);
    let hub = Hub::connect_with(config(&[everything()]), options)
        .await
        .unwrap();
    let name = research_name(&hub);
    let opts = CallOptions::default();
    let handle = with_timeout(
        "call_tool_as_task",
        hub.call_tool_as_task(&name, Some(&json!({"topic": "tasks"})), &opts),
    )
    .await
    .unwrap();
    assert_eq!(handle.server, "everything");
    assert!(!handle.task_id.is_empty());
    status_event(&mut stream, &handle.task_id, "working").await;

    // The id is a plain string: a host that kept it finds the task again.
    let kept: String = handle.task_id.clone();
    let task = hub.task("everything", &kept).await.unwrap();
    assert_eq!(task.task_id, kept);
    assert!(
        matches!(task.status, TaskStatus::Working | TaskStatus::Completed),
        "{task:?}"
    );
    let listed = hub.list_tasks("everything").await.unwrap();
    assert!(listed.iter().any(|t| t.task_id == kept), "{listed:?}");

    let result = with_timeout("task_result", hub.task_result("everything", &kept, &opts))
        .await
        .unwrap();
    assert!(text_of(&result.value()).contains("Research Report: tasks"));
    status_event(&mut stream, &kept, "completed").await;
    let done = hub.task("everything", &kept).await.unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(serde_json::to_value(&done).unwrap()["status"], "completed");

    let other = hub
        .call_tool_as_task(&name, Some(&json!({"topic": "cancel me"})), &opts)
        .await
        .unwrap();
    let cancelled = hub.cancel_task("everything", &other.task_id).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    status_event(&mut stream, &other.task_id, "cancelled").await;
    let err = with_timeout(
        "task_result of a cancelled task",
        hub.task_result("everything", &other.task_id, &opts),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "CANCELLED", "{err}");
    assert!(err.to_string().contains(&other.task_id), "{err}");

    // Bad ids from the host are refused before anything is sent.
    let err = hub.task("everything", "").await.unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
    let err = hub.task("nope", &kept).await.unwrap_err();
    assert_eq!(err.code(), "UNKNOWN_SERVER", "{err}");
    // A tool that forbids tasks has no handle.
    let echo = hub
        .list_tools()
        .into_iter()
        .find(|t| t.tool == "echo")
        .unwrap();
    let err = hub
        .call_tool_as_task(&echo.name, Some(&json!({"message": "x"})), &opts)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
    hub.close().await;
}

/// A call whose total time runs out cancels its task with `tasks/cancel`
/// (the research needs four one-second stages; the call allows one).
#[tokio::test]
async fn a_call_that_times_out_cancels_its_task() {
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let options = HubOptions::default().with_events(events);
    let hub = Hub::connect_with(config(&[everything()]), options)
        .await
        .unwrap();
    let name = research_name(&hub);
    let opts = CallOptions::default()
        .with_timeout(Duration::from_secs(1))
        .with_max_total_timeout(Duration::from_secs(1));
    let err = with_timeout(
        "call_tool",
        hub.call_tool(&name, Some(&json!({"topic": "slow"})), &opts),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err}");
    let tasks = hub.list_tasks("everything").await.unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].status, TaskStatus::Cancelled, "{tasks:?}");
    status_event(&mut stream, &tasks[0].task_id, "cancelled").await;
    hub.close().await;
}

/// A call the host drops (cancels) while its task runs cancels the task.
#[tokio::test]
async fn a_dropped_call_cancels_its_task() {
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let options = HubOptions::default().with_events(events);
    let hub = Hub::connect_with(config(&[everything()]), options)
        .await
        .unwrap();
    let name = research_name(&hub);
    let call = {
        let hub = hub.clone();
        tokio::spawn(async move {
            hub.call_tool(
                &name,
                Some(&json!({"topic": "dropped"})),
                &CallOptions::default(),
            )
            .await
        })
    };
    // The task exists once its first status is told.
    let task_id = with_timeout("first task_status", async {
        loop {
            if let Some(HubEvent::TaskStatus { task_id, .. }) = stream.recv().await {
                return task_id;
            }
        }
    })
    .await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    status_event(&mut stream, &task_id, "cancelled").await;
    let task = hub.task("everything", &task_id).await.unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled);
    hub.close().await;
}

/// Over Streamable HTTP too, the clarification travels on the open
/// `tasks/result` request.
#[tokio::test]
async fn tasks_over_streamable_http() {
    let server = everything_net("streamableHttp");
    let calls = Arc::new(AtomicUsize::new(0));
    let options = HubOptions::default().with_handlers(ClientHandlers {
        elicitation: Some(choose("current", calls.clone())),
        ..ClientHandlers::default()
    });
    let hub = Hub::connect_with(
        config(&[net_entry("every", "http", &server.http("/mcp"), "")]),
        options,
    )
    .await
    .unwrap();
    let name = hub
        .list_tools()
        .into_iter()
        .find(|t| t.tool == RESEARCH)
        .expect("listed over http")
        .name;
    let result = with_timeout(
        "call_tool over http",
        hub.call_tool(
            &name,
            Some(&json!({"topic": "web", "ambiguous": true})),
            &CallOptions::default(),
        ),
    )
    .await
    .unwrap();
    let text = text_of(&result.value());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{text}");
    assert!(text.contains("Clarification**: current"), "{text}");
    hub.close().await;
}

/// A tool that requires a task on a server that does not accept task calls
/// cannot be called: model listings leave it out (the full listing keeps
/// it), and the note names no failed server.
#[tokio::test]
async fn uncallable_tools_are_left_out_of_model_listings() {
    // Without arguments the script runs in mode `no_caps`.
    let hub = Hub::connect(config(&[script_entry("tasky", "task_server.py", "")]))
        .await
        .unwrap();
    let all: Vec<String> = hub.list_tools().into_iter().map(|t| t.tool).collect();
    assert!(all.contains(&"needs_task".to_owned()), "{all:?}");
    for format in ["mcp", "anthropic", "openai", "openai-responses"] {
        let listed = hub.tools_for(format).unwrap().to_string();
        assert!(!listed.contains("needs_task"), "{format}: {listed}");
        assert!(listed.contains("plain"), "{format}: {listed}");
    }
    assert_eq!(hub.failed_servers_note(), None);
    hub.close().await;
}

/// A hostile server: a 0 ms poll interval is clamped and the endless
/// `working` ends at the call's total time (then the task is cancelled);
/// huge status messages are cut; an unknown status or an answer about
/// another task is PROTOCOL_ERROR.
#[tokio::test]
async fn hostile_task_servers_are_bounded() {
    let events = EventSender::default();
    let mut stream = events.subscribe();
    let entry = stdio_entry(
        "tasky",
        &python(),
        &[&server_script("task_server.py"), "hostile"],
        "",
    );
    let hub = Hub::connect_with(config(&[entry]), HubOptions::default().with_events(events))
        .await
        .unwrap();
    let opts = CallOptions::default()
        .with_timeout(Duration::from_secs(2))
        .with_max_total_timeout(Duration::from_secs(2));
    let err = with_timeout(
        "endless task",
        hub.call_tool("mcp_tasky_needs_task", None, &opts),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err}");
    // At least 100 ms between polls: far fewer than an unclamped loop.
    let polls: u32 = err
        .to_string()
        .rsplit_once("after ")
        .and_then(|(_, n)| n.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(polls <= 2_000 / 100 + 1, "{polls} polls: {err}");
    let message = with_timeout("working event", async {
        loop {
            if let Some(HubEvent::TaskStatus {
                message: Some(m), ..
            }) = stream.recv().await
            {
                return m;
            }
        }
    })
    .await;
    assert_eq!(message.len(), mcpmux_core::tasks::MAX_STATUS_MESSAGE_CHARS);
    let listed = hub.list_tasks("tasky").await.unwrap();
    assert_eq!(listed[0].status, TaskStatus::Cancelled, "{listed:?}");

    for tool in ["mcp_tasky_bad_status", "mcp_tasky_other_id"] {
        let err = with_timeout(tool, hub.call_tool(tool, None, &opts))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "PROTOCOL_ERROR", "{tool}: {err}");
    }
    hub.close().await;
}
