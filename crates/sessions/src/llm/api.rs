//! What the HTTP LLM providers (`openai`, `anthropic`) share: where and how
//! to reach the API ([`ApiSettings`]), one pooled HTTP client, the retry
//! policy, idle timeouts, capped JSON bodies, server-sent events, and error
//! messages that never carry the API key.
//!
//! Retry policy: a request is tried at most [`MAX_ATTEMPTS`] times in all.
//! HTTP 429 and 5xx answers, and connection failures before any byte of a
//! response arrived, are retried after a pause: the server's `retry-after`
//! (or `retry-after-ms`) when it sent one, capped at [`MAX_RETRY_AFTER`],
//! else 0.5 s, then 1 s. Other 4xx answers fail at once. A request on which
//! no byte arrives for `request_timeout` fails with [`Error::Timeout`] and is
//! not retried (the next attempt would likely hang as long).

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::StatusCode;
use serde_json::Value;

use crate::llm::anthropic::Anthropic;
use crate::llm::openai::OpenAi;
use crate::llm::provider::{
    Completion, CompletionRequest, EventSink, ProviderEvent, SharedProvider,
};
use mcpmux_core::error::Error;
use mcpmux_core::internal::net::sse_parser::{Event, EventStream, Item};
use mcpmux_core::NetworkPolicy;

/// How many times a request is sent at most (the first try included).
pub const MAX_ATTEMPTS: u32 = 3;

/// The longest pause a server's `retry-after` can impose between attempts.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Time allowed without any byte arriving when `request_timeout` is unset.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The largest non-streamed response body read (a completion is far smaller).
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// Where and how to reach an HTTP LLM API.
///
/// `Debug` shows the API key as `***`; the key is sent only in the
/// provider's auth header and never appears in logs or errors.
#[derive(Clone)]
pub struct ApiSettings {
    /// The API's base URL; `None` means the public default
    /// (`https://api.openai.com/v1` for openai, `https://api.anthropic.com`
    /// for anthropic). Used as given, e.g. `http://127.0.0.1:11434/v1` for
    /// Ollama; a query string (e.g. `?api-version=...`) is kept.
    pub base_url: Option<String>,
    /// Sent as `Authorization: Bearer <key>` (openai) or `x-api-key`
    /// (anthropic); no auth header when `None` (local servers).
    pub api_key: Option<String>,
    /// The model used when a request names none.
    pub model: Option<String>,
    /// Ask for a streamed (SSE) response; default `true`.
    pub stream: bool,
    /// Time allowed without any byte arriving (before the response headers
    /// and between chunks); default [`DEFAULT_REQUEST_TIMEOUT`] (300 s).
    pub request_timeout: Option<Duration>,
    /// Where the API may be reached: the session config's `[network]`
    /// (`deny_private`, `allow_networks`, `require_https`), judged on the
    /// address connected to. Refuses nothing by default.
    pub network: NetworkPolicy,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            base_url: None,
            api_key: None,
            model: None,
            stream: true,
            request_timeout: None,
            network: NetworkPolicy::default(),
        }
    }
}

impl ApiSettings {
    /// These settings with what is unset taken from the environment
    /// variables the official SDKs read: `OPENAI_API_KEY` and
    /// `OPENAI_BASE_URL` for `openai`, `ANTHROPIC_API_KEY` and
    /// `ANTHROPIC_BASE_URL` for `anthropic` (other providers: unchanged).
    pub fn with_env_defaults(mut self, provider: &str) -> Self {
        let prefix = match provider {
            "openai" => "OPENAI",
            "anthropic" => "ANTHROPIC",
            _ => return self,
        };
        let var = |name: &str| {
            std::env::var(format!("{prefix}_{name}"))
                .ok()
                .filter(|v| !v.trim().is_empty())
        };
        if self.api_key.is_none() {
            self.api_key = var("API_KEY");
        }
        if self.base_url.is_none() {
            self.base_url = var("BASE_URL");
        }
        self
    }
}

