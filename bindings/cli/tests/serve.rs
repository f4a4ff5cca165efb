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
