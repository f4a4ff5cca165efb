//! Several `mcpmux gateway --http` replicas sharing a session key
//! (`--session-key-file`): a 2025-11-25 client's session begun on one goes
//! on at any other and after `kill -9` of the first; tampered, foreign-key
//! and ended tokens are 404; key rotation keeps sessions; `/healthz` and
//! `/readyz` answer the balancer; `--drain-seconds` finishes what is in
//! flight on SIGTERM, refusing new sessions meanwhile.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::http_gateway::{answers_in, http_exchange, HttpGateway};
use common::*;
use serde_json::{json, Value};

const TOKEN: &str = "tok-fleet-secret";
const K1: &str = "k1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
const K2: &str = "k2 ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n";

fn key_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

fn replica(sb: &Sandbox, keys: Option<&Path>, name: &str, extra: &[&str]) -> HttpGateway {
    let mut args: Vec<&str> = vec!["--replica", name];
    if let Some(keys) = keys {
        args.extend(["--session-key-file", keys.to_str().unwrap()]);
    }
    args.extend(extra);
    HttpGateway::start_with(sb, TOKEN, &args)
}

/// A POST of `msg` to `gw` in session `session`: status, session header,
/// the answers.
fn post(gw: &HttpGateway, session: Option<&str>, msg: &Value) -> (u16, Option<String>, Vec<Value>) {
    let auth = format!("Bearer {TOKEN}");
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id", id));
    }
    let (status, got, body) = http_exchange(&gw.addr(), "POST", "/mcp", &headers, &msg.to_string());
    let id = got
        .iter()
        .find(|(k, _)| k == "mcp-session-id")
        .map(|(_, v)| v.clone());
    (status, id, answers_in(&body))
}

fn initialize(gw: &HttpGateway) -> String {
    let (status, id, answers) = post(
        gw,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "fleet", "version": "0"}}}),
    );
    assert_eq!(status, 200, "{answers:?}");
    let id = id.expect("a session id");
    let (status, _, _) = post(
        gw,
        Some(&id),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    id
}

