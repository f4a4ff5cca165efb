//! Requests from the server to the client: `ping` is always answered;
//! `roots/list`, `sampling/createMessage` and `elicitation/create` go to the
//! host's handlers, or get "method not found" when there is none.

mod common;

use std::sync::Arc;

use common::*;
use mcpmux_core::{CallOptions, ClientHandlers, Error, Hub, HubOptions, RequestHandler};
use serde_json::{json, Value};

async fn ask(hub: &Hub, method: &str, params: Value) -> Value {
    let r = hub
        .call_tool(
            "mcp_asker_ask",
            Some(&json!({"method": method, "params": params})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    serde_json::from_str(r.value()["content"][0]["text"].as_str().unwrap()).unwrap()
}

fn handler(f: impl Fn(Value) -> Result<Value, Error> + Send + Sync + 'static) -> RequestHandler {
    let f = Arc::new(f);
    Arc::new(move |req| {
        let f = f.clone();
        Box::pin(async move { f(req.params) })
    })
}

#[tokio::test]
async fn without_handlers_the_client_declines() {
    let hub = Hub::connect(config(&[script_entry("asker", "asks_client.py", "")]))
        .await
        .unwrap();
    let caps = hub
        .call_tool(
            "mcp_asker_client_capabilities",
            None,
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(caps.value()["content"][0]["text"], "{}");
    let pong = hub
        .call_tool("mcp_asker_ping_client", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(pong.value()["content"][0]["text"], r#"{"result": {}}"#);
    for method in [
        "roots/list",
        "sampling/createMessage",
        "elicitation/create",
        "made/up",
    ] {
        let answer = ask(&hub, method, json!({})).await;
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    hub.close().await;
}

#[tokio::test]
async fn host_handlers_answer_and_capabilities_are_declared() {
    let handlers = ClientHandlers {
        roots: Some(handler(|_| {
            Ok(json!({"roots": [{"uri": "file:///work", "name": "work"}]}))
        })),
        sampling: Some(handler(|params| {
            Ok(
                json!({"role": "assistant", "model": "test", "content": {"type": "text", "text": format!("saw {}", params["maxTokens"])}}),
            )
        })),
        elicitation: Some(handler(|_| {
            Err(Error::ServerError {
                code: -1,
                message: "user declined".into(),
                data: None,
            })
        })),
    };
    let options = HubOptions::default().with_handlers(handlers);
    let hub = Hub::connect_with(
        config(&[script_entry("asker", "asks_client.py", "")]),
        options,
    )
    .await
    .unwrap();
    let caps = hub
        .call_tool(
            "mcp_asker_client_capabilities",
            None,
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let caps: Value =
        serde_json::from_str(caps.value()["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(
        caps.get("roots").is_some()
            && caps.get("sampling").is_some()
            && caps.get("elicitation").is_some(),
        "{caps}"
    );

    let roots = ask(&hub, "roots/list", json!({})).await;
    assert_eq!(roots["result"]["roots"][0]["uri"], "file:///work");
    let sampled = ask(
        &hub,
        "sampling/createMessage",
        json!({"messages": [], "maxTokens": 7}),
    )
    .await;
    assert_eq!(sampled["result"]["content"]["text"], "saw 7");
    let declined = ask(&hub, "elicitation/create", json!({"message": "?"})).await;
    assert_eq!(declined["error"]["code"], -1);
    assert_eq!(declined["error"]["message"], "user declined");
    hub.close().await;
}

fn text(result: &mcpmux_core::ToolResult) -> String {
    result.value()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// server-everything asks `roots/list` at connect and again on
/// `notifications/roots/list_changed`; `get-roots-list` shows what it knows.
#[tokio::test]
async fn roots_are_shared_with_server_everything_and_a_change_reaches_it() {
    let everything = everything_entry();
    let roots = mcpmux_core::Roots::new(&["/srv/first-root"]).unwrap();
    let hub = Hub::connect_with(
        config(&[stdio_entry("every", "node", &[&everything, "stdio"], "")]),
        HubOptions::default().with_roots(roots),
    )
    .await
    .unwrap();
    assert!(
        hub.tool("mcp_every_get-roots-list").is_some(),
        "server-everything offers get-roots-list only to a client with roots"
    );
    let opts = CallOptions::default();
    let call = || hub.call_tool("mcp_every_get-roots-list", None, &opts);
    let before = text(&call().await.unwrap());
    assert!(before.contains("file:///srv/first-root"), "{before}");

    hub.set_roots(&["/srv/second-root", "file:///tmp/third"])
        .unwrap();
    assert_eq!(hub.roots().len(), 2);
    // The server asks again after the notification, on its own time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let after = loop {
        let now = text(&call().await.unwrap());
        if now.contains("second-root") || std::time::Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        after.contains("file:///srv/second-root") && after.contains("file:///tmp/third"),
        "{after}"
    );
    assert!(!after.contains("first-root"), "{after}");
    let bad = hub.set_roots(&["https://example.com/"]).unwrap_err();
    assert_eq!(bad.code(), "INVALID_INPUT");
    assert_eq!(hub.roots().len(), 2, "a refused change changes nothing");
    hub.close().await;
}

#[tokio::test]
async fn set_roots_on_a_hub_connected_without_roots_is_invalid_input() {
    let hub = Hub::connect(config(&[script_entry("asker", "asks_client.py", "")]))
        .await
        .unwrap();
    let e = hub.set_roots(&["/a"]).unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("connected without roots"), "{e}");
    hub.close().await;
}

#[tokio::test]
async fn roots_declare_list_changed_and_answer_roots_list() {
    let roots = mcpmux_core::Roots::new(&["/work/a"]).unwrap();
    let hub = Hub::connect_with(
        config(&[script_entry("asker", "asks_client.py", "")]),
        HubOptions::default().with_roots(roots),
    )
    .await
    .unwrap();
    let caps = hub
        .call_tool(
            "mcp_asker_client_capabilities",
            None,
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let caps: Value = serde_json::from_str(&text(&caps)).unwrap();
    assert_eq!(caps, json!({"roots": {"listChanged": true}}));
    let answer = ask(&hub, "roots/list", json!({})).await;
    assert_eq!(
        answer["result"],
        json!({"roots": [{"uri": "file:///work/a", "name": "a"}]})
    );
    hub.close().await;
}

/// A handler that never answers costs the server one error after the
/// server's `timeout_seconds`, not a call that hangs.
#[tokio::test]
async fn a_handler_that_never_answers_is_bounded_by_the_servers_timeout() {
    let handlers = ClientHandlers {
        elicitation: Some(Arc::new(|_| Box::pin(futures::future::pending()))),
        ..ClientHandlers::default()
    };
    let hub = Hub::connect_with(
        config(&[script_entry(
            "asker",
            "asks_client.py",
            "timeout_seconds = 1",
        )]),
        HubOptions::default().with_handlers(handlers),
    )
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let r = hub
        .call_tool(
            "mcp_asker_ask",
            Some(&json!({"method": "elicitation/create", "params": {"message": "?"}})),
            &CallOptions::default().with_timeout(std::time::Duration::from_secs(30)),
        )
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer elicitation/create"),
        "{answer}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    hub.close().await;
}