/// What differs between the HTTP LLM APIs ([`OpenAi`], [`Anthropic`]):
/// the request body, and how a whole answer and a streamed one are read.
/// The loop they share is [`complete`].
pub(crate) trait HttpApi: Sync {
    /// Where and how requests go.
    fn endpoint(&self) -> &Endpoint;
    /// Whether the request asks for a stream.
    fn streams(&self) -> bool;
    /// The JSON body sent for `request`.
    fn body(&self, request: &CompletionRequest) -> Value;
    /// A whole JSON answer.
    fn parse_whole(&self, v: &Value, events: EventSink<'_>) -> Result<Completion, Error>;
    /// A streamed answer (server-sent events).
    async fn read_stream(
        &self,
        response: reqwest::Response,
        events: EventSink<'_>,
    ) -> Result<Completion, Error>;
}

/// One completion over HTTP, the same for every API: post the body, then
/// read the answer as a stream or, when the server ignored `stream` (or it
/// was off) and answered with JSON, as a whole. Runs on the caller's task.
pub(crate) async fn complete<A: HttpApi>(
    api: &A,
    request: &CompletionRequest,
    events: EventSink<'_>,
) -> Result<Completion, Error> {
    let body = api.body(request);
    let response = api.endpoint().post(&body, events).await?;
    if api.streams() && !is_json(&response) {
        api.read_stream(response, events).await
    } else {
        let v = api.endpoint().read_json(response, events).await?;
        api.parse_whole(&v, events)
    }
}

/// The HTTP provider named `name` (`openai` or `anthropic`) for `settings`
/// (what a session's `openai` and `anthropic` reviewers run);
/// REVIEWER_NOT_FOUND for another name, CONFIG_INVALID for bad settings.
pub fn http_provider(name: &str, settings: ApiSettings) -> Result<SharedProvider, Error> {
    Ok(match name {
        "openai" => Arc::new(OpenAi::new(settings)?),
        "anthropic" => Arc::new(Anthropic::new(settings)?),
        other => {
            return Err(Error::ReviewerNotFound(format!(
                "no HTTP LLM provider named '{other}' (expected openai or anthropic)"
            )))
        }
    })
}

impl fmt::Debug for ApiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("model", &self.model)
            .field("stream", &self.stream)
            .field("request_timeout", &self.request_timeout)
            .field("network", &self.network)
            .finish()
    }
}

/// The HTTP client of the LLM providers under `policy`: pooled
/// connections, TLS through rustls, no redirects (an API answers where it
/// is asked; a redirect would carry the key elsewhere), no Referer. One
/// for the process, or one per policy that checks addresses (resolving
/// through it, without a proxy).
fn client(policy: &NetworkPolicy) -> reqwest::Client {
    use mcpmux_core::internal::net;
    let build = || {
        net::checked_builder(net::builder(), policy)
            .pool_idle_timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()
    };
    if !policy.deny_private {
        static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
        return CLIENT
            .get_or_init(|| build().unwrap_or_else(reqwest::Client::new))
            .clone();
    }
    net::kept_client("llm", policy, build).unwrap_or_else(|| net::refusing_client(policy))
}

/// One provider's endpoint: the URL it posts to, its headers (auth marked
/// sensitive) and the settings that shape each exchange.
pub(crate) struct Endpoint {
    /// `openai` or `anthropic`, the start of every message.
    pub label: &'static str,
    pub url: url::Url,
    headers: HeaderMap,
    /// Kept only to scrub it from error text a server might echo.
    key: Option<String>,
    pub idle: Duration,
    /// The settings' network policy, which every request is under.
    network: NetworkPolicy,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.shown_url())
            .field("api_key", &self.key.as_ref().map(|_| "***"))
            .field("idle", &self.idle)
            .finish()
    }
}

impl Endpoint {
    /// An endpoint at `base_url` (or `default_base`) with `path` appended to
    /// the base path. `auth` makes the auth header from the key.
    pub fn new(
        label: &'static str,
        settings: &ApiSettings,
        default_base: &str,
        path: impl FnOnce(&str) -> String,
        auth: impl FnOnce(&str) -> (HeaderName, String),
        mut headers: HeaderMap,
    ) -> Result<Self, Error> {
        let base = settings.base_url.as_deref().unwrap_or(default_base);
        let mut url = url::Url::parse(base.trim()).map_err(|e| {
            Error::ConfigInvalid(format!("{label}: base_url is not a valid URL ({e})"))
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
            return Err(Error::ConfigInvalid(format!(
                "{label}: base_url {} is not an http(s) URL",
                display_url(&url)
            )));
        }
        let joined = path(url.path().trim_end_matches('/'));
        url.set_path(&joined);
        url.set_fragment(None);
        let key = settings.api_key.clone().filter(|k| !k.is_empty());
        if let Some(k) = &key {
            // A provider may quote the key in an error ("invalid key ...").
            mcpmux_core::internal::secrets::register([k.clone()]);
            let (name, value) = auth(k);
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                Error::ConfigInvalid(format!("{label}: api_key is not a valid HTTP header value"))
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Endpoint {
            label,
            url,
            headers,
            key,
            idle: settings.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT),
            network: settings.network.clone(),
        })
    }