/// `mcp_demo_add` in `session` on `gw`: the status and the sum's text.
fn add(gw: &HttpGateway, session: &str, a: i64) -> (u16, String) {
    let (status, _, answers) = post(
        gw,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "mcp_demo_add", "arguments": {"a": a, "b": 1}}}),
    );
    let text = answers
        .first()
        .and_then(|a| a["result"]["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_owned();
    (status, text)
}

#[test]
fn a_session_goes_on_at_any_replica_with_the_key_and_after_kill_9() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true"));
    let dir = tempfile::tempdir().unwrap();
    let k1 = key_file(dir.path(), "k1", K1);
    let mut a = replica(&sb, Some(&k1), "a", &[]);
    let b = replica(&sb, Some(&k1), "b", &[]);
    let session = initialize(&a);
    assert!(session.starts_with("a.k1."), "{session}");
    assert!(session.len() <= 1024, "{}", session.len());
    assert_eq!(add(&a, &session, 1), (200, "2".into()));
    // Any replica with the key carries it on.
    assert_eq!(add(&b, &session, 2), (200, "3".into()));
    // The replica that began it dies: the others go on.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    assert_eq!(add(&b, &session, 3), (200, "4".into()));
    let a2 = replica(&sb, Some(&k1), "a", &[]);
    assert_eq!(add(&a2, &session, 4), (200, "5".into()));

    // Tampered, truncated, another key, no key file: unknown (404).
    let mut tampered = session.clone().into_bytes();
    let at = tampered.len() - 4;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(add(&b, &tampered, 1).0, 404);
    assert_eq!(add(&b, &session[..session.len() - 6], 1).0, 404);
    let foreign = replica(
        &sb,
        Some(&key_file(dir.path(), "foreign", &K2.replace("k2", "k1"))),
        "f",
        &[],
    );
    assert_eq!(add(&foreign, &session, 1).0, 404);
    let lone = replica(&sb, None, "lone", &[]);
    assert_eq!(add(&lone, &session, 1).0, 404);

    // Rotation: the new key seals, the previous one still opens.
    let rotated = replica(
        &sb,
        Some(&key_file(dir.path(), "rotated", &format!("{K2}{K1}"))),
        "r",
        &[],
    );
    assert_eq!(add(&rotated, &session, 5), (200, "6".into()));
    let fresh = initialize(&rotated);
    assert!(fresh.starts_with("r.k2."), "{fresh}");
    assert_eq!(add(&b, &fresh, 1).0, 404, "b has only k1");

    // Ended here by DELETE: this replica does not carry it on again.
    let auth = format!("Bearer {TOKEN}");
    let (status, _, _) = http_exchange(
        &b.addr(),
        "DELETE",
        "/mcp",
        &[("Authorization", &auth), ("Mcp-Session-Id", &session)],
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(add(&b, &session, 1).0, 404);
}

/// `GET path` on `gw` without credentials: status and body.
fn probe(gw: &HttpGateway, path: &str) -> (u16, String) {
    let (status, _, body) = http_exchange(&gw.addr(), "GET", path, &[], "");
    (status, body)
}

#[test]
fn the_balancers_probes_and_a_drain_on_sigterm() {
    // One server takes 6 s to start: the replica serves after 4 s, not
    // ready until that server is up.
    let demo = demo_server();
    let script = format!("sleep 6; exec {}", q(demo.display().to_string()));
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("demo", "allow_all = true"),
        stdio_server(
            "late",
            Path::new("sh"),
            &["-c", &script],
            "allow_all = true"
        ),
    ));
    let gw = replica(&sb, None, "d", &["--drain-seconds", "20"]);
    assert_eq!(probe(&gw, "/healthz"), (200, "alive".into()));
    let (status, why) = probe(&gw, "/readyz");
    assert_eq!(status, 503, "{why}");
    assert!(why.contains("starting"), "{why}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while probe(&gw, "/readyz").0 != 200 {
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(probe(&gw, "/readyz").1, "ready");

    let session = initialize(&gw);
    let addr = gw.addr();
    let slow_session = session.clone();
    let slow = std::thread::spawn(move || {
        let auth = format!("Bearer {TOKEN}");
        let msg = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                         "params": {"name": "mcp_demo_slow", "arguments": {"seconds": 2}}});
        let (status, _, body) = http_exchange(
            &addr,
            "POST",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", &slow_session),
            ],
            &msg.to_string(),
        );
        (status, answers_in(&body))
    });
    std::thread::sleep(Duration::from_millis(500));
    let pid = gw.child.id() as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    // Draining: not ready, no new session, the open session still served.
    let (status, why) = probe(&gw, "/readyz");
    assert_eq!(status, 503, "{why}");
    assert!(why.contains("draining"), "{why}");
    let (status, _, answers) = post(
        &gw,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "late", "version": "0"}}}),
    );
    assert_eq!(status, 503, "{answers:?}");
    let (status, _, _) = post(
        &gw,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    );
    assert_eq!(status, 200);
    // The call in flight ends well, then the replica exits on its own.
    let (status, answers) = slow.join().unwrap();
    assert_eq!(status, 200, "{answers:?}");
    assert!(
        answers.iter().any(|a| a["id"] == 9
            && a["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("done"))),
        "{answers:?}"
    );
    let mut gw = gw;
    let deadline = Instant::now() + Duration::from_secs(10);
    let exited = loop {
        if let Some(status) = gw.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the replica did not exit once idle"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exited.success(), "{exited:?}");
}

/// A 2026-07-28 request `method` to `gw` (no session), declaring the tasks
/// extension, with the routing headers the revision asks for.
fn post_2026(gw: &HttpGateway, method: &str, name: &str, params: Value) -> Value {
    post_2026_as(gw, TOKEN, method, name, params)
}

/// [`post_2026`] with bearer token `token`.
fn post_2026_as(
    gw: &HttpGateway,
    token: &str,
    method: &str,
    name: &str,
    mut params: Value,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "fleet", "version": "0"},
    });
    let auth = format!("Bearer {token}");
    let msg = json!({"jsonrpc": "2.0", "id": 4, "method": method, "params": params});
    let (status, _, body) = http_exchange(
        &gw.addr(),
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ],
        &msg.to_string(),
    );
    assert_eq!(status, 200, "{body}");
    answers_in(&body).into_iter().next().unwrap_or(Value::Null)
}

