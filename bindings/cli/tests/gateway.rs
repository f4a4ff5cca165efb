//! `mcpmux gateway`: the hub served as one MCP server on stdio, driven by
//! the official MCP Python SDK client (`gateway_client.py`) and by raw
//! JSON-RPC for what a client library hides (search mode, `--no-prefix`,
//! refused flags).

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::http_gateway::HttpGateway;
use common::raw_gateway::Raw;
use common::*;
use serde_json::{json, Value};

/// Only catches hangs.
const HANG: Duration = Duration::from_secs(60);

/// The demo server started through `sh`, which first writes its pid.
fn demo_with_pid(name: &str, pid_file: &Path, extra: &str) -> String {
    let script = format!(
        "echo $$ > '{}'; exec '{}'",
        pid_file.display(),
        demo_server().display()
    );
    stdio_server(name, Path::new("sh"), &["-c", &script], extra)
}

/// `tests/servers/net/sdk_server.py --transport T` (the official Python
/// SDK's server), killed on drop.
struct NetServer {
    child: std::process::Child,
    port: u16,
}

impl NetServer {
    fn start(transport: &str) -> NetServer {
        let mut child = Command::new(python())
            .arg(workspace_root().join("tests/servers/net/sdk_server.py"))
            .args(["--transport", transport])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sdk_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("READY ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("sdk_server.py said {line:?}"));
        NetServer { child, port }
    }

    /// A config entry for it, offering its `echo`.
    fn entry(&self, name: &str, kind: &str, path: &str) -> String {
        format!(
            "[[mcp.servers]]\nname = {}\ntype = {}\nurl = \"http://127.0.0.1:{}{path}\"\nallow_all = true\nconfirm_read_only = [\"echo\"]\n",
            q(name),
            q(kind),
            self.port
        )
    }
}

impl Drop for NetServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a client script that prints one JSON summary line last; the
/// summary (the script's output in the failure when it fails).
fn client_summary(command: &mut Command) -> Value {
    let out = command.output().expect("run the client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.trim().lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn the_official_python_sdk_uses_three_servers_through_the_gateway() {
    let sb = Sandbox::new();
    let web = NetServer::start("streamable-http");
    let legacy = NetServer::start("sse");
    let pid_file = sb.path().join("demo.pid");
    let cancel_log = sb.path().join("cancelled.log");
    sb.write(
        "mcpmux.toml",
        &format!(
            "{}{}{}{}{}",
            demo_with_pid(
                "demo",
                &pid_file,
                // `grow` adds a tool: unpinned, so it is offered as it comes
                // (tests/policy_pins.rs has it quarantined when pinned).
                "allow_all = true\nconfirm_read_only = [\"grow\", \"extra_1\"]\npin_tools = false"
            ),
            python_entry(
                "hang",
                "hang.py",
                &format!(
                    "allow_all = true\nallow_destructive = [\"wait_forever\"]\nenv = {{ HANG_CANCEL_LOG = {} }}",
                    qp(&cancel_log)
                )
            ),
            // No allow_tools / allow_all: its tools are neither listed nor callable.
            demo_entry("hidden", ""),
            web.entry("web", "http", "/mcp"),
            legacy.entry("legacy", "sse", "/sse"),
        ),
    );
    let s = client_summary(
        Command::new(python())
            .arg(workspace_root().join("bindings/cli/tests/gateway_client.py"))
            .arg(mcpmux_bin())
            .arg(sb.path().join("mcpmux.toml"))
            .arg(&pid_file)
            .current_dir(sb.path()),
    );
    assert_eq!(s["server"], "mcpmux-gateway", "{s:#}");
    for capability in ["completions", "logging", "prompts", "resources", "tools"] {
        assert!(
            s["capabilities"]
                .as_array()
                .unwrap()
                .contains(&json!(capability)),
            "{s:#}"
        );
    }
    let tools: Vec<&str> = s["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp_demo_add"), "{tools:?}");
    assert!(tools.contains(&"mcp_hang_wait_forever"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp_hidden_")),
        "{tools:?}"
    );
    assert_eq!(s["add"], json!(["5", {"sum": 5}, false]), "{s:#}");
    assert!(s["slow"].as_str().unwrap().starts_with("done"), "{s:#}");
    assert_eq!(s["progress"].as_array().unwrap().len(), 2, "{s:#}");
    assert!(!s["resource"].as_str().unwrap().is_empty(), "{s:#}");
    // Prompts are named as tools are, so two servers' `greet` stay apart.
    assert_eq!(
        s["prompts"],
        json!([
            "mcp_demo_greet",
            "mcp_hidden_greet",
            "mcp_legacy_review",
            "mcp_web_review"
        ]),
        "{s:#}"
    );
    assert!(s["prompt"].as_str().unwrap().contains("Ada"), "{s:#}");
    assert_eq!(s["refused"], json!(["TOOL_NOT_ALLOWED", true]), "{s:#}");
    assert_eq!(s["after_grow"], true, "{s:#}");
    // Streamable HTTP and legacy SSE servers behind the gateway.
    assert_eq!(s["web"], "over http", "{s:#}");
    assert_eq!(s["legacy"], "over sse", "{s:#}");
    // The server behind the gateway saw the client's cancellation.
    assert!(
        !std::fs::read_to_string(&cancel_log)
            .unwrap_or_default()
            .trim()
            .is_empty(),
        "the hang server got no notifications/cancelled"
    );
    // Killed under the gateway, the demo server came back for the next call.
    assert_eq!(s["after_kill"], json!(["back", false]), "{s:#}");
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn search_mode_offers_three_tools_that_find_describe_and_call_the_rest() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let mut gw = Raw::start(&sb, &["--mode", "search"]);
    let list = gw.request("tools/list", json!({}));
    assert_eq!(
        tool_names(&list),
        ["search_tools", "describe_tool", "call_tool"]
    );
    let found = gw.request(
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": "add two numbers", "limit": 3}}),
    );
    let hits = &found["result"]["structuredContent"]["tools"];
    assert_eq!(hits[0]["name"], "mcp_demo_add", "{found}");
    assert!(
        hits[0]["inputSchema"]["properties"]["a"].is_object(),
        "{found}"
    );
    assert!(hits.as_array().unwrap().len() <= 3, "{found}");
    let described = gw.request(
        "tools/call",
        json!({"name": "describe_tool", "arguments": {"name": "mcp_demo_echo"}}),
    );
    assert_eq!(
        described["result"]["structuredContent"]["name"], "mcp_demo_echo",
        "{described}"
    );
    let called = gw.request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "mcp_demo_add", "arguments": {"a": 40, "b": 2}}}),
    );
    assert_eq!(called["result"]["content"][0]["text"], "42", "{called}");
    // The hub's own names are not tools of a search-mode gateway.
    let direct = gw.request(
        "tools/call",
        json!({"name": "mcp_demo_add", "arguments": {"a": 1, "b": 1}}),
    );
    assert_eq!(direct["result"]["isError"], true, "{direct}");
    // A typo: describe_tool and call_tool agree, and name the tool meant.
    for (tool, arguments) in [
        ("describe_tool", json!({"name": "mcp_demo_ad"})),
        (
            "call_tool",
            json!({"name": "mcp_demo_ad", "arguments": {"a": 1, "b": 1}}),
        ),
    ] {
        let typo = gw.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let text = typo["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.starts_with("UNKNOWN_TOOL: ") && text.contains("did you mean 'mcp_demo_add'"),
            "{tool}: {typo}"
        );
    }
}

