//! The network transports (Streamable HTTP, legacy HTTP+SSE, WebSocket)
//! against real peers — `server-everything` (npm) over `sse` and
//! `streamableHttp`, and servers built with the official Python SDK over
//! every transport it has — plus configured headers and secrets, and
//! servers that fail in every way a network server can. Each failure must
//! end in a clear error with the right code, nothing may hang, and the demo
//! stdio server in the same hub keeps working.
//!
//! Fixtures: `tests/servers/net/sdk_server.py` and `tests/servers/net/faults.py`
//! (see their docstrings); each is started on a free port and killed when
//! its [`NetServer`] guard drops.

mod common;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use mcpmux_core::{CallOptions, Config, Error, Hub, ServerStatus};
use serde_json::{json, Value};

/// Failure tests: a failed server stays failed (restarts are tested in
/// `supervision.rs`).
fn config(entries: &[String]) -> mcpmux_core::Config {
    config_without_restarts(entries)
}

// ------------------------------------------------------------------ helpers

/// Runs `fut`, failing the test when it takes longer than `secs` (a hang).
async fn within<T>(secs: u64, what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(secs), fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still running after {secs} s (hang)"),
    }
}

/// A hub with the demo stdio server (named `demo`) and `entries`.
async fn hub_with_demo(entries: &[String]) -> Hub {
    let mut all = vec![demo_entry("demo", "")];
    all.extend_from_slice(entries);
    within(60, "Hub::connect", Hub::connect(config(&all)))
        .await
        .expect("a valid config connects")
}

fn status(hub: &Hub, name: &str) -> ServerStatus {
    hub.servers()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server '{name}'"))
}

fn assert_connected(hub: &Hub, name: &str, kind: &str) {
    let s = status(hub, name);
    assert_eq!(s.state, "connected", "{s:?}");
    assert_eq!(s.transport, kind, "{s:?}");
    assert!(s.tool_count > 0, "{s:?}");
}

/// The URL of `path` on `server` for transport `kind` (`ws://` for websocket).
fn url_for(server: &NetServer, kind: &str, path: &str) -> String {
    if kind == "websocket" {
        server.ws(path)
    } else {
        server.http(path)
    }
}

/// The demo stdio server of the hub still answers.
async fn assert_demo_works(hub: &Hub) {
    let r = within(
        10,
        "demo echo",
        hub.call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "still here"})),
            &CallOptions::default(),
        ),
    )
    .await
    .expect("the demo server keeps working");
    assert_eq!(r.value()["content"][0]["text"], "still here");
}

fn opts(timeout: Duration) -> CallOptions {
    CallOptions::default().with_timeout(timeout)
}

/// Call options with a per-step `timeout` and a progress recorder.
fn progress_opts(timeout: Duration) -> (CallOptions, Arc<Mutex<Vec<f64>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let opts = CallOptions::default()
        .with_timeout(timeout)
        .with_max_total_timeout(Duration::from_secs(30))
        .with_progress(Arc::new(move |p| sink.lock().unwrap().push(p.progress)));
    (opts, seen)
}

