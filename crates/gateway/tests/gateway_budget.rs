//! The gateway's memory budget over Streamable HTTP: the answers a session
//! holds (a batch being assembled, or waiting to be sent) are counted
//! against a budget per client and a total one; past it, answers are
//! -32000 "gateway busy" errors instead of being buffered, other sessions
//! are still served, and a batch of a few big results still gets every
//! result whole.

use mcpmux_test_support as common;

use std::time::{Duration, Instant};

use common::*;
use mcpmux_core::Hub;
use mcpmux_gateway::{serve_http, Gateway, GatewayOptions, HttpOptions};
use mcpmux_policy::SessionPolicy;
use serde_json::{json, Value};

/// `common::config` with the policy's (and the sessions') config keys
/// registered, as every front end has them.
fn config(entries: &[String]) -> mcpmux_core::Config {
    mcpmux_sessions::register_config_layers();
    common::config(entries)
}

const MIB: usize = 1 << 20;
/// How long anything may take: only catches hangs.
const HANG: Duration = Duration::from_secs(60);

/// A gateway with `options` over the demo server (whose answers may be up
/// to 32 MiB, and take their time in a debug build) on a free loopback
/// port; the hub, the gateway and its URL.
async fn gateway(options: GatewayOptions) -> (Hub, Gateway, String) {
    let hub = Hub::connect(config(&[demo_entry(
        "demo",
        "allow_all = true\nmax_message_bytes = 33554432\ntimeout_seconds = 600",
    )]))
    .await
    .unwrap();
    let policy = SessionPolicy::for_hub(&hub, None, None).unwrap();
    let gateway = Gateway::new(hub.clone(), policy, options).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let options = HttpOptions::default().with_max_message_bytes(1 << 20);
    tokio::spawn(serve_http(gateway.clone(), listener, options));
    (hub, gateway, url)
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

/// A new session's id.
async fn session(http: &reqwest::Client, url: &str) -> String {
    let (status, id, answer) = post(
        http,
        url,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}
        }}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    id.expect("a session id")
}

/// A batch of `count` calls of the demo's `big`, each answering `bytes` of
/// text.
fn big_batch(count: usize, bytes: usize) -> Value {
    Value::Array(
        (0..count)
            .map(|i| {
                json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                    "params": {"name": "mcp_demo_big", "arguments": {"bytes": bytes}}})
            })
            .collect(),
    )
}

/// The start of `v` as JSON (answers here are megabytes long).
fn short(v: &Value) -> String {
    v.to_string().chars().take(300).collect()
}

/// The whole results and the busy refusals of a batch's answers (or of
/// one answer); panics on anything else (a result cut short, another
/// error).
fn results_and_busy(answers: &Value, bytes: usize) -> (usize, usize) {
    let answers = match answers {
        Value::Array(answers) => answers.clone(),
        one => vec![one.clone()],
    };
    let (mut results, mut busy) = (0, 0);
    for answer in &answers {
        if let Some(text) = answer["result"]["content"][0]["text"].as_str() {
            assert!(
                text.len() == bytes,
                "a result was not whole: {}",
                short(answer)
            );
            results += 1;
        } else {
            assert_eq!(answer["error"]["code"], -32000, "{}", short(answer));
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("busy"), "{}", short(answer));
            busy += 1;
        }
    }
    (results, busy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_of_big_results_past_the_budget_get_busy_answers_and_other_sessions_are_served() {
    // The default budgets: 64 MiB per client, 256 MiB in all.
    let (hub, _gateway, url) = gateway(GatewayOptions::default()).await;
    let http = reqwest::Client::new();
    let (one, two, other) = (
        session(&http, &url).await,
        session(&http, &url).await,
        session(&http, &url).await,
    );
    // Two sessions each send 5 calls answering 14 MiB: 70 MiB each if the
    // gateway buffered them all.
    let attack = |id: String| {
        let (http, url) = (http.clone(), url.clone());
        tokio::spawn(async move { post(&http, &url, Some(&id), big_batch(5, 14 * MIB)).await })
    };
    let attacks = [attack(one.clone()), attack(two)];
    // Meanwhile another session is served.
    let (status, _, listed) = post(
        &http,
        &url,
        Some(&other),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    for attack in attacks {
        let (status, _, answers) = attack.await.unwrap();
        assert_eq!(status, 200);
        // What a session holds stays within its 64 MiB: four answers of
        // 14 MiB fit, the fifth is busy.
        assert_eq!(
            results_and_busy(&answers, 14 * MIB),
            (4, 1),
            "results and busy refusals"
        );
    }
    // Sent, the answers give their budget back: the session is served
    // again, and so is the other one.
    let (status, _, again) = post(&http, &url, Some(&one), big_batch(2, MIB)).await;
    assert_eq!(status, 200);
    assert_eq!(results_and_busy(&again, MIB), (2, 0));
    let (status, _, pong) = post(
        &http,
        &url,
        Some(&other),
        json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 200, "{pong}");
    assert_eq!(pong["result"], json!({}), "{pong}");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_four_4_mib_results_gets_every_result_whole() {
    let (hub, _gateway, url) = gateway(GatewayOptions::default()).await;
    let http = reqwest::Client::new();
    let id = session(&http, &url).await;
    let (status, _, answers) = post(&http, &url, Some(&id), big_batch(4, 4 * MIB)).await;
    assert_eq!(status, 200);
    assert_eq!(results_and_busy(&answers, 4 * MIB), (4, 0));
    // A single one, as a plain (not batch) answer: whole too.
    let (status, _, single) = post(
        &http,
        &url,
        Some(&id),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "mcp_demo_big", "arguments": {"bytes": 4 * MIB}}}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        single["result"]["content"][0]["text"]
            .as_str()
            .map(str::len),
        Some(4 * MIB)
    );
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budgets_are_options_an_answer_larger_than_the_client_budget_goes_alone_and_bytes_are_given_back(
) {
    let options = GatewayOptions::default()
        .with_client_budget_bytes(2 * MIB)
        .with_total_budget_bytes(5 * MIB);
    let (hub, gateway, url) = gateway(options).await;
    let http = reqwest::Client::new();
    let id = session(&http, &url).await;
    // 2 MiB per client: two answers of 0.9 MiB, the other four busy.
    let part = 9 * MIB / 10;
    let (status, _, answers) = post(&http, &url, Some(&id), big_batch(6, part)).await;
    assert_eq!(status, 200);
    assert_eq!(results_and_busy(&answers, part), (2, 4));
    // One answer of 3 MiB, larger than the client's budget but within the
    // total, goes out whole when the client holds nothing else.
    let (status, _, alone) = post(&http, &url, Some(&id), big_batch(1, 3 * MIB)).await;
    assert_eq!(status, 200);
    assert_eq!(results_and_busy(&alone, 3 * MIB), (1, 0));
    // Larger than the total: busy, never buffered.
    let (status, _, too_big) = post(&http, &url, Some(&id), big_batch(1, 6 * MIB)).await;
    assert_eq!(status, 200);
    // A batch of one is answered as a batch (an array of one answer).
    let message = too_big[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("total budget"), "{}", short(&too_big));
    // Everything was sent (or dropped): nothing is held any more.
    let deadline = Instant::now() + HANG;
    while gateway.held_bytes() != 0 {
        assert!(
            Instant::now() < deadline,
            "{} bytes still held",
            gateway.held_bytes()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    hub.close().await;
}