/// The text of a `tools/call` answer that is an error result.
fn error_text(answer: &Value) -> &str {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_name_no_server_has_is_unknown_tool_naming_only_offered_tools() {
    // `hidden` offers nothing: its tools exist but the policy hides them.
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("demo", "allow_all = true\ndeny_tools = [\"crash\"]"),
        demo_entry("hidden", "")
    ));
    let mut gw = Raw::start(&sb, &[]);
    let mut call = |name: &str| {
        gw.request(
            "tools/call",
            json!({"name": name, "arguments": {"text": "x"}}),
        )
    };
    // A server's own name, and a typo: the offered tool meant, as every
    // front end says it; never the hidden server's tool of that name.
    for name in ["echo", "mcp_demo_ehco"] {
        let answer = call(name);
        let text = error_text(&answer);
        assert!(
            text.starts_with(&format!(
                "UNKNOWN_TOOL: unknown tool '{name}' (did you mean 'mcp_demo_echo'"
            )) && !text.contains("mcp_hidden"),
            "{name}: {answer}"
        );
    }
    // A typo of a hidden tool: nothing offered is close, and the hidden
    // one is not named.
    let answer = call("mcp_hidden_ech");
    assert_eq!(
        error_text(&answer),
        "UNKNOWN_TOOL: unknown tool 'mcp_hidden_ech'",
        "{answer}"
    );
    // Real tools the policy refuses stay TOOL_NOT_ALLOWED, naming nothing.
    for name in ["mcp_hidden_echo", "mcp_demo_crash"] {
        let answer = call(name);
        let text = error_text(&answer);
        assert!(
            text.starts_with("TOOL_NOT_ALLOWED: ") && !text.contains("did you mean"),
            "{name}: {answer}"
        );
    }
}

