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

/// A server's `elicitation/create` with nobody at a terminal is declined
/// (the CLI declares elicitation, so server-everything offers its tool).
#[test]
fn everything_elicitation_without_a_terminal_is_declined() {
    let out = everything()
        .mcpmux(&["call", "mcp_everything_trigger-elicitation-request"])
        .run();
    out.ok();
    assert!(
        out.stdout.contains("User declined") && out.stdout.contains("\"decline\""),
        "{out}"
    );
}

/// On a terminal (a pty made by util-linux `script`), the person is asked
/// field by field; empty answers keep defaults.
#[test]
fn everything_elicitation_on_a_terminal_asks_field_by_field() {
    let sandbox = everything();
    let command = format!(
        "{} --config {} call mcp_everything_trigger-elicitation-request",
        qp(&mcpmux_bin()),
        qp(&sandbox.path().join("mcpmux.toml"))
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(sandbox.path())
        .env("XDG_STATE_HOME", state_home())
        .env("XDG_CONFIG_HOME", sandbox.path().join(".xdg-config"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux script runs the CLI on a pty");
    use std::io::Write;
    // The name (required), the terms (a boolean), then Enter for the rest.
    let answers = format!("Ada from a terminal\ny\n{}", "\n".repeat(16));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answers.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("server 'everything' asks: Please provide inputs"),
        "{shown}"
    );
    assert!(shown.contains("Your full, legal name"), "{shown}");
    assert!(shown.contains("- Name: Ada from a terminal"), "{shown}");
    assert!(shown.contains("- Agreed to terms: true"), "{shown}");
    assert!(
        shown.contains("- Favorite Integer: 42"),
        "a default kept\n{shown}"
    );
}

/// `--roots DIR` (repeatable) shares directories with every server;
/// without it no roots capability is declared.
#[test]
fn everything_sees_the_roots_given_with_roots() {
    let sandbox = everything();
    let dir = sandbox.path().join("project");
    let out = sandbox
        .mcpmux(&[
            "--roots",
            dir.to_str().unwrap(),
            "--roots",
            "file:///srv/other",
            "call",
            "mcp_everything_get-roots-list",
        ])
        .run();
    out.ok();
    let uri = format!("file://{}", dir.display());
    assert!(out.stdout.contains(&uri), "{out}");
    assert!(out.stdout.contains("file:///srv/other"), "{out}");
    assert!(out.stdout.contains("project"), "the root's name\n{out}");
    let without = sandbox
        .mcpmux(&["call", "mcp_everything_get-roots-list"])
        .run();
    without.fails_with("UNKNOWN_TOOL");
    let bad = sandbox
        .mcpmux(&["--roots", "https://example.com/", "tools"])
        .run();
    let message = bad.fails_with("INVALID_INPUT");
    assert!(message.contains("file://"), "{message}");
}

fn rmcp_tasks() -> Sandbox {
    Sandbox::with_config(&stdio_server(
        "tasks",
        std::path::Path::new(&mcpmux_test_support::rmcp_tasks_server()),
        &[],
        "protocol_version = \"2026-07-28\"",
    ))
}

/// A 2026-07-28 server (rmcp) that answers `tools/call` with a task:
/// `call` follows it and prints the tool's result, never the raw handle;
/// `--task` does the same; a task that fails or never ends fails the call.
#[test]
fn rmcp_tasks_extension_through_call() {
    let sandbox = rmcp_tasks();
    for extra in [&[][..], &["--task"][..]] {
        let mut args = vec!["--json", "call"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["mcp_tasks_slow_sum", r#"{"a":2,"b":40,"ms":200}"#]);
        let out = sandbox.mcpmux(&args).run();
        out.ok();
        assert_eq!(out.json()["content"][0]["text"], "sum: 42", "{out}");
        assert!(!out.stdout.contains("resultType\":\"task"), "{out}");
    }
    let servers = sandbox.mcpmux(&["--json", "servers"]).run();
    servers.ok();
    assert!(
        servers.json()[0]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object(),
        "{servers}"
    );
    let failed = sandbox.mcpmux(&["call", "mcp_tasks_fails"]).run();
    let message = failed.fails_with("SERVER_ERROR");
    assert!(message.contains("failed on purpose"), "{message}");
    let endless = sandbox
        .mcpmux(&[
            "--timeout",
            "1",
            "call",
            "--max-total-timeout",
            "1",
            "mcp_tasks_never_ends",
        ])
        .run();
    endless.fails_with("TIMEOUT");
    // Without a terminal the elicitation the task asks for is declined.
    let declined = sandbox
        .mcpmux(&["--json", "call", "mcp_tasks_ask_name"])
        .run();
    assert_eq!(
        declined.json()["content"][0]["text"],
        "declined",
        "{declined}"
    );
}
