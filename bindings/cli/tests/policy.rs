//! `mcpmux policy`: the effective allow list per server, against the
//! Python SDK policy server (read-only, unmarked and destructive tools).

mod common;

use common::*;
use serde_json::Value;

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    let dir = sb.path().display().to_string();
    let env = format!("[mcp.servers.env]\nPOLICY_DIR = {}\n", q(&dir));
    sb.write(
        "mcpmux.toml",
        &format!(
            "{}{}",
            python_entry(
                "work",
                "policy_server.py",
                &format!("allow_tools = [\"notes\", \"le*\", \"wipe\", \"touch\", \"gone\"]\nconfirm_read_only = [\"touch\"]\n{env}")
            ),
            python_entry(
                "ops",
                "policy_server.py",
                &format!("allow_all = true\nscopes = [\"ops\"]\n{env}")
            ),
        ),
    );
    sb
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect()
}

#[test]
fn policy_json_lists_offered_refused_and_missing() {
    let sb = sandbox();
    let out = sb.mcpmux(&["--json", "policy", "--scope", "review"]).run();
    out.ok();
    let v = out.json();
    assert_eq!(v["scope"], "review");
    let work = &v["servers"][0];
    assert_eq!(
        strings(&work["offered"]),
        ["mcp_work_notes", "mcp_work_leak", "mcp_work_touch"],
        "{out}"
    );
    let wipe = work["refused"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "wipe")
        .unwrap_or_else(|| panic!("wipe not refused\n{out}"));
    assert_eq!(wipe["refusal"], "destructive");
    assert_eq!(strings(&work["missing"]), ["gone"]);
    let ops = &v["servers"][1];
    assert_eq!(ops["in_scope"], false);
    assert!(strings(&ops["offered"]).is_empty(), "{out}");

    let out = sb.mcpmux(&["--json", "policy", "--scope", "ops"]).run();
    out.ok();
    // allow_all still leaves out the unmarked and the destructive tool.
    assert_eq!(
        out.json()["servers"][1]["offered"]
            .as_array()
            .unwrap()
            .len(),
        5
    );

    let out = sb.mcpmux(&["policy"]).run();
    out.ok();
    assert!(out.stdout.contains("refused  mcp_work_wipe"), "{out}");
    assert!(out.stdout.contains("out of scope"), "{out}");
}

#[test]
fn policy_keys_are_checked_at_load_time() {
    let sb = Sandbox::new();
    sb.write(
        "mcpmux.toml",
        // Globs are fine there now; a bad one is not.
        &demo_entry("demo", "allow_destructive = [\"rm_[*\"]"),
    );
    let out = sb.mcpmux(&["policy"]).run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "CONFIG_INVALID");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("allow_destructive[0]"),
        "{out}"
    );
}

#[test]
fn policy_defaults_to_the_session_scope() {
    // Without --scope the report shows what a session would be offered,
    // and a session's scope is the config's [session] scope.
    let sb = Sandbox::new();
    sb.write(
        "mcpmux.toml",
        &format!(
            "{}\n[session]\nscope = \"ops\"\n",
            demo_entry(
                "demo",
                "allow_tools = [\"echo\"]\nconfirm_read_only = [\"echo\"]\nscopes = [\"ops\"]"
            )
        ),
    );
    let out = sb.mcpmux(&["--json", "policy"]).run();
    out.ok();
    let v = out.json();
    assert_eq!(v["scope"], "ops", "{out}");
    assert_eq!(v["servers"][0]["in_scope"], true, "{out}");
    assert_eq!(
        strings(&v["servers"][0]["offered"]),
        ["mcp_demo_echo"],
        "{out}"
    );
    // --scope still overrides it.
    let out = sb.mcpmux(&["--json", "policy", "--scope", "dev"]).run();
    out.ok();
    assert_eq!(out.json()["servers"][0]["in_scope"], false, "{out}");
}

/// A JSON `mcpServers` config (as `.mcp.json`) of the demo server, whose
/// seven tools are five marked read-only, `grow` (not marked read-only) and
/// `crash` (marked destructive); `keys` are more keys of its entry.
fn json_demo(sb: &Sandbox, keys: Value) -> std::path::PathBuf {
    let mut entry = serde_json::json!({"command": demo_server()});
    entry
        .as_object_mut()
        .unwrap()
        .extend(keys.as_object().unwrap().clone());
    sb.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"demo": entry}}).to_string(),
    )
}

