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