#[test]
fn with_no_prefix_an_unknown_name_is_unknown_tool_naming_the_server_s_own_name() {
    let sb = Sandbox::with_config(&demo_entry(
        "demo",
        "allow_all = true\ndeny_tools = [\"crash\"]",
    ));
    let mut gw = Raw::start(&sb, &["--no-prefix"]);
    let answer = gw.request("tools/call", json!({"name": "eccho", "arguments": {}}));
    assert!(
        error_text(&answer)
            .starts_with("UNKNOWN_TOOL: unknown tool 'eccho' (did you mean 'echo'?)"),
        "{answer}"
    );
    let answer = gw.request("tools/call", json!({"name": "crash", "arguments": {}}));
    assert!(
        error_text(&answer).starts_with("TOOL_NOT_ALLOWED: "),
        "{answer}"
    );
}

#[test]
fn no_prefix_serves_one_server_under_its_own_names() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let mut gw = Raw::start(&sb, &["--no-prefix"]);
    let names = tool_names(&gw.request("tools/list", json!({})));
    assert!(names.contains(&"add".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("mcp_")), "{names:?}");
    let called = gw.request(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
    );
    assert_eq!(called["result"]["content"][0]["text"], "3", "{called}");
}

#[test]
fn no_prefix_with_two_servers_and_a_bad_mode_are_refused() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("one", "allow_all = true"),
        demo_entry("two", "allow_all = true")
    ));
    let out = sb.mcpmux(&["gateway", "--no-prefix"]).stdin("").run();
    let message = out.fails_with("INVALID_INPUT");
    assert!(message.contains("--no-prefix"), "{message}");
    let out = sb
        .mcpmux(&["gateway", "--mode", "everything"])
        .stdin("")
        .run();
    let message = out.fails_with("INVALID_INPUT");
    assert!(message.contains("everything"), "{message}");
}

#[test]
fn a_server_offering_nothing_is_named_on_stderr_with_the_key_to_add() {
    let sb = Sandbox::with_config(&demo_entry("quiet", ""));
    let out = sb.mcpmux(&["gateway"]).stdin("").run();
    out.expect_exit(0);
    assert!(
        out.stderr.contains("'quiet'") && out.stderr.contains("allow_tools"),
        "{out}"
    );
}

impl HttpGateway {
    /// A raw POST with `headers`; the status and body (Python's urllib,
    /// which reads chunked and streamed bodies).
    fn post(&self, body: &Value, headers: &[(&str, &str)]) -> (u16, String) {
        const SCRIPT: &str = r#"
import json, sys, urllib.request, urllib.error
url, body, headers = sys.argv[1], sys.argv[2].encode(), json.loads(sys.argv[3])
headers.update({"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
try:
    with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=60) as r:
        status, text = r.status, r.read().decode()
except urllib.error.HTTPError as e:
    status, text = e.code, e.read().decode()
print(status)
print(text, end="")
"#;
        let headers: serde_json::Map<String, Value> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let out = Command::new(python())
            .args(["-c", SCRIPT, &self.url, &body.to_string()])
            .arg(Value::Object(headers).to_string())
            .output()
            .expect("python");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (status, body) = text.split_once('\n').unwrap_or(("0", ""));
        (status.trim().parse().unwrap_or(0), body.to_owned())
    }
}

#[test]
fn the_official_python_sdk_uses_the_gateway_over_streamable_http() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let gw = HttpGateway::start(&sb, "tok-gw-secret");
    let s = client_summary(
        Command::new(python())
            .arg(workspace_root().join("bindings/cli/tests/gateway_http_client.py"))
            .arg(&gw.url)
            .arg("tok-gw-secret"),
    );
    assert_eq!(s["server"], "mcpmux-gateway", "{s:#}");
    assert_eq!(s["session"], true, "{s:#}");
    assert!(
        s["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp_demo_add")),
        "{s:#}"
    );
    assert_eq!(s["add"], json!(["42", false]), "{s:#}");
    assert_eq!(s["progress"].as_array().unwrap().len(), 2, "{s:#}");
    assert_eq!(s["resource"], true, "{s:#}");
}