    /// The URL as it may appear in messages (no query, no user info).
    pub fn shown_url(&self) -> String {
        display_url(&self.url)
    }

    /// `text` with the API key (should a server echo it) replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(k) if k.len() >= 4 => text.replace(k.as_str(), "***"),
            _ => text.to_owned(),
        }
    }

    /// A PROVIDER_ERROR `"{label}: {what}"` with the key scrubbed.
    pub fn error(&self, what: impl fmt::Display) -> Error {
        Error::ProviderError(self.scrub(&format!("{}: {what}", self.label)))
    }

    fn timeout(&self) -> Error {
        Error::Timeout(format!(
            "{}: no response from {} for {} (request_timeout)",
            self.label,
            self.shown_url(),
            seconds(self.idle)
        ))
    }

    /// Posts `body`, retrying as the module documentation says, and
    /// returns the first successful response (status 2xx).
    pub async fn post(
        &self,
        body: &Value,
        events: EventSink<'_>,
    ) -> Result<reqwest::Response, Error> {
        let body = serde_json::to_vec(body).map_err(|e| {
            Error::Internal(format!("{}: request not serializable: {e}", self.label))
        })?;
        // A refusal is final: the next attempt would be refused too.
        mcpmux_core::internal::net::check_url(&self.network, self.label, &self.url).map_err(
            |e| {
                self.error(
                    e.to_string()
                        .trim_start_matches(self.label)
                        .trim_start_matches(": "),
                )
            },
        )?;
        let http = client(&self.network);
        let mut attempt = 1;
        loop {
            let request = http
                .post(self.url.clone())
                .headers(self.headers.clone())
                .body(body.clone())
                .send();
            let (err, pause) = match tokio::time::timeout(self.idle, request).await {
                Err(_) => return Err(self.timeout()),
                Ok(Err(e)) => {
                    if let Some(refused) = mcpmux_core::internal::net::refusal_message(&e) {
                        return Err(self.error(refused));
                    }
                    (
                        self.error(format!("cannot reach {}: {}", self.shown_url(), causes(e))),
                        None,
                    )
                }
                Ok(Ok(response)) if response.status().is_success() => {
                    events(ProviderEvent::Progress);
                    return Ok(response);
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let pause = retry_after(response.headers());
                    let body = self.read_capped(response, 64 * 1024, events).await;
                    let detail = match body {
                        Ok(b) => api_error_message(&b),
                        Err(e @ Error::Timeout(_)) => return Err(e),
                        Err(_) => String::new(),
                    };
                    let err = self.status_error(status, &detail);
                    if !retryable(status) {
                        return Err(err);
                    }
                    (err, pause)
                }
            };
            if attempt >= MAX_ATTEMPTS {
                return Err(with_suffix(
                    err,
                    &format!(" (after {MAX_ATTEMPTS} attempts)"),
                ));
            }
            let pause = pause
                .map(|p| p.min(MAX_RETRY_AFTER))
                .unwrap_or_else(|| Duration::from_millis(500) * 2u32.pow(attempt - 1));
            tracing::debug!(provider = self.label, attempt, ?pause, error = %err, "retrying LLM request");
            tokio::time::sleep(pause).await;
            attempt += 1;
        }
    }

    /// `"{label}: HTTP {status} from {url}: {message}"`.
    pub fn status_error(&self, status: StatusCode, message: &str) -> Error {
        // The endpoint's own key shows as `***` (scrub); other known
        // secrets as `[REDACTED:config]`.
        let message = self.scrub(message);
        let message = mcpmux_core::internal::secrets::redact(&message);
        let detail = if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        };
        self.error(format!(
            "HTTP {} from {}{detail}",
            status.as_u16(),
            self.shown_url()
        ))
    }

    /// Reads a whole body of at most `max` bytes; no byte for the idle
    /// timeout is [`Error::Timeout`]. Every chunk is progress.
    async fn read_capped(
        &self,
        response: reqwest::Response,
        max: usize,
        events: EventSink<'_>,
    ) -> Result<Vec<u8>, Error> {
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        loop {
            match tokio::time::timeout(self.idle, stream.next()).await {
                Err(_) => return Err(self.timeout()),
                Ok(None) => return Ok(body),
                Ok(Some(Err(e))) => {
                    return Err(self.error(format!(
                        "response from {} broke off: {}",
                        self.shown_url(),
                        causes(e)
                    )))
                }
                Ok(Some(Ok(chunk))) => {
                    events(ProviderEvent::Progress);
                    if body.len() + chunk.len() > max {
                        return Err(self.error(format!(
                            "response from {} exceeds {max} bytes",
                            self.shown_url()
                        )));
                    }
                    body.extend_from_slice(&chunk);
                }
            }
        }
    }

    /// A whole (non-streamed) JSON response.
    pub async fn read_json(
        &self,
        response: reqwest::Response,
        events: EventSink<'_>,
    ) -> Result<Value, Error> {
        let body = self.read_capped(response, MAX_BODY_BYTES, events).await?;
        serde_json::from_slice(&body).map_err(|e| {
            self.error(format!(
                "response from {} is not JSON ({e}): {}",
                self.shown_url(),
                snippet(&body)
            ))
        })
    }

    /// The server-sent events of a streamed response; every received chunk
    /// of bytes reports [`ProviderEvent::Progress`]. One event may hold at
    /// most `MAX_BODY_BYTES`.
    pub fn events<'a>(&'a self, response: reqwest::Response, events: EventSink<'a>) -> Sse<'a> {
        let stream = response.bytes_stream().inspect(move |chunk| {
            if chunk.is_ok() {
                events(ProviderEvent::Progress);
            }
        });
        Sse {
            endpoint: self,
            inner: EventStream::new(stream.boxed(), MAX_BODY_BYTES),
        }
    }
}

