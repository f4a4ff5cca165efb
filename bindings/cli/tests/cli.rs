//! `mcpmux` against the demo server: servers, tools (and the LLM formats),
//! call, resources, prompts, timeouts and the error contract (exit 2 with one
//! `{"error", "code"}` line on stderr).

mod common;

use std::collections::BTreeSet;

use common::*;
use serde_json::{json, Value};

const DEMO_TOOLS: [&str; 7] = [
    "mcp_demo_echo",
    "mcp_demo_add",
    "mcp_demo_slow",
    "mcp_demo_fail",
    "mcp_demo_crash",
    "mcp_demo_big",
    "mcp_demo_grow",
];

fn demo() -> Sandbox {
    Sandbox::with_config(&demo_entry("demo", ""))
}

fn keys(v: &Value, out: &Output) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("expected an object, got {v}\n{out}"))
        .keys()
        .cloned()
        .collect()
}

fn names(list: &Value, out: &Output) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("expected an array\n{out}"))
        .iter()
        .map(|t| {
            t["name"]
                .as_str()
                .unwrap_or_else(|| panic!("entry without a string name: {t}\n{out}"))
                .to_owned()
        })
        .collect()
}

// ---------------------------------------------------------------- servers

#[test]
fn servers_json_shows_connected_failed_and_disabled() {
    let sb = Sandbox::with_config(&format!(
        "{}{}{}",
        demo_entry("demo", ""),
        demo_entry("off", "enabled = false"),
        // Failure reporting: it stays failed instead of restarting.
        python_entry("dies", "exit_during_init.py", "restart = \"never\""),
    ));
    let out = sb.mcpmux(&["--json", "servers"]).run();
    out.ok();
    let list = out.json();
    assert_eq!(names(&list, &out), ["demo", "off", "dies"], "{out}");
    let required: BTreeSet<String> = [
        "name",
        "type",
        "state",
        "protocol_version",
        "server_info",
        "capabilities",
        "tool_count",
        "error",
    ]
    .map(String::from)
    .into();
    for s in list.as_array().unwrap() {
        let k = keys(s, &out);
        assert!(k.is_superset(&required), "missing keys in {s}\n{out}");
        let unexpected: Vec<_> = k
            .difference(&required)
            .filter(|k| *k != "error_code")
            .collect();
        assert!(
            unexpected.is_empty(),
            "unexpected keys {unexpected:?}\n{out}"
        );
        assert_eq!(s["type"], "stdio", "{out}");
    }

    let demo = &list[0];
    assert_eq!(demo["state"], "connected", "{out}");
    assert!(
        demo["protocol_version"]
            .as_str()
            .is_some_and(|v| v.starts_with("20")),
        "{out}"
    );
    assert_eq!(demo["server_info"]["name"], "mcpmux-demo-server", "{out}");
    assert!(
        demo["capabilities"]["tools"].is_object(),
        "declared capabilities: {out}"
    );
    assert_eq!(demo["tool_count"], 7, "{out}");
    assert_eq!(demo["error"], Value::Null, "{out}");

    let off = &list[1];
    assert_eq!(off["state"], "disabled", "{out}");
    assert_eq!(off["tool_count"], 0, "{out}");
    assert_eq!(off["error"], Value::Null, "{out}");
    assert_eq!(off["protocol_version"], Value::Null, "{out}");

    let dies = &list[2];
    assert_eq!(dies["state"], "failed", "{out}");
    assert_eq!(dies["error_code"], "CONNECT_FAILED", "{out}");
    let error = dies["error"].as_str().unwrap_or_default();
    assert_mentions(
        error,
        &[
            "dies",
            "exit status: 17",
            "database at /nonexistent is unavailable",
        ],
        &out,
    );
}

