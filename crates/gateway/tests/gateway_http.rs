//! The gateway's Streamable HTTP server at the session level: sessions are
//! bounded (the one idle longest makes room), `DELETE` ends one, and a
//! session id that ended is 404; stateless (2026-07-28) answers have that
//! revision's result members.

use mcpmux_test_support as common;

use common::*;
use mcpmux_core::Hub;
use mcpmux_gateway::{serve_http, Gateway, GatewayOptions, HttpOptions, MAX_SESSIONS};
use mcpmux_policy::SessionPolicy;
use serde_json::{json, Value};

/// `common::config` with the policy's (and the sessions') config keys
/// registered, as every front end has them.
fn config(entries: &[String]) -> mcpmux_core::Config {
    mcpmux_sessions::register_config_layers();
    common::config(entries)
}

/// A gateway over the demo server on a free loopback port; its URL.
async fn gateway() -> (Hub, String) {
    let hub = Hub::connect(config(&[demo_entry("demo", "allow_all = true")]))
        .await
        .unwrap();
    let policy = SessionPolicy::for_hub(&hub, None, None).unwrap();
    let gateway = Gateway::new(hub.clone(), policy, GatewayOptions::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let options = HttpOptions::default().with_max_message_bytes(1 << 20);
    tokio::spawn(serve_http(gateway, listener, options));
    (hub, url)
}

/// POSTs `body` (JSON answers asked for) in `session`; status, session
/// header, body.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body.to_string());
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let response = req.send().await.unwrap();
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap();
    (
        status,
        id,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}
    }})
}

fn list() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_bounded_the_idlest_makes_room_and_delete_ends_one() {
    let (hub, url) = gateway().await;
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for _ in 0..MAX_SESSIONS {
        let (status, id, _) = post(&http, &url, None, initialize()).await;
        assert_eq!(status, 200);
        ids.push(id.expect("a session id"));
    }
    // The first session is used again, so the second is now the idlest.
    let (status, _, answer) = post(&http, &url, Some(&ids[0]), list()).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    let (status, newest, _) = post(&http, &url, None, initialize()).await;
    assert_eq!(status, 200);
    let (status, _, _) = post(&http, &url, Some(&ids[1]), list()).await;
    assert_eq!(status, 404, "the idlest session made room");
    let (status, _, _) = post(&http, &url, Some(&ids[0]), list()).await;
    assert_eq!(status, 200, "a session in use stays");
    let newest = newest.unwrap();
    let (status, _, _) = post(&http, &url, Some(&newest), list()).await;
    assert_eq!(status, 200);
    // DELETE ends a session.
    let deleted = http
        .delete(&url)
        .header("mcp-session-id", &newest)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    let (status, _, _) = post(&http, &url, Some(&newest), list()).await;
    assert_eq!(status, 404);
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_version_header_is_checked_and_can_ask_for_the_stateless_revision() {
    let (hub, url) = gateway().await;
    let http = reqwest::Client::new();
    let send = |version: &str| {
        http.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-protocol-version", version)
            .header("mcp-method", "tools/list")
            .body(list().to_string())
            .send()
    };
    let refused = send("1999-01-01").await.unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    // No session, the stateless revision in the header: answered.
    let answered = send("2026-07-28").await.unwrap();
    assert_eq!(answered.status().as_u16(), 200);
    let body: Value = serde_json::from_str(&answered.text().await.unwrap()).unwrap();
    assert!(body["result"]["tools"].is_array(), "{body}");
    // In that revision's shape, though the request's _meta does not name it.
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    assert_eq!(body["result"]["cacheScope"], "private", "{body}");
    assert_eq!(body["result"]["ttlMs"], 0, "{body}");
    // A stateful revision without a session: initialize first.
    let no_session = send("2025-11-25").await.unwrap();
    assert_eq!(no_session.status().as_u16(), 400);
    // That revision's routing headers must match the body (SEP-2243).
    for method in [None, Some("prompts/list")] {
        let mut post = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-protocol-version", "2026-07-28");
        if let Some(method) = method {
            post = post.header("mcp-method", method);
        }
        let refused = post.body(list().to_string()).send().await.unwrap();
        assert_eq!(refused.status().as_u16(), 400, "{method:?}");
        let body: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32020, "{body}");
    }
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_results_carry_result_type_and_cache_hints_stateful_ones_do_not() {
    let (hub, url) = gateway().await;
    let http = reqwest::Client::new();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    // The revision named only in _meta (no header): every result gets
    // resultType; the cacheable ones (lists, reads) ttlMs and cacheScope.
    let (status, _, listed) = post(
        &http,
        &url,
        None,
        json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list", "params": {"_meta": meta}}),
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    assert_eq!(listed["result"]["ttlMs"], 0, "{listed}");
    let (_, _, tools) = post(
        &http,
        &url,
        None,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": meta}}),
    )
    .await;
    let tool = tools["result"]["tools"][0]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, _, called) = post(
        &http,
        &url,
        None,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
               "params": {"name": tool, "arguments": {}, "_meta": meta}}),
    )
    .await;
    assert_eq!(called["result"]["resultType"], "complete", "{called}");
    assert!(called["result"].get("ttlMs").is_none(), "{called}");
    // A session of a stateful revision gets the results as they were.
    let (_, id, _) = post(&http, &url, None, initialize()).await;
    let (_, _, stateful) = post(&http, &url, id.as_deref(), list()).await;
    assert!(stateful["result"]["tools"].is_array(), "{stateful}");
    assert!(stateful["result"].get("resultType").is_none(), "{stateful}");
    assert!(stateful["result"].get("cacheScope").is_none(), "{stateful}");
    hub.close().await;
}

