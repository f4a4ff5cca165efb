//! Where the network policy ([`super::policy`]) is applied at connect
//! time: the address that is checked is the address connected to, so a
//! name that resolves to a private address is refused, and a name that
//! resolves elsewhere between a check and the connect (DNS rebinding)
//! cannot slip through.
//!
//! - [`Resolver`]: reqwest's DNS resolver for the clients of a policy; it
//!   resolves, drops the refused addresses and fails when none is left.
//!   reqwest connects to an IP-literal host without asking a resolver:
//!   those are checked on the URL ([`super::Http`] before each request,
//!   the redirect rule on each hop).
//! - [`GuardedConnector`]: the connector of the direct Streamable HTTP
//!   client ([`super::direct`]), which checks both kinds of host.
//! - [`connect_tcp`]: one checked TCP connection (the WebSocket transport's).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::policy::{NetworkPolicy, Refused};

/// The error type of resolvers and connectors.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The addresses of `host` (a name, or an IP address without brackets)
/// on `port` that `policy` lets through, in resolver order; a [`Refused`]
/// when it resolves only to refused addresses.
pub(crate) async fn resolve(
    policy: &NetworkPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, BoxError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let all: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host, port)).await?.collect(),
    };
    let mut first_refused = None;
    let allowed: Vec<SocketAddr> = all
        .into_iter()
        .filter(|a| match policy.refusal(a.ip()) {
            None => true,
            Some(range) => {
                first_refused.get_or_insert_with(|| Refused::address(host, a.ip(), range));
                false
            }
        })
        .collect();
    match (allowed.is_empty(), first_refused) {
        (true, Some(refused)) => Err(Box::new(refused)),
        (true, None) => Err(format!("{host}: no address found").into()),
        (false, _) => Ok(allowed),
    }
}

/// How many policies' own clients of each kind are kept for reuse.
pub(crate) const MAX_KEPT_POLICIES: usize = 16;

/// `builder` under `policy`: when it checks addresses (`deny_private`),
/// names resolve through it and no proxy is used (a proxy would resolve
/// them itself, out of the policy's sight). IP-literal hosts still need
/// `NetworkPolicy::check_url` before each request and on each redirect
/// hop. Unchanged otherwise.
pub fn checked_builder(
    builder: reqwest::ClientBuilder,
    policy: &NetworkPolicy,
) -> reqwest::ClientBuilder {
    if !policy.deny_private {
        return builder;
    }
    builder
        .no_proxy()
        .dns_resolver(Arc::new(Resolver(Arc::new(policy.clone()))))
}

