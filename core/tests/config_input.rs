//! Bad config input is a clear `CONFIG_INVALID` at load time naming the
//! file, the place and the key, never a silent misread: unknown keys (with
//! the nearest known one suggested), the keys other MCP clients write in
//! `mcpServers`, nested `${A:-${B}}` defaults, headers that cannot be sent,
//! wrong types in `[session]`, oversized files and out-of-range seconds.

use mcpmux_core::config::{self, Config, TransportConfig, MAX_CONFIG_BYTES};

fn vars(name: &str) -> Option<String> {
    match name {
        "B" => Some("from-b".into()),
        "TOKEN" => Some("s3cret".into()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    Config::parse_with_vars(text, &vars)
}

/// Loads `text` from a file named `name` and returns the error message,
/// checking the code is CONFIG_INVALID and the message names the file.
fn load_err(name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let e = Config::load(&path).expect_err(text);
    assert_eq!(e.code(), "CONFIG_INVALID", "{e}");
    let m = e.to_string();
    assert!(m.contains(name), "the file is not named: {m}");
    m
}

const STDIO: &str = "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n";

#[test]
fn unknown_toml_keys_name_the_key_and_suggest_the_nearest() {
    let m = load_err("mcpmux.toml", &format!("{STDIO}timeout_secs = 5\n"));
    assert!(
        m.contains("server 'a'")
            && m.contains("'timeout_secs'")
            && m.contains("did you mean 'timeout_seconds'?"),
        "{m}"
    );
    let m = load_err(
        "mcpmux.toml",
        "[[mcp.servers]]\nname = \"h\"\nurl = \"https://x/mcp\"\n[mcp.servers.headezs]\nA = \"b\"\n",
    );
    assert!(
        m.contains("'headezs'") && m.contains("did you mean 'headers'?"),
        "{m}"
    );
    let m = load_err(
        "mcpmux.toml",
        "[[mcp.sersers]]\nname = \"a\"\ncommand = \"x\"\n",
    );
    assert!(
        m.contains("[mcp]") && m.contains("'sersers'") && m.contains("did you mean 'servers'?"),
        "{m}"
    );
    let m = load_err("mcpmux.toml", "[mcp]\ntimeout_second = 3\n");
    assert!(m.contains("did you mean 'timeout_seconds'?"), "{m}");
    let m = load_err("mcpmux.toml", "[sesion]\nmodel = \"m\"\n");
    assert!(
        m.contains("'sesion'") && m.contains("did you mean 'session'?"),
        "{m}"
    );
    // mcpmux's own shape in JSON is checked the same way.
    let m = load_err(
        "servers.json",
        r#"{"mcp": {"servers": [{"name": "a", "command": "x", "timeout_secs": 5}]}}"#,
    );
    assert!(m.contains("did you mean 'timeout_seconds'?"), "{m}");
    // Other clients' keys are for mcpServers entries, not mcpmux's TOML.
    let m = load_err("mcpmux.toml", &format!("{STDIO}autoApprove = []\n"));
    assert!(m.contains("'autoApprove'"), "{m}");
}

#[test]
fn mcp_servers_accepts_what_other_clients_write_and_nothing_else() {
    let c = parse(
        r#"{"mcpServers": {
            "off": {"command": "x", "disabled": true, "autoApprove": ["a"], "alwaysAllow": ["b"], "timeout": 30},
            "legacy": {"url": "https://h/events", "transportType": "SSE_TYPE"},
            "stream": {"url": "https://h/mcp", "transportType": "streamableHttp", "disabled": false}
        }, "globalShortcut": "Ctrl+Space"}"#
            // Without the `sse` feature the legacy entry is streamable HTTP.
            .replace("SSE_TYPE", if cfg!(feature = "sse") { "sse" } else { "http" })
            .as_str(),
    )
    .unwrap();
    let off = c.server("off").unwrap();
    assert!(!off.enabled);
    // `timeout` is ignored (its unit differs between clients).
    assert_eq!(off.timeout, config::DEFAULT_TIMEOUT);
    let legacy = if cfg!(feature = "sse") { "sse" } else { "http" };
    assert_eq!(c.server("legacy").unwrap().type_name(), legacy);
    let stream = c.server("stream").unwrap();
    assert_eq!(stream.type_name(), "http");
    assert!(stream.enabled);
    let m = load_err(
        ".mcp.json",
        r#"{"mcpServers": {"gh": {"command": "x", "envv": {"A": "b"}}}}"#,
    );
    assert!(
        m.contains("server 'gh'") && m.contains("'envv'") && m.contains("did you mean 'env'?"),
        "{m}"
    );
    let m = load_err(
        ".mcp.json",
        r#"{"mcpServers": {"gh": {"command": "x", "description": "mine"}}}"#,
    );
    assert!(m.contains("'description'"), "{m}");
}

