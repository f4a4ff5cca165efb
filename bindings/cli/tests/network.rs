//! The network policy from the command line: `--deny-private`,
//! `--allow-networks`, `--require-https` (global, so `mcpmux gateway` has
//! them for the servers it fronts) and the config's `[network]` table,
//! against a hostile server on loopback. A refused server is failed like
//! an unreachable one, naming the server, the host and the address; the
//! others run.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::raw_gateway::Raw;
use common::*;
use serde_json::{json, Value};

/// `tests/servers/net/faults.py --fault 500` on 127.0.0.1: a correct
/// minimal Streamable HTTP server until `tools/call`; killed on drop.
struct Hostile {
    child: Child,
    port: u16,
}

impl Hostile {
    fn start() -> Hostile {
        let mut child = Command::new(python())
            .arg(workspace_root().join("tests/servers/net/faults.py"))
            .args(["--fault", "500", "--on", "call"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start faults.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("READY ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("faults.py said {line:?}"));
        Hostile { child, port }
    }

    fn entry(&self, name: &str, host: &str) -> String {
        format!(
            "[[mcp.servers]]\nname = {}\nurl = {}\nrestart = \"never\"\nallow_tools = [\"work\"]\nconfirm_read_only = [\"work\"]\n",
            q(name),
            q(format!("http://{host}:{}/mcp", self.port))
        )
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `servers --json` entry of `name`.
fn server(out: &Output, name: &str) -> Value {
    out.json()
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no server {name}:\n{out}"))
}

fn assert_refused(s: &Value, name: &str, host: &str) {
    assert_eq!(s["state"], "failed", "{s}");
    assert_eq!(s["error_code"], "CONNECT_FAILED", "{s}");
    let error = s["error"].as_str().unwrap();
    assert!(error.contains(&format!("server '{name}'")), "{error}");
    assert!(error.contains(&format!("connecting to {host}")), "{error}");
    assert!(error.contains("loopback"), "{error}");
    assert!(error.contains("refused by the [network] policy"), "{error}");
}

#[test]
fn deny_private_refuses_loopback_servers_and_the_others_run() {
    let hostile = Hostile::start();
    let sb = Sandbox::with_config(&format!(
        "{}{}{}",
        hostile.entry("ip", "127.0.0.1"),
        hostile.entry("named", "localhost"),
        demo_entry("demo", "")
    ));
    let out = sb.mcpmux(&["servers", "--json", "--deny-private"]).run();
    out.expect_exit(0);
    assert_refused(&server(&out, "ip"), "ip", "127.0.0.1 is refused");
    assert_refused(
        &server(&out, "named"),
        "named",
        "localhost (it resolves to ",
    );
    assert_eq!(server(&out, "demo")["state"], "connected", "{out}");
    // Listed networks are exceptions; comma-separated or repeated.
    let out = sb
        .mcpmux(&[
            "servers",
            "--json",
            "--deny-private",
            "--allow-networks",
            "10.1.2.0/24,127.0.0.0/8",
        ])
        .run();
    assert_eq!(server(&out, "ip")["state"], "connected", "{out}");
    assert_eq!(server(&out, "named")["state"], "connected", "{out}");
    // Without a flag or a [network] table, nothing changes.
    let out = sb.mcpmux(&["servers", "--json"]).run();
    assert_eq!(server(&out, "ip")["state"], "connected", "{out}");
}

#[test]
fn the_config_network_table_does_the_same_and_the_flags_add_to_it() {
    let hostile = Hostile::start();
    let sb = Sandbox::with_config(&format!(
        "[network]\ndeny_private = true\n{}{}",
        hostile.entry("ip", "127.0.0.1"),
        demo_entry("demo", "")
    ));
    let out = sb.mcpmux(&["servers", "--json"]).run();
    assert_refused(&server(&out, "ip"), "ip", "127.0.0.1 is refused");
    let out = sb
        .mcpmux(&["servers", "--json", "--allow-networks", "127.0.0.1"])
        .run();
    assert_eq!(server(&out, "ip")["state"], "connected", "{out}");
    // A call to a refused server fails like one to an unreachable server.
    let message = sb
        .mcpmux(&["call", "mcp_ip_work", "{}"])
        .run()
        .fails_with("CONNECT_FAILED");
    assert!(
        message.contains("refused by the [network] policy"),
        "{message}"
    );
}

#[test]
fn require_https_refuses_cleartext_except_loopback_without_deny_private() {
    let hostile = Hostile::start();
    let sb = Sandbox::with_config(&hostile.entry("ip", "127.0.0.1"));
    let out = sb.mcpmux(&["servers", "--json", "--require-https"]).run();
    assert_eq!(server(&out, "ip")["state"], "connected", "{out}");
    let out = sb
        .mcpmux(&[
            "servers",
            "--json",
            "--require-https",
            "--deny-private",
            "--allow-networks",
            "127.0.0.0/8",
        ])
        .run();
    let s = server(&out, "ip");
    assert_eq!(s["state"], "failed", "{s}");
    assert!(
        s["error"].as_str().unwrap().contains("require_https"),
        "{s}"
    );
}

#[test]
fn a_bad_network_is_invalid_input_naming_the_flag_or_key() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    let message = sb
        .mcpmux(&["servers", "--allow-networks", "10.1.2.0/33"])
        .run()
        .fails_with("INVALID_INPUT");
    assert!(
        message.contains("--allow-networks[0] '10.1.2.0/33'"),
        "{message}"
    );
    let sb = Sandbox::with_config(&format!(
        "[network]\ndeny_privat = true\n{}",
        demo_entry("demo", "")
    ));
    let message = sb.mcpmux(&["servers"]).run().fails_with("CONFIG_INVALID");
    assert!(message.contains("did you mean 'deny_private'"), "{message}");
}

#[test]
fn the_gateway_has_the_same_flags_for_the_servers_it_fronts() {
    let hostile = Hostile::start();
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        hostile.entry("local", "localhost"),
        demo_entry("demo", "allow_all = true")
    ));
    let names = |gw: &mut Raw| -> Vec<String> {
        gw.request("tools/list", json!({}))["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut gw = Raw::start(&sb, &["--deny-private"]);
    let listed = names(&mut gw);
    assert!(
        !listed.iter().any(|n| n.starts_with("mcp_local_")),
        "{listed:?}"
    );
    assert!(
        listed.iter().any(|n| n.starts_with("mcp_demo_")),
        "{listed:?}"
    );
    let call = gw.request(
        "tools/call",
        json!({"name": "mcp_local_work", "arguments": {}}),
    );
    // Its server failed at connect, so its tools were never listed.
    let text = call.to_string();
    assert!(text.contains("UNKNOWN_TOOL"), "{text}");
    drop(gw);
    let mut gw = Raw::start(&sb, &["--deny-private", "--allow-networks", "127.0.0.0/8"]);
    let listed = names(&mut gw);
    assert!(listed.iter().any(|n| n == "mcp_local_work"), "{listed:?}");
}