/// A stream of server-sent events with the idle timeout applied.
pub(crate) struct Sse<'a> {
    endpoint: &'a Endpoint,
    inner: EventStream<'a, reqwest::Error>,
}

impl Sse<'_> {
    /// The next event; `None` when the stream ended.
    pub async fn next(&mut self) -> Result<Option<Event>, Error> {
        let ep = self.endpoint;
        match tokio::time::timeout(ep.idle, self.inner.next()).await {
            Err(_) => Err(ep.timeout()),
            Ok(None) => Ok(None),
            Ok(Some(Ok(Item::Event(event)))) => Ok(Some(event)),
            Ok(Some(Ok(Item::Oversized { .. }))) => Err(ep.error(format!(
                "an event from {} exceeds {MAX_BODY_BYTES} bytes",
                ep.shown_url()
            ))),
            Ok(Some(Err(e))) => Err(ep.error(format!(
                "event stream from {} broke off: {}",
                ep.shown_url(),
                causes(e)
            ))),
        }
    }
}

/// Whether a response is whole JSON (not an event stream).
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// Whether an HTTP status is worth another attempt.
fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// The pause a server asked for: `retry-after-ms`, else `retry-after` in
/// seconds (an HTTP date is not honoured; the default backoff applies).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    get("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms.min(3.6e6) / 1000.0))
        .or_else(|| get("retry-after").map(|s| Duration::from_secs_f64(s.min(3600.0))))
}

/// The API's own error message from an error body: `error.message`
/// (OpenAI, Anthropic), `error` as a string (Ollama), `message`, else the
/// start of the body.
pub(crate) fn api_error_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let found = v
            .pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail").filter(|e| e.is_string()))
            .and_then(Value::as_str);
        if let Some(m) = found {
            return m.split_whitespace().collect::<Vec<_>>().join(" ");
        }
    }
    snippet(body)
}

