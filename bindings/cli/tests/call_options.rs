//! The call-options contract from the CLI (`mcpmux_core::contract`, read
//! from core, not copied): every call option is a flag of `mcpmux call`
//! (or, for the trace context, an environment variable its help names),
//! every search field an argument of `mcpmux search`, every policy option a
//! `[session]` key the CLI's config takes (the drift tests); and the rows
//! of the drift table end to end: core's timeout cap on every duration
//! flag, `--progress`, a server error's `data` in the error JSON,
//! `search --limit 0` finding nothing, and the usage error listing every
//! command.

mod common;

use common::*;
use mcpmux_core::contract;
use serde_json::{json, Value};

/// What `help` offers for a contract name: `--flag`, `$VAR`, or `<ARG>`.
fn offered(help: &str, cli: &str, field: &str) -> bool {
    if let Some(var) = cli.strip_prefix('$') {
        return help.contains(&format!("${var}"));
    }
    let positional = format!("<{}>", field.to_uppercase());
    help.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with(&format!("{cli} ")) || l == cli || l.starts_with(&positional)
    })
}

#[test]
fn every_call_option_and_search_field_is_a_cli_flag() {
    let sb = Sandbox::new();
    let mut missing = Vec::new();
    for (part, command) in [("call_options", "call"), ("search", "search")] {
        let out = sb.mcpmux(&[command, "--help"]).run();
        out.ok();
        for n in contract::names(part).unwrap() {
            if !offered(&out.stdout, &n.cli, &n.field) {
                missing.push(format!("mcpmux {command}: {} ({})", n.cli, n.field));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "core has these, the CLI does not: {missing:?}"
    );
}

/// A TOML value of the JSON schema type of a policy option.
fn sample(prop: &Value) -> &'static str {
    match prop["type"].as_str().or_else(|| prop["type"][0].as_str()) {
        Some("string") => "\"staging\"",
        Some("integer") => "7",
        Some("number") => "2.5",
        Some("boolean") => "true",
        Some("array") => "[{ name = \"ticket\", pattern = \"INC-[0-9]+\" }]",
        other => panic!("no sample for {other:?} ({prop})"),
    }
}

#[test]
fn every_policy_option_is_a_session_key_of_the_config() {
    let schema = contract::policy_options_schema();
    let mut session = String::from("[session]\n");
    for n in contract::names("policy_options").unwrap() {
        session += &format!(
            "{} = {}\n",
            n.field,
            sample(&schema["properties"][&n.field])
        );
    }
    let sb = Sandbox::with_config(&format!("{}{session}", demo_entry("demo", "")));
    let out = sb.mcpmux(&["--json", "policy"]).run();
    out.ok();
    assert_eq!(out.json()["scope"], "staging", "{out}");
}

#[test]
fn every_duration_flag_has_cores_cap_and_names_itself() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    let over = (contract::MAX_TIMEOUT_SECONDS * 2.0).to_string();
    for flags in [
        vec!["--timeout", over.as_str(), "call", "mcp_demo_echo"],
        vec![
            "call",
            "mcp_demo_echo",
            "--max-total-timeout",
            over.as_str(),
        ],
        vec!["call", "mcp_demo_echo", "--task-ttl", over.as_str()],
        vec!["call", "mcp_demo_echo", "--task-ttl", "0"],
    ] {
        let out = sb.mcpmux(&flags).run();
        out.expect_exit(2);
        let e = out.error();
        assert_eq!(e["code"], "INVALID_INPUT", "{out}");
        let flag = flags.iter().find(|f| f.starts_with("--")).unwrap();
        let message = e["error"].as_str().unwrap();
        assert!(
            message.contains(&format!("'{flag}'")) && message.contains("at most 1000000000"),
            "{out}"
        );
    }
    let cap = contract::MAX_TIMEOUT_SECONDS.to_string();
    let out = sb
        .mcpmux(&["--json", "call", "mcp_demo_echo", r#"{"text":"capped"}"#])
        .args(&["--max-total-timeout", &cap, "--task-ttl", "30"])
        .run();
    out.ok();
    assert_eq!(out.json()["content"][0]["text"], "capped", "{out}");
}

#[test]
fn progress_prints_each_notification_on_stderr() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    let out = sb
        .mcpmux(&[
            "--json",
            "call",
            "mcp_demo_slow",
            r#"{"seconds":0.3,"steps":3}"#,
        ])
        .arg("--progress")
        .run();
    out.expect_exit(0);
    let lines: Vec<Value> = out
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{out}")))
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines.iter().all(|l| l["progress"].is_number()), "{out}");
    assert_eq!(lines[2]["total"], json!(3.0), "{out}");
    // Without the flag: nothing on stderr.
    let out = sb
        .mcpmux(&[
            "--json",
            "call",
            "mcp_demo_slow",
            r#"{"seconds":0.1,"steps":2}"#,
        ])
        .run();
    out.ok();
}

