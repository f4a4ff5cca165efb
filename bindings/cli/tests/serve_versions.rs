//! `mcpmux serve` negotiates with core's list of protocol revisions
//! (`mcpmux_core::protocol`), not a copy: every stdio revision core speaks
//! is answered as asked, and one it does not know gets core's newest.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::Sandbox;
use mcpmux_core::protocol::{LATEST_STATEFUL_VERSION, STATEFUL_VERSIONS};
use serde_json::{json, Value};

/// The version `serve` answers an `initialize` offering `asked` with.
fn answered(sb: &Sandbox, asked: &str) -> Value {
    let mut child = Command::new(common::mcpmux_bin())
        .arg("serve")
        .current_dir(sb.path())
        .env_remove("MCPMUX_CONFIG")
        .env("XDG_STATE_HOME", common::state_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let reply: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    reply["result"]["protocolVersion"].clone()
}

#[test]
fn serve_speaks_cores_protocol_revisions() {
    let sb = Sandbox::new();
    assert!(STATEFUL_VERSIONS.len() >= 4);
    for version in STATEFUL_VERSIONS {
        assert_eq!(answered(&sb, version), *version);
    }
    assert_eq!(answered(&sb, "1999-01-01"), LATEST_STATEFUL_VERSION);
}
