//! `mcpmux task`: the task-handle API from the shell, against the rmcp
//! tasks server (the official Rust SDK, 2026-07-28 tasks extension) over
//! Streamable HTTP, so that a task outlives the `mcpmux` process that
//! started it: `start` prints a handle, and later processes `get` it, wait
//! for its `result` and `cancel` another; `list`, which that revision
//! lacks, is a clear error naming it.

mod common;

use common::*;
use mcpmux_test_support::RmcpTasksHttp;

fn sandbox(server: &RmcpTasksHttp) -> Sandbox {
    Sandbox::with_config(&format!(
        "{}protocol_version = \"2026-07-28\"\n",
        server.entry("tasks")
    ))
}

#[test]
fn a_task_started_by_one_process_is_followed_and_resumed_by_others() {
    let server = RmcpTasksHttp::start(&[]);
    let sb = sandbox(&server);
    let started = sb
        .mcpmux(&[
            "--json",
            "task",
            "start",
            "mcp_tasks_slow_sum",
            r#"{"a": 30, "b": 12, "ms": 600}"#,
        ])
        .run();
    started.ok();
    let handle = started.json();
    assert_eq!(handle["server"], "tasks", "{started}");
    let id = handle["task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"));
    assert!(!id.is_empty());

    let seen = sb.mcpmux(&["--json", "task", "get", "tasks", id]).run();
    seen.ok();
    let seen = seen.json();
    assert_eq!(seen["task_id"], id, "{seen}");
    assert!(
        ["working", "completed"].contains(&seen["status"].as_str().unwrap_or("")),
        "{seen}"
    );

    let result = sb.mcpmux(&["task", "result", "tasks", id]).run();
    result.ok();
    assert_eq!(result.stdout.trim(), "sum: 42", "{result}");
    let done = sb.mcpmux(&["task", "get", "tasks", id]).run();
    done.ok();
    assert_eq!(
        done.stdout.trim(),
        format!("tasks {id} completed"),
        "{done}"
    );

    // Without --json: the handle and how to resume it.
    let human = sb
        .mcpmux(&[
            "task",
            "start",
            "mcp_tasks_slow_sum",
            r#"{"a": 1, "b": 2, "ms": 50}"#,
        ])
        .run();
    human.ok();
    assert!(human.stdout.starts_with("task "), "{human}");
    assert!(
        human
            .stdout
            .contains("resume with: mcpmux task result tasks "),
        "{human}"
    );
}

#[test]
fn a_task_is_cancelled_by_handle_and_what_the_revision_lacks_is_an_error() {
    let server = RmcpTasksHttp::start(&[]);
    let sb = sandbox(&server);
    let started = sb
        .mcpmux(&["--json", "task", "start", "mcp_tasks_never_ends"])
        .run();
    started.ok();
    let id = started.json()["task_id"].as_str().unwrap().to_owned();
    let cancelled = sb.mcpmux(&["--json", "task", "cancel", "tasks", &id]).run();
    cancelled.ok();
    assert_eq!(cancelled.json()["task_id"], id.as_str(), "{cancelled}");
    let after = sb.mcpmux(&["--json", "task", "get", "tasks", &id]).run();
    after.ok();
    assert_eq!(after.json()["status"], "cancelled", "{after}");

    let listed = sb.mcpmux(&["task", "list", "tasks"]).run();
    listed.expect_exit(2);
    let e = listed.error();
    assert_eq!(e["code"], "INVALID_INPUT", "{listed}");
    let message = e["error"].as_str().unwrap();
    assert!(
        message.contains("2026-07-28") && message.contains("tasks/list"),
        "{listed}"
    );

    // A tool that answers at once is not a task: said, exit 2.
    let quick = sb
        .mcpmux(&["task", "start", "mcp_tasks_quick", r#"{"text": "x"}"#])
        .run();
    quick.expect_exit(2);
    assert_eq!(quick.error()["code"], "PROTOCOL_ERROR", "{quick}");
    // An unknown server is named.
    let unknown = sb.mcpmux(&["task", "get", "nosuch", "t1"]).run();
    unknown.expect_exit(2);
    assert!(
        unknown.error()["error"]
            .as_str()
            .unwrap()
            .contains("nosuch"),
        "{unknown}"
    );
}