#[test]
fn a_task_id_names_its_replica_and_another_replica_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::with_config(&stdio_server(
        "tasks",
        Path::new(&mcpmux_test_support::rmcp_tasks_server()),
        &[],
        "protocol_version = \"2026-07-28\"\nallow_all = true\nconfirm_read_only = [\"*\"]",
    ));
    let k1 = key_file(dir.path(), "k1", K1);
    let a = replica(&sb, Some(&k1), "a", &[]);
    let b = replica(&sb, Some(&k1), "b", &[]);
    let created = post_2026(
        &a,
        "tools/call",
        "mcp_tasks_slow_sum",
        json!({"name": "mcp_tasks_slow_sum", "arguments": {"a": 2, "b": 40, "ms": 300}}),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    assert!(id.starts_with("mcpmux-a.tasks-"), "{id}");
    // Another replica cannot serve it, and says where it lives.
    let elsewhere = post_2026(&b, "tasks/get", &id, json!({"taskId": id}));
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    assert_eq!(elsewhere["error"]["data"]["replica"], "a", "{elsewhere}");
    assert!(
        elsewhere["error"]["message"]
            .as_str()
            .unwrap()
            .contains("replica 'a'"),
        "{elsewhere}"
    );
    // Its own replica serves it; an id naming no replica is just unknown.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = post_2026(&a, "tasks/get", &id, json!({"taskId": id}));
        if got["result"]["status"] == "completed" {
            assert_eq!(got["result"]["result"]["content"][0]["text"], "sum: 42");
            break;
        }
        assert!(Instant::now() < deadline, "{got}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let unknown = post_2026(
        &b,
        "tasks/get",
        "mcpmux-nope",
        json!({"taskId": "mcpmux-nope"}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["data"].get("replica").is_none(),
        "{unknown}"
    );
}

#[test]
fn the_gateway_table_holds_the_fleet_settings_and_flags_override_them() {
    let sb = Sandbox::with_config(&format!(
        "{}\n[gateway]\nsession_key_file = \"fleet.key\"\nreplica = \"cfg\"\ndrain_seconds = 5\n",
        demo_entry("demo", "allow_all = true")
    ));
    key_file(sb.path(), "fleet.key", K1);
    let from_config = HttpGateway::start(&sb, TOKEN);
    let session = initialize(&from_config);
    assert!(session.starts_with("cfg.k1."), "{session}");
    // The flag wins; the key (relative to the config's directory) is shared.
    let flagged = replica(&sb, None, "flag", &[]);
    assert_eq!(add(&flagged, &session, 1), (200, "2".into()));
    assert!(initialize(&flagged).starts_with("flag.k1."));

    sb.write(
        "mcpmux.toml",
        &format!(
            "{}\n[gateway]\nsesion_key_file = \"fleet.key\"\n",
            demo_entry("demo", "allow_all = true")
        ),
    );
    let out = sb.mcpmux(&["gateway", "--http", "127.0.0.1:0"]).run();
    let message = out.fails_with("CONFIG_INVALID");
    assert!(
        message.contains("[gateway]") && message.contains("session_key_file"),
        "{message}"
    );
}

/// A 2026-07-28 task belongs to the credential that made it: a client with
/// another bearer token is told it does not exist (it can neither read nor
/// cancel it), and its owner still can.
#[test]
fn a_task_is_used_only_with_the_credential_that_made_it() {
    let sb = Sandbox::with_config(&stdio_server(
        "tasks",
        Path::new(&mcpmux_test_support::rmcp_tasks_server()),
        &[],
        "protocol_version = \"2026-07-28\"\nallow_all = true\nconfirm_read_only = [\"*\"]",
    ));
    // No token of the gateway's own (loopback): each client's is its own.
    let gw = HttpGateway::start(&sb, "");
    let created = post_2026_as(
        &gw,
        "alice",
        "tools/call",
        "mcp_tasks_slow_sum",
        json!({"name": "mcp_tasks_slow_sum", "arguments": {"a": 2, "b": 40, "ms": 300}}),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    for method in ["tasks/get", "tasks/cancel"] {
        let other = post_2026_as(&gw, "mallory", method, &id, json!({"taskId": id}));
        assert_eq!(other["error"]["code"], -32602, "{method}: {other}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = post_2026_as(&gw, "alice", "tasks/get", &id, json!({"taskId": id}));
        if got["result"]["status"] == "completed" {
            assert_eq!(got["result"]["result"]["content"][0]["text"], "sum: 42");
            break;
        }
        assert!(Instant::now() < deadline, "{got}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `tasks/get` of `id` at `gw` as `token` until the task ends; its
/// last answer.
fn ended_task(gw: &HttpGateway, token: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = post_2026_as(gw, token, "tasks/get", id, json!({"taskId": id}));
        let status = got["result"]["status"].as_str().unwrap_or("");
        if ["completed", "failed", "cancelled"].contains(&status) {
            return got;
        }
        assert!(got.get("error").is_none(), "{got}");
        assert!(Instant::now() < deadline, "{got}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A task of a server over HTTP on 2026-07-28 outlives the replica that
/// made it: its id is sealed with the fleet's key, and another replica
/// serves `tasks/get`, `tasks/update` and `tasks/cancel` straight from the
/// server, after `kill -9` of the first too, only to the credential that
/// made it; a tampered id is unknown.
#[test]
fn a_task_of_an_http_server_is_served_by_any_replica_and_after_kill_9() {
    let server = mcpmux_test_support::RmcpTasksHttp::start(&[]);
    let sb = Sandbox::with_config(&format!(
        "{}protocol_version = \"2026-07-28\"\nallow_all = true\nconfirm_read_only = [\"*\"]\n\
         [[session.redact]]\nname = \"person\"\npattern = \"Hello, (?P<secret>Ada)\"\n",
        server.entry("tasks")
    ));
    let dir = tempfile::tempdir().unwrap();
    let k1 = key_file(dir.path(), "k1", K1);
    // No token of the gateways' own: each client's bearer token is its own.
    let start = |name: &str| {
        HttpGateway::start_with(
            &sb,
            "",
            &[
                "--replica",
                name,
                "--session-key-file",
                k1.to_str().unwrap(),
            ],
        )
    };
    let mut a = start("a");
    let b = start("b");
    let start_task = |tool: &str, arguments: Value| {
        let created = post_2026_as(
            &a,
            "alice",
            "tools/call",
            tool,
            json!({"name": tool, "arguments": arguments}),
        );
        let id = created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{created}"))
            .to_owned();
        assert!(id.starts_with("mcpmux-a.tasks-~"), "{id}");
        id
    };
    let sum = start_task("mcp_tasks_slow_sum", json!({"a": 2, "b": 40, "ms": 1500}));
    let asks = start_task("mcp_tasks_ask_name", json!({}));
    let endless = start_task("mcp_tasks_never_ends", json!({}));

    // The other replica reads it from the server while the first is up...
    let seen = post_2026_as(&b, "alice", "tasks/get", &sum, json!({"taskId": sum}));
    assert_eq!(seen["result"]["taskId"], sum, "{seen}");
    assert!(
        ["working", "completed"].contains(&seen["result"]["status"].as_str().unwrap_or("")),
        "{seen}"
    );
    // ... to its maker only, and not under a tampered id.
    for method in ["tasks/get", "tasks/cancel"] {
        let other = post_2026_as(&b, "mallory", method, &sum, json!({"taskId": sum}));
        assert_eq!(other["error"]["code"], -32602, "{method}: {other}");
    }
    let mut tampered = sum.clone().into_bytes();
    let at = tampered.len() - 5;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let got = post_2026_as(
        &b,
        "alice",
        "tasks/get",
        &tampered,
        json!({"taskId": tampered}),
    );
    assert_eq!(got["error"]["code"], -32602, "{got}");

    // The replica that made them dies; the other carries them to the end.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let done = ended_task(&b, "alice", &sum);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "sum: 42",
        "{done}"
    );

    let asked = post_2026_as(&b, "alice", "tasks/get", &asks, json!({"taskId": asks}));
    assert_eq!(asked["result"]["status"], "input_required", "{asked}");
    let question = &asked["result"]["inputRequests"]["name"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    let updated = post_2026_as(
        &b,
        "alice",
        "tasks/update",
        &asks,
        json!({"taskId": asks, "inputResponses": {
            "name": {"action": "accept", "content": {"name": "Ada"}}
        }}),
    );
    assert!(updated.get("error").is_none(), "{updated}");
    // Its result screened as a call's: the policy's redaction applies.
    let answered = ended_task(&b, "alice", &asks);
    let text = answered["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answered}"));
    assert!(
        text.starts_with("Hello, ") && !text.contains("Ada"),
        "{answered}"
    );

    let cancelled = post_2026_as(
        &b,
        "alice",
        "tasks/cancel",
        &endless,
        json!({"taskId": endless}),
    );
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let ended = ended_task(&b, "alice", &endless);
    assert_eq!(ended["result"]["status"], "cancelled", "{ended}");

    // A replica with another key knows none of them, and says where they
    // were made.
    let foreign = HttpGateway::start_with(
        &sb,
        "",
        &[
            "--replica",
            "f",
            "--session-key-file",
            key_file(dir.path(), "k2", K2).to_str().unwrap(),
        ],
    );
    let got = post_2026_as(&foreign, "alice", "tasks/get", &sum, json!({"taskId": sum}));
    assert_eq!(got["error"]["data"]["replica"], "a", "{got}");
}
