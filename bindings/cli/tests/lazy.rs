//! `call`, `read --server` and `prompt --server` start only the server they
//! need, so a server that hangs at start costs nothing to a command aimed at
//! another one: its process is never started (its wrapper would write a
//! marker file first). Listing commands still start every server.

mod common;

use std::path::Path;

use common::*;
use serde_json::json;

/// A server entry that writes `marker` and then runs `hang_in_init.py` (a
/// server that never answers `initialize`).
fn hung_entry(name: &str, marker: &Path) -> String {
    let script = format!(
        "echo started > '{}'; exec '{}' '{}'",
        marker.display(),
        python().display(),
        fault_server("hang_in_init.py").display()
    );
    // Long enough that waiting for it would be a hang.
    stdio_server(
        name,
        Path::new("sh"),
        &["-c", &script],
        "timeout_seconds = 300",
    )
}

fn sandbox() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    let marker = sb.path().join("hung.started");
    sb.write(
        "mcpmux.toml",
        &format!("{}{}", hung_entry("hung", &marker), demo_entry("demo", "")),
    );
    (sb, marker)
}

#[test]
fn call_read_and_prompt_never_start_an_unrelated_hung_server() {
    let (sb, marker) = sandbox();
    let out = sb
        .mcpmux(&["--json", "call", "mcp_demo_add", r#"{"a": 2, "b": 3}"#])
        .run();
    out.ok();
    assert_eq!(out.json()["content"][0]["text"], "5", "{out}");

    let out = sb
        .mcpmux(&["--json", "read", "demo://readme", "--server", "demo"])
        .run();
    out.ok();
    assert_eq!(out.json()["contents"][0]["uri"], "demo://readme", "{out}");

    let out = sb
        .mcpmux(&[
            "--json",
            "prompt",
            "greet",
            r#"{"name":"Ada"}"#,
            "--server",
            "demo",
        ])
        .run();
    out.ok();
    assert_eq!(
        out.json()["messages"][0]["content"],
        json!({"type": "text", "text": "Please greet Ada warmly."}),
        "{out}"
    );
    assert!(
        !marker.exists(),
        "the hung server was started by a command aimed at demo"
    );
}

#[test]
fn listing_commands_still_start_every_server() {
    // The other side of the test above: the marker does appear when every
    // server is started, so its absence there means something.
    let (sb, marker) = sandbox();
    let out = sb.mcpmux(&["--json", "--timeout", "1", "servers"]).run();
    out.ok();
    let v = out.json();
    // `failed`, or `restarting` under `restart = "on-failure"`.
    assert!(
        v[0]["state"] == "failed" || v[0]["state"] == "restarting",
        "{out}"
    );
    assert_eq!(v[1]["state"], "connected", "{out}");
    assert!(marker.exists(), "servers did not start the hung server");
    // `lazy = true` in the config does not hide servers from a listing.
    let sb = Sandbox::with_config(&demo_entry("demo", "lazy = true"));
    let out = sb.mcpmux(&["--json", "tools"]).run();
    out.ok();
    assert!(
        out.json()
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "mcp_demo_add")),
        "{out}"
    );
}
