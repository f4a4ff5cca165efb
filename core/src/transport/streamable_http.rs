//! Streamable HTTP (MCP 2025-03-26 and later, and the stateless 2026-07-28
//! revision): every message is its own POST; the answer is a JSON body, an
//! SSE stream (which may carry server messages before the response), or 202.
//!
//! Stateful revisions: the `Mcp-Session-Id` from `initialize` goes on every
//! later request, an optional GET stream carries server-initiated messages,
//! a stream that ends early is resumed with `Last-Event-ID` after the
//! server's `retry`, a 404 to a request with a session re-initializes once
//! and retries, and close DELETEs the session. Stateless revision: no
//! session, no GET stream; `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers on every request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, USER_AGENT};
use reqwest::StatusCode;
use tokio::task::AbortHandle;

use super::line_reader;
use super::send_bound::InFlight;
use super::{FrameSink, Transport};
use crate::auth::challenge::Challenge;
use crate::auth::flow::Authorizer;
use crate::auth::{AuthConfig, AuthOptions};
use crate::config::NetworkConfig;
use crate::error::Error;
use crate::net::direct::DirectClient;
use crate::net::sse_parser::Item;
use crate::net::{self as http, StreamPosition};

/// Header names of the Streamable HTTP transport.
const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
const MCP_METHOD: &str = "mcp-method";
const MCP_NAME: &str = "mcp-name";
/// Reconnect delay when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Attempts to resume one interrupted stream.
const MAX_RESUMES: u32 = 5;
/// Authorizations (or refreshes, or DPoP nonce retries) one message may
/// trigger before its 401 / 403 is final.
const MAX_AUTH_ROUNDS: u32 = 3;
/// Longest that messages after `notifications/initialized` wait for it to
/// be delivered and for the GET stream to open.
const HANDSHAKE_GATE: Duration = Duration::from_secs(3);

/// How often the transport looks whether the requests its tasks send are
/// still waited for: once one is not (answered, timed out, cancelled), its
/// task is ended and drops its connection, whatever the server still holds
/// open ([`reap`]).
const ABANDON_CHECK: Duration = Duration::from_secs(1);

/// How long a POST's stream is read on after its answer, for its end:
/// servers end the stream right after the answer, usually in a write of
/// their own, and a stream read to its end leaves its keep-alive
/// connection in the pool; one dropped before opens a new connection for
/// the next request (a connect, and a socket in TIME_WAIT, per call).
const END_AFTER_ANSWER: Duration = Duration::from_millis(100);
/// Events read (and dropped) at most while waiting for that end.
const EVENTS_AFTER_ANSWER: usize = 8;

/// How long sending one notification or answer (which no caller waits
/// for) may take, response included.
const NOTICE_TIME: Duration = Duration::from_secs(30);

/// A Streamable HTTP connection to one server. Owned by its peer.
pub struct StreamableHttpTransport {
    inner: Arc<Inner>,
}

struct Inner {
    label: String,
    url: url::Url,
    headers: HeaderMap,
    http: reqwest::Client,
    /// POSTs go on hyper-util's client directly ([`crate::net::direct`])
    /// when there is one and the URL suits it (no user info); else reqwest.
    direct: Option<(DirectClient, hyper::Uri)>,
    max_message_bytes: usize,
    sink: Weak<dyn FrameSink>,
    state: Mutex<State>,
    /// The transport's tasks (one per message in flight, the GET stream),
    /// with the id of the request each one sends, if it sends one,
    /// aborted on close; each removes itself when it ends.
    tasks: Mutex<HashMap<tokio::task::Id, (Option<u64>, AbortHandle)>>,
    /// Answers and notifications whose POST has not completed ([`super::send_bound`]).
    notices: InFlight,
    closed: AtomicBool,
    /// The runtime the transport was made on: messages may be sent from
    /// outside it (a call future dropped by a host thread).
    runtime: tokio::runtime::Handle,
    /// One re-initialization at a time.
    reinit: tokio::sync::Mutex<()>,
    /// OAuth for this server (`auth.type = "oauth"`).
    auth: Option<Arc<Authorizer>>,
    /// `false` from the moment `notifications/initialized` is sent until it
    /// was delivered and the GET stream answered (or [`HANDSHAKE_GATE`]
    /// passed). Each message is POSTed by its own task, so without this a
    /// request could overtake the notification, and a server request sent
    /// on the GET stream before that stream exists would be lost.
    handshake_done: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// The session's id as the server sent it (a visible-ASCII header value).
    session_id: Option<HeaderValue>,
    protocol_version: Option<String>,
    /// `protocol_version` as a header value, made once.
    version_header: Option<HeaderValue>,
    /// The `initialize` request as sent, to re-initialize after a 404.
    initialize: Option<Vec<u8>>,
    get_stream_started: bool,
}

