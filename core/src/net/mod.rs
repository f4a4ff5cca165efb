//! The shared HTTP client, below every module that speaks HTTP (the HTTP
//! transports, OAuth in `auth`, the LLM providers, the config's header
//! checks): one pooled client, header maps whose values are secret, capped
//! body reads, SSE event streams ([`sse_parser`]), and error messages that
//! never show a URL's query or a header's value. It uses only `error` and
//! `secrets`, so nothing here can depend on a transport or on `auth`.
//!
//! The network policy (`[network]`: [`policy`], its address ranges in
//! [`ranges`], applied at connect time by [`guard`]) lives here too: every
//! request goes through an [`Http`] of its policy, which checks the URL
//! before sending and whose client resolves through the policy.

pub(crate) mod direct;
pub(crate) mod guard;
pub(crate) mod policy;
pub(crate) mod ranges;
pub mod sse_parser;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use self::policy::NetworkPolicy;
use self::sse_parser::{EventStream, SseParser};
use crate::error::Error;

/// The `User-Agent` of every request mcpmux makes.
pub(crate) const USER_AGENT: &str = concat!("mcpmux/", env!("CARGO_PKG_VERSION"));

/// How long an idle pooled connection is kept for reuse. Under the idle
/// timeouts servers close keep-alive connections after (5 s for Node's
/// http server and uvicorn, 10 s for mcpmux's own gateway): a client that
/// keeps one longer sends its next request into the server's close and
/// gets "connection closed before message completed". undici, which the
/// TypeScript SDK's fetch uses, keeps 4 s too.
pub(crate) const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// Idle connections the pools keep per origin. A request that finds no
/// idle connection opens one and races it against the next connection to
/// come back; the loser goes to the pool, so with many calls in flight an
/// unbounded pool grows past the calls by one connection per lost race,
/// until the process runs out of descriptors (or a server's connection
/// cap closes them). Calls in flight keep their connections busy, not
/// idle: this bound is on the spare ones.
pub(crate) const POOL_MAX_IDLE_PER_HOST: usize = 64;

/// What every HTTP client of mcpmux starts from: rustls, a 30 s connect
/// timeout, no Nagle delay, mcpmux's user agent, no Referer. Each client
/// adds its own redirect rule and pool settings.
pub fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .tcp_nodelay(true)
        .user_agent(USER_AGENT)
        .referer(false)
}

/// The process-wide HTTP client: connections are pooled and reused across
/// requests and servers. TLS through rustls.
pub(crate) fn client() -> reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT
        .get_or_init(|| build_client(None).expect("the HTTP client builds with static settings"))
        .clone()
}

/// The client for requests under `policy`: the process-wide one unless
/// the policy has addresses to check (`deny_private`); then one of its
/// own, which resolves through the policy and uses no proxy, kept for the
/// next hub with the same policy ([`guard::kept_client`]).
pub(crate) fn client_for(policy: &NetworkPolicy) -> reqwest::Client {
    if !policy.deny_private {
        return client();
    }
    guard::kept_client("engine", policy, || build_client(Some(policy)).ok())
        .unwrap_or_else(|| guard::refusing_client(policy))
}

/// The engine's client: pooled, same-origin redirects only; with a policy
/// that checks addresses, resolving through it, without a proxy, and each
/// redirect hop checked.
fn build_client(policy: Option<&NetworkPolicy>) -> Result<reqwest::Client, reqwest::Error> {
    let on_hop = policy.cloned();
    let b = builder()
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_max_idle_per_host(POOL_MAX_IDLE_PER_HOST)
        // Credentials go only where they were configured for: a
        // redirect to another origin is not followed, and no
        // Referer (which would carry the URL's query) is sent.
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            let first = attempt.previous().first().cloned();
            if attempt.previous().len() > 5 {
                attempt.error("too many redirects")
            } else if let Some(Err(refused)) = on_hop.as_ref().map(|p| p.judge_url(attempt.url())) {
                attempt.error(refused)
            } else if first.is_some_and(|f| same_origin(&f, attempt.url())) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .referer(false);
    match policy {
        Some(policy) => guard::checked_builder(b, policy).build(),
        None => b.build(),
    }
}

/// Checks a URL about to be requested under `policy`
/// (`NetworkPolicy::check_url`) for a client outside the engine (the
/// LLM providers): the refusal names `label`.
pub fn check_url(policy: &NetworkPolicy, label: &str, url: &url::Url) -> Result<(), Error> {
    policy.check_url(label, url)
}

/// The network policy's refusal among `e`'s causes, as its message.
pub fn refusal_message(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    refusal_in(e).map(ToString::to_string)
}

