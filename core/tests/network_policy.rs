//! The `[network]` policy against hostile servers: URLs into private
//! ranges, a name that resolves to loopback, redirects and OAuth metadata
//! that point at a refused address. Each refusal fails only its server
//! (CONNECT_FAILED naming the server, the host and the address); the demo
//! stdio server in the same hub keeps working. Loopback test servers
//! (`tests/servers/net/faults.py`) are the hostile peers; the other ranges
//! are refused before any packet is sent, so no test reaches them.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::{Config, Hub, ServerStatus};
use serde_json::{json, Value};

/// A JSON config with `network` as its `[network]` table, the demo server
/// (`demo`) and `servers` (name to entry), restarts off.
fn config(network: Value, servers: Value) -> Config {
    let mut all = json!({ "demo": { "command": demo_server() } });
    for (name, entry) in servers.as_object().unwrap() {
        all[name] = entry.clone();
    }
    let mut doc = json!({ "mcp": { "restart": "never" }, "mcpServers": all });
    if !network.is_null() {
        doc["network"] = network;
    }
    Config::parse(&doc.to_string()).expect("valid test config")
}

async fn connect(config: Config) -> Hub {
    tokio::time::timeout(Duration::from_secs(60), Hub::connect(config))
        .await
        .expect("connect hung")
        .unwrap()
}

fn status(hub: &Hub, name: &str) -> ServerStatus {
    hub.servers().into_iter().find(|s| s.name == name).unwrap()
}

/// The error of failed server `name`; the demo server is connected.
fn refusal(hub: &Hub, name: &str) -> String {
    let demo = status(hub, "demo");
    assert_eq!(demo.state, "connected", "{demo:?}");
    let s = status(hub, name);
    assert_eq!(s.state, "failed", "{s:?}");
    assert_eq!(s.error_code, Some("CONNECT_FAILED"), "{s:?}");
    let error = s.error.unwrap();
    assert!(error.contains(&format!("server '{name}'")), "{error}");
    assert!(
        error.contains("refused by the [network] policy"),
        "{name}: {error}"
    );
    error
}

/// A correct minimal Streamable HTTP server on 127.0.0.1.
fn mcp_server() -> NetServer {
    fault_server("500", "call")
}