/// What the transport reads from an outgoing message.
#[derive(Default)]
struct Outgoing {
    id: Option<u64>,
    method: Option<String>,
    /// `params.name` (tools, prompts), `params.uri` (resources) or
    /// `params.taskId` (the tasks extension's `tasks/*`).
    name: Option<String>,
    /// Extra headers for this message.
    headers: Vec<(String, String)>,
}

impl Outgoing {
    fn read(message: &[u8]) -> Outgoing {
        #[derive(serde::Deserialize)]
        struct Params {
            name: Option<String>,
            uri: Option<String>,
            #[serde(rename = "taskId")]
            task_id: Option<String>,
        }
        #[derive(serde::Deserialize)]
        struct Probe {
            id: Option<serde_json::Value>,
            method: Option<String>,
            params: Option<Params>,
        }
        let Ok(p) = serde_json::from_slice::<Probe>(message) else {
            return Outgoing::default();
        };
        Outgoing {
            // Only a request's id is ours: an answer carries the server's.
            id: p.id.filter(|_| p.method.is_some()).and_then(|v| v.as_u64()),
            method: p.method,
            name: p.params.and_then(|p| p.name.or(p.uri).or(p.task_id)),
            headers: Vec::new(),
        }
    }
}

impl StreamableHttpTransport {
    /// A transport for server `server` at `config`, with the host's
    /// authorization hooks for an `auth.type = "oauth"` config; nothing is
    /// sent until the first message. Every request is under `network`'s
    /// policy: the URL is checked here (every request goes to it), each
    /// connection when it is made.
    pub fn with_auth(
        label: &str,
        server: &str,
        config: &NetworkConfig,
        max_message_bytes: usize,
        sink: Weak<dyn FrameSink>,
        auth: &AuthOptions,
        network: &http::Http,
    ) -> Result<Arc<StreamableHttpTransport>, Error> {
        let client = network.bound_to(label, &config.url)?;
        let authorizer = match &config.auth {
            Some(AuthConfig::OAuth(oauth)) => Some(Arc::new(Authorizer::new(
                server,
                &config.url,
                (**oauth).clone(),
                auth,
                network,
            ))),
            _ => None,
        };
        let transport = Arc::new(StreamableHttpTransport {
            inner: Arc::new(Inner {
                label: label.to_owned(),
                url: config.url.clone(),
                headers: http::header_map(label, &config.headers)?,
                http: client,
                direct: direct_route(&config.url, network.policy()),
                max_message_bytes,
                sink,
                state: Mutex::new(State::default()),
                tasks: Mutex::new(HashMap::new()),
                notices: InFlight::default(),
                closed: AtomicBool::new(false),
                reinit: tokio::sync::Mutex::new(()),
                runtime: tokio::runtime::Handle::current(),
                auth: authorizer,
                handshake_done: tokio::sync::watch::Sender::new(true),
            }),
        });
        tokio::spawn(reap(Arc::downgrade(&transport.inner)));
        Ok(transport)
    }
}

impl Transport for StreamableHttpTransport {
    fn send(&self, message: Vec<u8>) -> Result<(), Error> {
        self.send_with_headers(message, &[])
    }

    #[cfg(feature = "telemetry")]
    fn session_id(&self) -> Option<String> {
        let state = self.inner.state.lock().unwrap();
        state
            .session_id
            .as_ref()
            .and_then(|id| id.to_str().ok())
            .map(str::to_owned)
    }