/// The HTTP client of one policy: every request it makes is checked
/// ([`NetworkPolicy::check_url`]) before it is sent, and its connections
/// resolve through the policy ([`client_for`]). What every module that
/// speaks HTTP sends with, so that no request skips the policy.
#[derive(Clone)]
pub(crate) struct Http {
    policy: std::sync::Arc<NetworkPolicy>,
}

impl Default for Http {
    fn default() -> Self {
        Http::new(&NetworkPolicy::default())
    }
}

impl Http {
    /// The client for `policy`. The underlying client is taken when a
    /// request is made, not here: the process-wide one reads the
    /// environment's proxy settings when it is built, which must be at the
    /// first HTTP request, not when a stdio server connects.
    pub(crate) fn new(policy: &NetworkPolicy) -> Http {
        Http {
            policy: std::sync::Arc::new(policy.clone()),
        }
    }

    /// The policy its requests are under.
    pub(crate) fn policy(&self) -> &NetworkPolicy {
        &self.policy
    }

    /// The client for a transport bound to `url` (Streamable HTTP, SSE:
    /// every request goes to that URL, or to its origin), once `url` is
    /// checked; or the policy's refusal naming `label`.
    pub(crate) fn bound_to(&self, label: &str, url: &url::Url) -> Result<reqwest::Client, Error> {
        self.policy.check_url(label, url)?;
        Ok(client_for(&self.policy))
    }

    /// A request to `url`, or the policy's refusal naming `label`.
    pub(crate) fn request(
        &self,
        label: &str,
        method: reqwest::Method,
        url: &url::Url,
    ) -> Result<reqwest::RequestBuilder, Error> {
        self.policy.check_url(label, url)?;
        Ok(client_for(&self.policy).request(method, url.clone()))
    }

    /// A GET of `url` ([`Http::request`]).
    pub(crate) fn get(
        &self,
        label: &str,
        url: &url::Url,
    ) -> Result<reqwest::RequestBuilder, Error> {
        self.request(label, reqwest::Method::GET, url)
    }

    /// A POST to `url` ([`Http::request`]).
    pub(crate) fn post(
        &self,
        label: &str,
        url: &url::Url,
    ) -> Result<reqwest::RequestBuilder, Error> {
        self.request(label, reqwest::Method::POST, url)
    }
}

/// Whether `url`'s host is a loopback one: `localhost`, 127.0.0.0/8 or
/// `::1` (where cleartext `http` stays on the machine).
pub(crate) fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The configured headers as a map whose values are marked sensitive (kept
/// out of `Debug` output). Errors name the header, never its value.
pub(crate) fn header_map(
    label: &str,
    headers: &BTreeMap<String, String>,
) -> Result<HeaderMap, Error> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let key = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::ConfigInvalid(format!("{label}: header name '{name}' is not valid"))
        })?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            Error::ConfigInvalid(format!(
                "{label}: the value of header '{name}' is not valid"
            ))
        })?;
        value.set_sensitive(true);
        map.insert(key, value);
    }
    Ok(map)
}

/// A URL as it may appear in messages: no user info, no query, no fragment.
pub(crate) fn display_url(url: &url::Url) -> String {
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{}{port}{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.path()
    )
}

/// A failed HTTP exchange as TRANSPORT_CLOSED, with the causes (never the URL).
pub(crate) fn network_error(label: &str, url: &url::Url, e: reqwest::Error) -> Error {
    unreachable_error(label, url, &e.without_url())
}

/// A failed exchange as TRANSPORT_CLOSED, from any client's error: its
/// message and each distinct cause (never the URL's query); a refusal of
/// the network policy among the causes is the whole message.
pub(crate) fn unreachable_error(
    label: &str,
    url: &url::Url,
    e: &(dyn std::error::Error + 'static),
) -> Error {
    if let Some(refused) = refusal_in(e) {
        return refused.error(label);
    }
    let mut causes = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !causes.iter().any(|c| c.contains(&text)) {
            causes.push(text);
        }
        source = s.source();
    }
    Error::TransportClosed(format!(
        "{label}: cannot reach {}: {}",
        display_url(url),
        causes.join(": ")
    ))
}

/// The network policy's refusal among `e` and its causes, if there is one.
pub(crate) fn refusal_in<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a policy::Refused> {
    let mut at: Option<&'a (dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = at {
        if let Some(refused) = err.downcast_ref::<policy::Refused>() {
            return Some(refused);
        }
        at = err.source();
    }
    None
}

