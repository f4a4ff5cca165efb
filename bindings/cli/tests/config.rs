//! How `mcpmux` finds its config (`--config`, `MCPMUX_CONFIG`,
//! `./mcpmux.toml`, `./.mcp.json`) and how it reports a bad one.

mod common;

use common::*;
use serde_json::json;

/// The server names `servers --json` reports (disabled servers start nothing).
fn server_names(out: &Output) -> Vec<String> {
    out.ok();
    out.json()
        .as_array()
        .unwrap_or_else(|| panic!("expected an array\n{out}"))
        .iter()
        .map(|s| s["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// A sandbox with all four candidates, each naming a different server.
fn four_configs() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("flag.toml", &disabled_entry("from_flag"));
    sb.write("env.toml", &disabled_entry("from_env"));
    sb.write("mcpmux.toml", &disabled_entry("from_toml"));
    sb.write(
        ".mcp.json",
        r#"{"mcpServers": {"from_json": {"command": "/nonexistent/x", "disabled": true}}}"#,
    );
    // Discovered files are used only when trusted (tests/trust.rs).
    sb.trust("mcpmux.toml");
    sb.trust(".mcp.json");
    sb
}

#[test]
fn config_flag_wins() {
    let sb = four_configs();
    let out = sb
        .mcpmux_bare(&["--json", "--config", "flag.toml", "servers"])
        .env("MCPMUX_CONFIG", sb.path().join("env.toml"))
        .run();
    assert_eq!(server_names(&out), ["from_flag"], "{out}");
}

#[test]
fn env_var_wins_over_the_current_directory() {
    let sb = four_configs();
    let out = sb
        .mcpmux_bare(&["--json", "servers"])
        .env("MCPMUX_CONFIG", sb.path().join("env.toml"))
        .run();
    assert_eq!(server_names(&out), ["from_env"], "{out}");
}

#[test]
fn empty_env_var_is_ignored() {
    let sb = four_configs();
    let out = sb
        .mcpmux_bare(&["--json", "servers"])
        .env("MCPMUX_CONFIG", "")
        .run();
    assert_eq!(server_names(&out), ["from_toml"], "{out}");
}

#[test]
fn mcpmux_toml_wins_over_mcp_json() {
    let sb = four_configs();
    let out = sb.mcpmux_bare(&["--json", "servers"]).run();
    assert_eq!(server_names(&out), ["from_toml"], "{out}");
}

#[test]
fn mcp_json_is_the_last_resort_and_works() {
    let sb = Sandbox::new();
    let config = json!({
        "mcpServers": {
            "demo": { "command": demo_server().to_str().unwrap() },
        }
    });
    sb.write(".mcp.json", &config.to_string());
    sb.trust(".mcp.json");
    let out = sb.mcpmux_bare(&["--json", "servers"]).run();
    assert_eq!(server_names(&out), ["demo"], "{out}");
    assert_eq!(out.json()[0]["state"], "connected", "{out}");

    let call = sb
        .mcpmux_bare(&["call", "mcp_demo_echo", r#"{"text":"via .mcp.json"}"#])
        .run();
    call.ok();
    assert_eq!(call.stdout, "via .mcp.json\n", "{call}");
}

#[test]
fn no_config_found() {
    let sb = Sandbox::new();
    let out = sb.mcpmux_bare(&["servers"]).run();
    let msg = out.fails_with("CONFIG_INVALID");
    assert_mentions(
        &msg,
        &[
            "no config found",
            "--config",
            "MCPMUX_CONFIG",
            "mcpmux.toml",
            ".mcp.json",
        ],
        &out,
    );
}

#[test]
fn config_file_that_does_not_exist() {
    let sb = Sandbox::new();
    let out = sb
        .mcpmux_bare(&["servers", "--config", "absent.toml"])
        .run();
    let msg = out.fails_with("CONFIG_INVALID");
    assert_mentions(&msg, &["absent.toml"], &out);

    let out = sb
        .mcpmux_bare(&["servers"])
        .env("MCPMUX_CONFIG", sb.path().join("gone.json"))
        .run();
    let msg = out.fails_with("CONFIG_INVALID");
    assert_mentions(&msg, &["gone.json"], &out);
}

/// Writes `text` as `name`, runs `servers` with it, expects CONFIG_INVALID
/// and returns the message.
fn invalid(name: &str, text: &str) -> (String, Output) {
    let sb = Sandbox::new();
    sb.write(name, text);
    let out = sb.mcpmux_bare(&["--config", name, "servers"]).run();
    let msg = out.fails_with("CONFIG_INVALID");
    assert_mentions(&msg, &[name], &out);
    (msg, out)
}

#[test]
fn invalid_unknown_type() {
    let (msg, out) = invalid(
        "pigeon.toml",
        "[[mcp.servers]]\nname = \"a\"\ntype = \"carrier-pigeon\"\ncommand = \"x\"\n",
    );
    assert_mentions(&msg, &["server 'a'", "'type'", "carrier-pigeon"], &out);
}

#[test]
fn invalid_duplicate_name() {
    let (msg, out) = invalid(
        "dup.toml",
        &format!("{}{}", disabled_entry("twice"), disabled_entry("twice")),
    );
    assert_mentions(&msg, &["duplicate server name 'twice'"], &out);
}

#[test]
fn invalid_unset_variable() {
    let var = "MCPMUX_TEST_SURELY_UNSET_VARIABLE";
    let (msg, out) = invalid(
        "vars.toml",
        &format!("[[mcp.servers]]\nname = \"v\"\ncommand = \"${{{var}}}\"\n"),
    );
    assert_mentions(&msg, &["server 'v'", "'command'", var], &out);

    let (msg, out) = invalid(
        "vars.json",
        &json!({"mcpServers": {"w": {"command": "x", "env": {"TOKEN": format!("${{{var}}}")}}}})
            .to_string(),
    );
    assert_mentions(&msg, &["server 'w'", "env.TOKEN", var], &out);
}

#[test]
fn invalid_syntax_and_shape() {
    let (msg, out) = invalid("broken.toml", "[[mcp.servers]\nname = ");
    assert_mentions(&msg, &["invalid TOML"], &out);
    let (msg, out) = invalid("broken.json", "{\"mcpServers\": ");
    assert_mentions(&msg, &["invalid JSON"], &out);
    let (msg, out) = invalid("empty.toml", "# nothing here\n");
    assert_mentions(&msg, &["no servers"], &out);
    let (msg, out) = invalid("other.toml", "[other]\nx = 1\n");
    assert_mentions(&msg, &["unknown key 'other'"], &out);
    let (msg, out) = invalid(
        "nocmd.toml",
        "[[mcp.servers]]\nname = \"n\"\ntype = \"stdio\"\n",
    );
    assert_mentions(&msg, &["server 'n'", "'command'"], &out);
}

#[test]
fn invalid_duplicate_name_in_json() {
    let (msg, out) = invalid(
        "dup.json",
        r#"{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}"#,
    );
    assert_mentions(&msg, &["duplicate server name 'a'"], &out);
}

#[test]
fn variables_expand_from_the_environment() {
    let sb = Sandbox::new();
    let demo = demo_server();
    sb.write(
        "mcpmux.toml",
        &format!(
            "[[mcp.servers]]\nname = \"demo\"\ncommand = \"${{MCPMUX_TEST_DEMO_BIN}}\"\n\
             [[mcp.servers]]\nname = \"dflt\"\ncommand = \"${{MCPMUX_TEST_UNSET_FOR_DEFAULT:-{}}}\"\n",
            demo.display()
        ),
    );
    let out = sb
        .mcpmux(&["--json", "servers"])
        .env("MCPMUX_TEST_DEMO_BIN", &demo)
        .run();
    assert_eq!(server_names(&out), ["demo", "dflt"], "{out}");
    for s in out.json().as_array().unwrap() {
        assert_eq!(s["state"], "connected", "{out}");
    }
    let out = sb
        .mcpmux(&["call", "mcp_demo_echo", r#"{"text":"expanded"}"#])
        .env("MCPMUX_TEST_DEMO_BIN", &demo)
        .run();
    out.ok();
    assert_eq!(out.stdout, "expanded\n", "{out}");

    let unset = sb.mcpmux(&["servers"]).run();
    let msg = unset.fails_with("CONFIG_INVALID");
    assert_mentions(&msg, &["MCPMUX_TEST_DEMO_BIN", "mcpmux.toml"], &unset);
}

#[test]
fn errors_do_not_show_secret_values() {
    let secret = "s3cret-token-value-123";
    let sb = Sandbox::with_config(&format!(
        "{}[mcp.servers.env]\nTOKEN = \"${{MCPMUX_TEST_SECRET}}\"\n",
        stdio_server("ghost", std::path::Path::new("/nonexistent/ghost"), &[], "")
    ));
    let out = sb
        .mcpmux(&["--json", "servers"])
        .env("MCPMUX_TEST_SECRET", secret)
        .run();
    out.ok();
    assert_eq!(out.json()[0]["state"], "failed", "{out}");
    assert!(!out.stdout.contains(secret), "secret leaked\n{out}");
    let call = sb
        .mcpmux(&["call", "mcp_ghost_x"])
        .env("MCPMUX_TEST_SECRET", secret)
        .run();
    call.fails_with("CONNECT_FAILED");
    assert!(!call.stderr.contains(secret), "secret leaked\n{call}");
}

#[test]
fn config_timeout_applies_and_the_flag_overrides_it() {
    let sb = Sandbox::with_config(&demo_entry("demo", "timeout_seconds = 1"));
    // The server would answer after 20 s: TIMEOUT means a timeout fired
    // first, and the default one (60 s) is past the run's hang guard.
    let slow = r#"{"seconds": 20, "steps": 0}"#;
    let out = sb.mcpmux(&["call", "mcp_demo_slow", slow]).run();
    out.fails_with("TIMEOUT");

    let sb = Sandbox::with_config(&demo_entry("demo", "timeout_seconds = 30"));
    let out = sb
        .mcpmux(&["--timeout", "0.5", "call", "mcp_demo_slow", slow])
        .run();
    // Only the flag's 0.5 s fires before the 20 s answer (not the config's 30 s).
    out.fails_with("TIMEOUT");
}