    fn send_with_headers(
        &self,
        message: Vec<u8>,
        headers: &[(String, String)],
    ) -> Result<(), Error> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(Error::TransportClosed(format!(
                "{}: connection closed",
                inner.label
            )));
        }
        let mut out = Outgoing::read(&message);
        out.headers = headers.to_vec();
        // Our requests are bounded by the host; what the server makes us
        // send (answers, notifications) is bounded here.
        let slot = match out.id {
            Some(_) => None,
            None => Some(inner.notices.take_notice(&inner.label)?),
        };
        if out.method.as_deref() == Some("initialize") {
            inner.state.lock().unwrap().initialize = Some(message.clone());
        }
        if out.method.as_deref() == Some("notifications/initialized") {
            inner.handshake_done.send_replace(false);
        }
        let inner_for_task = inner.clone();
        inner.spawn_tracked(&inner.runtime, out.id, async move {
            inner_for_task.deliver(message, out).await;
            drop(slot);
        });
        Ok(())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let inner = &self.inner;
            if inner.closed.swap(true, Ordering::SeqCst) {
                return;
            }
            for (_, (_, task)) in inner.tasks.lock().unwrap().drain() {
                task.abort();
            }
            let (session, version) = {
                let state = inner.state.lock().unwrap();
                (state.session_id.clone(), state.version_header.clone())
            };
            if let Some(session) = session {
                // Tell the server the session is over; a server that does
                // not support it answers 405, which is fine. Credentials
                // included (a token refresh may hang too), it gets 2 s.
                let delete = async {
                    let mut request = inner
                        .http
                        .delete(inner.url.clone())
                        .headers(inner.headers.clone())
                        .header(SESSION_ID, session);
                    for (name, value) in inner.auth_headers("DELETE").await {
                        request = request.header(name, value);
                    }
                    if let Some(version) = version {
                        request = request.header(PROTOCOL_VERSION, version);
                    }
                    let _ = request.send().await;
                };
                let _ = tokio::time::timeout(Duration::from_secs(2), delete).await;
            }
            if let Some(sink) = inner.sink.upgrade() {
                sink.on_closed(Error::TransportClosed(format!(
                    "{}: connection closed",
                    inner.label
                )));
            }
        })
    }

    fn set_protocol_version(&self, version: Option<&str>) {
        let mut state = self.inner.state.lock().unwrap();
        state.protocol_version = version.map(str::to_owned);
        state.version_header = version.and_then(|v| HeaderValue::from_str(v).ok());
    }
}

impl Drop for StreamableHttpTransport {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        for (_, (_, task)) in self.inner.tasks.lock().unwrap().drain() {
            task.abort();
        }
    }
}

/// Every [`ABANDON_CHECK`], aborts the tasks of requests no longer waited
/// for (answered, timed out, cancelled), and so drops their connections,
/// whatever the server holds open: a POST never answered, an event stream
/// left open. One task per transport rather than a timer per request,
/// which would cost the request path; ends with the transport.
async fn reap(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(ABANDON_CHECK).await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.closed.load(Ordering::SeqCst) {
            return;
        }
        let Some(sink) = inner.sink.upgrade() else {
            return;
        };
        // Not under the tasks' lock: asking the peer takes its own.
        let requests: Vec<(tokio::task::Id, u64)> = inner
            .tasks
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(task, (id, _))| id.map(|id| (*task, id)))
            .collect();
        for (task, id) in requests {
            if !sink.is_waiting(id) {
                // An aborted task does not get to take itself off the list.
                if let Some((_, handle)) = inner.tasks.lock().unwrap().remove(&task) {
                    handle.abort();
                }
            }
        }
    }
}

impl Inner {
    /// Spawns `work` on `runtime` as one of the transport's tasks: listed
    /// (under the lock, so before it can end) until it ends, aborted on
    /// close, or by [`reap`] once `request` (the request it sends, if it
    /// sends one) is no longer waited for.
    fn spawn_tracked(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        request: Option<u64>,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let this = self.clone();
        let mut tasks = self.tasks.lock().unwrap();
        let task = runtime.spawn(async move {
            work.await;
            if let Some(id) = tokio::task::try_id() {
                this.tasks.lock().unwrap().remove(&id);
            }
        });
        tasks.insert(task.id(), (request, task.abort_handle()));
    }

