//! `resources/subscribe` and `unsubscribe` for a URI that no server lists
//! (a resource made on the fly, as the conformance suite's
//! `test://watched-resource`): the only server with resources gets it; with
//! several, the servers whose resource templates match it; else every
//! server that declares `resources.subscribe`.

mod common;

use common::*;
use mcpmux_core::client::CallOptions;
use mcpmux_core::Hub;

/// A `tests/servers/subscriber.py` entry (bare python3, stdlib only).
fn subscriber(name: &str, templates: &str, subscribes: bool) -> String {
    stdio_entry(
        name,
        "python3",
        &[&server_script("subscriber.py")],
        &format!(
            "env = {{ SERVER_NAME = {}, TEMPLATES = {}, SUBSCRIBE = {} }}",
            q(name),
            q(templates),
            q(if subscribes { "1" } else { "0" })
        ),
    )
}

/// What server `name` recorded, one `subscribe <uri>` line each.
async fn record(hub: &Hub, name: &str) -> String {
    let result = hub
        .call_tool(
            &format!("mcp_{name}_subscriptions"),
            None,
            &CallOptions::default(),
        )
        .await
        .unwrap();
    result.value()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlisted_uri_goes_to_the_only_server() {
    let hub = Hub::connect(config(&[subscriber("one", "", true)]))
        .await
        .unwrap();
    hub.subscribe("test://watched-resource", None)
        .await
        .expect("the only server takes a subscription to a URI it does not list");
    hub.unsubscribe("test://watched-resource", None)
        .await
        .unwrap();
    assert_eq!(
        record(&hub, "one").await,
        "subscribe test://watched-resource\nunsubscribe test://watched-resource"
    );
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlisted_uri_goes_to_matching_templates_else_every_subscriber() {
    let hub = Hub::connect(config(&[
        subscriber("alpha", "watch://{id}", true),
        subscriber("beta", "other://{+path}", true),
        subscriber("gamma", "", false),
    ]))
    .await
    .unwrap();
    // A listed URI goes to its server, as before.
    hub.subscribe("listed://beta", None).await.unwrap();
    // A template of alpha's matches.
    hub.subscribe("watch://7", None).await.unwrap();
    // No template matches: every server that can subscribe.
    hub.subscribe("test://watched-resource", None)
        .await
        .unwrap();
    hub.unsubscribe("test://watched-resource", None)
        .await
        .unwrap();
    assert_eq!(
        record(&hub, "alpha").await,
        "subscribe watch://7\nsubscribe test://watched-resource\nunsubscribe test://watched-resource"
    );
    assert_eq!(
        record(&hub, "beta").await,
        "subscribe listed://beta\nsubscribe test://watched-resource\nunsubscribe test://watched-resource"
    );
    // Naming a server that cannot subscribe is still refused.
    let e = hub
        .subscribe("test://watched-resource", Some("gamma"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT", "{e}");
    assert!(e.to_string().contains("gamma"), "{e}");
    hub.close().await;
}
