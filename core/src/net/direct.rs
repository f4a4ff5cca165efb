//! The Streamable HTTP transport's POSTs on hyper-util's pooled client
//! directly. reqwest stays the client for everything else (GET streams,
//! DELETE, OAuth, the LLM providers) and for what this path hands back:
//!
//! - with many calls in flight, reqwest's per-request layers (its redirect
//!   and retry services, URL handling, response wrapping) were about a fifth
//!   of the client's CPU time per call; this path builds the request from a
//!   URI parsed once per server and sends it on the same kind of pool;
//! - a redirect answer is sent again through reqwest, which follows it to
//!   the same origin only ([`super::client`]); the caller does that;
//! - when the environment names a proxy (`HTTP_PROXY`, `HTTPS_PROXY`,
//!   `ALL_PROXY`, lower case too), which reqwest honours and this client
//!   does not, [`client`] is `None` and reqwest sends everything.
//!
//! TLS is rustls with the same roots as reqwest's (webpki), through
//! hyper-rustls, HTTP/1.1 or HTTP/2 by ALPN.
//!
//! Under a network policy that checks addresses, the client is one of
//! that policy's own, connecting through [`GuardedConnector`]; no proxy is
//! used then (as with reqwest's client of that policy).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::guard::GuardedConnector;
use super::policy::NetworkPolicy;

/// The pooled client of this path: keep-alive connections shared by every
/// Streamable HTTP server of the process (of its policy), like reqwest's.
pub(crate) type DirectClient = Client<HttpsConnector<GuardedConnector>, Full<Bytes>>;

/// The environment variables naming a proxy that reqwest would use.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The process-wide client, made on first use; `None` when a proxy is
/// configured in the environment (reqwest then sends every request) or
/// when TLS cannot be set up.
pub(crate) fn client() -> Option<DirectClient> {
    static CLIENT: OnceLock<Option<DirectClient>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let proxied = PROXY_VARIABLES
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
            if proxied {
                return None;
            }
            build(&NetworkPolicy::default())
        })
        .clone()
}

/// The client for requests under `policy`: the process-wide one unless
/// the policy checks addresses (`deny_private`); then one of its own (kept
/// for the next hub with that policy, a few at most), whatever proxy the
/// environment names, which that policy does not use.
pub(crate) fn client_for(policy: &NetworkPolicy) -> Option<DirectClient> {
    if !policy.deny_private {
        return client();
    }
    type Kept = std::sync::Mutex<Vec<(NetworkPolicy, DirectClient)>>;
    static KEPT: OnceLock<Kept> = OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    if let Some((_, c)) = kept.lock().unwrap().iter().find(|(p, _)| p == policy) {
        return Some(c.clone());
    }
    let made = build(policy)?;
    let mut kept = kept.lock().unwrap();
    if kept.len() < super::guard::MAX_KEPT_POLICIES {
        kept.push((policy.clone(), made.clone()));
    }
    Some(made)
}

fn build(policy: &NetworkPolicy) -> Option<DirectClient> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_secs(30)));
    let guarded = GuardedConnector {
        http,
        policy: Arc::new(policy.clone()),
    };
    let https = match hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
    {
        Ok(builder) => builder
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(guarded),
        Err(e) => {
            tracing::debug!("direct HTTP client off, TLS setup failed: {e}");
            return None;
        }
    };
    Some(
        Client::builder(TokioExecutor::new())
            .pool_idle_timeout(super::POOL_IDLE_TIMEOUT)
            .pool_max_idle_per_host(super::POOL_MAX_IDLE_PER_HOST)
            .pool_timer(TokioTimer::new())
            .build(https),
    )
}
