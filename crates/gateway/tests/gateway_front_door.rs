//! The HTTP gateway's front door: a connection must send its request head
//! in time and connections are capped (slowloris), a foreign `Host` is 403
//! (DNS rebinding), a session busy with a call or a stream is never evicted
//! (past the cap `initialize` is 503), and every request whose id is known
//! gets exactly one answer with that id (reused ids, batches, invalid
//! members, cancellation, `DELETE`).
//!
//! Timeouts here only guard against hangs; the gateway's own timeouts are
//! set short through its options to keep the tests fast.

use mcpmux_test_support as common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use mcpmux_core::Hub;
use mcpmux_gateway::{serve_http, Gateway, GatewayOptions, HttpOptions};
use mcpmux_policy::SessionPolicy;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `common::config` with the policy's (and the sessions') config keys
/// registered, as every front end has them.
fn config(entries: &[String]) -> mcpmux_core::Config {
    mcpmux_sessions::register_config_layers();
    common::config(entries)
}

/// Guards every wait against a hang.
const GUARD: Duration = Duration::from_secs(30);

/// A gateway over the demo server with `options`, on a free loopback port.
async fn gateway(options: HttpOptions) -> (Hub, SocketAddr) {
    let hub = Hub::connect(config(&[demo_entry("demo", "allow_all = true")]))
        .await
        .unwrap();
    let policy = SessionPolicy::for_hub(&hub, None, None).unwrap();
    let gateway = Gateway::new(hub.clone(), policy, GatewayOptions::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_http(gateway, listener, options));
    (hub, addr)
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp")
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}
    }})
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(GUARD).build().unwrap()
}

/// POSTs `body` asking for JSON; status, session header, body (`null` when
/// not JSON).
async fn post(
    http: &reqwest::Client,
    addr: SocketAddr,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut req = http
        .post(url(addr))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let response = req.send().await.expect("an answer in time");
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.expect("a body in time");
    (
        status,
        id,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// A new session's id.
async fn session(http: &reqwest::Client, addr: SocketAddr) -> String {
    let (status, id, body) = post(http, addr, None, initialize(1)).await;
    assert_eq!(status, 200, "{body}");
    id.expect("a session id")
}

/// Starts a `slow` call of `seconds` with a progress token, so that it is
/// answered on an SSE stream whose headers come back once the gateway has
/// taken the request: the response, body still to come.
async fn start_slow(
    http: &reqwest::Client,
    addr: SocketAddr,
    session: &str,
    id: i64,
    seconds: u64,
) -> reqwest::Response {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "mcp_demo_slow", "arguments": {"seconds": seconds, "steps": 1},
        "_meta": {"progressToken": format!("p{id}")}
    }});
    let response = http
        .post(url(addr))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .body(call.to_string())
        .send()
        .await
        .expect("the stream's headers in time");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "the call is answered on a stream"
    );
    response
}

/// The answers (messages without `method`) an SSE response carried.
async fn sse_answers(response: reqwest::Response) -> Vec<Value> {
    let text = tokio::time::timeout(GUARD, response.text())
        .await
        .expect("the stream ends in time")
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|m| m.get("method").is_none())
        .collect()
}

/// Sends `request` on a new connection and reads until it closes: the
/// status code and the text.
async fn raw(addr: SocketAddr, request: String) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut text = Vec::new();
    tokio::time::timeout(GUARD, stream.read_to_end(&mut text))
        .await
        .expect("the gateway answers and closes in time")
        .unwrap();
    let text = String::from_utf8_lossy(&text).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// An `initialize` POST with `Host: host`, closing the connection after.
