//! `mcpmux serve` driven by a real MCP client, the official Python SDK
//! (`mcp.client.stdio`): a whole review_begin / review_wait / review_reply /
//! review_end cycle with the fake `codex` reviewer, and an error result.

mod common;

use common::Sandbox;
use serde_json::Value;

#[test]
fn python_sdk_client_runs_a_whole_review() {
    let codex = common::workspace_root().join("tests/fixtures/fake-codex/codex");
    let sb = Sandbox::with_config(&format!(
        "{}\n[session]\nreviewer = \"command\"\ncommand = {}\n",
        common::demo_entry("demo", ""),
        common::qp(&codex)
    ));
    let script = common::workspace_root().join("bindings/cli/tests/serve_client.py");
    let out = std::process::Command::new(common::python())
        .arg(&script)
        .arg(common::mcpmux_bin())
        .arg(sb.path().join("mcpmux.toml"))
        .arg(sb.path())
        .current_dir(sb.path())
        .env("XDG_STATE_HOME", common::state_home())
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    assert_eq!(s["server"], "mcpmux");
    assert_eq!(
        s["tools"],
        serde_json::json!(["review_begin", "review_end", "review_reply", "review_wait"])
    );
    assert_eq!(s["begin"]["status"], "running");
    assert_eq!(s["wait1"]["status"], "completed");
    assert_eq!(s["wait1"]["next"], "respond");
    assert_eq!(s["verdict1"], "REQUEST_CHANGES");
    assert_eq!(s["reply"]["round"], 2);
    assert_eq!(s["wait2"]["next_reason"], "approved");
    assert_eq!(s["wait2"]["thread_id"], s["wait1"]["thread_id"]);
    assert_eq!(s["end"]["finalized"], true);
    assert_eq!(s["end"]["verdict"], "APPROVE");
    assert_eq!(s["bad"]["isError"], true);
    assert_eq!(s["bad"]["code"], "UNKNOWN_SKILL");
}

#[test]
fn round_outlives_serve_and_unknown_methods_are_refused() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let codex = common::workspace_root().join("tests/fixtures/fake-codex/codex");
    let sb = Sandbox::with_config(&format!(
        "[session]\nreviewer = \"command\"\ncommand = {}\n",
        common::qp(&codex)
    ));
    let mut child = Command::new(common::mcpmux_bin())
        .arg("--config")
        .arg(sb.path().join("mcpmux.toml"))
        .arg("serve")
        .current_dir(sb.path())
        .env("XDG_STATE_HOME", common::state_home())
        .env("FAKE_CODEX_DELAY", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |msg: Value| -> Value {
        writeln!(stdin, "{msg}").unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let init = ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let nope = ask(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}));
    assert_eq!(nope["error"]["code"], -32601);
    let begun = ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "review_begin", "arguments": {"skill": "review-think", "input": "q", "working_dir": sb.path()}}}),
    );
    assert_eq!(begun["result"]["isError"], false, "{begun}");
    let text = begun["result"]["content"][0]["text"].as_str().unwrap();
    let dir = serde_json::from_str::<Value>(text).unwrap()["session_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // serve has exited; the detached round completes on its own.
    let state = std::path::Path::new(&dir).join("round-001/state.json");
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        if s["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < end, "{s}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