/// The start of a body, whitespace collapsed, for messages.
fn snippet(body: &[u8]) -> String {
    // Known secrets go before the cut, so no part of one is left.
    let whole = String::from_utf8_lossy(body);
    let whole = mcpmux_core::internal::secrets::redact(&whole);
    let mut end = whole.len().min(300);
    while !whole.is_char_boundary(end) {
        end -= 1;
    }
    whole[..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A reqwest error and its causes, without the URL (which may carry a query).
fn causes(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut out = vec![e.to_string()];
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        let text = s.to_string();
        if !out.iter().any(|c| c.contains(&text)) {
            out.push(text);
        }
        source = s.source();
    }
    out.join(": ")
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

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// A provider error with `suffix` appended (other errors unchanged).
fn with_suffix(err: Error, suffix: &str) -> Error {
    match err {
        Error::ProviderError(m) => Error::ProviderError(m + suffix),
        other => other,
    }
}

/// Parses tool-call argument text the model produced: an object, `{}` for
/// empty text, else `{}` and the reason it could not be used.
pub(crate) fn parse_arguments(text: &str) -> (Value, Option<String>) {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => (v, None),
        Ok(other) => (
            Value::Object(Default::default()),
            Some(format!(
                "the tool arguments must be a JSON object, got {}",
                mcpmux_core::error::json_kind(&other)
            )),
        ),
        Err(e) => {
            let mut shown: String = trimmed.chars().take(200).collect();
            if shown.len() < trimmed.len() {
                shown.push('…');
            }
            (
                Value::Object(Default::default()),
                Some(format!(
                    "the tool arguments are not valid JSON ({e}): {shown}"
                )),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_key() {
        let s = ApiSettings {
            api_key: Some("sk-very-secret".into()),
            ..Default::default()
        };
        let d = format!("{s:?}");
        assert!(!d.contains("sk-very-secret"), "{d}");
        assert!(d.contains("***"), "{d}");
        assert!(s.stream);
        let o = OpenAi::new(s.clone()).unwrap();
        let a = Anthropic::new(s.clone()).unwrap();
        for d in [format!("{o:?}"), format!("{a:?}")] {
            assert!(!d.contains("sk-very-secret"), "{d}");
        }
    }

    #[test]
    fn providers_by_name() {
        let p = http_provider("anthropic", ApiSettings::default()).unwrap();
        assert_eq!(p.name(), "anthropic");
        assert_eq!(
            http_provider("openai", ApiSettings::default())
                .unwrap()
                .name(),
            "openai"
        );
        let e = http_provider("gemini", ApiSettings::default())
            .err()
            .unwrap();
        assert_eq!(e.code(), "REVIEWER_NOT_FOUND");
        assert!(e.to_string().contains("gemini"));
        let set = ApiSettings {
            api_key: Some("given".into()),
            ..Default::default()
        }
        .with_env_defaults("openai");
        assert_eq!(set.api_key.as_deref(), Some("given"));
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            api_error_message(br#"{"error":{"message":"Rate  limit\nreached","type":"requests"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            api_error_message(br#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            api_error_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            api_error_message(b"<html> oops </html>"),
            "<html> oops </html>"
        );
    }

    #[test]
    fn retry_after_header() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn arguments() {
        assert_eq!(parse_arguments(""), (serde_json::json!({}), None));
        assert_eq!(
            parse_arguments(r#"{"a":1}"#),
            (serde_json::json!({"a":1}), None)
        );
        let (v, e) = parse_arguments("not json");
        assert_eq!(v, serde_json::json!({}));
        assert!(e.unwrap().contains("not valid JSON"));
        let (_, e) = parse_arguments("[1]");
        assert!(e.unwrap().contains("an array"));
    }

    #[test]
    fn endpoint_urls() {
        let s = ApiSettings {
            base_url: Some("http://user:pw@127.0.0.1:11434/v1/?api-version=2".into()),
            api_key: Some("k\nbad".into()),
            ..Default::default()
        };
        let e = Endpoint::new(
            "openai",
            &s,
            "https://x",
            |p| format!("{p}/chat/completions"),
            |k| (reqwest::header::AUTHORIZATION, format!("Bearer {k}")),
            HeaderMap::new(),
        );
        let err = e.err().unwrap();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(!err.to_string().contains("bad"));
        let s = ApiSettings { api_key: None, ..s };
        let e = Endpoint::new(
            "openai",
            &s,
            "https://x",
            |p| format!("{p}/chat/completions"),
            |k| (reqwest::header::AUTHORIZATION, format!("Bearer {k}")),
            HeaderMap::new(),
        )
        .unwrap();
        assert_eq!(e.url.path(), "/v1/chat/completions");
        assert_eq!(e.url.query(), Some("api-version=2"));
        assert_eq!(e.shown_url(), "http://127.0.0.1:11434/v1/chat/completions");
        let bad = ApiSettings {
            base_url: Some("ftp://x".into()),
            ..Default::default()
        };
        assert!(Endpoint::new(
            "openai",
            &bad,
            "",
            |p| p.into(),
            |k| (CONTENT_TYPE, k.into()),
            HeaderMap::new()
        )
        .is_err());
    }
}
