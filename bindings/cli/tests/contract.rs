//! The session contract from the CLI and `mcpmux serve`: every field core's
//! session verbs accept (`mcpmux_sessions::params`, read from core,
//! not copied) is a flag (or the positional argument) of `mcpmux review
//! <verb>` and a property of the `review_<verb>` tool's input schema (the
//! drift test); the new `review begin` limits reach the session and
//! `--max-turns` ends a round against a scripted LLM endpoint
//! (`tests/servers/llm_mock.py`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;
use mcpmux_sessions::params;
use serde_json::{json, Value};

/// What `review <verb> --help` offers for `field`: `--field-name`, or the
/// positional `<FIELD>`.
fn offered(help: &str, field: &str) -> bool {
    let flag = format!("--{} ", field.replace('_', "-"));
    let positional = format!("<{}>", field.to_uppercase());
    help.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with(&flag) || l.starts_with(&positional)
    })
}

#[test]
fn every_core_field_is_a_cli_flag() {
    let sb = Sandbox::new();
    let mut missing = Vec::new();
    for verb in params::VERBS {
        let out = sb.mcpmux(&["review", verb, "--help"]).run();
        out.ok();
        let help = out.stdout.clone();
        for field in params::fields(verb).unwrap() {
            if !offered(&help, &field) {
                missing.push(format!("review {verb}: {field}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "core accepts these, the CLI does not: {missing:?}"
    );
}

#[test]
fn every_core_field_is_in_the_serve_schemas() {
    let sb = Sandbox::new();
    let mut child = Command::new(common::mcpmux_bin())
        .arg("serve")
        .current_dir(sb.path())
        .env("XDG_STATE_HOME", common::state_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    drop(stdin);
    let answers: Vec<Value> = lines
        .by_ref()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    let _ = child.wait();
    let tools = answers
        .iter()
        .find(|a| a["id"] == 2)
        .expect("a tools/list answer")["result"]["tools"]
        .clone();
    for verb in params::VERBS {
        let tool = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == format!("review_{verb}"))
            .unwrap_or_else(|| panic!("no review_{verb} in {tools}"));
        let schema = &tool["inputSchema"];
        assert_eq!(schema["additionalProperties"], false, "{tool}");
        let props: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        let core = params::fields(verb).unwrap();
        assert_eq!(
            props,
            core.iter().collect::<Vec<_>>(),
            "review_{verb} differs from core"
        );
        for (name, p) in schema["properties"].as_object().unwrap() {
            assert!(
                p["description"].as_str().is_some_and(|d| !d.is_empty()),
                "review_{verb}.{name} has no description"
            );
        }
    }
    let begin = &tools[0]["inputSchema"];
    assert_eq!(begin["required"], json!(["skill", "input", "working_dir"]));
    assert_eq!(
        begin["properties"]["reviewer"]["enum"],
        json!(["openai", "anthropic", "command"])
    );
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_default()).unwrap_or(Value::Null)
}

#[test]
fn review_begin_limits_reach_the_session_and_max_turns_ends_the_round() {
    // A reviewer that never gives a review: only max_turns ends the round.
    let mock_dir = tempfile::tempdir().unwrap();
    let script = mock_dir.path().join("script.json");
    let call = json!({"tool_calls": [{"name": "nope", "arguments": {}}]});
    std::fs::write(&script, json!([call, call, call, call]).to_string()).unwrap();
    let log = mock_dir.path().join("requests.jsonl");
    let mut mock = Command::new(common::python())
        .arg(common::workspace_root().join("tests/servers/llm_mock.py"))
        .args(["--script".as_ref(), script.as_os_str()])
        .args(["--log".as_ref(), log.as_os_str()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llm_mock.py");
    let mut line = String::new();
    BufReader::new(mock.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = serde_json::from_str::<Value>(&line).unwrap()["port"]
        .as_u64()
        .unwrap();
    let sb = Sandbox::with_config(&format!(
        "[session]\nreviewer = \"openai\"\nmax_turns = 6\nbase_url = {}\napi_key_env = \"MCPMUX_CONTRACT_TEST_KEY\"\n",
        common::q(format!("http://127.0.0.1:{port}/v1"))
    ));
    let input = sb.write("plan.md", "USER_REQUEST: x\n\n## PLAN\nsteps");
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-plan", "--input"])
        .arg(&input)
        .args(&["--max-turns", "1", "--max-tool-calls", "0"])
        .args(&[
            "--call-timeout-seconds",
            "7.5",
            "--max-output-bytes",
            "4096",
        ])
        .args(&["--scope", "staging"])
        .env("MCPMUX_CONTRACT_TEST_KEY", "sk-contract")
        .run();
    out.ok();
    let dir = out.json()["session_dir"].as_str().unwrap().to_owned();
    let s = &read_json(&Path::new(&dir).join("session.json"))["settings"];
    assert_eq!(
        [
            &s["max_turns"],
            &s["max_tool_calls"],
            &s["call_timeout_seconds"],
            &s["max_output_bytes"],
            &s["scope"]
        ],
        [
            &json!(1),
            &json!(0),
            &json!(7.5),
            &json!(4096),
            &json!("staging")
        ],
        "{s}"
    );
    // A generous bound that only catches a hang.
    let end = Instant::now() + Duration::from_secs(60);
    let w = loop {
        let out = sb
            .mcpmux(&["review", "wait", &dir, "--max-wait-seconds", "3"])
            .env("MCPMUX_CONTRACT_TEST_KEY", "sk-contract")
            .run();
        out.ok();
        let w = out.json();
        if w["status"] != "running" || Instant::now() > end {
            break w;
        }
    };
    let _ = mock.kill();
    let _ = mock.wait();
    assert_eq!(
        (&w["status"], &w["failure_reason"]),
        (&json!("failed"), &json!("max_turns")),
        "{w:#}"
    );
    // One turn plus the last one that asks for the review (not the config's 6).
    let requests = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(requests.lines().count(), 2, "{requests}");
    // A wrong flag value is refused before anything runs.
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-plan", "--input"])
        .arg(&input)
        .args(&["--max-turns", "many"])
        .run();
    assert_ne!(out.code(), Some(0), "{out}");
}