/// Whether two URLs have the same scheme, host and port.
pub(crate) fn same_origin(a: &url::Url, b: &url::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The error for a response that is not a success: a redirect that was not
/// followed (another origin), or an error status with the start of its body.
pub(crate) async fn response_error(
    label: &str,
    url: &url::Url,
    response: reqwest::Response,
) -> Error {
    let status = response.status();
    if status.is_redirection() {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| url.join(l).ok())
            .map_or_else(|| "another location".to_owned(), |l| display_url(&l));
        return Error::TransportClosed(format!(
            "{label}: {} redirected ({status}) to {location}, another origin; not followed",
            display_url(url)
        ));
    }
    let body = read_body(label, response, 64 * 1024)
        .await
        .unwrap_or_default();
    status_error(label, url, status, &body)
}

/// An HTTP error status with the URL (without query) and the start of the body.
pub(crate) fn status_error(
    label: &str,
    url: &url::Url,
    status: reqwest::StatusCode,
    body: &[u8],
) -> Error {
    // Known secrets go before the body is cut, so that no part of one
    // that was cut in two is left (a server may echo `Authorization`).
    let whole = String::from_utf8_lossy(body);
    let whole = crate::secrets::redact(&whole);
    let mut end = whole.len().min(300);
    while !whole.is_char_boundary(end) {
        end -= 1;
    }
    let text = whole[..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let detail = if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    };
    Error::ServerError {
        code: -32000 - i64::from(status.as_u16()),
        message: format!(
            "{label}: {} answered HTTP {status}{detail}",
            display_url(url)
        ),
        data: Some(serde_json::json!({ "http_status": status.as_u16() })),
    }
}

/// Reads a whole reqwest body, failing with PROTOCOL_ERROR past `max` bytes.
pub(crate) async fn read_body(
    label: &str,
    response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, Error> {
    let body = hyper::Response::<reqwest::Body>::from(response).into_body();
    read_capped(label, body, max).await.map(Vec::from)
}

/// Reads a whole body (hyper's, or reqwest's through [`read_body`]),
/// failing with PROTOCOL_ERROR past `max` bytes; a body that came in one
/// piece is returned without a copy.
pub(crate) async fn read_capped<B>(label: &str, mut body: B, max: usize) -> Result<Bytes, Error>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    use http_body_util::BodyExt;
    if body.size_hint().lower() > max as u64 {
        return Err(too_large(label, max));
    }
    let mut first = Bytes::new();
    let mut joined: Option<Vec<u8>> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|e| Error::TransportClosed(format!("{label}: response body failed: {e}")))?;
        let Ok(chunk) = frame.into_data() else {
            continue; // trailers
        };
        len += chunk.len();
        if len > max {
            return Err(too_large(label, max));
        }
        match &mut joined {
            Some(all) => all.extend_from_slice(&chunk),
            None if first.is_empty() => first = chunk,
            None => {
                let mut all = Vec::with_capacity(len);
                all.extend_from_slice(&first);
                all.extend_from_slice(&chunk);
                joined = Some(all);
            }
        }
    }
    Ok(joined.map_or(first, Bytes::from))
}

fn too_large(label: &str, max: usize) -> Error {
    Error::ProtocolError(format!(
        "{label}: message exceeds the limit of {max} bytes (max_message_bytes)"
    ))
}

/// The media type of a response, lower-cased, without parameters.
pub(crate) fn content_type(response: &reqwest::Response) -> String {
    content_type_of(response.headers())
}

/// The media type in response headers `headers`, lower-cased, without
/// parameters.
pub(crate) fn content_type_of(headers: &HeaderMap) -> String {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The server-sent events of a response body, each event's data capped
/// at `max` bytes (see [`super::sse_parser`]).
pub(crate) fn events(
    response: reqwest::Response,
    max: usize,
) -> EventStream<'static, reqwest::Error> {
    EventStream::new(response.bytes_stream().boxed(), max)
}

/// Where an SSE stream got to: the last event id and the server's `retry`.
#[derive(Default, Clone)]
pub(crate) struct StreamPosition {
    /// The id of the last event that had one.
    pub last_event_id: Option<String>,
    /// How long to wait before reconnecting, when the server said.
    pub retry: Option<Duration>,
}

impl StreamPosition {
    /// Notes the stream's last event id (when it has one) and retry.
    pub(crate) fn saw(&mut self, stream: &SseParser) {
        if !stream.last_event_id().is_empty() {
            self.last_event_id = Some(stream.last_event_id().to_owned());
        }
        if stream.retry().is_some() {
            self.retry = stream.retry();
        }
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod pool_tests;