#[test]
fn http_gateway_checks_the_token_and_the_origin_and_speaks_the_stateless_revision() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let gw = HttpGateway::start(&sb, "tok-gw-secret");
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}});
    let (status, body) = gw.post(&discover, &[]);
    assert_eq!(status, 401, "{body}");
    let (status, body) = gw.post(&discover, &[("Authorization", "Bearer wrong")]);
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("tok-gw-secret"), "{body}");
    let auth = ("Authorization", "Bearer tok-gw-secret");
    let (status, body) = gw.post(&discover, &[auth, ("Origin", "http://evil.example")]);
    assert_eq!(status, 403, "{body}");
    let (status, body) = gw.post(&discover, &[auth]);
    assert_eq!(status, 200, "{body}");
    let data = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&body);
    let answer: Value = serde_json::from_str(data).unwrap();
    assert!(
        answer["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{answer}"
    );
    // A stateless call: no session, the revision in `_meta`.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "mcp_demo_add", "arguments": {"a": 1, "b": 2},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    }});
    let (status, body) = gw.post(&call, &[auth]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""text":"3""#), "{body}");
    // Without a session and not stateless: refused.
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let (status, _) = gw.post(&list, &[auth]);
    assert_eq!(status, 400);
}

#[test]
fn http_gateway_refuses_a_foreign_host_unless_allowed() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let gw = HttpGateway::start_with(
        &sb,
        "tok-gw-secret",
        &[
            "--allowed-host",
            "mcp.example.org",
            "--allowed-host",
            "other.example.org:8443",
            "--max-connections",
            "8",
        ],
    );
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}});
    let auth = ("Authorization", "Bearer tok-gw-secret");
    for host in ["evil.com", "other.example.org:8444"] {
        let (status, body) = gw.post(&discover, &[auth, ("Host", host)]);
        assert_eq!(status, 403, "Host: {host}: {body}");
    }
    // The URL's own 127.0.0.1:PORT, and the names allowed.
    let (status, body) = gw.post(&discover, &[auth]);
    assert_eq!(status, 200, "{body}");
    for host in [
        "mcp.example.org",
        "mcp.example.org:443",
        "other.example.org:8443",
        "localhost",
    ] {
        let (status, body) = gw.post(&discover, &[auth, ("Host", host)]);
        assert_eq!(status, 200, "Host: {host}: {body}");
    }
    // Without --http there is no Host; no connection is not a cap.
    let out = sb.mcpmux(&["gateway", "--allowed-host", "x.org"]).run();
    out.fails_with("INVALID_INPUT");
    let out = sb
        .mcpmux(&["gateway", "--http", "127.0.0.1:0", "--max-connections", "0"])
        .run();
    out.fails_with("INVALID_INPUT");
}

#[test]
fn mcpmux_itself_reaches_servers_through_an_http_gateway() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let gw = HttpGateway::start(&sb, "tok-gw-secret");
    let client = Sandbox::with_config(&format!(
        "[[mcp.servers]]\nname = \"gw\"\nurl = {}\nheaders = {{ Authorization = \"Bearer tok-gw-secret\" }}\n",
        q(&gw.url)
    ));
    let out = client
        .mcpmux(&["call", "mcp_gw_mcp_demo_echo", r#"{"text":"through"}"#])
        .run();
    out.ok();
    assert_eq!(out.stdout, "through\n", "{out}");
}

#[test]
fn a_non_loopback_http_gateway_without_a_token_refuses_to_start() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let out = sb.mcpmux(&["gateway", "--http", "0.0.0.0:0"]).run();
    let message = out.fails_with("CONFIG_INVALID");
    assert!(message.contains("--token-env"), "{message}");
    let out = sb
        .mcpmux(&[
            "gateway",
            "--http",
            "127.0.0.1:0",
            "--token-env",
            "GW_UNSET_VAR",
        ])
        .run();
    let message = out.fails_with("CONFIG_INVALID");
    assert!(message.contains("GW_UNSET_VAR"), "{message}");
}

