//! Config-source parity, CLI side: every `path` case of
//! tests/fixtures/config_sources.json through `--config` and
//! `$MCPMUX_CONFIG` reaches the servers (or the error code) that Python,
//! Node and the C ABI reach; and the runtime's worker-thread variable is
//! read by core's rule (a bad value is INVALID_INPUT naming it).

mod common;

use common::*;
use serde_json::Value;

fn names(out: &Output) -> Vec<String> {
    out.ok();
    out.json()
        .as_array()
        .unwrap_or_else(|| panic!("expected an array\n{out}"))
        .iter()
        .map(|s| s["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

#[test]
fn every_path_case_reaches_what_every_front_end_reaches() {
    let fixtures = workspace_root().join("tests/fixtures");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("config_sources.json")).unwrap(),
    )
    .unwrap();
    let dir = fixtures.join("config_sources");
    let sb = Sandbox::new();
    let mut checked = 0;
    for case in doc["cases"].as_array().unwrap() {
        if case["kind"] != "path" {
            continue; // the CLI takes a file only
        }
        let name = case["name"].as_str().unwrap();
        let path = dir.join(case["input"].as_str().unwrap());
        let by_flag = sb
            .mcpmux_bare(&["--json", "servers", "--config"])
            .arg(&path)
            .run();
        let by_env = sb
            .mcpmux_bare(&["--json", "servers"])
            .env("MCPMUX_CONFIG", &path)
            .run();
        for out in [by_flag, by_env] {
            match case["code"].as_str() {
                None => {
                    let want: Vec<&str> = case["servers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap())
                        .collect();
                    assert_eq!(names(&out), want, "{name}\n{out}");
                }
                Some(code) => {
                    let message = out.fails_with(code);
                    let part = case["message"].as_str().unwrap_or("");
                    assert!(message.contains(part), "{name}: '{message}' lacks '{part}'");
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} path cases");
}

#[test]
fn a_bad_worker_threads_variable_is_invalid_input_naming_it() {
    let sb = Sandbox::new();
    sb.write("mcpmux.toml", &disabled_entry("quiet"));
    let message = sb
        .mcpmux(&["--json", "servers"])
        .env("MCPMUX_WORKER_THREADS", "0")
        .run()
        .fails_with("INVALID_INPUT");
    assert!(message.contains("MCPMUX_WORKER_THREADS"), "{message}");
    let out = sb
        .mcpmux(&["--json", "servers"])
        .env("MCPMUX_WORKER_THREADS", "3")
        .run();
    assert_eq!(names(&out), ["quiet"]);
}

#[test]
fn the_stay_awake_variable_is_core_s_rule() {
    let sb = Sandbox::new();
    sb.write("mcpmux.toml", &demo_entry("demo", ""));
    let message = sb
        .mcpmux(&["--json", "servers"])
        .env("MCPMUX_STAY_AWAKE_US", "soon")
        .run()
        .fails_with("INVALID_INPUT");
    assert!(message.contains("MCPMUX_STAY_AWAKE_US"), "{message}");
    // Off, and long: the command's calls work either way.
    for value in ["0", "10000"] {
        let out = sb
            .mcpmux(&["--json", "call", "mcp_demo_echo", r#"{"text":"awake"}"#])
            .env("MCPMUX_STAY_AWAKE_US", value)
            .run();
        out.ok();
        assert_eq!(
            out.stdout.trim_end(),
            r#"{"content":[{"type":"text","text":"awake"}]}"#,
            "{value}: {out}"
        );
    }
}