#[test]
fn a_server_errors_data_is_in_the_error_json() {
    // The value comes from the environment the server inherits: a value
    // written in the config is a secret, redacted everywhere.
    let sb = Sandbox::with_config(&python_entry("leaky", "leaky.py", ""));
    let out = sb
        .mcpmux(&["--json", "call", "mcp_leaky_fail"])
        .env("LEAKY_SECRET", "visible-token")
        .run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(
        (&e["code"], &e["rpc_code"], &e["data"]),
        (
            &json!("SERVER_ERROR"),
            &json!(-32001),
            &json!({"token": "visible-token"})
        ),
        "{out}"
    );
    // No data member when the error has none.
    let out = sb.mcpmux(&["--json", "call", "mcp_leaky_nope"]).run();
    out.expect_exit(2);
    assert!(out.error().get("data").is_none(), "{out}");
}

#[test]
fn search_limit_zero_finds_nothing_and_the_default_is_cores() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    let out = sb
        .mcpmux(&["--json", "search", "echo", "--limit", "0"])
        .run();
    out.ok();
    assert_eq!(out.json(), json!([]), "{out}");
    let out = sb
        .mcpmux(&["--json", "search", "echo", "--limit", "1"])
        .run();
    out.ok();
    let found = out.json();
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(found[0]["name"], "mcp_demo_echo", "{out}");
    let out = sb.mcpmux(&["--json", "search", "demo"]).run();
    out.ok();
    let n = out.json().as_array().map(Vec::len).unwrap_or(0);
    assert!(
        n > 1 && n <= contract::SEARCH_DEFAULT_LIMIT,
        "default limit: {n}\n{out}"
    );
    let help = sb.mcpmux(&["search", "--help"]).run();
    assert!(
        help.stdout
            .contains(&format!("[default: {}]", contract::SEARCH_DEFAULT_LIMIT)),
        "{help}"
    );
}

#[test]
fn the_usage_error_lists_every_command() {
    let sb = Sandbox::new();
    let help = sb.mcpmux_bare(&["--help"]).run();
    help.ok();
    // The commands clap lists under "Commands:" (but `help`).
    let commands: Vec<String> = help
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    for c in ["watch", "complete", "auth", "trust", "search", "call"] {
        assert!(commands.iter().any(|x| x == c), "{c} not in {commands:?}");
    }
    let out = sb.mcpmux_bare(&[]).run();
    out.expect_exit(2);
    let message = out.error()["error"].as_str().unwrap().to_owned();
    let missing: Vec<&String> = commands
        .iter()
        .filter(|c| !message.contains(&format!(" {c},")) && !message.contains(&format!(" {c})")))
        .collect();
    assert!(missing.is_empty(), "{missing:?} not in: {message}");
}

#[test]
fn validate_output_makes_a_schema_violation_an_error_a_warning_or_nothing() {
    // The demo server's `add` answers {"sum": "5"} against its outputSchema.
    let sb = Sandbox::with_config(&demo_entry(
        "demo",
        "env = { DEMO_ADD_OUTPUT = \"wrong_type\" }",
    ));
    let args = r#"{"a":2,"b":3}"#;
    let out = sb.mcpmux(&["--json", "call", "mcp_demo_add", args]).run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "OUTPUT_INVALID", "{out}");
    let message = e["error"].as_str().unwrap();
    assert!(
        message.contains("tool 'add'") && message.contains("'/sum'"),
        "{out}"
    );
    let out = sb
        .mcpmux(&["--json", "call", "mcp_demo_add", args])
        .args(&["--validate-output", "warn"])
        .run();
    out.expect_exit(0);
    assert_eq!(out.json()["structuredContent"]["sum"], "5", "{out}");
    assert!(
        out.stderr.contains("warning: OUTPUT_INVALID") && out.stderr.contains("'/sum'"),
        "{out}"
    );
    let out = sb
        .mcpmux(&["--json", "call", "mcp_demo_add", args])
        .args(&["--validate-output", "off"])
        .run();
    out.expect_exit(0);
    assert!(!out.stderr.contains("OUTPUT_INVALID"), "{out}");
    let out = sb
        .mcpmux(&["call", "mcp_demo_add", args, "--validate-output", "loud"])
        .run();
    out.expect_exit(2);
    assert_eq!(out.error()["code"], "INVALID_INPUT", "{out}");
    assert!(
        out.error()["error"]
            .as_str()
            .unwrap()
            .contains("'--validate-output'"),
        "{out}"
    );
}