/// Runs `gateway_ts_client.cjs` (the official TypeScript SDK client) with
/// `args`; its summary.
fn ts_client(args: &[&std::ffi::OsStr]) -> Value {
    client_summary(
        Command::new("node")
            .arg(workspace_root().join("bindings/cli/tests/gateway_ts_client.cjs"))
            .arg(workspace_root().join("tests/peers"))
            .args(args),
    )
}

fn check_ts_summary(s: &Value) {
    assert_eq!(s["server"], "mcpmux-gateway", "{s:#}");
    assert!(
        s["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp_demo_add")),
        "{s:#}"
    );
    assert_eq!(s["add"], json!(["9", false]), "{s:#}");
    assert!(s["slow"].as_str().unwrap().starts_with("done"), "{s:#}");
    // The gateway sends both updates before the answer, but the TypeScript SDK client
    // handles notifications a microtask later than responses: when the last
    // update and the answer arrive in one read, the answer has already
    // removed the progress handler. So: at least the first, in order.
    let progress: Vec<f64> = s["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap())
        .collect();
    assert!(matches!(progress.as_slice(), [1.0] | [1.0, 2.0]), "{s:#}");
    assert_eq!(s["resource"], true, "{s:#}");
    assert!(s["prompt"].as_str().unwrap().contains("Ada"), "{s:#}");
}

#[test]
fn the_official_typescript_sdk_uses_the_gateway_over_stdio_and_http() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let config = sb.path().join("mcpmux.toml");
    let bin = mcpmux_bin();
    check_ts_summary(&ts_client(&[
        "stdio".as_ref(),
        bin.as_os_str(),
        config.as_os_str(),
    ]));
    let gw = HttpGateway::start(&sb, "tok-ts-secret");
    check_ts_summary(&ts_client(&[
        "http".as_ref(),
        gw.url.as_ref(),
        "tok-ts-secret".as_ref(),
    ]));
}

