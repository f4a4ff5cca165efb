//! Bad command-line input is a clear error (exit 2 with a code), never a
//! panic (exit 101) or a silent misread: out-of-range `--timeout`, endless
//! `call TOOL -` arguments, unknown config keys, calls to a failed server's
//! tools, and tool lists that silently lack a failed server's tools.

mod common;

use common::*;

#[test]
fn timeout_out_of_range_is_invalid_input() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    for value in ["1e30", "1e19", "-1", "nan", "inf", "0", "1e10"] {
        let flag = format!("--timeout={value}");
        for command in [&["tools"][..], &["review", "end", "no-such-session"][..]] {
            let mut args = vec![flag.as_str()];
            args.extend_from_slice(command);
            let out = sb.mcpmux(&args).run();
            let msg = out.fails_with("INVALID_INPUT");
            assert_mentions(&msg, &["--timeout"], &out);
        }
    }
    // In range it works.
    let out = sb.mcpmux(&["--timeout", "2.5", "--json", "tools"]).run();
    out.ok();
}

#[test]
fn call_reads_at_most_max_message_bytes_from_stdin() {
    let sb = Sandbox::with_config(&demo_entry("demo", "max_message_bytes = 4096"));
    // Valid JSON, just too long: refused before any server starts.
    let big = format!(r#"{{"text":"{}"}}"#, "x".repeat(5000));
    let out = sb.mcpmux(&["call", "mcp_demo_echo", "-"]).stdin(&big).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["4096", "max_message_bytes"], &out);
    let out = sb
        .mcpmux(&["--json", "call", "mcp_demo_echo", "-"])
        .stdin(r#"{"text":"small"}"#)
        .run();
    out.ok();
    assert_eq!(out.json()["content"][0]["text"], "small", "{out}");
}

#[test]
fn unknown_config_key_is_config_invalid_with_a_suggestion() {
    let sb = Sandbox::with_config(&demo_entry("demo", "timeout_secs = 5"));
    let out = sb.mcpmux(&["servers"]).run();
    let msg = out.fails_with("CONFIG_INVALID");
    assert_mentions(
        &msg,
        &[
            "mcpmux.toml",
            "server 'demo'",
            "timeout_secs",
            "did you mean 'timeout_seconds'",
        ],
        &out,
    );
}

#[test]
fn failed_servers_are_named_by_tools_and_own_their_calls() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        stdio_server(
            "ghost",
            std::path::Path::new("/nonexistent/ghost-mcp"),
            &[],
            ""
        ),
        demo_entry("demo", ""),
    ));
    for args in [
        &["tools"][..],
        &["--json", "tools"][..],
        &["tools", "--format", "openai"][..],
    ] {
        let out = sb.mcpmux(args).run();
        out.expect_exit(0);
        assert_mentions(&out.stderr, &["ghost (CONNECT_FAILED)", "servers"], &out);
        assert!(out.stdout.contains("mcp_demo_echo"), "{out}");
        assert!(!out.stdout.contains("ghost"), "{out}");
    }
    // JSON stdout stays a plain array.
    let out = sb.mcpmux(&["--json", "tools"]).run();
    assert!(out.json().is_array(), "{out}");
    // The state stays available through `servers`.
    let out = sb.mcpmux(&["--json", "servers"]).run();
    out.ok();
    assert_eq!(out.json()[0]["error_code"], "CONNECT_FAILED", "{out}");
    // Calling a tool of the failed server reports its error, naming it.
    let out = sb.mcpmux(&["call", "mcp_ghost_anything", "{}"]).run();
    let msg = out.fails_with("CONNECT_FAILED");
    assert_mentions(&msg, &["mcp_ghost_anything", "server 'ghost'"], &out);
    // With no failed server, stderr stays empty.
    let ok = Sandbox::with_config(&demo_entry("demo", ""));
    ok.mcpmux(&["tools"]).run().ok();
}

#[test]
fn review_seconds_that_are_not_numbers_are_invalid_input() {
    let sb = Sandbox::new();
    let input = sb.write("in.md", "x");
    let out = sb
        .mcpmux_bare(&[
            "review",
            "wait",
            "no-such-session",
            "--max-wait-seconds",
            "nan",
        ])
        .run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["--max-wait-seconds"], &out);
    let out = sb
        .mcpmux_bare(&[
            "review",
            "begin",
            "--skill",
            "review-think",
            "--timeout-seconds",
            "inf",
            "--input",
        ])
        .arg(&input)
        .run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["--timeout-seconds"], &out);
}
