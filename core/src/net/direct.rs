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

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

/// The pooled client of this path: keep-alive connections shared by every
/// Streamable HTTP server of the process, like reqwest's.
pub(crate) type DirectClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

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
pub(crate) fn client() -> Option<&'static DirectClient> {
    static CLIENT: OnceLock<Option<DirectClient>> = OnceLock::new();
    CLIENT.get_or_init(build).as_ref()
}

fn build() -> Option<DirectClient> {
    if PROXY_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
    {
        return None;
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_secs(30)));
    let https = match hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
    {
        Ok(builder) => builder
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http),
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
