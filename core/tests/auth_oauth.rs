//! OAuth against a real authorization server and protected MCP endpoint
//! (`tests/servers/net/oauth_server.py`, standard library Python): an
//! expired access token is refreshed mid-session, a revoked refresh token
//! ends in AUTH_REQUIRED (not a loop), a token file others can read is
//! refused, and concurrent calls that all meet a 401 share one
//! authorization. The person in the loop is a handler that follows the
//! authorization server's immediate redirect, as a browser would.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::future::BoxFuture;
use mcpmux_core::auth::{Credentials, TokenSet};
use mcpmux_core::{
    AuthOptions, AuthorizationHandler, AuthorizationRequest, CallOptions, Config, Error,
    FileTokenStore, Hub, HubOptions, MemoryTokenStore, TokenStore,
};
use serde_json::{json, Value};

/// Approves at once: fetches the authorization URL and returns where the
/// server redirects. Counts how often it was asked.
#[derive(Default)]
struct Browser {
    asked: AtomicUsize,
}

impl AuthorizationHandler for Browser {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, Error>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let response = http
                .get(&request.url)
                .send()
                .await
                .map_err(|e| Error::AuthFailed(e.to_string()))?;
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| Error::AuthFailed("no redirect".into()))?;
            Ok(location.to_owned())
        })
    }
}

fn oauth_config(server: &NetServer) -> Config {
    Config::parse(
        &json!({ "mcpServers": { "secure": {
            "url": server.http("/mcp"),
            "timeout_seconds": 20,
            "auth": { "type": "oauth", "redirect_uri": "http://127.0.0.1:9/callback" }
        } } })
        .to_string(),
    )
    .unwrap()
}

async fn connect(
    server: &NetServer,
    handler: Option<Arc<Browser>>,
    store: Arc<dyn TokenStore>,
) -> Hub {
    let options = HubOptions::default().with_auth(AuthOptions {
        handler: handler.map(|h| h as Arc<dyn AuthorizationHandler>),
        store: Some(store),
    });
    tokio::time::timeout(
        Duration::from_secs(30),
        Hub::connect_with(oauth_config(server), options),
    )
    .await
    .expect("connect hangs")
    .unwrap()
}