fn initialize_for_host(host: &str) -> String {
    let body = initialize(1).to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Waits until the gateway closes `stream` (end of file or reset).
async fn closed_by_gateway(stream: &mut TcpStream) {
    let mut buf = [0u8; 1024];
    tokio::time::timeout(GUARD, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the gateway closes a connection that sends no full head");
}

/// A connection that sends part of a request head and then nothing.
async fn slowloris(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_are_closed_and_a_client_is_served_after_them() {
    let (hub, addr) = gateway(
        HttpOptions::default()
            .with_max_connections(4)
            .with_header_read_timeout(Duration::from_millis(500)),
    )
    .await;
    // Twice as many half-open connections as the gateway holds at once.
    let mut attackers = Vec::new();
    for _ in 0..8 {
        attackers.push(slowloris(addr).await);
    }
    let http = client();
    let served = tokio::spawn(async move { post(&http, addr, None, initialize(1)).await });
    for stream in &mut attackers {
        closed_by_gateway(stream).await;
    }
    let (status, id, body) = served.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(id.is_some());
    // A keep-alive connection idle after its answer is closed too.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    idle.write_all(request.as_bytes()).await.unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    closed_by_gateway(&mut idle).await;
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_wait_until_one_closes() {
    let (hub, addr) = gateway(HttpOptions::default().with_max_connections(1)).await;
    let attacker = slowloris(addr).await;
    let http = client();
    let served = tokio::spawn(async move { post(&http, addr, None, initialize(1)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !served.is_finished(),
        "a connection past the cap waits while the only slot is taken"
    );
    drop(attacker);
    let (status, _, body) = tokio::time::timeout(GUARD, served)
        .await
        .expect("served once the slot is free")
        .unwrap();
    assert_eq!(status, 200, "{body}");
    hub.close().await;
}

/// Sends one stateless `server/discover` on `stream` and reads its whole
/// answer (head and `Content-Length` body); its status line and head.
async fn discover_on(stream: &mut TcpStream) -> (String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(GUARD, async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed before its answer");
            received.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&received);
            let Some(end) = text.find("\r\n\r\n") else {
                continue;
            };
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().unwrap())
                })
                .expect("a Content-Length answer");
            if received.len() >= end + 4 + length {
                let status = text.lines().next().unwrap().to_owned();
                return (status, text[..end].to_owned());
            }
        }
    })
    .await
    .expect("an answer in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_the_next_answer_closes_its_keep_alive_connection_for_a_waiting_one() {
    // Idle keep-alive connections would hold their slots for an hour.
    let (hub, addr) = gateway(
        HttpOptions::default()
            .with_max_connections(2)
            .with_header_read_timeout(Duration::from_secs(3600)),
    )
    .await;
    // Two clients that keep their connection open after an answer, as
    // pooling clients do: every slot is taken.
    let mut older = TcpStream::connect(addr).await.unwrap();
    assert!(discover_on(&mut older).await.0.starts_with("HTTP/1.1 200"));
    let mut newer = TcpStream::connect(addr).await.unwrap();
    assert!(discover_on(&mut newer).await.0.starts_with("HTTP/1.1 200"));
    // A third client waits for a slot ...
    let http = client();
    let third = tokio::spawn(async move { post(&http, addr, None, initialize(1)).await });
    // ... (once it is accepted: the connection is made, the gateway waits
    // for a slot; an idle connection is never closed under its client) ...
    let mut waited = 0;
    let (status, head) = loop {
        let (status, head) = discover_on(&mut newer).await;
        if head.to_ascii_lowercase().contains("connection: close") || waited == 1000 {
            break (status, head);
        }
        waited += 1;
        tokio::task::yield_now().await;
    };
    // ... and the next answer says `Connection: close` and makes room.
    assert!(status.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "no answer gave up its connection: {head}"
    );
    closed_by_gateway(&mut newer).await;
    let (status, id, body) = tokio::time::timeout(GUARD, third)
        .await
        .expect("the waiting client is served")
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(id.is_some());
    // The idle connection was left alone.
    assert!(discover_on(&mut older).await.0.starts_with("HTTP/1.1 200"));
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_that_stalls_is_given_up() {
    let (hub, addr) =
        gateway(HttpOptions::default().with_idle_timeout(Duration::from_millis(500))).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{",
        )
        .await
        .unwrap();
    let mut text = Vec::new();
    tokio::time::timeout(GUARD, stream.read_to_end(&mut text))
        .await
        .expect("the gateway gives up on the body in time")
        .unwrap();
    let text = String::from_utf8_lossy(&text);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_its_answer_loses_the_connection() {
    let (hub, addr) = gateway(
        HttpOptions::default()
            .with_idle_timeout(Duration::from_millis(300))
            .with_header_read_timeout(Duration::from_secs(120)),
    )
    .await;
    let http = client();
    let id = session(&http, addr).await;
    // An answer far larger than the socket buffers, never read.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "mcp_demo_big", "arguments": {"bytes": 12_000_000}
    }})
    .to_string();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nMcp-Session-Id: {id}\r\nContent-Length: {}\r\n\r\n{call}",
        call.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Once the gateway has closed its end, a write here is refused.
    tokio::time::timeout(GUARD, async {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if stream.write_all(b"\r\n").await.is_err() {
                return;
            }
        }
    })
    .await
    .expect("the gateway closes a connection whose answer is not read");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_a_foreign_host_is_forbidden_unless_allowed() {
    let (hub, addr) = gateway(HttpOptions::default()).await;
    let port = addr.port();
    for host in ["evil.com".to_owned(), format!("evil.com:{port}")] {
        let (status, text) = raw(addr, initialize_for_host(&host)).await;
        assert_eq!(status, 403, "Host: {host}\n{text}");
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".to_owned(),
    ] {
        let (status, text) = raw(addr, initialize_for_host(&host)).await;
        assert_eq!(status, 200, "Host: {host}\n{text}");
    }
    hub.close().await;

    let (hub, addr) =
        gateway(HttpOptions::default().with_allowed_hosts(vec!["mcp.example.org".into()])).await;
    let (status, text) = raw(addr, initialize_for_host("mcp.example.org")).await;
    assert_eq!(status, 200, "{text}");
    let (status, text) = raw(addr, initialize_for_host("evil.com")).await;
    assert_eq!(status, 403, "{text}");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_is_never_evicted_and_past_the_cap_initialize_is_refused() {
    let (hub, addr) = gateway(HttpOptions::default().with_max_sessions(2)).await;
    let http = client();
    // The session idle longest has a call in flight; the other a GET stream.
    let calling = session(&http, addr).await;
    let call = start_slow(&http, addr, &calling, 5, 2).await;
    let streaming = session(&http, addr).await;
    let stream = http
        .get(url(addr))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &streaming)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let (status, id, body) = post(&http, addr, None, initialize(41)).await;
    assert_eq!(status, 503, "{body}");
    assert!(id.is_none());
    assert_eq!(body["id"], 41, "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    // The call goes on to its result.
    let answers = sse_answers(call).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], 5, "{answers:?}");
    assert!(answers[0]["result"].is_object(), "{answers:?}");
    // Idle now: it makes room; the session with a stream stays.
    let (status, _, body) = post(&http, addr, None, initialize(42)).await;
    assert_eq!(status, 200, "{body}");
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let (status, _, _) = post(&http, addr, Some(&calling), ping.clone()).await;
    assert_eq!(status, 404);
    let (status, _, body) = post(&http, addr, Some(&streaming), ping).await;
    assert_eq!(status, 200, "{body}");
    drop(stream);
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_id_is_refused_and_the_first_call_is_untouched() {
    let (hub, addr) = gateway(HttpOptions::default()).await;
    let http = client();
    let id = session(&http, addr).await;
    let first = start_slow(&http, addr, &id, 7, 1).await;
    let again = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    let (status, _, body) = post(&http, addr, Some(&id), again).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let answers = sse_answers(first).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], 7);
    assert!(answers[0]["result"].is_object(), "{answers:?}");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_batch_is_answered_once_with_its_id() {
    let (hub, addr) = gateway(HttpOptions::default()).await;
    let http = client();
    let id = session(&http, addr).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": 9},
        [{"jsonrpc": "2.0", "id": 3, "method": "ping"}],
        5,
        {"jsonrpc": "2.0", "id": 4},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ]);
    let (status, _, body) = post(&http, addr, Some(&id), batch).await;
    assert_eq!(status, 200, "{body}");
    let answers = body.as_array().expect("a batch answer");
    assert_eq!(answers.len(), 6, "{body}");
    let with = |id: Value| -> Vec<&Value> { answers.iter().filter(|a| a["id"] == id).collect() };
    let ones = with(json!(1));
    assert_eq!(ones.len(), 2, "{body}");
    assert_eq!(ones.iter().filter(|a| a["result"].is_object()).count(), 1);
    assert_eq!(
        ones.iter().filter(|a| a["error"]["code"] == -32600).count(),
        1
    );
    for id in [json!(2), json!(4)] {
        let answer = with(id);
        assert_eq!(answer.len(), 1, "{body}");
        assert_eq!(answer[0]["error"]["code"], -32600, "{body}");
    }
    let nulls = with(Value::Null);
    assert_eq!(nulls.len(), 2, "{body}");
    assert!(nulls.iter().all(|a| a["error"]["code"] == -32600));

    // Alone: a nested batch, a method that is not a string.
    let (status, _, body) = post(
        &http,
        addr,
        Some(&id),
        json!([[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body[0]["error"]["code"], -32600, "{body}");
    let (status, _, body) = post(
        &http,
        addr,
        Some(&id),
        json!({"jsonrpc": "2.0", "id": "x", "method": ["ping"]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "x", "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_or_ended_request_is_answered_once_with_its_id() {
    let (hub, addr) = gateway(HttpOptions::default()).await;
    let http = client();
    let id = session(&http, addr).await;
    let call = start_slow(&http, addr, &id, 9, 60).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "changed my mind"}});
    let (status, _, _) = post(&http, addr, Some(&id), cancel).await;
    assert_eq!(status, 202);
    let answers = sse_answers(call).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], 9, "{answers:?}");
    assert_eq!(
        answers[0]["error"]["data"]["code"], "CANCELLED",
        "{answers:?}"
    );

    let call = start_slow(&http, addr, &id, 10, 60).await;
    let deleted = http
        .delete(url(addr))
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    let answers = sse_answers(call).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], 10, "{answers:?}");
    assert_eq!(
        answers[0]["error"]["data"]["code"], "CANCELLED",
        "{answers:?}"
    );
    hub.close().await;
}
