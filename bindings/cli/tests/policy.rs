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
        &demo_entry("demo", "allow_destructive = [\"rm_*\"]"),
    );
    let out = sb.mcpmux(&["policy"]).run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "CONFIG_INVALID");
    assert!(
        e["error"].as_str().unwrap().contains("allow_destructive"),
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