#[test]
fn servers_human_lists_names_and_states() {
    let sb = Sandbox::with_config(&format!(
        "{}{}{}",
        demo_entry("demo", ""),
        demo_entry("off", "enabled = false"),
        stdio_server(
            "ghost",
            std::path::Path::new("/nonexistent/ghost-server"),
            &[],
            ""
        ),
    ));
    let out = sb.mcpmux(&["servers"]).run();
    out.ok();
    let line = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}\n{out}"))
            .to_owned()
    };
    assert!(line("demo").contains("connected"), "{out}");
    assert!(line("off").contains("disabled"), "{out}");
    assert!(line("ghost").contains("failed"), "{out}");
    out.stdout_has(&["NAME", "STATE", "/nonexistent/ghost-server"]);
}

// ------------------------------------------------------------------ tools

#[test]
fn tools_json_has_the_documented_shape() {
    let out = demo().mcpmux(&["--json", "tools"]).run();
    out.ok();
    let list = out.json();
    assert_eq!(names(&list, &out), DEMO_TOOLS, "{out}");
    let expected: BTreeSet<String> = [
        "name",
        "server",
        "tool",
        "title",
        "description",
        "input_schema",
        "output_schema",
        "annotations",
    ]
    .map(String::from)
    .into();
    for t in list.as_array().unwrap() {
        assert_eq!(keys(t, &out), expected, "{out}");
        assert_eq!(t["server"], "demo", "{out}");
        let name = t["name"].as_str().unwrap();
        assert_eq!(
            format!("mcp_demo_{}", t["tool"].as_str().unwrap_or("?")),
            name,
            "{out}"
        );
        assert_eq!(t["input_schema"]["type"], "object", "{out}");
    }
    let echo = &list[0];
    assert_eq!(echo["title"], "Echo", "{out}");
    assert_eq!(
        echo["description"], "Returns the given text unchanged.",
        "{out}"
    );
    assert_eq!(echo["input_schema"]["required"], json!(["text"]), "{out}");
    assert_eq!(echo["output_schema"], Value::Null, "{out}");
    assert_eq!(echo["annotations"]["readOnlyHint"], true, "{out}");
    let add = &list[1];
    assert_eq!(
        add["output_schema"]["properties"]["sum"]["type"], "number",
        "{out}"
    );
}

#[test]
fn tools_human_lists_names_with_descriptions() {
    let out = demo().mcpmux(&["tools"]).run();
    out.ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), DEMO_TOOLS.len(), "{out}");
    for (line, name) in lines.iter().zip(DEMO_TOOLS) {
        assert!(line.starts_with(name), "{name} expected\n{out}");
    }
    out.stdout_has(&["Returns the given text unchanged."]);
}

fn tools_format(format: &str) -> (Value, Output) {
    let out = demo().mcpmux(&["tools", "--format", format]).run();
    out.ok();
    let v = out.json();
    assert_eq!(
        v.as_array().map(Vec::len),
        Some(DEMO_TOOLS.len()),
        "one entry per tool\n{out}"
    );
    (v, out)
}

#[test]
fn tools_format_anthropic() {
    let (v, out) = tools_format("anthropic");
    assert_eq!(names(&v, &out), DEMO_TOOLS, "{out}");
    for t in v.as_array().unwrap() {
        assert_eq!(t["input_schema"]["type"], "object", "{out}");
        assert!(t.get("inputSchema").is_none(), "{out}");
        assert!(t.get("type").is_none(), "{out}");
    }
    assert_eq!(
        v[0]["input_schema"]["properties"]["text"]["type"], "string",
        "{out}"
    );
    assert_eq!(
        v[0]["description"], "Returns the given text unchanged.",
        "{out}"
    );
}

#[test]
fn tools_format_openai() {
    let (v, out) = tools_format("openai");
    for (t, name) in v.as_array().unwrap().iter().zip(DEMO_TOOLS) {
        assert_eq!(t["type"], "function", "{out}");
        assert_eq!(t["function"]["name"], name, "{out}");
        assert_eq!(t["function"]["parameters"]["type"], "object", "{out}");
        assert!(t.get("name").is_none(), "name belongs in function\n{out}");
    }
    assert_eq!(
        v[1]["function"]["parameters"]["required"],
        json!(["a", "b"]),
        "{out}"
    );
}

