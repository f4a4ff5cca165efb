//! The config keys of the layers above the engine, checked at load time
//! once their crates registered them (as every front end does): a typo in
//! a server entry's policy keys or in `[session]` names the nearest key,
//! and a wrong type names the field, the table and the file.

use mcpmux_core::Config;

/// Loads `text` from a file named `name` with the layers registered and
/// returns the error message, checking the code is CONFIG_INVALID and the
/// message names the file.
fn load_err(name: &str, text: &str) -> String {
    mcpmux_sessions::register_config_layers();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let e = Config::load(&path).expect_err(text);
    assert_eq!(e.code(), "CONFIG_INVALID", "{e}");
    let m = e.to_string();
    assert!(m.contains(name), "the file is not named: {m}");
    m
}

/// `Config::parse` with the layers registered.
fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse(text)
}

const STDIO: &str = "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n";

#[test]
fn typos_in_layer_keys_name_the_nearest_key() {
    let m = load_err("mcpmux.toml", "[session]\nmodle = \"m\"\n");
    assert!(
        m.contains("[session]") && m.contains("'modle'") && m.contains("did you mean 'model'?"),
        "{m}"
    );
    let m = load_err("mcpmux.toml", &format!("{STDIO}alow_tools = [\"x\"]\n"));
    assert!(m.contains("did you mean 'allow_tools'?"), "{m}");
    let m = load_err("mcpmux.toml", &format!("{STDIO}deny_tools = \"x\"\n"));
    assert!(
        m.contains("server 'a'") && m.contains("'deny_tools'"),
        "{m}"
    );
    let ok = parse(&format!("{STDIO}allow_tools = [\"read_*\"]\n")).unwrap();
    assert_eq!(ok.servers[0].extra["allow_tools"][0], "read_*");
}

#[test]
fn wrong_types_in_session_fail_the_load() {
    for (table, field) in [
        ("scope = 0", "scope"),
        ("max_turns = \"ten\"", "max_turns"),
        ("stream = \"yes\"", "stream"),
        ("call_timeout_seconds = 1e30", "call_timeout_seconds"),
        ("stall_seconds = -1", "stall_seconds"),
        ("args = \"exec\"", "args"),
        ("reviewer = \"pigeon\"", "pigeon"),
        ("redact = [{ name = \"x\", pattern = \"((\" }]", "redact"),
    ] {
        let m = load_err("mcpmux.toml", &format!("[session]\n{table}\n"));
        assert!(m.contains("[session]") && m.contains(field), "{table}: {m}");
    }
    let ok = parse("[session]\nscope = \"review\"\nmax_turns = 3\nstream = false\n").unwrap();
    assert_eq!(ok.session["scope"], "review");
}

#[test]
fn the_example_configs_load() {
    mcpmux_sessions::register_config_layers();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for file in ["examples/mcpmux.toml", "examples/sessions/mcpmux.toml"] {
        let c = Config::load(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!c.servers.is_empty(), "{file}");
    }
}
