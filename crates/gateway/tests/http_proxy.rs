//! A proxy named in the environment carries every Streamable HTTP request,
//! the POSTs included (which, without a proxy, go on hyper directly rather
//! than through reqwest). A test binary of its own: the environment is read
//! once per process.

use mcpmux_test_support as common;

use std::time::Duration;

use common::*;
use mcpmux_core::{CallOptions, Hub};
use mcpmux_gateway::{serve_http, Gateway, GatewayOptions, HttpOptions};
use mcpmux_policy::SessionPolicy;
use serde_json::json;

/// `common::config` with the policy's (and the sessions') config keys
/// registered, as every front end has them.
fn config(entries: &[String]) -> mcpmux_core::Config {
    mcpmux_sessions::register_config_layers();
    common::config(entries)
}

#[tokio::test]
async fn a_proxy_in_the_environment_carries_streamable_http() {
    // The "proxy" is a gateway over the demo server: a forward proxy gets
    // `POST http://mcp.invalid/mcp HTTP/1.1`, and hyper's server routes
    // that absolute-form target by its path. `mcp.invalid` never resolves
    // (RFC 6761), so a request that did not go through the proxy fails.
    let behind = Hub::connect(config(&[demo_entry("demo", "allow_all = true")]))
        .await
        .unwrap();
    let policy = SessionPolicy::for_hub(&behind, None, None).unwrap();
    let gateway = Gateway::new(behind.clone(), policy, GatewayOptions::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    // The proxied requests name `mcp.invalid` as their Host.
    let options = HttpOptions::default()
        .with_max_message_bytes(1 << 20)
        .with_allowed_hosts(vec!["mcp.invalid".into()]);
    tokio::spawn(serve_http(gateway, listener, options));

    // Set before the first HTTP request of this process, which is when
    // mcpmux reads it. No other test runs in this binary.
    std::env::set_var("HTTP_PROXY", &proxy);
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");

    let hub = tokio::time::timeout(
        Duration::from_secs(60),
        Hub::connect(config(&[net_entry(
            "far",
            "http",
            "http://mcp.invalid/mcp",
            "",
        )])),
    )
    .await
    .expect("connect hangs")
    .expect("connects through the proxy");
    let status = hub.servers().into_iter().find(|s| s.name == "far").unwrap();
    assert_eq!(status.state, "connected", "{status:?}");

    let echo = hub
        .list_tools()
        .into_iter()
        .find(|t| t.tool.ends_with("echo"))
        .expect("the demo server's echo tool, through the gateway");
    let options = CallOptions::default().with_timeout(Duration::from_secs(30));
    for i in 0..20 {
        let text = format!("through the proxy {i}");
        let result = hub
            .call_tool(&echo.name, Some(&json!({ "text": text })), &options)
            .await
            .expect("a call through the proxy");
        assert!(!result.is_error(), "{result:?}");
        assert!(result.json().contains(&text), "{result:?}");
    }
    hub.close().await;
    behind.close().await;
}