    /// Fails request `id` (or logs, for a notification).
    fn fail(&self, out: &Outgoing, error: Error) {
        match (out.id, self.sink.upgrade()) {
            (Some(id), Some(sink)) => sink.on_send_failed(id, error),
            _ => {
                tracing::warn!(server = %self.label, method = out.method.as_deref().unwrap_or(""), "{error}")
            }
        }
    }

    fn frame(&self, bytes: &[u8]) {
        if let Some(sink) = self.sink.upgrade() {
            sink.on_frame(bytes);
        }
    }

    /// Sends one message and handles whatever comes back.
    async fn deliver(self: Arc<Self>, message: Vec<u8>, out: Outgoing) {
        let message = Bytes::from(message);
        let gated = !matches!(
            out.method.as_deref(),
            Some("initialize" | "notifications/initialized")
        );
        if gated && !*self.handshake_done.borrow() {
            let mut done = self.handshake_done.subscribe();
            let _ = tokio::time::timeout(HANDSHAKE_GATE, done.wait_for(|done| *done)).await;
        }
        let exchange = self.exchange(&message, &out);
        match out.id {
            // Ended by `reap` once no longer waited for.
            Some(_) => exchange.await,
            None => {
                if tokio::time::timeout(NOTICE_TIME, exchange).await.is_err() {
                    let method = out.method.as_deref().unwrap_or("an answer");
                    tracing::warn!(server = %self.label, "sending {method} took over {} s; given up", NOTICE_TIME.as_secs());
                }
            }
        }
        if out.method.as_deref() == Some("notifications/initialized") {
            self.start_get_stream();
        }
    }

    /// POSTs one message and handles the answer, re-initializing once when
    /// the server forgot the session.
    async fn exchange(&self, message: &Bytes, out: &Outgoing) {
        let session = self.state.lock().unwrap().session_id.clone();
        match self.send_authorized(message, out).await {
            Ok(response)
                if response.status() == StatusCode::NOT_FOUND
                    && session.is_some()
                    && out.method.as_deref() != Some("initialize") =>
            {
                // The server forgot the session: re-initialize once, retry once.
                if let Err(e) = self.reinitialize(session.as_ref()).await {
                    return self.fail(out, e);
                }
                match self.send_authorized(message, out).await {
                    Ok(response) => self.handle(response, out).await,
                    Err(e) => self.fail(out, e),
                }
            }
            Ok(response) => self.handle(response, out).await,
            Err(e) => self.fail(out, e),
        }
    }

    /// Lets the messages held back by the handshake go.
    fn open_handshake_gate(&self) {
        self.handshake_done.send_replace(true);
    }