/// The client of kind `kind` (`"engine"`, `"llm"`: clients with different
/// settings) kept for `policy`, made by `make` on first use. At most
/// `MAX_KEPT_POLICIES` are kept per process; past that a new one is made
/// each time.
pub fn kept_client(
    kind: &'static str,
    policy: &NetworkPolicy,
    make: impl FnOnce() -> Option<reqwest::Client>,
) -> Option<reqwest::Client> {
    type Kept = std::sync::Mutex<Vec<(&'static str, NetworkPolicy, reqwest::Client)>>;
    static KEPT: std::sync::OnceLock<Kept> = std::sync::OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    let found = kept
        .lock()
        .unwrap()
        .iter()
        .find(|(k, p, _)| *k == kind && p == policy)
        .map(|(_, _, c)| c.clone());
    if found.is_some() {
        return found;
    }
    let made = make()?;
    let mut kept = kept.lock().unwrap();
    if kept.len() < MAX_KEPT_POLICIES * 2 {
        kept.push((kind, policy.clone(), made.clone()));
    }
    Some(made)
}

/// A client that can reach nothing but what `policy` allows and follows
/// no redirect: what stands in if a policy's own client cannot be built
/// (never with these settings), since the shared, unchecked client must
/// not.
pub fn refusing_client(policy: &NetworkPolicy) -> reqwest::Client {
    checked_builder(
        super::builder().redirect(reqwest::redirect::Policy::none()),
        &policy.clone().with_deny_private(true),
    )
    .build()
    .unwrap_or_default()
}

/// reqwest's resolver for the clients of one policy.
pub(crate) struct Resolver(pub(crate) Arc<NetworkPolicy>);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let addrs = resolve(&policy, name.as_str(), 0).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// One TCP connection to `host:port` (`host` a name or an IP address),
/// to the first address `policy` lets through that answers within
/// `timeout` each, with Nagle off.
pub(crate) async fn connect_tcp(
    policy: &NetworkPolicy,
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<TcpStream, BoxError> {
    let mut last: Option<BoxError> = None;
    for addr in resolve(policy, host, port).await? {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => last = Some(Box::new(e)),
            Err(_) => last = Some(format!("connecting to {addr} timed out").into()),
        }
    }
    Err(last.unwrap_or_else(|| format!("{host}: no address found").into()))
}

/// The direct client's connector under a policy: without `deny_private`
/// it is hyper-util's own; with it, the host is resolved and checked here
/// and hyper-util connects to each address that passes, in turn. TLS
/// (hyper-rustls, above it) still verifies the name the URL gave.
#[derive(Clone)]
pub(crate) struct GuardedConnector {
    pub(crate) http: HttpConnector,
    pub(crate) policy: Arc<NetworkPolicy>,
}

type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<TcpStream>, BoxError>> + Send>>;

impl tower_service::Service<hyper::Uri> for GuardedConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: hyper::Uri) -> Connecting {
        let mut http = self.http.clone();
        if !self.policy.deny_private {
            return Box::pin(async move { http.call(dst).await.map_err(Into::into) });
        }
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = dst.host().ok_or("the URL has no host")?.to_owned();
            let https = dst.scheme_str() == Some("https");
            let port = dst.port_u16().unwrap_or(if https { 443 } else { 80 });
            let mut last: Option<BoxError> = None;
            for addr in resolve(&policy, &host, port).await? {
                // hyper-util connects to an address without resolving it.
                let uri = hyper::Uri::builder()
                    .scheme("http")
                    .authority(addr.to_string())
                    .path_and_query("/")
                    .build()?;
                match http.call(uri).await {
                    Ok(stream) => return Ok(stream),
                    Err(e) => last = Some(e.into()),
                }
            }
            Err(last.unwrap_or_else(|| format!("{host}: no address found").into()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn resolved_addresses_are_filtered_and_a_name_with_none_left_is_refused() {
        let off = NetworkPolicy::default();
        let all = resolve(&off, "localhost", 80).await.unwrap();
        assert!(all.iter().any(|a| a.ip().is_loopback()), "{all:?}");
        let deny = NetworkPolicy::new().with_deny_private(true);
        let e = resolve(&deny, "localhost", 80).await.unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("connecting to localhost (it resolves to "),
            "{m}"
        );
        assert!(e.downcast_ref::<Refused>().is_some());
        let only_v4 = deny
            .clone()
            .with_allow_networks(["127.0.0.1/32".parse().unwrap()]);
        let kept = resolve(&only_v4, "localhost", 80).await.unwrap();
        assert!(
            kept.iter().all(|a| a.ip() == IpAddr::from([127, 0, 0, 1])),
            "{kept:?}"
        );
        // An IP literal is judged as it is, without a lookup.
        assert!(resolve(&deny, "[::1]", 80).await.is_err());
        assert_eq!(resolve(&off, "[::1]", 80).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_checked_tcp_connection_reaches_only_allowed_addresses() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let deny = NetworkPolicy::new().with_deny_private(true);
        let e = connect_tcp(&deny, "127.0.0.1", port, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(e.downcast_ref::<Refused>().is_some(), "{e}");
        let allowed = deny.with_allow_networks(["127.0.0.0/8".parse().unwrap()]);
        connect_tcp(&allowed, "localhost", port, Duration::from_secs(5))
            .await
            .unwrap();
    }
}
