//! Three `mcpmux gateway --http` replicas behind the shipped balancer
//! configs (`examples/fleet/haproxy.cfg`, `examples/fleet/nginx.conf`), real
//! HAProxy and nginx from Debian's packages (`tests/setup.sh` unpacks them
//! into `.deps/debian`): 2026-07-28 calls land on every replica; a
//! 2025-11-25 session goes on after `kill -9` of its replica; a rolling
//! restart with `--drain-seconds` fails no request; a task of a server over
//! HTTP (the rmcp tasks server on 2026-07-28) is carried to its end after
//! `kill -9` of the replica that made it.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http_gateway::{answers_in, try_http_exchange, HttpGateway};
use common::*;
use serde_json::{json, Value};

const TOKEN: &str = "tok-balancer-secret";
const KEY: &str = "k1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
const NAMES: [&str; 3] = ["a", "b", "c"];

/// `.deps/debian`, where tests/setup.sh unpacks HAProxy and nginx.
fn debian_root() -> PathBuf {
    let root = workspace_root().join(".deps/debian");
    assert!(
        root.join("usr/sbin/haproxy").is_file() && root.join("usr/sbin/nginx").is_file(),
        "HAProxy and nginx are missing from {}: run `bash tests/setup.sh`",
        root.display()
    );
    root
}

/// Free loopback ports (bound, then let go).
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// A running balancer, killed on drop.
struct Balancer(Child);

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fleet: three replicas sharing a key, each with its audit log.
struct Fleet {
    /// Its servers: the demo over stdio, and `tasks`, the rmcp tasks
    /// server over HTTP, which every replica reaches.
    _tasks: mcpmux_test_support::RmcpTasksHttp,
    sb: Sandbox,
    dir: tempfile::TempDir,
    ports: Vec<u16>,
    replicas: Vec<Option<HttpGateway>>,
}

impl Fleet {
    fn start() -> Fleet {
        let tasks = mcpmux_test_support::RmcpTasksHttp::start(&[]);
        let sb = Sandbox::with_config(&format!(
            "{}\n{}protocol_version = \"2026-07-28\"\nallow_all = true\nconfirm_read_only = [\"*\"]\n",
            demo_entry("demo", "allow_all = true"),
            tasks.entry("tasks")
        ));
        let dir = tempfile::tempdir().unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            let keys = dir.path().join("session.key");
            std::fs::write(&keys, KEY).unwrap();
            std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let ports = free_ports(4);
        let mut fleet = Fleet {
            _tasks: tasks,
            sb,
            dir,
            ports,
            replicas: Vec::new(),
        };
        for i in 0..3 {
            let replica = fleet.replica(i);
            fleet.replicas.push(Some(replica));
        }
        fleet
    }

    fn replica(&self, i: usize) -> HttpGateway {
        let keys = self.dir.path().join("session.key");
        let audit = self.audit(i);
        HttpGateway::start_at(
            &self.sb,
            TOKEN,
            &format!("127.0.0.1:{}", self.ports[i + 1]),
            &[
                "--replica",
                NAMES[i],
                "--session-key-file",
                keys.to_str().unwrap(),
                "--drain-seconds",
                "10",
                "--audit",
                audit.to_str().unwrap(),
            ],
        )
    }

