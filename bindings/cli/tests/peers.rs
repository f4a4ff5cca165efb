//! `mcpmux` against real MCP servers: the TypeScript reference server
//! (server-everything) and a FastMCP server (official Python SDK).

mod common;

use common::*;
use serde_json::json;

fn everything() -> Sandbox {
    let js = everything_server();
    Sandbox::with_config(&stdio_server(
        "everything",
        std::path::Path::new("node"),
        &[js.to_str().unwrap(), "stdio"],
        "",
    ))
}

fn fastmcp() -> Sandbox {
    let script = fastmcp_server();
    Sandbox::with_config(&stdio_server(
        "py",
        &python(),
        &[script.to_str().unwrap()],
        "",
    ))
}

#[test]
fn everything_lists_its_tools() {
    let out = everything().mcpmux(&["tools"]).run();
    out.ok();
    let names: Vec<&str> = out
        .stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    for name in ["mcp_everything_echo", "mcp_everything_get-sum"] {
        assert!(names.contains(&name), "{name} missing\n{out}");
    }
    assert!(
        names.iter().all(|n| n.starts_with("mcp_everything_")),
        "every tool carries the server prefix\n{out}"
    );
}

#[test]
fn everything_echo() {
    let out = everything()
        .mcpmux(&[
            "--json",
            "call",
            "mcp_everything_echo",
            r#"{"message":"hi"}"#,
        ])
        .run();
    out.ok();
    assert_eq!(
        out.json()["content"][0],
        json!({"type": "text", "text": "Echo: hi"}),
        "{out}"
    );
}

/// `simulate-research-query` requires an MCP task: `call` runs it as one
/// (`--task` is accepted and changes nothing for it), and `tools --format`
/// lists it as callable.
#[test]
fn everything_task_tool_through_call() {
    let sandbox = everything();
    let out = sandbox
        .mcpmux(&[
            "--json",
            "call",
            "--task",
            "mcp_everything_simulate-research-query",
            r#"{"topic":"cli"}"#,
        ])
        .run();
    out.ok();
    let text = out.json()["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(text.contains("Research Report: cli"), "{out}");
    let out = sandbox.mcpmux(&["tools", "--format", "openai"]).run();
    out.ok();
    assert!(
        out.stdout
            .contains("mcp_everything_simulate-research-query"),
        "{out}"
    );
}

#[test]
fn fastmcp_add_returns_structured_content() {
    let out = fastmcp()
        .mcpmux(&["--json", "call", "mcp_py_add", r#"{"a":2,"b":3}"#])
        .run();
    out.ok();
    let v = out.json();
    assert_eq!(v["structuredContent"], json!({"result": 5}), "{out}");
    assert_eq!(v["content"][0]["text"], "5", "{out}");
}

#[test]
fn fastmcp_tool_error_exits_1() {
    let out = fastmcp().mcpmux(&["call", "mcp_py_boom"]).run();
    out.expect_exit(1);
    assert!(out.stdout.starts_with("error:"), "{out}");
    out.stdout_has(&["boom: this tool always fails"]);
}