    /// POSTs a message with the server's credentials; a 401 (or a 403
    /// `insufficient_scope`) runs the authorization and retries, a few
    /// times at most.
    async fn send_authorized(&self, message: &Bytes, out: &Outgoing) -> Result<Answer, Error> {
        let Some(auth) = &self.auth else {
            return self.post(message, out, Vec::new()).await;
        };
        let mut rounds = 0;
        loop {
            let ticket = auth.request_headers("POST", &self.url).await?;
            let response = self.post(message, out, ticket.headers).await?;
            let status = response.status();
            let challenge = Challenge::parse(
                response
                    .headers()
                    .get_all(reqwest::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            );
            let refused = status == StatusCode::UNAUTHORIZED
                || (status == StatusCode::FORBIDDEN
                    && challenge.error.as_deref() == Some("insufficient_scope"));
            if !refused {
                return Ok(response);
            }
            if rounds >= MAX_AUTH_ROUNDS {
                return Err(Error::AuthFailed(format!(
                    "{}: {} still answers HTTP {status} after authorization",
                    self.label,
                    http::display_url(&self.url)
                )));
            }
            rounds += 1;
            let nonce = response
                .headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            drop(response);
            auth.on_challenge(
                ticket.generation,
                status.as_u16(),
                &challenge,
                nonce.as_deref(),
            )
            .await?;
        }
    }

    /// The credential headers for a request without a retry of its own.
    async fn auth_headers(&self, method: &str) -> Vec<(&'static str, HeaderValue)> {
        match &self.auth {
            Some(auth) => match auth.request_headers(method, &self.url).await {
                Ok(ticket) => ticket.headers,
                Err(e) => {
                    tracing::debug!(server = %self.label, "no credentials for {method}: {e}");
                    Vec::new()
                }
            },
            None => Vec::new(),
        }
    }

    /// POSTs one message with the transport's headers, this message's
    /// (session, protocol version, stateless `Mcp-*`) and `auth`'s.
    async fn post(
        &self,
        message: &Bytes,
        out: &Outgoing,
        auth: Vec<(&'static str, HeaderValue)>,
    ) -> Result<Answer, Error> {
        let response = match &self.direct {
            Some((client, uri)) => {
                let mut request = hyper::Request::new(http_body_util::Full::new(message.clone()));
                *request.method_mut() = hyper::Method::POST;
                *request.uri_mut() = uri.clone();
                let headers = request.headers_mut();
                // Room for ours and hyper's (`Host`, `Content-Length`).
                *headers = self.message_headers(out, auth.clone(), 3);
                if !headers.contains_key(USER_AGENT) {
                    headers.append(USER_AGENT, HeaderValue::from_static(http::USER_AGENT));
                }
                match client.request(request).await {
                    // reqwest follows a redirect to the same origin.
                    Ok(response) if response.status().is_redirection() => {
                        drop(response);
                        let headers = self.message_headers(out, auth, 0);
                        Answer::Reqwest(self.post_reqwest(message, headers).await?)
                    }
                    Ok(response) => Answer::Direct(response),
                    Err(e) => return Err(http::unreachable_error(&self.label, &self.url, &e)),
                }
            }
            None => {
                let headers = self.message_headers(out, auth, 0);
                Answer::Reqwest(self.post_reqwest(message, headers).await?)
            }
        };
        // Only a successful answer assigns a session (a server may attach an
        // id to a refusal, e.g. a 400 to `server/discover`, and then drop it).
        if let Some(id) = response
            .headers()
            .get(SESSION_ID)
            .filter(|v| response.status().is_success() && v.to_str().is_ok())
        {
            let mut state = self.state.lock().unwrap();
            if out.method.as_deref() == Some("initialize") || state.session_id.is_none() {
                state.session_id = Some(id.clone());
            }
        }
        Ok(response)
    }

    /// The POST through reqwest (see [`Inner::direct`]).
    async fn post_reqwest(
        &self,
        message: &Bytes,
        headers: HeaderMap,
    ) -> Result<reqwest::Response, Error> {
        self.http
            .post(self.url.clone())
            .headers(headers)
            .body(message.clone())
            .send()
            .await
            .map_err(|e| http::network_error(&self.label, &self.url, e))
    }

    /// The headers of one POST: the configured ones, then (added, as
    /// reqwest's `header` does) the content type, `auth`'s, and this
    /// message's; with room for `more`.
    fn message_headers(
        &self,
        out: &Outgoing,
        auth: Vec<(&'static str, HeaderValue)>,
        more: usize,
    ) -> HeaderMap {
        let (session, version, stateless) = {
            let state = self.state.lock().unwrap();
            let stateless = state
                .protocol_version
                .as_deref()
                .is_some_and(crate::protocol::is_stateless);
            (
                state.session_id.clone(),
                state.version_header.clone(),
                stateless,
            )
        };
        let mut headers = HeaderMap::with_capacity(self.headers.len() + auth.len() + 4 + more);
        for (name, value) in &self.headers {
            headers.append(name, value.clone());
        }
        headers.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.append(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        for (name, value) in auth {
            headers.append(name, value);
        }
        let initialize = out.method.as_deref() == Some("initialize");
        // `initialize` always opens a new session: never send an old id with it.
        if let Some(session) = session.filter(|_| !initialize) {
            headers.append(HeaderName::from_static(SESSION_ID), session);
        }
        if let Some(version) = version.filter(|_| !initialize) {
            headers.append(HeaderName::from_static(PROTOCOL_VERSION), version);
        }
        if stateless {
            let mut add = |name: &str, value: &str| {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) {
                    headers.append(name, value);
                }
            };
            if let Some(method) = &out.method {
                add(MCP_METHOD, method);
            }
            // The tasks extension names its task (SEP-2663), so that a
            // balancer can route it to the replica that holds it.
            let named = matches!(
                out.method.as_deref(),
                Some(
                    "tools/call"
                        | "prompts/get"
                        | "resources/read"
                        | "tasks/get"
                        | "tasks/update"
                        | "tasks/cancel"
                )
            );
            if let Some(name) = out.name.as_deref().filter(|_| named) {
                add(MCP_NAME, &crate::param_headers::encode_text(name));
            }
            for (name, value) in &out.headers {
                add(name, value);
            }
        }
        headers
    }

    /// Handles the answer to one POST.
    async fn handle(&self, response: Answer, out: &Outgoing) {
        let status = response.status();
        if status == StatusCode::ACCEPTED {
            return;
        }
        let kind = http::content_type_of(response.headers());
        if status.is_success() && kind == "application/json" {
            // Not read while what was read before is handled past a bound:
            // the server's socket pushes back meanwhile.
            super::held_off(&self.sink).await;
            // The common answer, read without reqwest when it came without.
            let body = match response {
                Answer::Direct(r) => {
                    http::read_capped(&self.label, r.into_body(), self.max_message_bytes).await
                }
                Answer::Reqwest(r) => {
                    let r = hyper::Response::<reqwest::Body>::from(r);
                    http::read_capped(&self.label, r.into_body(), self.max_message_bytes).await
                }
            };
            match body {
                Ok(body) if body.iter().all(u8::is_ascii_whitespace) => {
                    if out.id.is_some() {
                        self.fail(
                            out,
                            Error::ProtocolError(format!(
                                "{}: empty response to a request",
                                self.label
                            )),
                        );
                    }
                }
                Ok(body) => self.frame(&body),
                Err(e) => self.fail(out, e),
            }
            return;
        }
        let response = response.into_reqwest();
        if !status.is_success() {
            if status.is_redirection() {
                let error = http::response_error(&self.label, &self.url, response).await;
                return self.fail(out, error);
            }
            let body = http::read_body(&self.label, response, 64 * 1024)
                .await
                .unwrap_or_default();
            // Some servers put a JSON-RPC error for the request in the body.
            if kind == "application/json" && is_response_to(&body, out.id) {
                return self.frame(&body);
            }
            return self.fail(
                out,
                http::status_error(&self.label, &self.url, status, &body),
            );
        }
        match kind.as_str() {
            "text/event-stream" => self.read_stream(response, out.id).await,
            _ if out.id.is_none() => {}
            other => {
                let body = http::read_body(&self.label, response, 4096)
                    .await
                    .unwrap_or_default();
                let shown = if other.is_empty() {
                    "no content type"
                } else {
                    other
                };
                // Redacted before it is cut, so no secret shows in part.
                let body = String::from_utf8_lossy(&body);
                let start = crate::secrets::redact(&body)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(120)
                    .collect::<String>();
                self.fail(
                    out,
                    Error::ProtocolError(format!(
                        "{}: expected JSON or an SSE stream, got {shown}: {start}",
                        self.label
                    )),
                );
            }
        }
    }

    /// Reads an SSE response; when it ends before the response to `id`,
    /// resumes it with `Last-Event-ID` after the server's `retry`.
    async fn read_stream(&self, response: reqwest::Response, id: Option<u64>) {
        let mut position = StreamPosition::default();
        self.pump(response, &mut position, id).await;
        let waiting = |id| self.sink.upgrade().is_some_and(|s| s.is_waiting(id));
        let Some(id) = id else { return };
        let mut attempts = 0;
        while waiting(id) && !self.closed.load(Ordering::SeqCst) {
            let Some(last) = position.last_event_id.clone() else {
                return self.fail_id(
                    id,
                    Error::TransportClosed(format!(
                        "{}: the SSE stream ended before the response",
                        self.label
                    )),
                );
            };
            attempts += 1;
            if attempts > MAX_RESUMES {
                return self.fail_id(
                    id,
                    Error::TransportClosed(format!(
                        "{}: the SSE stream could not be resumed",
                        self.label
                    )),
                );
            }
            tokio::time::sleep(position.retry.unwrap_or(DEFAULT_RETRY)).await;
            match self.get(Some(&last)).await {
                Ok(r)
                    if r.status().is_success() && http::content_type(&r) == "text/event-stream" =>
                {
                    self.pump(r, &mut position, Some(id)).await;
                }
                Ok(r) => {
                    return self.fail_id(id, http::response_error(&self.label, &self.url, r).await)
                }
                Err(e) => return self.fail_id(id, e),
            }
        }
    }

    fn fail_id(&self, id: u64, error: Error) {
        if let Some(sink) = self.sink.upgrade() {
            sink.on_send_failed(id, error);
        }
    }

    /// Hands every message event of a stream to the sink. `request` is the
    /// request a POST's stream answers: the stream is read until that
    /// request is answered, and an event over `max_message_bytes` fails it
    /// (PROTOCOL_ERROR) as soon as the event passes the limit; the rest of
    /// the stream is not read.
    async fn pump(
        &self,
        response: reqwest::Response,
        position: &mut StreamPosition,
        request: Option<u64>,
    ) {
        let mut events = http::events(response, self.max_message_bytes);
        loop {
            // See `handle`: the socket pushes back meanwhile.
            super::held_off(&self.sink).await;
            let Some(item) = events.next().await else {
                break;
            };
            let Ok(item) = item else { break };
            position.saw(events.parser());
            match item {
                Item::Event(event) => {
                    if event.event == "message" && !event.data.trim().is_empty() {
                        self.frame(event.data.as_bytes());
                        // Answered (or abandoned): the stream's end is
                        // awaited briefly (its connection is then reused),
                        // and what the server holds open past that is not
                        // read: its connection goes.
                        let waiting = |id| self.sink.upgrade().is_some_and(|s| s.is_waiting(id));
                        if request.is_some_and(|id| !waiting(id)) {
                            let rest = async {
                                for _ in 0..EVENTS_AFTER_ANSWER {
                                    if !matches!(events.next().await, Some(Ok(_))) {
                                        return;
                                    }
                                }
                            };
                            let _ = tokio::time::timeout(END_AFTER_ANSWER, rest).await;
                            return;
                        }
                    }
                }
                Item::Oversized { size, head } => {
                    let Some(sink) = self.sink.upgrade() else {
                        return;
                    };
                    let id = line_reader::id_in_head(&head)
                        .filter(|id| sink.is_waiting(*id))
                        .or(request);
                    sink.on_oversized(id, size, self.max_message_bytes);
                    if request.is_some_and(|id| !sink.is_waiting(id)) {
                        return;
                    }
                }
            }
        }
        position.saw(events.parser());
    }

    async fn get(&self, last_event_id: Option<&str>) -> Result<reqwest::Response, Error> {
        let (session, version) = {
            let state = self.state.lock().unwrap();
            (state.session_id.clone(), state.protocol_version.clone())
        };
        let mut request = self
            .http
            .get(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream");
        for (name, value) in self.auth_headers("GET").await {
            request = request.header(name, value);
        }
        if let Some(session) = session {
            request = request.header(SESSION_ID, session);
        }
        if let Some(version) = version {
            request = request.header(PROTOCOL_VERSION, version);
        }
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT_ID, last);
        }
        request
            .send()
            .await
            .map_err(|e| http::network_error(&self.label, &self.url, e))
    }

    /// Opens the optional GET stream for server-initiated messages (once).
    fn start_get_stream(self: &Arc<Self>) {
        {
            let mut state = self.state.lock().unwrap();
            let stateless = state
                .protocol_version
                .as_deref()
                .is_some_and(crate::protocol::is_stateless);
            if state.get_stream_started || stateless {
                drop(state);
                self.open_handshake_gate();
                return;
            }
            state.get_stream_started = true;
        }
        let this = self.clone();
        self.spawn_tracked(&tokio::runtime::Handle::current(), None, async move {
            let mut position = StreamPosition::default();
            let mut failures = 0u32;
            while !this.closed.load(Ordering::SeqCst) {
                let answer = this.get(position.last_event_id.as_deref()).await;
                // Whatever the answer, the server has seen the GET (or never
                // will): the messages behind the handshake may go.
                this.open_handshake_gate();
                match answer {
                    Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                    Ok(r)
                        if r.status().is_success()
                            && http::content_type(&r) == "text/event-stream" =>
                    {
                        failures = 0;
                        this.pump(r, &mut position, None).await;
                    }
                    Ok(r) => {
                        tracing::debug!(server = %this.label, status = %r.status(), "no GET stream");
                        return;
                    }
                    Err(e) => {
                        failures += 1;
                        tracing::debug!(server = %this.label, "GET stream failed: {e}");
                        if failures > MAX_RESUMES {
                            return;
                        }
                    }
                }
                tokio::time::sleep(position.retry.unwrap_or(DEFAULT_RETRY) * failures.max(1)).await;
            }
        });
    }

    /// Runs the saved `initialize` again for a new session. Its answer goes
    /// to the peer, which no longer waits for that id and ignores it.
    async fn reinitialize(&self, stale: Option<&HeaderValue>) -> Result<(), Error> {
        let _one = self.reinit.lock().await;
        let init = {
            let mut state = self.state.lock().unwrap();
            if state.session_id.as_ref() != stale {
                return Ok(()); // another request already did it
            }
            state.session_id = None;
            state.initialize.clone()
        };
        let Some(init) = init else {
            return Err(Error::TransportClosed(format!(
                "{}: the server ended the session",
                self.label
            )));
        };
        tracing::info!(server = %self.label, "session expired (404); initializing again");
        let out = Outgoing::read(&init);
        let response = self.send_authorized(&Bytes::from(init), &out).await?;
        if !response.status().is_success() {
            return Err(
                http::response_error(&self.label, &self.url, response.into_reqwest()).await,
            );
        }
        // Read the answer to completion (it may be a stream) before going on.
        let _ = http::read_body(&self.label, response.into_reqwest(), self.max_message_bytes).await;
        let note = INITIALIZED_NOTE;
        let response = self
            .send_authorized(&Bytes::from_static(note), &Outgoing::read(note))
            .await?;
        let _ = http::read_body(&self.label, response.into_reqwest(), 4096).await;
        Ok(())
    }
}

/// The `notifications/initialized` line the transport sends itself when it
/// initializes again after a 404. Written out rather than encoded through
/// `jsonrpc`, which sits above the transports (a transport moves bytes; it
/// does not depend on the message layer).
pub(crate) const INITIALIZED_NOTE: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// The answer to a POST, from whichever client sent it ([`Inner::direct`]).
enum Answer {
    Direct(hyper::Response<hyper::body::Incoming>),
    Reqwest(reqwest::Response),
}

impl Answer {
    fn status(&self) -> StatusCode {
        match self {
            Answer::Direct(r) => r.status(),
            Answer::Reqwest(r) => r.status(),
        }
    }

    fn headers(&self) -> &HeaderMap {
        match self {
            Answer::Direct(r) => r.headers(),
            Answer::Reqwest(r) => r.headers(),
        }
    }

    /// As a reqwest response, for what is read that way (errors, streams).
    fn into_reqwest(self) -> reqwest::Response {
        match self {
            Answer::Direct(r) => reqwest::Response::from(r.map(reqwest::Body::wrap)),
            Answer::Reqwest(r) => r,
        }
    }
}

/// The client and URI for POSTs to `url` without reqwest, when there is a
/// direct client for `policy` ([`crate::net::direct::client_for`]) and the
/// URL is one that client sends as reqwest would: http or https, no user
/// info (reqwest turns that into an `Authorization` header).
fn direct_route(
    url: &url::Url,
    policy: &crate::net::policy::NetworkPolicy,
) -> Option<(DirectClient, hyper::Uri)> {
    if !matches!(url.scheme(), "http" | "https")
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    let uri = url.as_str().parse::<hyper::Uri>().ok()?;
    Some((crate::net::direct::client_for(policy)?, uri))
}

/// Whether `body` is a JSON-RPC response to request `id`.
fn is_response_to(body: &[u8], id: Option<u64>) -> bool {
    let Some(id) = id else { return false };
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64))
        == Some(id)
}