    fn audit(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("audit-{}.jsonl", NAMES[i]))
    }

    /// Calls each replica's audit log holds.
    fn audited(&self, i: usize) -> usize {
        std::fs::read_to_string(self.audit(i))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    fn front(&self) -> String {
        format!("127.0.0.1:{}", self.ports[0])
    }

    fn replica_env(&self) -> Vec<(String, String)> {
        let mut env = vec![("MCPMUX_FLEET_BIND".to_owned(), self.front())];
        for (i, name) in NAMES.iter().enumerate() {
            env.push((
                format!("MCPMUX_REPLICA_{}", name.to_ascii_uppercase()),
                format!("127.0.0.1:{}", self.ports[i + 1]),
            ));
        }
        env
    }

    fn haproxy(&self) -> Balancer {
        let root = debian_root();
        let child = Command::new(root.join("usr/sbin/haproxy"))
            .args(["-db", "-f"])
            .arg(workspace_root().join("examples/fleet/haproxy.cfg"))
            .env("LD_LIBRARY_PATH", root.join("usr/lib/x86_64-linux-gnu"))
            .envs(self.replica_env())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start haproxy");
        Balancer(child)
    }

    /// nginx with the shipped config, its ports replaced by this fleet's
    /// (as examples/fleet/start-fleet.sh does).
    fn nginx(&self) -> Balancer {
        let root = debian_root();
        let mut conf =
            std::fs::read_to_string(workspace_root().join("examples/fleet/nginx.conf")).unwrap();
        for (i, port) in self.ports.iter().enumerate() {
            conf = conf.replace(
                &format!("127.0.0.1:{}", 8700 + i),
                &format!("127.0.0.1:{port}"),
            );
        }
        let prefix = self.dir.path().join("nginx");
        std::fs::create_dir_all(&prefix).unwrap();
        std::fs::write(prefix.join("nginx.conf"), conf).unwrap();
        let child = Command::new(root.join("usr/sbin/nginx"))
            .args(["-e", "stderr", "-p"])
            .arg(&prefix)
            .arg("-c")
            .arg(prefix.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        Balancer(child)
    }

    /// Ends replica `i` with SIGTERM (it drains, then exits) and starts it
    /// again on its port.
    fn restart(&mut self, i: usize) {
        let mut old = self.replicas[i].take().unwrap();
        assert_eq!(
            unsafe { libc::kill(old.child.id() as i32, libc::SIGTERM) },
            0
        );
        let deadline = Instant::now() + Duration::from_secs(15);
        while old.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "replica {} did not exit",
                NAMES[i]
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(old);
        self.replicas[i] = Some(self.replica(i));
    }
}

/// A POST through the balancer at `front`: status, session header, answers
/// (status 0: the balancer could not be reached).
fn post(
    front: &str,
    session: Option<&str>,
    version: &str,
    msg: &Value,
) -> (u16, Option<String>, Vec<Value>) {
    let auth = format!("Bearer {TOKEN}");
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", version),
    ];
    let method = msg["method"].as_str().unwrap_or_default().to_owned();
    let name = msg["params"]["name"]
        .as_str()
        .or_else(|| msg["params"]["taskId"].as_str())
        .unwrap_or_default()
        .to_owned();
    if version == "2026-07-28" {
        headers.push(("Mcp-Method", &method));
        if !name.is_empty() {
            headers.push(("Mcp-Name", &name));
        }
    }
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id", id));
    }
    let Ok((status, got, body)) =
        try_http_exchange(front, "POST", "/mcp", &headers, &msg.to_string())
    else {
        return (0, None, Vec::new());
    };
    let id = got
        .iter()
        .find(|(k, _)| k == "mcp-session-id")
        .map(|(_, v)| v.clone());
    (status, id, answers_in(&body))
}

/// A 2026-07-28 `mcp_demo_add` through `front`: whether it answered `a + 1`.
fn call_2026(front: &str, a: i64) -> Result<(), String> {
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "mcp_demo_add", "arguments": {"a": a, "b": 1},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "fleet", "version": "0"}}}});
    let (status, _, answers) = post(front, None, "2026-07-28", &msg);
    check_sum(status, &answers, a + 1)
}

fn check_sum(status: u16, answers: &[Value], want: i64) -> Result<(), String> {
    let text = answers
        .first()
        .and_then(|a| a["result"]["content"][0]["text"].as_str());
    if status == 200 && text == Some(want.to_string().as_str()) {
        Ok(())
    } else {
        Err(format!("{status} {answers:?}"))
    }
}

/// A 2025-11-25 session begun through `front`.
fn session_2025(front: &str) -> String {
    let (status, id, answers) = post(
        front,
        None,
        "2025-11-25",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "fleet", "version": "0"}}}),
    );
    assert_eq!(status, 200, "{answers:?}");
    let id = id.expect("a session id");
    let (status, _, _) = post(
        front,
        Some(&id),
        "2025-11-25",
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    id
}

fn call_2025(front: &str, session: &str, a: i64) -> Result<(), String> {
    let msg = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "mcp_demo_add", "arguments": {"a": a, "b": 1}}});
    let (status, _, answers) = post(front, Some(session), "2025-11-25", &msg);
    check_sum(status, &answers, a + 1)
}

/// A 2026-07-28 request `method` through `front` declaring the tasks
/// extension: its one answer.
fn post_task_2026(front: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "fleet", "version": "0"}});
    let msg = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
    let (status, _, answers) = post(front, None, "2026-07-28", &msg);
    assert_eq!(status, 200, "{method}: {answers:?}");
    answers.into_iter().next().unwrap_or(Value::Null)
}