fn text0(v: &Value) -> String {
    v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The error of a failed call, which must come within `secs`.
async fn call_err(hub: &Hub, tool: &str, args: Value, options: &CallOptions, secs: u64) -> Error {
    match within(secs, tool, hub.call_tool(tool, Some(&args), options)).await {
        Ok(r) => panic!("{tool}: expected an error, got {}", r.json()),
        Err(e) => e,
    }
}

/// Connects a hub with the demo server and `entry` (server `name`), which
/// must fail to connect with CONNECT_FAILED within `secs`; returns the error
/// message after checking the demo server still works.
async fn connect_fails(entry: String, name: &str, secs: u64) -> String {
    let start = Instant::now();
    let hub = within(
        secs,
        "connecting a failing server",
        Hub::connect(secret_config(&[demo_entry("demo", ""), entry])),
    )
    .await
    .unwrap();
    let s = status(&hub, name);
    assert_eq!(s.state, "failed", "{s:?}");
    assert_eq!(s.error_code, Some("CONNECT_FAILED"), "{s:?}");
    assert_connected(&hub, "demo", "stdio");
    assert_demo_works(&hub).await;
    // Calls to the failed server fail at once with its own error, naming it.
    let e = call_err(
        &hub,
        &format!("mcp_{name}_work"),
        json!({}),
        &opts(Duration::from_secs(30)),
        2,
    )
    .await;
    assert_eq!(e.code(), "CONNECT_FAILED", "{e}");
    assert!(e.to_string().contains(name), "{e}");
    hub.close().await;
    eprintln!("{name}: failed in {:?}: {:?}", start.elapsed(), s.error);
    s.error.unwrap()
}

// ------------------------------------------------------------ real peers

/// Everything a user does with `server-everything` (server `name`): list,
/// echo, a long operation whose progress keeps it alive past its timeout,
/// resources and prompts.
async fn exercise_everything(hub: &Hub, name: &str) {
    let tools = hub.list_tools();
    let names: Vec<&str> = tools
        .iter()
        .filter(|t| t.server == name)
        .map(|t| t.tool.as_str())
        .collect();
    for want in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(names.contains(&want), "{want} missing: {names:?}");
    }

    let echo = hub
        .call_tool(
            &format!("mcp_{name}_echo"),
            Some(&json!({"message": "hi over the wire"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(!echo.is_error(), "{}", echo.json());
    assert_eq!(text0(&echo.value()), "Echo: hi over the wire");

    // 10 steps of 0.3 s (3 s) with a 1.5 s timeout: only progress keeps it alive.
    let (options, seen) = progress_opts(Duration::from_millis(1500));
    let long = within(
        20,
        "trigger-long-running-operation",
        hub.call_tool(
            &format!("mcp_{name}_trigger-long-running-operation"),
            Some(&json!({"duration": 3, "steps": 10})),
            &options,
        ),
    )
    .await
    .unwrap();
    assert!(
        text0(&long.value()).contains("Long running operation completed"),
        "{}",
        long.json()
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, (1..=10).map(f64::from).collect::<Vec<_>>());

    let resources = hub.list_resources(Some(name)).await.unwrap();
    let uri = "demo://resource/static/document/architecture.md";
    assert!(
        resources.iter().any(|r| r["uri"] == uri),
        "{uri} not listed: {resources:?}"
    );
    assert!(resources.iter().all(|r| r["server"] == name));
    let read = hub.read_resource(uri, Some(name)).await.unwrap();
    assert!(
        !read["contents"][0]["text"]
            .as_str()
            .unwrap_or("")
            .is_empty(),
        "{read}"
    );

    let prompts = hub.list_prompts(Some(name)).await.unwrap();
    assert!(
        prompts.iter().any(|p| p["name"] == "simple-prompt"),
        "{prompts:?}"
    );
    let prompt = hub
        .get_prompt("simple-prompt", None, Some(name))
        .await
        .unwrap();
    assert!(
        !prompt["messages"].as_array().unwrap().is_empty(),
        "{prompt}"
    );
}

#[tokio::test]
async fn server_everything_over_legacy_sse() {
    let server = everything_net("sse");
    let hub = hub_with_demo(&[net_entry("every", "sse", &server.http("/sse"), "")]).await;
    assert_connected(&hub, "every", "sse");
    exercise_everything(&hub, "every").await;
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let server = everything_net("streamableHttp");
    let hub = hub_with_demo(&[net_entry("every", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "every", "http");
    exercise_everything(&hub, "every").await;
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn json_config_infers_the_transport_from_the_url() {
    let sse = everything_net("sse");
    let http = everything_net("streamableHttp");
    let text = json!({"mcpServers": {
        "legacy": {"url": sse.http("/sse")},
        "modern": {"url": http.http("/mcp")},
    }})
    .to_string();
    let hub = within(30, "connect", Hub::connect(Config::parse(&text).unwrap()))
        .await
        .unwrap();
    assert_connected(&hub, "legacy", "sse");
    assert_connected(&hub, "modern", "http");
    for name in ["legacy", "modern"] {
        let r = hub
            .call_tool(
                &format!("mcp_{name}_get-sum"),
                Some(&json!({"a": 2, "b": 40})),
                &CallOptions::default(),
            )
            .await
            .unwrap();
        assert!(text0(&r.value()).contains("42"), "{}", r.json());
    }
    within(10, "close", hub.close()).await;
}

/// Everything a user does with the Python SDK server (server `name`).
/// `progress`: whether the transport carries progress notifications (a
/// `json_response=True` server drops them; then the slow tool gets a timeout
/// longer than it takes).
async fn exercise_sdk(hub: &Hub, name: &str, progress: bool) {
    let tool = |t: &str| format!("mcp_{name}_{t}");
    let tools = hub.list_tools();
    let mut names: Vec<&str> = tools
        .iter()
        .filter(|t| t.server == name)
        .map(|t| t.tool.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "echo", "hang", "slow"]);
    let add = hub.tool(&tool("add")).unwrap();
    assert_eq!(
        add.output_schema.as_ref().unwrap()["properties"]["sum"]["type"],
        "integer",
        "{add:?}"
    );

    let echo = hub
        .call_tool(
            &tool("echo"),
            Some(&json!({"text": "héllo ✓ over the network"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(!echo.is_error(), "{}", echo.json());
    assert_eq!(text0(&echo.value()), "héllo ✓ over the network");
    assert_eq!(
        echo.value()["structuredContent"],
        json!({"result": "héllo ✓ over the network"})
    );

    let sum = hub
        .call_tool(
            &tool("add"),
            Some(&json!({"a": 2, "b": 40})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(!sum.is_error(), "{}", sum.json());
    assert_eq!(sum.value()["structuredContent"], json!({"sum": 42}));

    // Several calls at once on one connection, answered to the right caller.
    let calls = (0..8).map(|i| {
        let args = json!({"a": i, "b": 1000});
        let name = tool("add");
        async move {
            hub.call_tool(&name, Some(&args), &CallOptions::default())
                .await
                .unwrap()
                .value()["structuredContent"]["sum"]
                .as_i64()
                .unwrap()
        }
    });
    let sums = within(20, "concurrent adds", futures::future::join_all(calls)).await;
    assert_eq!(sums, (0..8).map(|i| i + 1000).collect::<Vec<_>>());

    // 10 steps of 0.3 s (3 s): with a 1.5 s timeout only progress keeps it alive.
    let timeout = Duration::from_millis(if progress { 1500 } else { 10_000 });
    let (options, seen) = progress_opts(timeout);
    let slow = within(
        20,
        "slow",
        hub.call_tool(
            &tool("slow"),
            Some(&json!({"seconds": 3.0, "steps": 10})),
            &options,
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        text0(&slow.value()),
        "done after 10 steps",
        "{}",
        slow.json()
    );
    if progress {
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, (1..=10).map(f64::from).collect::<Vec<_>>());
    }

    // A tool that never answers times out (only the call's own 0.8 s can
    // end it before the hang guard); the connection stays usable.
    let e = call_err(
        hub,
        &tool("hang"),
        json!({}),
        &opts(Duration::from_millis(800)),
        10,
    )
    .await;
    assert_eq!(e.code(), "TIMEOUT", "{e}");
    assert!(e.to_string().contains(name), "{e}");
    let again = hub
        .call_tool(
            &tool("echo"),
            Some(&json!({"text": "after the timeout"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text0(&again.value()), "after the timeout");

    let resources = hub.list_resources(Some(name)).await.unwrap();
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0]["uri"], "net://info");
    assert_eq!(resources[0]["server"], name);
    let read = hub.read_resource("net://info", Some(name)).await.unwrap();
    assert_eq!(read["contents"][0]["text"], "mcpmux network test server");

    let prompts = hub.list_prompts(Some(name)).await.unwrap();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0]["name"], "review");
    let prompt = hub
        .get_prompt("review", Some(&json!({"code": "x = 1"})), Some(name))
        .await
        .unwrap();
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Please review this code:\n\nx = 1"
    );
}

async fn sdk_round_trip(transport: &str, kind: &str, path: &str, progress: bool) {
    let server = sdk_server(transport, &[]);
    let url = url_for(&server, kind, path);
    let hub = hub_with_demo(&[net_entry("py", kind, &url, "")]).await;
    assert_connected(&hub, "py", kind);
    let info = status(&hub, "py").server_info.unwrap();
    assert_eq!(info["name"], "mcpmux-net-test", "{info}");
    exercise_sdk(&hub, "py", progress).await;
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn python_sdk_over_legacy_sse() {
    sdk_round_trip("sse", "sse", "/sse", true).await;
}

#[tokio::test]
async fn python_sdk_over_streamable_http() {
    sdk_round_trip("streamable-http", "http", "/mcp", true).await;
}

#[tokio::test]
async fn python_sdk_over_stateless_streamable_http() {
    sdk_round_trip("stateless", "http", "/mcp", true).await;
}

#[tokio::test]
async fn python_sdk_over_json_response_streamable_http() {
    sdk_round_trip("json", "http", "/mcp", false).await;
}

#[tokio::test]
async fn python_sdk_over_websocket() {
    sdk_round_trip("websocket", "websocket", "/ws", true).await;
}

#[tokio::test]
async fn streamable_http_type_alias_and_ws_alias() {
    let http = sdk_server("json", &[]);
    let ws = sdk_server("websocket", &[]);
    let hub = hub_with_demo(&[
        net_entry("a", "streamable-http", &http.http("/mcp"), ""),
        net_entry("b", "ws", &ws.ws("/ws"), ""),
    ])
    .await;
    assert_connected(&hub, "a", "http");
    assert_connected(&hub, "b", "websocket");
    for name in ["a", "b"] {
        let r = hub
            .call_tool(
                &format!("mcp_{name}_add"),
                Some(&json!({"a": 1, "b": 2})),
                &CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(r.value()["structuredContent"], json!({"sum": 3}));
    }
    within(10, "close", hub.close()).await;
}

/// A TCP proxy in front of `target` (`http://host:port/...`): the URL that
/// reaches `target` through it, and how many connections it has accepted.
async fn counting_proxy(target: &str) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let rest = target.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = authority.to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let authority = authority.clone();
            tokio::spawn(async move {
                if let Ok(mut server) = tokio::net::TcpStream::connect(&authority).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (format!("http://127.0.0.1:{port}{path}"), accepted)
}

/// Calls tool `tool` of server `name` at `url` (`args`; its answer holds
/// `expect`) 20 times one after another, 50 ms apart, through a proxy that
/// counts connections. A POST answered on an SSE stream is read to the
/// stream's end, which servers send right after the answer (at once, or a
/// little later when busy): its keep-alive connection goes back to the
/// pool, and the calls share it. With the stream dropped at the answer, a
/// stream whose end came later cost a connection (and, to a remote server,
/// a TLS handshake) per call.
async fn sse_answers_reuse_the_connection(
    url: &str,
    name: &str,
    tool: &str,
    args: Value,
    expect: &str,
) {
    let (url, accepted) = counting_proxy(url).await;
    let hub = hub_with_demo(&[net_entry(name, "http", &url, "")]).await;
    assert_connected(&hub, name, "http");
    let calls = 20;
    let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
    for _ in 0..calls {
        let r = within(
            30,
            tool,
            hub.call_tool(
                &format!("mcp_{name}_{tool}"),
                Some(&args),
                &CallOptions::default(),
            ),
        )
        .await
        .unwrap();
        assert!(text0(&r.value()).contains(expect), "{}", r.json());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let opened = accepted.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert!(
        opened <= 2,
        "{name}: {calls} calls answered over SSE, one after another, opened {opened} connections"
    );
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn calls_answered_over_sse_reuse_their_connection_when_the_stream_ends_late() {
    let server = fault_server("sse-late-end", "call");
    let url = server.http("/mcp");
    sse_answers_reuse_the_connection(&url, "late", "work", json!({}), "answered").await;
}

#[tokio::test]
async fn calls_answered_over_sse_reuse_their_connection_python_sdk() {
    let server = sdk_server("streamable-http", &[]);
    let url = server.http("/mcp");
    sse_answers_reuse_the_connection(&url, "py", "echo", json!({"text": "hi"}), "hi").await;
}

#[tokio::test]
async fn calls_answered_over_sse_reuse_their_connection_server_everything() {
    let server = everything_net("streamableHttp");
    let url = server.http("/mcp");
    sse_answers_reuse_the_connection(&url, "ev", "echo", json!({"message": "hi"}), "hi").await;
}

// ------------------------------------------------------- the link drops

/// The server dies while a call is in flight: the call fails quickly with
/// TRANSPORT_CLOSED (it never waits for its own timeout).
async fn server_killed_mid_call(transport: &str, kind: &str, path: &str) {
    let mut server = sdk_server(transport, &[]);
    let url = url_for(&server, kind, path);
    let hub = hub_with_demo(&[net_entry("py", kind, &url, "")]).await;
    assert_connected(&hub, "py", kind);
    let long = opts(Duration::from_secs(60));
    let call = hub.call_tool("mcp_py_hang", None, &long);
    let kill = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.kill();
    };
    let (result, ()) = within(20, "hang while the server dies", async {
        tokio::join!(call, kill)
    })
    .await;
    // TRANSPORT_CLOSED: the call ended with the server, not after its own
    // 60 s (that would be TIMEOUT, or the hang guard).
    let e = result.unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{kind}: {e}");
    assert!(e.to_string().contains("py"), "{e}");
    // Later calls fail too, never hang: while a transport still tries to
    // reconnect they may time out or wait for the outcome, but within a
    // bounded time the server counts as gone (TRANSPORT_CLOSED) and from
    // then on calls fail at once.
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let e = call_err(
            &hub,
            "mcp_py_echo",
            json!({"text": "x"}),
            &opts(Duration::from_secs(2)),
            10,
        )
        .await;
        if e.code() == "TRANSPORT_CLOSED" {
            break;
        }
        assert_eq!(e.code(), "TIMEOUT", "{kind}: {e}");
        assert!(
            Instant::now() < end,
            "{kind}: calls still time out 20 s after the server died: {e}"
        );
    }
    // From then on a call fails at once: TRANSPORT_CLOSED even with a
    // timeout longer than the hang guard, so it never waited for a reply.
    let e = call_err(
        &hub,
        "mcp_py_echo",
        json!({"text": "x"}),
        &opts(Duration::from_secs(60)),
        10,
    )
    .await;
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{kind}: {e}");
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn legacy_sse_server_killed_mid_call() {
    server_killed_mid_call("sse", "sse", "/sse").await;
}

#[tokio::test]
async fn streamable_http_server_killed_mid_call() {
    server_killed_mid_call("streamable-http", "http", "/mcp").await;
}

#[tokio::test]
async fn websocket_server_killed_mid_call() {
    server_killed_mid_call("websocket", "websocket", "/ws").await;
}

/// Starts the SDK server again on `port`, off the test's runtime (which
/// goes on running the engine meanwhile, as in a real host).
async fn restart(transport: &'static str, port: u16) -> NetServer {
    tokio::task::spawn_blocking(move || sdk_server(transport, &["--port", &port.to_string()]))
        .await
        .unwrap()
}

/// Calls `tool` until it succeeds, up to `limit`.
async fn eventually_ok(hub: &Hub, tool: &str, args: Value, limit: Duration) -> Value {
    let end = Instant::now() + limit;
    loop {
        let r = hub
            .call_tool(tool, Some(&args), &opts(Duration::from_secs(5)))
            .await;
        match r {
            Ok(r) => return r.value(),
            Err(e) if Instant::now() < end => {
                eprintln!("{tool}: not yet: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{tool}: still failing after {limit:?}: {e}"),
        }
    }
}

#[tokio::test]
async fn legacy_sse_reconnects_after_the_server_restarts() {
    let mut server = sdk_server("sse", &[]);
    let port = server.port;
    let hub = hub_with_demo(&[net_entry("py", "sse", &server.http("/sse"), "")]).await;
    assert_connected(&hub, "py", "sse");
    server.kill();
    // Same port, new process (and so a new SSE session).
    let _server = restart("sse", port).await;
    let v = within(
        30,
        "echo after the restart",
        eventually_ok(
            &hub,
            "mcp_py_echo",
            json!({"text": "back"}),
            Duration::from_secs(20),
        ),
    )
    .await;
    assert_eq!(text0(&v), "back");
    assert_eq!(status(&hub, "py").state, "connected");
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn streamable_http_initializes_again_when_the_session_is_gone() {
    let mut server = sdk_server("streamable-http", &[]);
    let port = server.port;
    let hub = hub_with_demo(&[net_entry("py", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "py", "http");
    server.kill();
    // The new process does not know the old Mcp-Session-Id: it answers 404,
    // and the client must initialize a new session and retry, once.
    let _server = restart("streamable-http", port).await;
    let r = within(
        20,
        "echo after the restart",
        hub.call_tool(
            "mcp_py_echo",
            Some(&json!({"text": "new session"})),
            &CallOptions::default(),
        ),
    )
    .await
    .expect("re-initialized after 404");
    assert_eq!(text0(&r.value()), "new session");
    within(10, "close", hub.close()).await;
}

// -------------------------------------------------------------- headers

const TOKEN: &str = "tok-SECRET-4242";
const API_KEY: &str = "key-SECRET-777";

fn secret_vars(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some(TOKEN.into()),
        "API_KEY" => Some(API_KEY.into()),
        _ => None,
    }
}

/// An entry whose headers come from `${TOKEN}` and `${API_KEY}`.
fn secret_entry(name: &str, kind: &str, url: &str) -> String {
    net_entry(name, kind, url, "timeout_seconds = 10")
        + &headers_table(&[
            ("Authorization", "Bearer ${TOKEN}"),
            ("X-Api-Key", "${API_KEY}"),
        ])
}

fn secret_config(entries: &[String]) -> Config {
    Config::parse_with_vars(&format!("{NO_RESTARTS}{}", entries.concat()), &secret_vars)
        .expect("valid config")
}

/// Fails when `text` shows a secret.
fn assert_no_secret(text: &str) {
    for secret in [TOKEN, API_KEY, "query-SECRET"] {
        assert!(!text.contains(secret), "secret {secret:?} shown in: {text}");
    }
}

fn recorded(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn headers_reach(transport: &str, kind: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("headers.jsonl");
    let auth = format!("Authorization: Bearer {TOKEN}");
    let key = format!("X-Api-Key: {API_KEY}");
    let server = sdk_server(
        transport,
        &[
            "--require-header",
            &auth,
            "--require-header",
            &key,
            "--record-headers",
            record.to_str().unwrap(),
        ],
    );
    let url = url_for(&server, kind, path);
    let config = secret_config(&[demo_entry("demo", ""), secret_entry("py", kind, &url)]);
    assert_no_secret(&format!("{config:?}"));
    let hub = within(30, "connect", Hub::connect(config)).await.unwrap();
    assert_connected(&hub, "py", kind);
    let r = hub
        .call_tool(
            "mcp_py_echo",
            Some(&json!({"text": "authorized"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text0(&r.value()), "authorized");
    within(10, "close", hub.close()).await;

    let requests = recorded(&record);
    assert!(!requests.is_empty(), "no request recorded");
    for r in &requests {
        assert_eq!(
            r["headers"]["authorization"],
            format!("Bearer {TOKEN}"),
            "{r}"
        );
        assert_eq!(r["headers"]["x-api-key"], API_KEY, "{r}");
    }
    if kind == "websocket" {
        assert_eq!(requests[0]["headers"]["sec-websocket-protocol"], "mcp");
    }
    if kind == "http" {
        check_session_headers(&requests);
    }
}

/// A stateful Streamable HTTP session as the server saw it: one session id
/// on every request after `initialize`, each with `MCP-Protocol-Version`;
/// the GET stream opened; the session DELETEd on close.
fn check_session_headers(requests: &[Value]) {
    let with_session: Vec<&Value> = requests
        .iter()
        .filter(|r| r["headers"]["mcp-session-id"].is_string())
        .collect();
    assert!(
        !with_session.is_empty(),
        "no request had a session: {requests:?}"
    );
    let id = &with_session[0]["headers"]["mcp-session-id"];
    for r in &with_session {
        assert_eq!(&r["headers"]["mcp-session-id"], id, "{r}");
        assert!(
            r["headers"]["mcp-protocol-version"].is_string(),
            "no MCP-Protocol-Version on a request of the session: {r}"
        );
    }
    let methods: Vec<&str> = with_session
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert!(methods.contains(&"GET"), "no GET stream: {methods:?}");
    assert_eq!(
        methods.last(),
        Some(&"DELETE"),
        "the session was not deleted on close: {methods:?}"
    );
}

#[tokio::test]
async fn configured_headers_reach_a_streamable_http_server() {
    headers_reach("streamable-http", "http", "/mcp").await;
}

#[tokio::test]
async fn configured_headers_reach_a_legacy_sse_server() {
    headers_reach("sse", "sse", "/sse").await;
}

#[tokio::test]
async fn configured_headers_reach_a_websocket_server() {
    headers_reach("websocket", "websocket", "/ws").await;
}

/// The server wants other credentials than the configured ones: the server
/// fails to connect, and no error shows the secrets that were sent.
#[tokio::test]
async fn rejected_credentials_fail_without_showing_the_secret() {
    // Each server is named after its transport.
    let mut servers: Vec<(&str, NetServer)> = Vec::new();
    let mut entries = vec![demo_entry("demo", "")];
    for (kind, transport, path) in [
        ("http", "streamable-http", "/mcp"),
        ("sse", "sse", "/sse"),
        ("websocket", "websocket", "/ws"),
    ] {
        let server = sdk_server(
            transport,
            &["--require-header", "Authorization: Bearer other"],
        );
        entries.push(secret_entry(kind, kind, &url_for(&server, kind, path)));
        servers.push((kind, server));
    }
    let hub = within(60, "connect", Hub::connect(secret_config(&entries)))
        .await
        .unwrap();
    assert_demo_works(&hub).await;
    for (kind, _) in &servers {
        let s = status(&hub, kind);
        assert_eq!(s.state, "failed", "{s:?}");
        assert_eq!(s.error_code, Some("CONNECT_FAILED"), "{s:?}");
        let msg = s.error.clone().unwrap();
        let shown = if *kind == "websocket" { "403" } else { "401" };
        assert!(msg.contains(shown), "{kind}: {msg}");
        assert_no_secret(&msg);
    }
    assert_no_secret(&serde_json::to_string(&hub.servers()).unwrap());
    for (kind, _) in &servers {
        let e = hub
            .call_tool(&format!("mcp_{kind}_echo"), None, &CallOptions::default())
            .await
            .unwrap_err();
        assert_no_secret(&e.to_string());
        assert_no_secret(&e.to_json().to_string());
    }
    within(10, "close", hub.close()).await;
}

// ------------------------------------------------ wrong URL, wrong scheme

/// A URL that names the port and carries a secret in its query.
fn with_query(base: String) -> String {
    format!("{base}?access_token=query-SECRET-99&x=1")
}

/// A failed connection's message names the host and port, never the query
/// string nor a header's value.
fn assert_names_host(msg: &str, port: u16) {
    assert!(
        msg.contains(&format!("127.0.0.1:{port}")),
        "the message does not name the host: {msg}"
    );
    assert!(!msg.contains("access_token"), "query string shown: {msg}");
    assert_no_secret(msg);
}

#[tokio::test]
async fn connection_refused_names_the_host_not_the_query() {
    for (kind, scheme, path) in [
        ("http", "http", "/mcp"),
        ("sse", "http", "/sse"),
        ("websocket", "ws", "/ws"),
    ] {
        let port = free_port();
        let url = with_query(format!("{scheme}://127.0.0.1:{port}{path}"));
        let msg = connect_fails(secret_entry("gone", kind, &url), "gone", 20).await;
        assert_names_host(&msg, port);
    }
}

/// A wrong path (the server answers 404): CONNECT_FAILED naming the host.
async fn wrong_path_404(kind: &str) {
    let server = fault_server("notfound", "all");
    let url = match kind {
        "websocket" => server.ws("/nope"),
        "sse" => server.http("/nope/sse"),
        _ => server.http("/nope"),
    };
    let msg = connect_fails(secret_entry("lost", kind, &with_query(url)), "lost", 20).await;
    assert!(msg.contains("404"), "{kind}: {msg}");
    assert_names_host(&msg, server.port);
}

#[tokio::test]
async fn streamable_http_wrong_path_404_names_the_host_not_the_query() {
    wrong_path_404("http").await;
}

#[tokio::test]
async fn legacy_sse_wrong_path_404_names_the_host_not_the_query() {
    wrong_path_404("sse").await;
}

#[tokio::test]
async fn websocket_wrong_path_404_names_the_host_not_the_query() {
    wrong_path_404("websocket").await;
}

#[tokio::test]
async fn tls_to_a_plain_http_port_names_the_host() {
    let http = sdk_server("json", &[]);
    let sse = sdk_server("sse", &[]);
    let ws = sdk_server("websocket", &[]);
    for (kind, url, port) in [
        (
            "http",
            format!("https://127.0.0.1:{}/mcp", http.port),
            http.port,
        ),
        (
            "sse",
            format!("https://127.0.0.1:{}/sse", sse.port),
            sse.port,
        ),
        (
            "websocket",
            format!("wss://127.0.0.1:{}/ws", ws.port),
            ws.port,
        ),
    ] {
        let msg = connect_fails(secret_entry("tls", kind, &with_query(url)), "tls", 20).await;
        assert_names_host(&msg, port);
    }
}

// -------------------------------------------------------------- faults

#[tokio::test]
async fn http_500_at_initialize_marks_the_server_failed() {
    let server = fault_server("500", "all");
    let msg = connect_fails(
        net_entry("broken", "http", &server.http("/mcp"), ""),
        "broken",
        20,
    )
    .await;
    assert!(msg.contains("500"), "{msg}");
    assert!(msg.contains("broken"), "{msg}");
}

#[tokio::test]
async fn http_500_on_a_call_is_a_server_error() {
    let server = fault_server("500", "call");
    let hub = hub_with_demo(&[net_entry("flaky", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "flaky", "http");
    for _ in 0..2 {
        let e = call_err(
            &hub,
            "mcp_flaky_work",
            json!({}),
            &CallOptions::default(),
            10,
        )
        .await;
        assert_eq!(e.code(), "SERVER_ERROR", "{e}");
        let msg = e.to_string();
        assert!(msg.contains("500") && msg.contains("flaky"), "{msg}");
        assert!(
            msg.contains("database unavailable"),
            "the body is shown: {msg}"
        );
        // The connection itself is fine.
        assert_eq!(status(&hub, "flaky").state, "connected");
    }
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn html_page_with_200_is_a_protocol_error() {
    let server = fault_server("html200", "call");
    let hub = hub_with_demo(&[net_entry("portal", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "portal", "http");
    let e = call_err(
        &hub,
        "mcp_portal_work",
        json!({}),
        &CallOptions::default(),
        10,
    )
    .await;
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("text/html"), "{e}");
    assert!(e.to_string().contains("portal"), "{e}");
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;

    let all = fault_server("html200", "all");
    let msg = connect_fails(
        net_entry("portal", "http", &all.http("/mcp"), ""),
        "portal",
        20,
    )
    .await;
    assert!(msg.contains("text/html"), "{msg}");
}

#[tokio::test]
async fn html_page_with_502_is_a_server_error() {
    let server = fault_server("html502", "call");
    let hub = hub_with_demo(&[net_entry("proxy", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "proxy", "http");
    let e = call_err(
        &hub,
        "mcp_proxy_work",
        json!({}),
        &CallOptions::default(),
        10,
    )
    .await;
    assert_eq!(e.code(), "SERVER_ERROR", "{e}");
    assert!(e.to_string().contains("502"), "{e}");
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;

    let all = fault_server("html502", "all");
    let msg = connect_fails(
        net_entry("proxy", "http", &all.http("/mcp"), ""),
        "proxy",
        20,
    )
    .await;
    assert!(msg.contains("502"), "{msg}");
}

#[tokio::test]
async fn sse_response_closed_before_the_answer_is_transport_closed() {
    let server = fault_server("sse-cut", "call");
    let hub = hub_with_demo(&[net_entry("cut", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "cut", "http");
    let (options, seen) = progress_opts(Duration::from_secs(30));
    // TRANSPORT_CLOSED, not the TIMEOUT of waiting 30 s for an answer.
    let e = call_err(&hub, "mcp_cut_work", json!({}), &options, 10).await;
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    assert!(e.to_string().contains("cut"), "{e}");
    // What came before the cut was delivered.
    assert_eq!(*seen.lock().unwrap(), vec![1.0]);
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

/// An SSE response whose event never ends (the server streams the start of
/// a response, then filler without end) fails the call with PROTOCOL_ERROR
/// once the event passes `max_message_bytes`, not at the call's timeout;
/// the connection stays usable.
#[tokio::test]
async fn sse_event_without_end_fails_at_the_size_limit() {
    let server = fault_server("sse-endless", "call");
    let extra = "max_message_bytes = 1048576\ntimeout_seconds = 60";
    let hub = hub_with_demo(&[net_entry("endless", "http", &server.http("/mcp"), extra)]).await;
    assert_connected(&hub, "endless", "http");
    for _ in 0..2 {
        let e = call_err(
            &hub,
            "mcp_endless_work",
            json!({}),
            &opts(Duration::from_secs(60)),
            90,
        )
        .await;
        assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
        let msg = e.to_string();
        assert!(msg.contains("endless") && msg.contains("1048576"), "{msg}");
        assert_eq!(status(&hub, "endless").state, "connected");
    }
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

/// A JSON answer that never ends (chunked, no length) or that declares a
/// length past `max_message_bytes` fails the call with PROTOCOL_ERROR at
/// the limit, not at the call's timeout and without reading it all; the
/// connection stays usable.
#[tokio::test]
async fn json_answer_past_the_size_limit_fails_at_the_limit() {
    for fault in ["json-endless", "json-huge"] {
        let server = fault_server(fault, "call");
        let extra = "max_message_bytes = 1048576\ntimeout_seconds = 60";
        let hub = hub_with_demo(&[net_entry("big", "http", &server.http("/mcp"), extra)]).await;
        assert_connected(&hub, "big", "http");
        for _ in 0..2 {
            let e = call_err(
                &hub,
                "mcp_big_work",
                json!({}),
                &opts(Duration::from_secs(60)),
                90,
            )
            .await;
            assert_eq!(e.code(), "PROTOCOL_ERROR", "{fault}: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains("big") && msg.contains("1048576"),
                "{fault}: {msg}"
            );
            assert_eq!(status(&hub, "big").state, "connected", "{fault}");
        }
        // Read up to the limit, not on: the endless server reports every
        // 16 MiB it got rid of.
        assert!(
            !server.output().contains("MiB sent"),
            "{fault}: {}",
            server.output()
        );
        assert_demo_works(&hub).await;
        within(10, "close", hub.close()).await;
    }
}

/// The same over the legacy HTTP+SSE transport: the answer event on the
/// GET stream never ends; the call fails with PROTOCOL_ERROR at the limit.
#[tokio::test]
async fn legacy_sse_event_without_end_fails_at_the_size_limit() {
    let server = fault_server("sse-legacy-endless", "call");
    let extra = "max_message_bytes = 1048576\ntimeout_seconds = 60";
    let hub = hub_with_demo(&[net_entry("endless", "sse", &server.http("/sse"), extra)]).await;
    assert_connected(&hub, "endless", "sse");
    let e = call_err(
        &hub,
        "mcp_endless_work",
        json!({}),
        &opts(Duration::from_secs(60)),
        90,
    )
    .await;
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    let msg = e.to_string();
    assert!(msg.contains("endless") && msg.contains("1048576"), "{msg}");
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn websocket_dropped_mid_call_fails_every_call_in_flight() {
    let server = fault_server("ws-drop", "call");
    let hub = hub_with_demo(&[net_entry("sock", "websocket", &server.ws("/"), "")]).await;
    assert_connected(&hub, "sock", "websocket");
    let long = opts(Duration::from_secs(60));
    let waits = (0..3).map(|_| hub.call_tool("mcp_sock_wait", None, &long));
    let waits = futures::future::join_all(waits);
    let dropper = async {
        // Let the waits reach the server first.
        assert!(
            server
                .wait_output("method tools/call", Duration::from_secs(5))
                .await,
            "{}",
            server.output()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        hub.call_tool("mcp_sock_drop", None, &long).await
    };
    let (waits, dropped) = within(20, "calls on a dropped socket", async {
        tokio::join!(waits, dropper)
    })
    .await;
    // Every call (each with 60 s to go) ends with TRANSPORT_CLOSED: with
    // the socket, not on its own timeout.
    for r in waits.into_iter().chain([dropped]) {
        let e = r.unwrap_err();
        assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
        assert!(e.to_string().contains("sock"), "{e}");
    }
    let s = status(&hub, "sock");
    assert_eq!(s.state, "failed", "{s:?}");
    assert_eq!(s.error_code, Some("TRANSPORT_CLOSED"), "{s:?}");
    let e = call_err(&hub, "mcp_sock_wait", json!({}), &long, 2).await;
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

#[tokio::test]
async fn server_that_never_answers_a_call_times_out() {
    let server = fault_server("silent", "call");
    let hub = hub_with_demo(&[net_entry("mute", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "mute", "http");
    let e = call_err(
        &hub,
        "mcp_mute_work",
        json!({}),
        &opts(Duration::from_secs(1)),
        10,
    )
    .await;
    assert_eq!(e.code(), "TIMEOUT", "{e}");
    assert!(e.to_string().contains("mute"), "{e}");
    // The server is told the request is abandoned, and its connection,
    // which the server holds without answering, is let go.
    for line in ["method notifications/cancelled", "method <client gone>"] {
        assert!(
            server.wait_output(line, Duration::from_secs(10)).await,
            "{line}: {}",
            server.output()
        );
    }
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

/// A stateless server that asks for input without end: a thousand
/// questions at once are a protocol error (not a thousand handler calls),
/// and rounds of questions share the call's total time.
#[tokio::test]
async fn a_stateless_server_that_keeps_asking_for_input_is_bounded() {
    let flood = fault_server("input-flood", "call");
    let slow = fault_server("input-slow", "call");
    let hub = hub_with_demo(&[
        net_entry("flood", "http", &flood.http("/mcp"), ""),
        net_entry("slow", "http", &slow.http("/mcp"), ""),
    ])
    .await;
    assert_connected(&hub, "flood", "http");
    let e = call_err(
        &hub,
        "mcp_flood_work",
        json!({}),
        &CallOptions::default(),
        10,
    )
    .await;
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("1000 inputs"), "{e}");
    // Nine rounds of 0.3 s would pass a total time of 1 s.
    let total = CallOptions::default()
        .with_timeout(Duration::from_secs(1))
        .with_max_total_timeout(Duration::from_secs(1));
    let e = call_err(&hub, "mcp_slow_work", json!({}), &total, 10).await;
    assert_eq!(e.code(), "TIMEOUT", "{e}");
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

/// A server that answers a call on an event stream and then holds the
/// stream open: the call returns, and the stream is let go at once rather
/// than read (by a task, on a connection) for as long as the server likes.
#[tokio::test]
async fn a_stream_held_open_after_its_answer_is_let_go() {
    let server = fault_server("sse-linger", "call");
    let hub = hub_with_demo(&[net_entry("linger", "http", &server.http("/mcp"), "")]).await;
    assert_connected(&hub, "linger", "http");
    for _ in 0..3 {
        let result = hub
            .call_tool("mcp_linger_work", Some(&json!({})), &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(result.value()["content"][0]["text"], "answered");
    }
    // Each of the three streams is let go while the hub stays up.
    let gone = || server.output().matches("method <client gone>").count();
    let start = Instant::now();
    while gone() < 3 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(gone(), 3, "{}", server.output());
    assert_demo_works(&hub).await;
    within(10, "close", hub.close()).await;
}

/// A server that accepts the connection and never sends a byte: connecting
/// fails with CONNECT_FAILED within a few timeouts (`timeout_seconds = 1`).
async fn never_answers_at_all(kind: &str, path: &str) {
    let server = fault_server("silent", "all");
    let url = url_for(&server, kind, path);
    // CONNECT_FAILED from `timeout_seconds = 1` (connect_fails checks the
    // code); the default connect timeout would trip the 15 s hang guard.
    let entry = net_entry("mute", kind, &url, "timeout_seconds = 1");
    let msg = connect_fails(entry, "mute", 15).await;
    assert!(msg.contains("mute"), "{kind}: {msg}");
}

#[tokio::test]
async fn streamable_http_server_that_never_answers_fails_to_connect() {
    never_answers_at_all("http", "/mcp").await;
}

#[tokio::test]
async fn legacy_sse_server_that_never_answers_fails_to_connect() {
    never_answers_at_all("sse", "/sse").await;
}

#[tokio::test]
async fn websocket_server_that_never_answers_fails_to_connect() {
    never_answers_at_all("websocket", "/ws").await;
}

// --------------------------------------------- other origins get nothing

/// Fails unless nothing at all reached the server recording to `record`.
fn assert_nothing_reached(record: &std::path::Path) {
    let got = recorded(record);
    assert!(
        got.is_empty(),
        "requests (with the configured credentials) went to another origin: {got:?}"
    );
}

/// A legacy SSE server whose `endpoint` event names another origin: the
/// client refuses it (as both official SDKs do: "Endpoint origin does not
/// match connection origin") and sends nothing there, above all not the
/// configured credentials.
#[tokio::test]
async fn legacy_sse_endpoint_on_another_origin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("foreign.jsonl");
    let foreign = sdk_server("sse", &["--record-headers", record.to_str().unwrap()]);
    let target = foreign.http("/messages/?session_id=0123456789abcdef0123456789abcdef");
    let fault = net_fixture(
        "faults.py",
        &["--fault", "sse-endpoint", "--target", &target],
    );
    let config = secret_config(&[
        demo_entry("demo", ""),
        secret_entry("sse", "sse", &fault.http("/sse")),
    ]);
    let hub = within(20, "connect", Hub::connect(config)).await.unwrap();
    assert_demo_works(&hub).await;
    let s = status(&hub, "sse");
    within(10, "close", hub.close()).await;
    assert_nothing_reached(&record);
    assert_eq!(s.state, "failed", "{s:?}");
    assert_eq!(s.error_code, Some("CONNECT_FAILED"), "{s:?}");
    let msg = s.error.unwrap();
    assert!(msg.contains("endpoint"), "{msg}");
    assert_no_secret(&msg);
}

/// A server that redirects (307) to another origin: the redirect is not
/// followed (as the official Python SDK does: "redirected to ...; not
/// followed"), so neither the messages nor the configured headers (an
/// `X-Api-Key` survives a cross-host redirect in most HTTP clients) reach
/// the other origin; the server fails to connect with a message that says so.
async fn redirect_to_another_origin(kind: &str, transport: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("foreign.jsonl");
    let foreign = sdk_server(transport, &["--record-headers", record.to_str().unwrap()]);
    let target = foreign.http(path);
    let fault = net_fixture("faults.py", &["--fault", "redirect", "--target", &target]);
    let config = secret_config(&[
        demo_entry("demo", ""),
        secret_entry("moved", kind, &fault.http(path)),
    ]);
    let hub = within(20, "connect", Hub::connect(config)).await.unwrap();
    assert_demo_works(&hub).await;
    let s = status(&hub, "moved");
    within(10, "close", hub.close()).await;
    assert_nothing_reached(&record);
    assert_eq!(s.state, "failed", "{s:?}");
    assert_eq!(s.error_code, Some("CONNECT_FAILED"), "{s:?}");
    let msg = s.error.unwrap();
    assert!(msg.to_lowercase().contains("redirect"), "{msg}");
    assert_no_secret(&msg);
}

#[tokio::test]
async fn streamable_http_redirect_to_another_origin_is_not_followed() {
    redirect_to_another_origin("http", "json", "/mcp").await;
}

#[tokio::test]
async fn legacy_sse_redirect_to_another_origin_is_not_followed() {
    redirect_to_another_origin("sse", "sse", "/sse").await;
}

/// A redirect within the same origin (Starlette sends `/mcp/` to `/mcp`
/// with a 307) is followed, with the configured headers.
#[tokio::test]
async fn streamable_http_same_origin_redirect_is_followed() {
    let auth = format!("Authorization: Bearer {TOKEN}");
    let key = format!("X-Api-Key: {API_KEY}");
    let server = sdk_server(
        "json",
        &["--require-header", &auth, "--require-header", &key],
    );
    let config = secret_config(&[
        demo_entry("demo", ""),
        secret_entry("py", "http", &server.http("/mcp/")),
    ]);
    let hub = within(30, "connect", Hub::connect(config)).await.unwrap();
    assert_connected(&hub, "py", "http");
    let r = hub
        .call_tool(
            "mcp_py_echo",
            Some(&json!({"text": "via a redirect"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text0(&r.value()), "via a redirect");
    within(10, "close", hub.close()).await;
}