/// A call that asked for progress (as mcpmux's own clients always do),
/// from a client that accepts both: answered before any progress, it gets
/// one JSON body; progress before its answer, or an answer slower than
/// 50 ms, opens an SSE stream that carries everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_asking_for_progress_gets_json_unless_progress_or_a_slow_answer_needs_a_stream() {
    let (_hub, url) = gateway().await;
    let http = reqwest::Client::new();
    let (_, session, _) = post(&http, &url, None, initialize()).await;
    let session = session.expect("a session id");
    let sse_messages = |text: &str| -> Vec<Value> {
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    };

    let (kind, text) = call_with_progress(&url, &session, 10, json!({"text": "hi"})).await;
    assert_eq!(kind, "application/json", "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["id"], 10, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");

    let (kind, text) =
        call_with_progress(&url, &session, 11, json!({"seconds": 0.4, "steps": 2})).await;
    assert_eq!(kind, "text/event-stream", "{text}");
    let messages = sse_messages(&text);
    let progress: Vec<_> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["progress"].as_f64())
        .collect();
    assert_eq!(progress, [1.0, 2.0], "{text}");
    let last = messages.last().unwrap();
    assert!(last["id"] == 11 && last.get("result").is_some(), "{text}");

    let (kind, text) =
        call_with_progress(&url, &session, 12, json!({"seconds": 0.5, "steps": 0})).await;
    assert_eq!(kind, "text/event-stream", "{text}");
    let messages = sse_messages(&text);
    assert_eq!(messages.len(), 1, "{text}");
    assert!(
        messages[0]["id"] == 12 && messages[0].get("result").is_some(),
        "{text}"
    );
}

/// Calls `mcp_demo_echo` (arguments with `text`) or `mcp_demo_slow` with
/// a progress token, accepting JSON and SSE; the content type and body.
async fn call_with_progress(
    url: &str,
    session: &str,
    id: i64,
    arguments: Value,
) -> (String, String) {
    let name = if arguments.get("text").is_some() {
        "mcp_demo_echo"
    } else {
        "mcp_demo_slow"
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": {"progressToken": format!("p{id}")}
    }});
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (kind, response.text().await.unwrap())
}