#[tokio::test]
async fn deny_private_refuses_a_loopback_address_and_sends_nothing() {
    let server = mcp_server();
    let hub = connect(config(
        json!({ "deny_private": true }),
        json!({ "local": { "type": "http", "url": server.http("/mcp") } }),
    ))
    .await;
    let error = refusal(&hub, "local");
    assert!(
        error.contains("connecting to 127.0.0.1 is refused by the [network] policy: 127.0.0.1 is a loopback address"),
        "{error}"
    );
    assert!(!server.output().contains("method"), "{}", server.output());
    hub.close().await;
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused() {
    let server = mcp_server();
    let url = format!("http://localhost:{}/mcp", server.port);
    let hub = connect(config(
        json!({ "deny_private": true }),
        json!({ "named": { "type": "http", "url": url } }),
    ))
    .await;
    let error = refusal(&hub, "named");
    assert!(
        error.contains("connecting to localhost (it resolves to "),
        "{error}"
    );
    assert!(error.contains("loopback"), "{error}");
    assert!(!server.output().contains("method"), "{}", server.output());
    hub.close().await;
}

#[tokio::test]
async fn sse_and_websocket_servers_are_refused_too() {
    let server = mcp_server();
    let hub = connect(config(
        json!({ "deny_private": true }),
        json!({
            "legacy": { "type": "sse", "url": format!("http://localhost:{}/sse", server.port) },
            "socket": { "type": "websocket", "url": server.ws("/") },
        }),
    ))
    .await;
    let legacy = refusal(&hub, "legacy");
    assert!(legacy.contains("localhost (it resolves to "), "{legacy}");
    let socket = refusal(&hub, "socket");
    assert!(socket.contains("connecting to 127.0.0.1"), "{socket}");
    assert!(!server.output().contains("method"), "{}", server.output());
    hub.close().await;
}

#[tokio::test]
async fn a_redirect_to_a_refused_address_is_not_followed() {
    // An allowed server that sends every request elsewhere.
    let target = mcp_server();
    let to_loopback = format!("http://127.0.0.2:{}/mcp", target.port);
    let hostile = net_fixture(
        "faults.py",
        &["--fault", "redirect", "--target", &to_loopback],
    );
    let hub = connect(config(
        json!({ "deny_private": true, "allow_networks": ["127.0.0.1/32"] }),
        json!({ "hop": { "type": "http", "url": hostile.http("/mcp") } }),
    ))
    .await;
    let error = refusal(&hub, "hop");
    assert!(error.contains("127.0.0.2"), "{error}");
    hub.close().await;
}

#[tokio::test]
async fn oauth_metadata_at_a_refused_address_is_not_fetched() {
    let metadata = mcp_server();
    let elsewhere = format!(
        "http://127.0.0.2:{}/.well-known/oauth-protected-resource",
        metadata.port
    );
    let hostile = net_fixture(
        "faults.py",
        &["--fault", "oauth-metadata", "--target", &elsewhere],
    );
    let hub = connect(config(
        json!({ "deny_private": true, "allow_networks": ["127.0.0.1/32"] }),
        json!({ "secure": {
            "type": "http",
            "url": hostile.http("/mcp"),
            "auth": { "type": "oauth", "client_id": "mcpmux-test" },
        } }),
    ))
    .await;
    let s = status(&hub, "secure");
    assert_eq!(s.state, "failed", "{s:?}");
    let error = s.error.unwrap();
    assert!(
        error.contains("server 'secure'") && error.contains("127.0.0.2"),
        "{error}"
    );
    assert!(error.contains("refused by the [network] policy"), "{error}");
    assert!(
        !metadata.output().contains("method"),
        "{}",
        metadata.output()
    );
    hub.close().await;
}

#[tokio::test]
async fn require_https_refuses_cleartext_and_deny_private_takes_loopback_s_exception() {
    let server = mcp_server();
    let hub = connect(config(
        json!({ "require_https": true, "deny_private": true, "allow_networks": ["127.0.0.0/8"] }),
        json!({ "plain": { "type": "http", "url": server.http("/mcp") } }),
    ))
    .await;
    let error = refusal(&hub, "plain");
    assert!(error.contains("require_https"), "{error}");
    hub.close().await;
}

#[tokio::test]
async fn allowed_networks_and_loopback_http_under_require_https_connect() {
    let server = mcp_server();
    let hub = connect(config(
        json!({ "deny_private": true, "allow_networks": ["127.0.0.0/8"] }),
        json!({
            "listed": { "type": "http", "url": server.http("/mcp") },
        }),
    ))
    .await;
    assert_eq!(status(&hub, "listed").state, "connected");
    assert!(!hub.list_tools().is_empty());
    hub.close().await;
    let hub = connect(config(
        json!({ "require_https": true }),
        json!({ "local": { "type": "http", "url": format!("http://localhost:{}/mcp", server.port) } }),
    ))
    .await;
    assert_eq!(status(&hub, "local").state, "connected");
    hub.close().await;
}

#[tokio::test]
async fn without_a_network_table_nothing_changes() {
    let server = mcp_server();
    let hub = connect(config(
        Value::Null,
        json!({ "local": { "type": "http", "url": server.http("/mcp") } }),
    ))
    .await;
    assert_eq!(status(&hub, "local").state, "connected");
    hub.close().await;
}

#[tokio::test]
async fn urls_into_every_private_range_are_refused_before_connecting() {
    let targets = [
        (
            "r10",
            "http",
            "http://10.0.0.1:9/mcp",
            "10.0.0.1 is a private",
        ),
        (
            "r172",
            "http",
            "http://172.16.0.1:9/mcp",
            "172.16.0.1 is a private",
        ),
        (
            "r192",
            "http",
            "http://192.168.0.1:9/mcp",
            "192.168.0.1 is a private",
        ),
        (
            "metadata",
            "http",
            "http://169.254.169.254/latest/meta-data",
            "169.254.169.254 is a link-local",
        ),
        (
            "cgnat",
            "http",
            "http://100.64.0.1:9/mcp",
            "100.64.0.1 is a shared address space (CGNAT)",
        ),
        (
            "zero",
            "http",
            "http://0.0.0.0:9/mcp",
            "0.0.0.0 is an unspecified",
        ),
        (
            "multicast",
            "http",
            "http://224.0.0.1:9/mcp",
            "224.0.0.1 is a multicast",
        ),
        ("v6loop", "http", "http://[::1]:9/mcp", "::1 is a loopback"),
        (
            "ula",
            "http",
            "http://[fd00::1]:9/mcp",
            "fd00::1 is a unique-local",
        ),
        (
            "v6link",
            "http",
            "http://[fe80::1]:9/mcp",
            "fe80::1 is a link-local",
        ),
        ("v6any", "http", "http://[::]:9/mcp", ":: is an unspecified"),
        (
            "mapped",
            "http",
            "http://[::ffff:169.254.169.254]/mcp",
            "::ffff:169.254.169.254 is a link-local address (IPv4 in IPv6)",
        ),
        (
            "sse10",
            "sse",
            "http://10.0.0.1:9/sse",
            "10.0.0.1 is a private",
        ),
        (
            "ws10",
            "websocket",
            "ws://10.0.0.1:9/",
            "10.0.0.1 is a private",
        ),
        (
            "wsmeta",
            "websocket",
            "ws://169.254.169.254/",
            "169.254.169.254 is a link-local",
        ),
    ];
    let mut servers = json!({});
    for (name, kind, url, _) in targets {
        servers[name] = json!({ "type": kind, "url": url });
    }
    let hub = connect(config(json!({ "deny_private": true }), servers)).await;
    for (name, _, _, expected) in targets {
        let error = refusal(&hub, name);
        assert!(error.contains(expected), "{name}: {error}");
    }
    hub.close().await;
}

#[tokio::test]
async fn redirects_into_private_ranges_are_refused() {
    for target in [
        "http://10.0.0.1:9/mcp",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1:9/mcp",
        "http://[fd00::1]:9/mcp",
        "http://[::ffff:192.168.0.1]:9/mcp",
    ] {
        let hostile = net_fixture("faults.py", &["--fault", "redirect", "--target", target]);
        let hub = connect(config(
            json!({ "deny_private": true, "allow_networks": ["127.0.0.1"] }),
            json!({ "hop": { "type": "http", "url": hostile.http("/mcp") } }),
        ))
        .await;
        let error = refusal(&hub, "hop");
        let host = match url::Url::parse(target).unwrap().host().unwrap() {
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
            url::Host::Domain(d) => d.to_owned(),
        };
        assert!(
            error.contains(&format!("connecting to {host} is refused")),
            "{target}: {error}"
        );
        hub.close().await;
    }
}

#[tokio::test]
async fn the_host_option_refuses_like_the_config_and_adds_up_with_it() {
    use mcpmux_core::{HubOptions, NetworkPolicy};
    let server = mcp_server();
    let entry = json!({ "local": { "type": "http", "url": server.http("/mcp") } });
    let deny = NetworkPolicy::new().with_deny_private(true);
    let hub = Hub::connect_with(
        config(Value::Null, entry.clone()),
        HubOptions::new().with_network(deny.clone()),
    )
    .await
    .unwrap();
    refusal(&hub, "local");
    hub.close().await;
    // The config's allowed network is an exception to the host's refusal.
    let hub = Hub::connect_with(
        config(json!({ "allow_networks": ["127.0.0.0/8"] }), entry.clone()),
        HubOptions::new().with_network(deny),
    )
    .await
    .unwrap();
    assert_eq!(status(&hub, "local").state, "connected");
    hub.close().await;
    // The host's allowed network, the config's refusal.
    let allow =
        NetworkPolicy::from_options(false, &["127.0.0.1/32"], false, "allow_networks").unwrap();
    let hub = Hub::connect_with(
        config(json!({ "deny_private": true }), entry),
        HubOptions::new().with_network(allow),
    )
    .await
    .unwrap();
    assert_eq!(status(&hub, "local").state, "connected");
    hub.close().await;
}

#[test]
fn the_network_table_is_checked_at_load() {
    let base = "[[mcp.servers]]\nname = \"a\"\nurl = \"https://example.com/mcp\"\n";
    let load = |table: &str| Config::parse(&format!("{table}\n{base}"));
    let config = load(
        "[network]\ndeny_private = true\nallow_networks = [\"10.1.2.0/24\", \"fd00::/8\"]\nrequire_https = true",
    )
    .unwrap();
    assert!(config.network.deny_private && config.network.require_https);
    assert_eq!(config.network.allow_networks.len(), 2);
    assert!(Config::parse(base).unwrap().network.is_off());
    for (table, expected) in [
        (
            "[network]\ndeny_privat = true",
            "unknown key 'deny_privat' (did you mean 'deny_private'?)",
        ),
        (
            "[network]\nallow_network = []",
            "did you mean 'allow_networks'?",
        ),
        (
            "[network]\ndeny_private = \"yes\"",
            "[network]: 'deny_private' must be true or false",
        ),
        (
            "[network]\nrequire_https = 1",
            "'require_https' must be true or false",
        ),
        (
            "[network]\nallow_networks = \"10.0.0.0/8\"",
            "'allow_networks' must be an array",
        ),
        (
            "[network]\nallow_networks = [\"10.1.2.0/33\"]",
            "allow_networks[0] '10.1.2.0/33'",
        ),
        (
            "[network]\nallow_networks = [\"ten\"]",
            "not an IP address or network",
        ),
        (
            "[network]\nallow_networks = [8]",
            "allow_networks[0] must be a string",
        ),
        ("network = 1", "'network' must be a table"),
        ("[netwrk]\ndeny_private = true", "did you mean 'network'?"),
    ] {
        let e = load(table)
            .err()
            .unwrap_or_else(|| panic!("{table}: loaded"));
        assert_eq!(e.code(), "CONFIG_INVALID", "{table}");
        assert!(e.to_string().contains(expected), "{table}: {e}");
    }
    // JSON: the same table, as an object.
    let json = Config::parse(
        r#"{"network": {"deny_private": true, "allow_networks": ["127.0.0.1"]}, "mcpServers": {"a": {"url": "https://example.com/mcp"}}}"#,
    )
    .unwrap();
    assert!(json.network.deny_private);
    assert_eq!(json.network.allow_networks[0].to_string(), "127.0.0.1/32");
}