#[test]
fn nested_defaults_expand() {
    let c = parse(
        r#"{"mcpServers": {"a": {"command": "${A:-${B}}", "args": ["${A:-${C:-lit}}", "${A:-x${B}y}", "${B:-${C}}"]}}}"#,
    )
    .unwrap();
    let TransportConfig::Stdio(s) = &c.servers[0].transport else {
        panic!("stdio expected")
    };
    assert_eq!(s.command, "from-b");
    assert_eq!(s.args, ["lit", "xfrom-by", "from-b"]);
    // A default that is used and names an unset variable is an error naming it.
    let e = parse(r#"{"mcpServers": {"a": {"command": "${A:-${C}}"}}}"#).unwrap_err();
    assert_eq!(e.code(), "CONFIG_INVALID");
    assert!(e.to_string().contains("C, which is not set"), "{e}");
    let e = parse(r#"{"mcpServers": {"a": {"command": "${A:-${B}"}}}"#).unwrap_err();
    assert!(e.to_string().contains("unterminated"), "{e}");
}

#[test]
fn headers_that_cannot_be_sent_fail_the_load() {
    for (headers, what) in [
        (r#"{"Bad Header": "v"}"#, "Bad Header"),
        (r#"{"X-Ok": "line\nbreak ${TOKEN}"}"#, "X-Ok"),
        (r#"{"": "v"}"#, "header name"),
    ] {
        let m = load_err(
            "mcp.json",
            &format!(
                r#"{{"mcpServers": {{"web": {{"url": "https://h/mcp", "headers": {headers}}}}}}}"#
            ),
        );
        assert!(m.contains("server 'web'") && m.contains(what), "{m}");
        assert!(
            !m.contains("s3cret") && !m.contains("line"),
            "value leaked: {m}"
        );
    }
    if cfg!(feature = "websocket") {
        let m = load_err(
            "mcpmux.toml",
            "[[mcp.servers]]\nname = \"w\"\ntype = \"ws\"\nurl = \"wss://h/ws\"\n[mcp.servers.auth]\ntype = \"header\"\nname = \"X Key\"\nvalue = \"v\"\n",
        );
        assert!(m.contains("server 'w'") && m.contains("X Key"), "{m}");
    }
}

// The policy's keys and the `[session]` table belong to the crates above
// the engine (crates/sessions/tests/config_layers.rs checks them with their
// layers registered). This process registers none: a server key no layer
// owns is unknown, and `[session]`, which nothing here reads, is kept.
#[test]
fn keys_of_unregistered_layers() {
    let m = load_err("mcpmux.toml", &format!("{STDIO}allow_tools = [\"x\"]\n"));
    assert!(m.contains("unknown key 'allow_tools'"), "{m}");
    let c = parse("[session]\nmodle = \"m\"\n").unwrap();
    assert_eq!(c.session["modle"], "m");
}

#[test]
fn seconds_out_of_range_are_refused() {
    for v in ["1e30", "1e19", "-1", "0", "nan", "inf"] {
        let value = match v {
            "nan" => "nan".to_string(),
            "inf" => "inf".to_string(),
            other => other.to_string(),
        };
        let m = load_err(
            "mcpmux.toml",
            &format!("{STDIO}timeout_seconds = {value}\n"),
        );
        assert!(m.contains("timeout_seconds"), "{v}: {m}");
        let m = load_err(
            "mcpmux.toml",
            &format!("[mcp]\nmax_message_bytes = 10\ntimeout_seconds = {value}\n{STDIO}"),
        );
        assert!(m.contains("timeout_seconds"), "{v}: {m}");
    }
    for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0, 1e19, 1e30] {
        assert_eq!(config::seconds(bad), None, "{bad}");
    }
    assert_eq!(
        config::seconds(1.5),
        Some(std::time::Duration::from_millis(1500))
    );
    assert!(config::seconds(config::MAX_SECONDS).is_some());
}

#[test]
fn config_files_are_read_up_to_16_mib() {
    let dir = tempfile::tempdir().unwrap();
    // Valid TOML padded with a comment to one byte over the limit.
    let mut text = STDIO.to_string();
    text.push('#');
    text.push_str(&"x".repeat(MAX_CONFIG_BYTES as usize + 1 - text.len()));
    let path = dir.path().join("big.toml");
    std::fs::write(&path, &text).unwrap();
    let e = Config::load(&path).unwrap_err();
    assert_eq!(e.code(), "CONFIG_INVALID");
    assert!(
        e.to_string().contains("big.toml") && e.to_string().contains("16 MiB"),
        "{e}"
    );
    // At the limit it loads.
    text.pop();
    std::fs::write(&path, &text).unwrap();
    assert_eq!(Config::load(&path).unwrap().servers.len(), 1);
    // An endless file is refused after the limit, not read forever.
    let e = Config::load("/dev/zero").unwrap_err();
    assert_eq!(e.code(), "CONFIG_INVALID");
    assert!(e.to_string().contains("larger than"), "{e}");
}

// The session example's config, with its policy keys, loads in
// crates/sessions/tests/config_layers.rs.
#[test]
fn the_example_config_loads() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let c = Config::load(root.join("examples/mcpmux.toml")).unwrap();
    assert!(!c.servers.is_empty());
}

/// A value of the wrong type gets the same message, word for word, as a bad
/// value of the right type, naming the server and the field (an item of a
/// list or table by its index or key), whichever of them is wrong.
#[test]
fn wrong_types_are_named_field_by_field() {
    let http = "\"type\": \"http\", \"url\": \"http://127.0.0.1:1/mcp\"";
    let stdio = "\"command\": \"x\"";
    for (base, field, expected) in [
        (stdio, r#""args": "a b""#, "field 'args' must be an array of strings"),
        (stdio, r#""args": ["x", 1, true]"#, "field 'args[2]' must be a string"),
        (stdio, r#""env": "x""#, "field 'env' must be a table of strings"),
        (stdio, r#""env": {"K": []}"#, "field 'env.K' must be a string"),
        (stdio, r#""cwd": 5"#, "field 'cwd' must be a string"),
        (stdio, r#""enabled": "yes""#, "field 'enabled' must be true or false"),
        (stdio, r#""disabled": 1"#, "field 'disabled' must be true or false"),
        (stdio, r#""timeout_seconds": "5""#, "field 'timeout_seconds' must be a positive number of seconds"),
        (stdio, r#""timeout_seconds": -1"#, "field 'timeout_seconds' must be a positive number of seconds (at most 1000000000)"),
        (stdio, r#""max_total_timeout_seconds": 1e10"#, "field 'max_total_timeout_seconds' must be a positive number of seconds (at most 1000000000)"),
        (stdio, r#""max_message_bytes": 0"#, "field 'max_message_bytes' must be a positive integer"),
        (stdio, r#""max_message_bytes": 1.5"#, "field 'max_message_bytes' must be a positive integer"),
        (stdio, r#""protocol_version": 1"#, "field 'protocol_version' must be a string"),
        (stdio, r#""lazy": "yes""#, "field 'lazy' must be true or false"),
        (stdio, r#""restart": 1"#, "field 'restart' must be \"on-failure\" or \"never\""),
        (stdio, r#""max_restarts": 1001"#, "field 'max_restarts' must be an integer from 0 to 1000"),
        (stdio, r#""ping_interval_seconds": "x""#, "field 'ping_interval_seconds' must be a number of seconds (0 = no pings)"),
        (stdio, r#""ping_interval_seconds": -1"#, "field 'ping_interval_seconds' must be a positive number of seconds, or 0 for none"),
        (http, r#""headers": {"X-A": {}}"#, "field 'headers.X-A' must be a string"),
        (http, r#""auth": "token""#, "field 'auth' must be a table"),
        (http, r#""auth": {"type": "bearer", "token": 5}"#, "field 'auth.token' must be a string"),
    ] {
        let text = format!(r#"{{"mcpServers": {{"a": {{{base}, {field}}}}}}}"#);
        let e = parse(&text).expect_err(&text);
        assert_eq!(e.code(), "CONFIG_INVALID", "{e}");
        assert_eq!(e.to_string(), format!("config: server 'a': {expected}"), "{text}");
    }
    let m = parse(&format!("[mcp]\ntimeout_seconds = \"5\"\n{STDIO}")).unwrap_err();
    assert_eq!(
        m.to_string(),
        "config: mcp: field 'timeout_seconds' must be a positive number of seconds"
    );
    let m = parse(&format!("[mcp]\nlazy = 1\n{STDIO}")).unwrap_err();
    assert_eq!(
        m.to_string(),
        "config: server 'a': field 'lazy' must be true or false"
    );
}