async fn stats(server: &NetServer) -> Value {
    let body = reqwest::get(server.http("/admin/stats"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    serde_json::from_slice(&body).unwrap()
}

async fn revoke(server: &NetServer) {
    reqwest::Client::new()
        .post(server.http("/admin/revoke"))
        .send()
        .await
        .unwrap();
}

async fn echo(hub: &Hub, n: u64) -> Result<String, Error> {
    let args = json!({ "n": n });
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        hub.call_tool("mcp_secure_echo", Some(&args), &CallOptions::default()),
    )
    .await
    .expect("call hangs")?;
    Ok(result.value()["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned())
}

fn state(hub: &Hub) -> (String, Option<&'static str>, String) {
    let s = hub.servers().into_iter().next().unwrap();
    (
        s.state.to_string(),
        s.error_code,
        s.error.unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_access_token_is_refreshed_mid_session() {
    let server = net_fixture("oauth_server.py", &["--expires-in", "3"]);
    let browser = Arc::new(Browser::default());
    let hub = connect(
        &server,
        Some(browser.clone()),
        Arc::new(MemoryTokenStore::default()),
    )
    .await;
    assert_eq!(state(&hub).0, "connected", "{:?}", state(&hub));
    assert_eq!(echo(&hub, 1).await.unwrap(), r#"{"n":1}"#);
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(echo(&hub, 2).await.unwrap(), r#"{"n":2}"#);
    let s = stats(&server).await;
    assert_eq!(s["authorize"], 1, "{s}");
    assert_eq!(s["token_code"], 1, "{s}");
    assert!(s["token_refresh"].as_u64().unwrap() >= 1, "no refresh: {s}");
    assert_eq!(browser.asked.load(Ordering::SeqCst), 1);
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_refresh_token_gives_auth_required_not_a_loop() {
    let server = net_fixture("oauth_server.py", &[]);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn TokenStore> = Arc::new(FileTokenStore::new(dir.path()));
    let hub = connect(&server, Some(Arc::new(Browser::default())), store.clone()).await;
    assert_eq!(state(&hub).0, "connected", "{:?}", state(&hub));
    hub.close().await;
    let saved = store.load("secure").unwrap().expect("credentials stored");
    let token = saved.token.clone().unwrap();
    assert!(token.refresh_token.is_some());
    // The file never shows up in errors or debug output.
    assert!(!format!("{saved:?}").contains(&token.access_token));

    revoke(&server).await;
    // A host without a handler: nobody can be asked.
    let hub = connect(&server, None, store.clone()).await;
    let (st, code, message) = state(&hub);
    // Failed, not restarting under the default `restart = "on-failure"`: a
    // restart cannot log in.
    assert_eq!(st, "failed");
    assert_eq!(code, Some("AUTH_REQUIRED"), "{message}");
    assert!(
        !message.contains(&token.access_token)
            && !message.contains(token.refresh_token.as_deref().unwrap())
    );
    let e = echo(&hub, 1).await.unwrap_err();
    assert!(matches!(e.code(), "UNKNOWN_TOOL" | "AUTH_REQUIRED"), "{e}");
    let s = stats(&server).await;
    assert_eq!(s["refresh_refused"], 1, "{s}");
    assert_eq!(s["authorize"], 1, "{s}");
    assert!(s["mcp_401"].as_u64().unwrap() <= 3, "a loop: {s}");
    assert!(
        store.load("secure").unwrap().unwrap().token.is_none(),
        "the dead tokens are forgotten"
    );
    hub.close().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let server = net_fixture("oauth_server.py", &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = FileTokenStore::new(dir.path());
    store
        .save(
            "secure",
            &Credentials {
                server_url: Some(server.http("/mcp")),
                token: Some(TokenSet {
                    access_token: "at-leaked".into(),
                    token_type: "Bearer".into(),
                    ..TokenSet::default()
                }),
                ..Credentials::default()
            },
        )
        .unwrap();
    std::fs::set_permissions(store.path("secure"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let browser = Arc::new(Browser::default());
    let hub = connect(&server, Some(browser.clone()), Arc::new(store)).await;
    let (st, code, message) = state(&hub);
    assert_eq!(st, "failed");
    assert_eq!(code, Some("AUTH_FAILED"), "{message}");
    assert!(message.contains("group or others"), "{message}");
    assert!(!message.contains("at-leaked"), "{message}");
    let s = stats(&server).await;
    assert_eq!(s["mcp_ok"], 0, "the token of an unsafe file was used: {s}");
    assert_eq!(browser.asked.load(Ordering::SeqCst), 0);
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_401s_trigger_one_authorization() {
    let server = net_fixture("oauth_server.py", &[]);
    let browser = Arc::new(Browser::default());
    let hub = connect(
        &server,
        Some(browser.clone()),
        Arc::new(MemoryTokenStore::default()),
    )
    .await;
    assert_eq!(state(&hub).0, "connected", "{:?}", state(&hub));
    assert_eq!(browser.asked.load(Ordering::SeqCst), 1);
    revoke(&server).await;
    let calls = (0..8).map(|n| echo(&hub, n));
    for (n, result) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(result.unwrap(), format!(r#"{{"n":{n}}}"#));
    }
    let s = stats(&server).await;
    assert_eq!(browser.asked.load(Ordering::SeqCst), 2, "{s}");
    assert_eq!(s["authorize"], 2, "{s}");
    assert_eq!(s["token_code"], 2, "{s}");
    assert_eq!(
        s["refresh_refused"], 1,
        "one refresh attempt, not one per call: {s}"
    );
    hub.close().await;
}

/// OAuth 2.1 never over cleartext: metadata that names a plain `http`
/// authorization server or endpoint off loopback is refused with
/// AUTH_FAILED naming the field and URL, before the person is asked and
/// before a code or client registration goes anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleartext_authorization_endpoints_are_refused() {
    for (field, url) in [
        ("authorization_servers", "http://auth.evil.example/"),
        (
            "authorization_endpoint",
            "http://auth.evil.example/authorize",
        ),
        ("token_endpoint", "http://auth.evil.example/token"),
        ("registration_endpoint", "http://auth.evil.example/register"),
    ] {
        let server = net_fixture("oauth_server.py", &["--cleartext", field]);
        let browser = Arc::new(Browser::default());
        let hub = connect(
            &server,
            Some(browser.clone()),
            Arc::new(MemoryTokenStore::default()),
        )
        .await;
        let (st, code, message) = state(&hub);
        assert_eq!(st, "failed", "{field}: {message}");
        assert_eq!(code, Some("AUTH_FAILED"), "{field}: {message}");
        assert!(
            message.contains(field) && message.contains(url) && message.contains("https"),
            "{field}: {message}"
        );
        let s = stats(&server).await;
        assert_eq!(browser.asked.load(Ordering::SeqCst), 0, "{field}: {s}");
        assert_eq!(s["authorize"], 0, "{field}: {s}");
        assert_eq!(s["register"], 0, "{field}: {s}");
        assert_eq!(s["token_code"], 0, "{field}: {s}");
        hub.close().await;
    }
}

#[test]
fn auth_config_shapes_and_errors() {
    let toml = r#"
        [[mcp.servers]]
        name = "gh"
        type = "http"
        url = "https://mcp.example.com/mcp"
        [mcp.servers.auth]
        type = "oauth"
        client_id = "abc"
        scopes = ["repo", "read:org"]

        [[mcp.servers]]
        name = "fixed"
        type = "http"
        url = "https://mcp.example.com/mcp"
        [mcp.servers.auth]
        type = "bearer"
        token = "${MY_TOKEN:-t0ken}"
    "#;
    let config = Config::parse(toml).unwrap();
    let fixed = config.server("fixed").unwrap();
    match &fixed.transport {
        mcpmux_core::TransportConfig::Http(n) => {
            assert_eq!(
                n.headers.get("Authorization").map(String::as_str),
                Some("Bearer t0ken")
            );
        }
        _ => panic!("http"),
    }
    assert!(!format!("{fixed:?}").contains("t0ken"));
    let json = r#"{ "mcpServers": { "h": { "url": "https://x/mcp",
        "auth": { "type": "header", "name": "X-Api-Key", "value": "k" } } } }"#;
    Config::parse(json).unwrap();
    for (bad, field) in [
        (r#"{"type": "magic"}"#, "auth.type"),
        (r#"{"type": "bearer"}"#, "auth.token"),
        (
            r#"{"type": "oauth", "client_secrt": "x"}"#,
            "auth.client_secrt",
        ),
        (
            r#"{"type": "oauth", "grant_type": "client_credentials"}"#,
            "auth.client_id",
        ),
        (
            r#"{"type": "oauth", "client_metadata_url": "not a url"}"#,
            "auth.client_metadata_url",
        ),
    ] {
        let text = format!(
            r#"{{ "mcpServers": {{ "s": {{ "url": "https://x/mcp", "auth": {bad} }} }} }}"#
        );
        let e = Config::parse(&text).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        let m = e.to_string();
        assert!(m.contains("server 's'") && m.contains(field), "{m}");
    }
}