#[test]
fn a_config_with_a_session_table_adds_the_review_tools_unless_told_not_to() {
    let sb = Sandbox::with_config(&format!(
        "{}\n[session]\nreviewer = \"command\"\ncommand = \"true\"\n",
        demo_entry("demo", "allow_all = true")
    ));
    let mut gw = Raw::start(&sb, &[]);
    let names = tool_names(&gw.request("tools/list", json!({})));
    for verb in ["begin", "wait", "reply", "end"] {
        assert!(names.contains(&format!("review_{verb}")), "{names:?}");
    }
    assert!(names.contains(&"mcp_demo_add".to_owned()), "{names:?}");
    // The call reaches the session layer, which checks its input.
    let ended = gw.request(
        "tools/call",
        json!({"name": "review_end", "arguments": {"session_dir": 42}}),
    );
    assert_eq!(ended["result"]["isError"], true, "{ended}");
    assert!(
        ended["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("INVALID_INPUT"),
        "{ended}"
    );
    // A typo of a review tool is UNKNOWN_TOOL naming it, as for any tool listed.
    let typo = gw.request(
        "tools/call",
        json!({"name": "review_begn", "arguments": {}}),
    );
    let text = error_text(&typo);
    assert!(
        text.starts_with("UNKNOWN_TOOL: ") && text.contains("did you mean 'review_begin'"),
        "{typo}"
    );
    drop(gw);
    let mut gw = Raw::start(&sb, &["--no-review-tools"]);
    let names = tool_names(&gw.request("tools/list", json!({})));
    assert!(!names.iter().any(|n| n.starts_with("review_")), "{names:?}");
}

#[test]
fn a_tool_that_requires_a_task_is_a_plain_call_through_the_gateway() {
    let js = everything_server();
    let sb = Sandbox::with_config(&stdio_server(
        "everything",
        Path::new("node"),
        &[js.to_str().unwrap(), "stdio"],
        "allow_tools = [\"simulate-research-query\", \"echo\"]\nconfirm_read_only = [\"simulate-research-query\", \"echo\"]",
    ));
    let mut gw = Raw::start(&sb, &[]);
    let list = gw.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let research = tools
        .iter()
        .find(|t| t["name"] == "mcp_everything_simulate-research-query")
        .unwrap_or_else(|| panic!("not listed: {list}"));
    // The gateway runs the task itself: its clients see no taskSupport.
    assert!(
        research.pointer("/execution/taskSupport").is_none(),
        "{research}"
    );
    // Every other `execution` passes as the server sent it.
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp_everything_echo")
        .unwrap_or_else(|| panic!("not listed: {list}"));
    assert_eq!(
        echo["execution"],
        json!({"taskSupport": "forbidden"}),
        "{echo}"
    );
    let called = gw.request(
        "tools/call",
        json!({"name": "mcp_everything_simulate-research-query", "arguments": {"topic": "gateways"}}),
    );
    assert_ne!(called["result"]["isError"], true, "{called}");
    assert!(
        called["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("gateways"),
        "{called}"
    );
}

#[test]
fn requests_from_a_server_are_relayed_to_the_client_that_can_answer_them() {
    let sb = Sandbox::with_config(&python_entry(
        "asks",
        "asks_client.py",
        "allow_all = true\nconfirm_read_only = [\"ask\"]",
    ));
    let s = client_summary(
        Command::new(python())
            .arg(workspace_root().join("bindings/cli/tests/gateway_relay_client.py"))
            .arg(mcpmux_bin())
            .arg(sb.path().join("mcpmux.toml"))
            .current_dir(sb.path()),
    );
    assert_eq!(
        s["elicit"]["result"]["content"]["answer"], "from the client: which one?",
        "{s:#}"
    );
    assert_eq!(s["elicit"]["result"]["action"], "accept", "{s:#}");
    assert_eq!(
        s["sample"]["result"]["content"]["text"], "sampled by the client",
        "{s:#}"
    );
    assert_eq!(s["roots"]["error"]["code"], -32601, "{s:#}");
}

#[test]
fn completions_subscriptions_and_logging_work_end_to_end_with_server_everything() {
    let js = everything_server();
    let sb = Sandbox::with_config(&stdio_server(
        "everything",
        Path::new("node"),
        &[js.to_str().unwrap(), "stdio"],
        "allow_tools = [\"toggle-subscriber-updates\", \"toggle-simulated-logging\"]\nconfirm_read_only = [\"toggle-subscriber-updates\", \"toggle-simulated-logging\"]",
    ));
    let mut gw = Raw::start(&sb, &[]);
    // A prompt argument, under the prompt's gateway name.
    let c = gw.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "mcp_everything_completable-prompt"},
               "argument": {"name": "department", "value": "E"}}),
    );
    assert_eq!(
        c["result"]["completion"]["values"],
        json!(["Engineering"]),
        "{c}"
    );
    // A subscribed resource's updates reach the client.
    let resources = gw.request("resources/list", json!({}));
    let uri = resources["result"]["resources"][0]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{resources}"))
        .to_owned();
    let sub = gw.request("resources/subscribe", json!({ "uri": uri }));
    assert_eq!(sub["result"], json!({}), "{sub}");
    let toggled = gw.request(
        "tools/call",
        json!({"name": "mcp_everything_toggle-subscriber-updates", "arguments": {}}),
    );
    assert_ne!(toggled["result"]["isError"], true, "{toggled}");
    let updated = gw.notification("notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], uri, "{updated}");
    // Server logs reach the client once it sets a level.
    let set = gw.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(set["result"], json!({}), "{set}");
    gw.request(
        "tools/call",
        json!({"name": "mcp_everything_toggle-simulated-logging", "arguments": {}}),
    );
    let log = gw.notification("notifications/message");
    assert!(log["params"]["level"].is_string(), "{log}");
}

#[test]
fn prompts_answer_to_the_gateway_name_and_to_the_server_s_own_name() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let mut gw = Raw::start(&sb, &[]);
    let listed = gw.request("prompts/list", json!({}));
    assert_eq!(
        listed["result"]["prompts"][0]["name"], "mcp_demo_greet",
        "{listed}"
    );
    for name in ["mcp_demo_greet", "greet"] {
        let got = gw.request(
            "prompts/get",
            json!({"name": name, "arguments": {"name": "Ada"}}),
        );
        let text = got["result"]["messages"][0]["content"]["text"].as_str();
        assert!(text.is_some_and(|t| t.contains("Ada")), "{name}: {got}");
    }
    let typo = gw.request("prompts/get", json!({"name": "mcp_demo_gret"}));
    let message = typo["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("did you mean 'mcp_demo_greet'"), "{typo}");
}