#[test]
fn tools_format_openai_responses() {
    let (v, out) = tools_format("openai-responses");
    assert_eq!(names(&v, &out), DEMO_TOOLS, "{out}");
    for t in v.as_array().unwrap() {
        assert_eq!(t["type"], "function", "{out}");
        assert_eq!(t["parameters"]["type"], "object", "{out}");
        assert!(t.get("function").is_none(), "{out}");
    }
}

#[test]
fn tools_format_mcp() {
    let (v, out) = tools_format("mcp");
    assert_eq!(names(&v, &out), DEMO_TOOLS, "{out}");
    for t in v.as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{out}");
        assert!(t.get("input_schema").is_none(), "{out}");
    }
    assert_eq!(v[0]["title"], "Echo", "{out}");
    assert_eq!(v[1]["outputSchema"]["required"], json!(["sum"]), "{out}");
    assert_eq!(v[4]["annotations"]["destructiveHint"], true, "{out}");
}

#[test]
fn tools_unknown_format_is_invalid_input() {
    let out = demo().mcpmux(&["tools", "--format", "gemini"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["gemini", "anthropic", "openai-responses"], &out);
}

// ------------------------------------------------------------------- call

#[test]
fn call_echo_json_prints_the_result_as_sent() {
    let out = demo()
        .mcpmux(&["--json", "call", "mcp_demo_echo", r#"{"text":"hi there"}"#])
        .run();
    out.ok();
    // The demo server writes exactly this; mcpmux must not re-serialize it.
    assert_eq!(
        out.stdout.trim_end(),
        r#"{"content":[{"type":"text","text":"hi there"}]}"#,
        "{out}"
    );
}

#[test]
fn call_echo_human_prints_the_text() {
    let out = demo()
        .mcpmux(&["call", "mcp_demo_echo", r#"{"text":"hello, world"}"#])
        .run();
    out.ok();
    assert_eq!(out.stdout, "hello, world\n", "{out}");
}

#[test]
fn call_add_returns_structured_content() {
    let out = demo()
        .mcpmux(&["--json", "call", "mcp_demo_add", r#"{"a":2,"b":3}"#])
        .run();
    out.ok();
    let v = out.json();
    assert_eq!(v["structuredContent"], json!({"sum": 5}), "{out}");
    assert_eq!(v["content"][0]["text"], "5", "{out}");
    assert!(v.get("isError").is_none(), "{out}");
}

#[test]
fn call_tool_error_exits_1_and_prints_the_result() {
    let sb = demo();
    let out = sb
        .mcpmux(&[
            "--json",
            "call",
            "mcp_demo_fail",
            r#"{"message":"nope, not today"}"#,
        ])
        .run();
    out.expect_exit(1);
    assert!(
        out.stderr.is_empty(),
        "a tool error is not a failure\n{out}"
    );
    let v = out.json();
    assert_eq!(v["isError"], true, "{out}");
    assert_eq!(v["content"][0]["text"], "nope, not today", "{out}");

    let human = sb.mcpmux(&["call", "mcp_demo_fail"]).run();
    human.expect_exit(1);
    assert!(human.stdout.starts_with("error:"), "{human}");
    human.stdout_has(&["this tool always fails"]);
}

#[test]
fn call_crash_is_transport_closed_quickly() {
    let out = demo().mcpmux(&["--json", "call", "mcp_demo_crash"]).run();
    let msg = out.fails_with("TRANSPORT_CLOSED");
    assert_mentions(
        &msg,
        &["demo", "exit status: 3", "crashing on purpose"],
        &out,
    );
    // Reported at once: TRANSPORT_CLOSED with the exit status, not the
    // TIMEOUT that waiting for an answer would give.
}

#[test]
fn call_unknown_tool() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("demo", ""),
        disabled_entry("off")
    ));
    let out = sb.mcpmux(&["call", "mcp_demo_nope"]).run();
    let msg = out.fails_with("UNKNOWN_TOOL");
    assert_mentions(&msg, &["mcp_demo_nope"], &out);

    // A server's own name, or a typo: the hub name meant.
    let out = sb.mcpmux(&["--json", "call", "echo"]).run();
    let msg = out.fails_with("UNKNOWN_TOOL");
    assert_mentions(&msg, &["did you mean 'mcp_demo_echo'"], &out);
    let out = sb.mcpmux(&["call", "mcp_demo_ecko", "{}"]).run();
    let msg = out.fails_with("UNKNOWN_TOOL");
    assert_mentions(&msg, &["did you mean 'mcp_demo_echo'"], &out);

    let out = sb.mcpmux(&["call", "mcp_off_echo", "{}"]).run();
    let msg = out.fails_with("UNKNOWN_TOOL");
    assert_mentions(&msg, &["mcp_off_echo", "disabled"], &out);
}

#[test]
fn call_bad_args_json_is_invalid_input() {
    let sb = demo();
    for bad in [r#"{"text": "#, "not json", "[1, 2]", r#""text""#, "42"] {
        let out = sb.mcpmux(&["call", "mcp_demo_echo", bad]).run();
        let msg = out.fails_with("INVALID_INPUT");
        assert_mentions(&msg, &["ARGS_JSON"], &out);
    }
}

#[test]
fn call_args_from_stdin() {
    let sb = demo();
    let out = sb
        .mcpmux(&["--json", "call", "mcp_demo_echo", "-"])
        .stdin("{\"text\": \"from stdin\"}\n")
        .run();
    out.ok();
    assert_eq!(out.json()["content"][0]["text"], "from stdin", "{out}");

    let out = sb
        .mcpmux(&["call", "mcp_demo_echo", "-"])
        .stdin("{broken")
        .run();
    out.fails_with("INVALID_INPUT");
}

#[test]
fn call_without_args_sends_an_empty_object() {
    // `add` without a and b answers a tool error: the call reached the tool.
    let out = demo().mcpmux(&["--json", "call", "mcp_demo_add"]).run();
    out.expect_exit(1);
    assert_eq!(out.json()["isError"], true, "{out}");
    out.stdout_has(&["`a` and `b` are required"]);
}

#[test]
fn timeout_flag_times_out_a_slow_call() {
    let out = demo()
        .mcpmux(&[
            "--timeout",
            "1",
            "call",
            "mcp_demo_slow",
            r#"{"seconds": 20, "steps": 0}"#,
        ])
        .run();
    // The server would answer after 20 s; the default timeout (60 s) is
    // past the run's hang guard: only the flag's 1 s gives TIMEOUT.
    let msg = out.fails_with("TIMEOUT");
    assert_mentions(&msg, &["demo", "tools/call"], &out);
}

#[test]
fn timeout_flag_must_be_positive() {
    let sb = demo();
    for bad in ["0", "-1", "inf", "NaN"] {
        let flag = format!("--timeout={bad}");
        let out = sb.mcpmux(&[&flag, "servers"]).run();
        let msg = out.fails_with("INVALID_INPUT");
        assert_mentions(&msg, &["timeout"], &out);
    }
    let out = sb.mcpmux(&["--timeout", "soon", "servers"]).run();
    out.fails_with("INVALID_INPUT");
}

#[test]
fn slow_call_within_the_timeout_succeeds() {
    let out = demo()
        .mcpmux(&[
            "--timeout",
            "5",
            "call",
            "mcp_demo_slow",
            r#"{"seconds": 0.2}"#,
        ])
        .run();
    out.ok();
    out.stdout_has(&["done after 0.2 s"]);
}

// ------------------------------------------------- resources and prompts

#[test]
fn resources_json_and_human() {
    let sb = demo();
    let out = sb.mcpmux(&["--json", "resources"]).run();
    out.ok();
    let v = out.json();
    assert_eq!(v["resources"].as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(v["resources"][0]["uri"], "demo://readme", "{out}");
    assert_eq!(v["resources"][0]["server"], "demo", "{out}");
    assert_eq!(
        v["resourceTemplates"][0]["uriTemplate"], "demo://item/{id}",
        "{out}"
    );
    assert_eq!(v["resourceTemplates"][0]["server"], "demo", "{out}");

    let human = sb.mcpmux(&["resources"]).run();
    human.ok();
    human.stdout_has(&["demo://readme", "readme", "demo://item/{id}", "template"]);
}

#[test]
fn resources_of_an_unknown_server() {
    let out = demo().mcpmux(&["resources", "--server", "nope"]).run();
    let msg = out.fails_with("UNKNOWN_SERVER");
    assert_mentions(&msg, &["nope"], &out);
}

#[test]
fn read_json_and_human() {
    let sb = demo();
    let out = sb.mcpmux(&["--json", "read", "demo://readme"]).run();
    out.ok();
    let v = out.json();
    assert_eq!(v["contents"][0]["uri"], "demo://readme", "{out}");
    assert_eq!(v["contents"][0]["mimeType"], "text/plain", "{out}");
    assert!(
        v["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("mcpmux demo server")),
        "{out}"
    );

    let human = sb.mcpmux(&["read", "demo://item/42"]).run();
    human.ok();
    assert_eq!(human.stdout, "item 42\n", "{human}");
}

#[test]
fn read_unknown_uri_is_a_server_error() {
    let out = demo().mcpmux(&["read", "demo://missing"]).run();
    let msg = out.fails_with("SERVER_ERROR");
    assert_mentions(&msg, &["demo://missing"], &out);
    assert_eq!(out.error()["rpc_code"], -32002, "{out}");
}

#[test]
fn prompts_json_and_human() {
    let sb = demo();
    let out = sb.mcpmux(&["--json", "prompts"]).run();
    out.ok();
    let v = out.json();
    assert_eq!(names(&v, &out), ["greet"], "{out}");
    assert_eq!(v[0]["server"], "demo", "{out}");
    assert_eq!(v[0]["arguments"][0]["name"], "name", "{out}");

    let human = sb.mcpmux(&["prompts"]).run();
    human.ok();
    human.stdout_has(&["greet(name)", "(demo)"]);
}

#[test]
fn prompt_json_and_human() {
    let sb = demo();
    let out = sb
        .mcpmux(&["--json", "prompt", "greet", r#"{"name":"Ada"}"#])
        .run();
    out.ok();
    let v = out.json();
    assert_eq!(v["messages"][0]["role"], "user", "{out}");
    assert_eq!(
        v["messages"][0]["content"],
        json!({"type": "text", "text": "Please greet Ada warmly."}),
        "{out}"
    );

    // One naming everywhere: the hub name the gateway lists works too,
    // with or without --server.
    for args in [
        &["--json", "prompt", "mcp_demo_greet"][..],
        &["--json", "prompt", "mcp_demo_greet", "--server", "demo"],
    ] {
        let mut run = sb.mcpmux(args);
        let by_hub_name = run.arg(r#"{"name":"Ada"}"#).run();
        by_hub_name.ok();
        assert_eq!(by_hub_name.json(), v, "{by_hub_name}");
    }

    let human = sb
        .mcpmux(&["prompt", "greet", "-"])
        .stdin(r#"{"name":"Grace"}"#)
        .run();
    human.ok();
    assert_eq!(
        human.stdout, "user: Please greet Grace warmly.\n",
        "{human}"
    );
}

#[test]
fn prompt_errors() {
    let sb = demo();
    let out = sb.mcpmux(&["prompt", "greet"]).run();
    let msg = out.fails_with("SERVER_ERROR");
    assert_mentions(&msg, &["name"], &out);

    let out = sb.mcpmux(&["prompt", "farewell", "{}"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["farewell"], &out);
    let out = sb.mcpmux(&["prompt", "mcp_demo_gret", "{}"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["did you mean 'mcp_demo_greet'"], &out);

    let out = sb.mcpmux(&["prompt", "greet", "[]"]).run();
    out.fails_with("INVALID_INPUT");
}

// ------------------------------------------- a failed server among others

#[test]
fn missing_command_fails_alone() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        stdio_server(
            "ghost",
            std::path::Path::new("/nonexistent/ghost-mcp"),
            &["--x"],
            ""
        ),
        demo_entry("demo", ""),
    ));
    let out = sb.mcpmux(&["--json", "servers"]).run();
    out.ok();
    let v = out.json();
    assert_eq!(v[0]["name"], "ghost", "{out}");
    assert_eq!(v[0]["state"], "failed", "{out}");
    assert_eq!(v[0]["error_code"], "CONNECT_FAILED", "{out}");
    assert_mentions(
        v[0]["error"].as_str().unwrap_or_default(),
        &["ghost", "/nonexistent/ghost-mcp"],
        &out,
    );
    assert_eq!(v[1]["state"], "connected", "{out}");

    // stdout stays the plain array; stderr says which server is missing.
    let tools = sb.mcpmux(&["--json", "tools"]).run();
    tools.expect_exit(0);
    assert_eq!(names(&tools.json(), &tools), DEMO_TOOLS, "{tools}");
    assert_mentions(&tools.stderr, &["ghost", "CONNECT_FAILED"], &tools);

    let call = sb
        .mcpmux(&[
            "--json",
            "call",
            "mcp_demo_echo",
            r#"{"text":"still here"}"#,
        ])
        .run();
    call.ok();
    assert_eq!(call.json()["content"][0]["text"], "still here", "{call}");

    // The failed server's own error, not UNKNOWN_TOOL.
    let ghost = sb.mcpmux(&["call", "mcp_ghost_anything"]).run();
    let msg = ghost.fails_with("CONNECT_FAILED");
    assert_mentions(&msg, &["ghost", "/nonexistent/ghost-mcp"], &ghost);
}

// ------------------------------------------------------- the command line

#[test]
fn help_and_version_exit_0() {
    let sb = Sandbox::new();
    let out = sb.mcpmux_bare(&["--help"]).run();
    out.ok();
    out.stdout_has(&["Usage", "servers", "tools", "call", "--config", "--json"]);

    let out = sb.mcpmux_bare(&["call", "--help"]).run();
    out.ok();
    out.stdout_has(&["ARGS"]);

    let out = sb.mcpmux_bare(&["--version"]).run();
    out.ok();
    out.stdout_has(&["mcpmux"]);
}

#[test]
fn unknown_subcommand_exits_2_with_json() {
    let sb = Sandbox::new();
    let out = sb.mcpmux_bare(&["frobnicate"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["frobnicate"], &out);

    let out = sb.mcpmux_bare(&["--no-such-flag", "servers"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["--no-such-flag"], &out);
}

#[test]
fn missing_arguments_are_named() {
    let sb = Sandbox::new();
    let out = sb.mcpmux_bare(&[]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["command"], &out);
    assert!(msg.len() < 200, "a short message, not the help text\n{out}");

    let out = sb.mcpmux_bare(&["call"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["<TOOL>"], &out);

    let out = sb.mcpmux_bare(&["read"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["<URI>"], &out);
}

// ------------------------------------------------------ limits and naming

#[test]
fn call_big_results_and_the_message_limit() {
    let sb = Sandbox::with_config(&demo_entry("demo", "max_message_bytes = 100000"));
    let out = sb
        .mcpmux(&["--json", "call", "mcp_demo_big", r#"{"bytes": 90000}"#])
        .run();
    out.ok();
    let text = out.json()["content"][0]["text"]
        .as_str()
        .map(str::len)
        .unwrap_or_default();
    assert_eq!(text, 90000, "the whole text block\n{}", out.stderr);

    let out = sb
        .mcpmux(&["call", "mcp_demo_big", r#"{"bytes": 200000}"#])
        .run();
    let msg = out.fails_with("PROTOCOL_ERROR");
    assert_mentions(&msg, &["demo", "max_message_bytes"], &out);
}

#[test]
fn colliding_server_names_get_distinct_tool_names() {
    // "a.b" and "a_b" both sanitize to the prefix mcp_a_b_.
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("a.b", ""),
        demo_entry("a_b", "")
    ));
    let out = sb.mcpmux(&["--json", "tools"]).run();
    out.ok();
    let list = out.json();
    let all = names(&list, &out);
    assert_eq!(all.len(), 14, "{out}");
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), 14, "hub names must be unique\n{out}");
    for server in ["a.b", "a_b"] {
        let echo = list
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["server"] == server && t["tool"] == "echo")
            .unwrap_or_else(|| panic!("no echo of {server}\n{out}"));
        let name = echo["name"].as_str().unwrap();
        assert!(name.starts_with("mcp_a_b_"), "{out}");
        let call = sb.mcpmux(&["call", name, r#"{"text":"routed"}"#]).run();
        call.ok();
        assert_eq!(call.stdout, "routed\n", "{call}");
    }
}

#[test]
fn prompt_offered_by_two_servers_needs_a_server() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("one", ""),
        demo_entry("two", "")
    ));
    let out = sb.mcpmux(&["prompt", "greet", r#"{"name":"Ada"}"#]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["greet", "one", "two"], &out);

    let out = sb
        .mcpmux(&["prompt", "greet", r#"{"name":"Ada"}"#, "--server", "two"])
        .run();
    out.ok();
    assert_eq!(out.stdout, "user: Please greet Ada warmly.\n", "{out}");
}

#[test]
fn timeout_flag_also_bounds_the_handshake() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        python_entry("stuck", "hang_in_init.py", "restart = \"never\""),
        demo_entry("demo", "")
    ));
    let out = sb.mcpmux(&["--json", "--timeout", "1", "servers"]).run();
    out.ok();
    let v = out.json();
    assert_eq!(v[0]["state"], "failed", "{out}");
    assert_eq!(v[0]["error_code"], "CONNECT_FAILED", "{out}");
    assert_mentions(
        v[0]["error"].as_str().unwrap_or_default(),
        &["stuck", "initialize"],
        &out,
    );
    assert_eq!(v[1]["state"], "connected", "{out}");
    // (The default connect timeout, 60 s, is past the run's hang guard:
    // the flag's 1 s is what failed the stuck server.)
}

#[test]
fn read_without_server_goes_by_the_listings_and_templates() {
    let js = everything_server();
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        stdio_server(
            "everything",
            std::path::Path::new("node"),
            &[js.to_str().unwrap(), "stdio"],
            ""
        ),
        demo_entry("demo", ""),
    ));
    // Matched by the demo's template `demo://item/{id}`, not listed.
    let out = sb.mcpmux(&["read", "demo://item/7"]).run();
    out.ok();
    assert_eq!(out.stdout, "item 7\n", "{out}");
    // Listed by the demo.
    let out = sb.mcpmux(&["read", "demo://readme"]).run();
    out.ok();
    // Claimed by nobody: said so, and no server's own error.
    let out = sb.mcpmux(&["--json", "read", "nope://x/1"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["nope://x/1", "everything", "demo"], &out);
    assert!(out.error().get("rpc_code").is_none(), "{out}");
}