/// `mcpmux --config CONFIG gateway ARGS` on stdio: the tool names its
/// `tools/list` answers with, and its stderr. Stdin stays open until the
/// answer came.
fn gateway_tools(sb: &Sandbox, config: &std::path::Path, args: &[&str]) -> (Vec<String>, String) {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(mcpmux_bin())
        .arg("--config")
        .arg(config)
        .arg("gateway")
        .args(args)
        .current_dir(sb.path())
        .env_remove("MCPMUX_CONFIG")
        .env("XDG_STATE_HOME", state_home())
        .env("XDG_CONFIG_HOME", sb.path().join(".xdg-config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for m in [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    ] {
        writeln!(stdin, "{m}").unwrap();
    }
    stdin.flush().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Ok(m) = serde_json::from_str::<Value>(&line) {
                if m["id"] == 2 {
                    let _ = tx.send(m);
                }
            }
        }
    });
    let list = rx.recv_timeout(std::time::Duration::from_secs(60));
    drop(stdin);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let list = list.unwrap_or_else(|_| panic!("no tools/list answer ({status}): {stderr}"));
    assert!(status.success(), "{status}: {stderr}");
    let names = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    (names, stderr)
}

const DEMO_TOOLS: [&str; 7] = ["echo", "add", "slow", "fail", "crash", "big", "grow"];

#[test]
fn expose_all_fronts_every_tool_of_a_plain_json_config() {
    let sb = Sandbox::new();
    let config = json_demo(&sb, serde_json::json!({}));
    // The policy stays the default: nothing, and a hint in JSON syntax
    // naming the entry and the exact keys.
    let (names, stderr) = gateway_tools(&sb, &config, &[]);
    assert!(names.is_empty(), "{names:?}");
    assert!(
        stderr.contains("server 'demo' offers none of its 7 tools")
            && stderr.contains(r#""allow_tools": ["#)
            && stderr.contains(r#""confirm_read_only": ["grow"] to mcpServers.demo"#)
            && stderr.contains(r#""allow_destructive": ["crash"]"#)
            && stderr.contains("--expose-all")
            && stderr.contains("no readOnlyHint: true"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("allow_tools = ["),
        "TOML in a JSON hint: {stderr}"
    );

    let (names, stderr) = gateway_tools(&sb, &config, &["--expose-all"]);
    let mut expected: Vec<String> = DEMO_TOOLS.iter().map(|t| format!("mcp_demo_{t}")).collect();
    let mut got = names.clone();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "{stderr}");
    assert!(
        stderr.contains("--expose-all: offering all 7 tools of 1 server")
            && stderr.contains("redaction"),
        "{stderr}"
    );
    assert!(!stderr.contains("offers none"), "{stderr}");
}

#[test]
fn globs_in_confirm_read_only_and_allow_destructive_offer_what_annotations_leave_out() {
    let sb = Sandbox::new();
    let config = json_demo(
        &sb,
        serde_json::json!({"allow_all": true, "confirm_read_only": ["*"]}),
    );
    let (names, stderr) = gateway_tools(&sb, &config, &[]);
    assert!(
        names.contains(&"mcp_demo_grow".to_owned()),
        "{names:?} {stderr}"
    );
    assert!(!names.contains(&"mcp_demo_crash".to_owned()), "{names:?}");
    assert_eq!(names.len(), 6, "{names:?}");

    let config = json_demo(
        &sb,
        serde_json::json!({"allow_tools": ["*"], "allow_destructive": ["cr?s[hx]"]}),
    );
    let (names, _) = gateway_tools(&sb, &config, &[]);
    assert!(names.contains(&"mcp_demo_crash".to_owned()), "{names:?}");
    // `grow` still needs confirm_read_only.
    assert!(!names.contains(&"mcp_demo_grow".to_owned()), "{names:?}");

    // A bad glob fails the load, naming the server and the key.
    let config = json_demo(&sb, serde_json::json!({"confirm_read_only": ["gr[ow"]}));
    let out = sb
        .mcpmux_bare(&["--config", config.to_str().unwrap(), "gateway"])
        .stdin("")
        .run();
    let message = out.fails_with("CONFIG_INVALID");
    assert!(
        message.contains("server 'demo'") && message.contains("'confirm_read_only[0]'"),
        "{message}"
    );
}

#[test]
fn a_server_without_read_only_tools_is_not_told_to_add_allow_all() {
    let sb = Sandbox::new();
    // allow_all is set, yet `grow` is not offered: the hint names the key
    // that would offer it, in TOML for a TOML config.
    sb.write(
        "mcpmux.toml",
        &demo_entry(
            "demo",
            "allow_all = true\ndeny_tools = [\"echo\", \"add\", \"slow\", \"fail\", \"big\"]",
        ),
    );
    let (names, stderr) = gateway_tools(&sb, &sb.path().join("mcpmux.toml"), &[]);
    assert!(names.is_empty(), "{names:?}");
    assert!(
        stderr.contains(
            r#"add confirm_read_only = ["*"] to its [[mcp.servers]] entry (name = "demo")"#
        ),
        "{stderr}"
    );
    let hint = stderr
        .lines()
        .find(|l| l.contains("server 'demo'"))
        .unwrap();
    assert!(!hint.contains("allow_all"), "{hint}");
}