#[test]
fn over_stdio_a_request_whose_method_is_not_a_string_is_answered_with_its_id() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let mut gw = Raw::start(&sb, &[]);
    gw.send(json!({"jsonrpc": "2.0", "id": "m1", "method": 42}));
    let answer = loop {
        let msg = gw.next_message(HANG).expect("an answer");
        if msg.get("method").is_none() {
            break msg;
        }
    };
    assert_eq!(answer["id"], "m1", "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // The gateway goes on serving.
    let pong = gw.request("ping", json!({}));
    assert!(pong["result"].is_object(), "{pong}");
}

#[test]
fn server_instructions_pass_through_one_server_s_as_sent_several_under_their_names() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let gw = Raw::start(&sb, &[]);
    let init = gw.initialize_answer();
    let text = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(text.starts_with("Demo server for mcpmux."), "{init}");
    drop(gw);

    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("first", "allow_all = true"),
        demo_entry("second", "allow_all = true")
    ));
    let gw = Raw::start(&sb, &[]);
    let init = gw.initialize_answer();
    let text = init["result"]["instructions"].as_str().unwrap_or_default();
    let first = text.find("## first\n\nDemo server for mcpmux.");
    let second = text.find("## second\n\nDemo server for mcpmux.");
    assert!(first.is_some() && second > first, "{init}");
}

#[test]
fn servers_are_told_only_of_what_the_stdio_client_can_answer() {
    let js = everything_server();
    let sb = Sandbox::with_config(&stdio_server(
        "everything",
        Path::new("node"),
        &[js.to_str().unwrap(), "stdio"],
        // The server adds a tool for a client with roots: unpinned, so the
        // second gateway offers it (pinned, it would be a new tool).
        "allow_tools = [\"get-roots-list\", \"echo\"]\nconfirm_read_only = [\"get-roots-list\", \"echo\"]\npin_tools = false",
    ));
    // server-everything offers get-roots-list only to a client with roots.
    let mut without = Raw::start(&sb, &[]);
    let names = tool_names(&without.request("tools/list", json!({})));
    assert!(
        names.contains(&"mcp_everything_echo".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"mcp_everything_get-roots-list".to_owned()),
        "{names:?}"
    );
    drop(without);
    let mut with = Raw::start_with(&sb, &[], json!({"roots": {"listChanged": true}}));
    // It registers the tool once it learns the client's capabilities.
    let mut names = tool_names(&with.request("tools/list", json!({})));
    if !names.contains(&"mcp_everything_get-roots-list".to_owned()) {
        with.notification("notifications/tools/list_changed");
        names = tool_names(&with.request("tools/list", json!({})));
    }
    assert!(
        names.contains(&"mcp_everything_get-roots-list".to_owned()),
        "{names:?}"
    );
}

#[test]
fn a_result_that_breaks_its_output_schema_is_an_error_result_naming_the_tool_and_path() {
    // The demo server's `add` answers {"sum": "5"} against its outputSchema.
    let sb = Sandbox::with_config(&demo_entry(
        "demo",
        "allow_all = true\nenv = { DEMO_ADD_OUTPUT = \"wrong_type\" }",
    ));
    let mut gw = Raw::start(&sb, &[]);
    let answer = gw.request(
        "tools/call",
        json!({"name": "mcp_demo_add", "arguments": {"a": 2, "b": 3}}),
    );
    let text = error_text(&answer);
    assert!(
        text.starts_with("OUTPUT_INVALID: ")
            && text.contains("tool 'add'")
            && text.contains("'/sum'"),
        "{answer}"
    );
    assert!(
        answer["result"].get("structuredContent").is_none(),
        "{answer}"
    );
    // The same through search mode's call_tool.
    let mut gw = Raw::start(&sb, &["--mode", "search"]);
    let answer = gw.request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "mcp_demo_add", "arguments": {"a": 2, "b": 3}}}),
    );
    assert!(
        error_text(&answer).starts_with("OUTPUT_INVALID: "),
        "{answer}"
    );
}