/// A task of the HTTP tasks server begun through `front` is carried to
/// its end through `front` after `kill -9` of the replica that made it
/// (which is started again); a task the replica's memory alone held
/// would be lost.
fn task_outlives_its_replica(fleet: &mut Fleet, front: &str) {
    let created = post_task_2026(
        front,
        "tools/call",
        json!({"name": "mcp_tasks_slow_sum", "arguments": {"a": 2, "b": 40, "ms": 1500}}),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let owner = id
        .strip_prefix("mcpmux-")
        .and_then(|rest| rest.split_once('.'))
        .and_then(|(name, _)| NAMES.iter().position(|n| *n == name))
        .unwrap_or_else(|| panic!("{id} names no replica"));
    let mut killed = fleet.replicas[owner].take().unwrap();
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = post_task_2026(front, "tasks/get", json!({"taskId": id}));
        assert!(got.get("error").is_none(), "{got}");
        if got["result"]["status"] == "completed" {
            assert_eq!(
                got["result"]["result"]["content"][0]["text"], "sum: 42",
                "{got}"
            );
            break;
        }
        assert_eq!(got["result"]["status"], "working", "{got}");
        assert!(Instant::now() < deadline, "{got}");
        std::thread::sleep(Duration::from_millis(100));
    }
    fleet.replicas[owner] = Some(fleet.replica(owner));
}

/// Waits until a 2026-07-28 call goes through `front`.
fn wait_serving(front: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while call_2026(front, 1).is_err() {
        assert!(Instant::now() < deadline, "the balancer never served");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Index of the replica a session id names.
fn named(session: &str) -> usize {
    let prefix = session.split('.').next().unwrap();
    NAMES.iter().position(|n| *n == prefix).unwrap()
}

#[test]
fn a_fleet_behind_haproxy_loses_no_request_to_kill_9_or_a_rolling_restart() {
    let mut fleet = Fleet::start();
    let _haproxy = fleet.haproxy();
    let front = fleet.front();
    wait_serving(&front);
    // Every replica up in HAProxy's checks (rise 2 at 500 ms).
    std::thread::sleep(Duration::from_millis(1500));

    // 2026-07-28: any replica answers; least_conn spreads them.
    let before: Vec<usize> = (0..3).map(|i| fleet.audited(i)).collect();
    for a in 0..30 {
        call_2026(&front, a).unwrap();
    }
    for (i, was) in before.iter().enumerate() {
        assert!(
            fleet.audited(i) > *was,
            "replica {} served none of 30 calls",
            NAMES[i]
        );
    }

    // A task of an HTTP server outlives its replica.
    task_outlives_its_replica(&mut fleet, &front);
    std::thread::sleep(Duration::from_millis(1500));

    // 2025-11-25: the session goes on after its replica is killed.
    let session = session_2025(&front);
    call_2025(&front, &session, 1).unwrap();
    let owner = named(&session);
    let mut killed = fleet.replicas[owner].take().unwrap();
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    for a in 0..5 {
        call_2025(&front, &session, a).unwrap();
    }
    fleet.replicas[owner] = Some(fleet.replica(owner));
    std::thread::sleep(Duration::from_millis(1500));

    // A rolling restart under load: no request fails.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let load = {
        let (stop, done, failures, front) =
            (stop.clone(), done.clone(), failures.clone(), front.clone());
        std::thread::spawn(move || {
            let session = session_2025(&front);
            let mut a = 0;
            while !stop.load(Ordering::Relaxed) {
                a += 1;
                for outcome in [call_2026(&front, a), call_2025(&front, &session, a)] {
                    match outcome {
                        Ok(()) => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => failures.lock().unwrap().push(e),
                    }
                }
            }
        })
    };
    for i in 0..3 {
        fleet.restart(i);
        // The new replica up in HAProxy's checks before the next goes.
        std::thread::sleep(Duration::from_millis(1500));
    }
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed: {failures:?}",
        failures.len()
    );
    assert!(done.load(Ordering::Relaxed) > 20, "too few calls made");

    // A tampered token is an unknown session, through the balancer too.
    let mut tampered = session.into_bytes();
    let at = tampered.len() - 4;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (status, _, _) = post(
        &front,
        Some(&tampered),
        "2025-11-25",
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    );
    assert_eq!(status, 404);
}

#[test]
fn a_fleet_behind_nginx_carries_a_session_past_kill_9() {
    let mut fleet = Fleet::start();
    let _nginx = fleet.nginx();
    let front = fleet.front();
    wait_serving(&front);
    for a in 0..9 {
        call_2026(&front, a).unwrap();
    }
    task_outlives_its_replica(&mut fleet, &front);
    let session = session_2025(&front);
    call_2025(&front, &session, 1).unwrap();
    let owner = named(&session);
    let mut killed = fleet.replicas[owner].take().unwrap();
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    for a in 0..5 {
        call_2025(&front, &session, a).unwrap();
    }
    // A new session while one replica is gone, and 2026 calls.
    let other = session_2025(&front);
    call_2025(&front, &other, 7).unwrap();
    for a in 0..6 {
        call_2026(&front, a).unwrap();
    }
}
