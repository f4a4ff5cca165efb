//! A gateway serving MCP's Streamable HTTP transport at `/mcp`
//! (`mcpmux gateway --http ADDR`): stateful sessions (`Mcp-Session-Id`,
//! revisions 2025-11-25 and older) and the stateless 2026-07-28 revision
//! (`server/discover`, per-request `_meta`, no session), answers as JSON or
//! as an SSE stream (which also carries the request's progress), a `GET`
//! stream for the session's notifications, and `DELETE` to end a session.
//!
//! Who may talk to it: with a token (`--token-env`), every request needs
//! `Authorization: Bearer <token>` (401 otherwise; compared in constant
//! time, never logged); a request whose `Origin` is not the gateway's own
//! is 403 (DNS rebinding). Binding to anything but loopback needs a token.
//!
//! Each session owns one connection (`connection.rs`); a router task per session sends
//! each answer to the `POST` that carried its request, progress to the
//! stream of the request that asked for it, and everything else to the
//! session's `GET` stream (dropped when none is open). All bounded. An
//! answer holds its session's budget (`budget.rs`) until hyper has taken
//! the last of it: a batch's answers are assembled as their parts, never
//! copied into one buffer, and those past the budget are -32000 "gateway
//! busy" errors.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::budget::{Held, Outgoing};
use super::connection::{error_answer, Connection, OUTGOING_QUEUE};
use super::Gateway;
use crate::error::Error;
use crate::stateless;

/// Most sessions open at once; past it a new `initialize` ends the session
/// idle longest.
pub const MAX_SESSIONS: usize = 256;
/// Messages waiting on one response stream.
const STREAM_QUEUE: usize = 256;
/// The session header.
const SESSION_HEADER: &str = "mcp-session-id";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Who may use the HTTP gateway, and how big a request may be.
#[derive(Clone)]
pub struct HttpOptions {
    /// The bearer token clients must send; `None` = none needed (loopback
    /// only).
    pub token: Option<String>,
    /// Largest request body, in bytes.
    pub max_message_bytes: usize,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

/// Refuses (`CONFIG_INVALID`) to serve on a non-loopback address without a
/// token: anyone who can reach the port could use every configured server.
pub fn check_bind(addr: &SocketAddr, has_token: bool) -> Result<(), Error> {
    if addr.ip().is_loopback() || has_token {
        Ok(())
    } else {
        Err(Error::ConfigInvalid(format!(
            "--http {addr}: serving on an address other than loopback needs --token-env VAR \
             (clients must then send Authorization: Bearer <the value of VAR>)"
        )))
    }
}

/// Serves the gateway on `listener` until the task is dropped. Each
/// connection and request runs on its own engine task.
pub async fn serve_http(
    gateway: Gateway,
    listener: TcpListener,
    options: HttpOptions,
) -> Result<(), Error> {
    let local = listener
        .local_addr()
        .map_err(|e| Error::Internal(format!("gateway: local address: {e}")))?;
    check_bind(&local, options.token.is_some())?;
    let state = Arc::new(State {
        gateway,
        sessions: Mutex::default(),
        origins: own_origins(&local),
        options,
    });
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors and the like: try again, never exit.
            Err(e) => {
                tracing::warn!("gateway: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        // Answers are small and go out at once: without this, Nagle's
        // algorithm and delayed ACKs hold each one back ~40 ms.
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(handle(&state, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// What every request shares.
struct State {
    gateway: Gateway,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// `Origin` values that are the gateway itself.
    origins: Vec<String>,
    options: HttpOptions,
}

/// One client's session.
struct Session {
    connection: Connection,
    routes: Arc<Mutex<Routes>>,
    /// When a request last named it: with all sessions taken, the one
    /// idle longest makes room (clients often leave without `DELETE`).
    last_used: Mutex<std::time::Instant>,
}

impl Session {
    fn touch(&self) {
        *self.last_used.lock().unwrap() = std::time::Instant::now();
    }

    fn end(&self) {
        self.connection.close();
        // Ends its GET stream and any POST still waiting.
        let mut routes = self.routes.lock().unwrap();
        routes.standalone = None;
        routes.waiting.clear();
    }
}

/// Where a session's outgoing messages go.
#[derive(Default)]
struct Routes {
    /// Request id (as JSON text) → the stream of the POST that carried it.
    waiting: HashMap<String, PostStream>,
    /// Progress token (as JSON text) → request id (as JSON text).
    tokens: HashMap<String, String>,
    /// The session's `GET` stream, when one is open.
    standalone: Option<mpsc::Sender<Outgoing>>,
}

impl Session {
    /// A session whose connection's messages are routed by a new task.
    fn start(gateway: Gateway) -> Session {
        let (out, mut outgoing) = mpsc::channel::<Outgoing>(OUTGOING_QUEUE);
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let table = routes.clone();
        tokio::spawn(async move {
            while let Some(msg) = outgoing.recv().await {
                route(&table, msg);
            }
        });
        Session {
            connection: Connection::new(gateway, out),
            routes,
            last_used: Mutex::new(std::time::Instant::now()),
        }
    }
}

/// The response stream of one `POST`, shared by the requests it carried.
#[derive(Clone)]
struct PostStream {
    tx: mpsc::Sender<Outgoing>,
    /// Slots kept free for answers (one per request of the `POST`): a
    /// notification may only take a slot above them, so an answer always
    /// finds room.
    reserved: usize,
}

/// Sends one outgoing message where it belongs (see the module doc).
fn route(routes: &Mutex<Routes>, out: Outgoing) {
    let mut routes = routes.lock().unwrap();
    let msg = &out.msg;
    let is_answer = msg.get("method").is_none();
    let target = if is_answer {
        let key = msg["id"].to_string();
        routes.tokens.retain(|_, id| *id != key);
        routes.waiting.remove(&key).map(|stream| stream.tx)
    } else if msg["method"] == "notifications/progress" {
        let token = msg["params"]["progressToken"].to_string();
        match routes
            .tokens
            .get(&token)
            .and_then(|id| routes.waiting.get(id))
        {
            Some(stream) if stream.tx.capacity() > stream.reserved => Some(stream.tx.clone()),
            // No room above the answers' slots: this update is dropped.
            Some(_) => None,
            None => routes.standalone.clone(),
        }
    } else {
        routes.standalone.clone()
    };
    if let Some(target) = target {
        // Full: the client is not reading its notification stream, and
        // this notification is dropped (answers always have room).
        let _ = target.try_send(out);
    }
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != "/mcp" {
        return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    if let Some(origin) = req.headers().get(ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !state.origins.iter().any(|o| o == origin) {
            return plain(
                StatusCode::FORBIDDEN,
                "forbidden: Origin is not this gateway",
            );
        }
    }
    if let Some(token) = &state.options.token {
        let sent = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same_secret(sent.as_bytes(), token.as_bytes()) {
            let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized");
            response
                .headers_mut()
                .insert("www-authenticate", HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let session_id = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *req.method() {
        Method::POST => post(state, req, session_id).await,
        Method::GET => get(state, session_id),
        Method::DELETE => {
            let Some(id) = session_id else {
                return plain(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
            };
            let removed = state.sessions.lock().unwrap().remove(&id);
            match removed {
                Some(session) => {
                    session.end();
                    plain(StatusCode::OK, "")
                }
                None => plain(StatusCode::NOT_FOUND, "unknown session"),
            }
        }
        _ => {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
            response
                .headers_mut()
                .insert("allow", HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// A `POST`: one JSON-RPC message, or a batch.
async fn post(state: &State, req: Request<Incoming>, session_id: Option<String>) -> Response<Body> {
    // The revision the client says it speaks, in the standard header: an
    // unknown one is refused (400), as the transport asks of servers.
    let header_version = req
        .headers()
        .get("mcp-protocol-version")
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    if let Some(version) = &header_version {
        let known = version == stateless::VERSION
            || crate::protocol::STATEFUL_VERSIONS.contains(&version.as_str());
        if !known {
            return plain(StatusCode::BAD_REQUEST, "unsupported MCP-Protocol-Version");
        }
    }
    let wants_sse = req
        .headers()
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    let body = match Limited::new(req.into_body(), state.options.max_message_bytes)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                &error_answer(
                    &Value::Null,
                    -32600,
                    &format!(
                        "request larger than {} bytes",
                        state.options.max_message_bytes
                    ),
                    Some("LIMIT_EXCEEDED"),
                ),
                None,
            )
        }
    };
    let messages = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(batch)) if !batch.is_empty() => batch,
        Ok(msg @ Value::Object(_)) => vec![msg],
        Ok(_) | Err(_) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &error_answer(
                    &Value::Null,
                    -32700,
                    "parse error: expected a JSON-RPC message",
                    None,
                ),
                None,
            )
        }
    };
    let is_request = |m: &Value| m.get("method").is_some() && m.get("id").is_some();
    let initialize = messages.iter().any(|m| m["method"] == "initialize");
    let stateless = header_version.as_deref() == Some(stateless::VERSION)
        || messages.iter().any(|m| {
            m["method"] == "server/discover"
                || m.pointer(&format!(
                    "/params/_meta/{}",
                    pointer_key(stateless::META_PROTOCOL_VERSION)
                )) == Some(&json!(stateless::VERSION))
        });
    // Which session: an existing one, a new one for `initialize`, or one
    // made for this request alone (the stateless revision).
    let (session, new_id, ephemeral) = match (&session_id, initialize, stateless) {
        (Some(id), _, _) => match state.sessions.lock().unwrap().get(id) {
            Some(s) => {
                s.touch();
                (s.clone(), None, false)
            }
            None => {
                return plain(
                    StatusCode::NOT_FOUND,
                    "unknown session (it ended or never was)",
                )
            }
        },
        (None, true, _) => {
            let mut sessions = state.sessions.lock().unwrap();
            if sessions.len() >= MAX_SESSIONS {
                let idlest = sessions
                    .iter()
                    .min_by_key(|(_, s)| *s.last_used.lock().unwrap())
                    .map(|(id, _)| id.clone());
                if let Some(old) = idlest.and_then(|id| sessions.remove(&id)) {
                    old.end();
                }
            }
            let Some(id) = new_session_id() else {
                return plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no randomness for a session id",
                );
            };
            let session = Arc::new(Session::start(state.gateway.clone()));
            sessions.insert(id.clone(), session.clone());
            (session, Some(id), false)
        }
        (None, false, true) => {
            let session = Session::start(state.gateway.clone());
            session.connection.set_stateless();
            (Arc::new(session), None, true)
        }
        (None, false, false) => {
            return plain(
                StatusCode::BAD_REQUEST,
                "missing Mcp-Session-Id (initialize first, or use the stateless revision)",
            )
        }
    };
    let requests: Vec<String> = messages
        .iter()
        .filter(|m| is_request(m))
        .map(|m| m["id"].to_string())
        .collect();
    if requests.is_empty() {
        for msg in messages {
            session.connection.handle(msg).await;
        }
        return plain(StatusCode::ACCEPTED, "");
    }
    let (tx, rx) = mpsc::channel::<Outgoing>(STREAM_QUEUE + requests.len());
    let stream = PostStream {
        tx,
        reserved: requests.len(),
    };
    let mut asked_for_progress = false;
    {
        let mut routes = session.routes.lock().unwrap();
        for msg in messages.iter().filter(|m| is_request(m)) {
            let key = msg["id"].to_string();
            routes.waiting.insert(key.clone(), stream.clone());
            let token = msg
                .get("params")
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get("progressToken"));
            if let Some(token) = token {
                routes.tokens.insert(token.to_string(), key);
                asked_for_progress = true;
            }
        }
    }
    drop(stream);
    let batch = messages.len() > 1;
    // Cancels what is still unanswered when the response goes away early
    // (the client disconnected), and ends a one-request session.
    let guard = PendingGuard {
        session: session.clone(),
        pending: requests,
        ephemeral,
    };
    for msg in messages {
        session.connection.handle(msg).await;
    }
    let header = new_id.as_deref();
    // An SSE stream only when there is something to stream before the
    // answer (progress); a plain JSON answer costs less.
    if wants_sse && asked_for_progress {
        sse_response(rx, guard, header)
    } else {
        let mut guard = guard;
        let mut rx = rx;
        // Each answer serialized as it comes (its value dropped), and what
        // it holds of the session's budget kept until hyper has sent it.
        let mut parts = VecDeque::new();
        let mut held = Vec::new();
        while let Some(out) = rx.recv().await {
            if out.msg.get("method").is_none() {
                guard.answered(&out.msg["id"]);
                let (bytes, answer_held) = out.into_bytes();
                if batch {
                    parts.push_back(Bytes::from_static(if parts.is_empty() {
                        b"["
                    } else {
                        b","
                    }));
                }
                parts.push_back(Bytes::from(bytes));
                held.extend(answer_held);
                if guard.pending.is_empty() {
                    break;
                }
            }
        }
        if batch {
            parts.push_back(Bytes::from_static(if parts.is_empty() {
                b"[]"
            } else {
                b"]"
            }));
        } else if parts.is_empty() {
            let none = error_answer(
                &Value::Null,
                -32603,
                "no answer (the request was cancelled)",
                None,
            );
            parts.push_back(Bytes::from(none.to_string()));
        }
        let mut response = Response::new(JsonParts::new(parts, held).boxed());
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(id) = header.and_then(|s| HeaderValue::from_str(s).ok()) {
            response.headers_mut().insert(SESSION_HEADER, id);
        }
        response
    }
}

/// Most bytes of a [`JsonParts`] body handed to hyper at once: an answer's
/// budget is given back only about when the last of it is written.
const BODY_CHUNK: usize = 1 << 20;

/// A JSON body sent as the parts it was assembled from (a batch's answers
/// are never copied into one buffer), in chunks of at most [`BODY_CHUNK`],
/// with its exact length; what the answers hold of the session's budget is
/// given back once hyper has taken the last chunk, or the response is
/// dropped (the client went away).
struct JsonParts {
    parts: VecDeque<Bytes>,
    remaining: u64,
    held: Vec<Held>,
}

impl JsonParts {
    fn new(parts: VecDeque<Bytes>, held: Vec<Held>) -> JsonParts {
        let remaining = parts.iter().map(|p| p.len() as u64).sum();
        JsonParts {
            parts,
            remaining,
            held,
        }
    }
}

impl hyper::body::Body for JsonParts {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let Some(mut part) = this.parts.pop_front() else {
            this.held.clear();
            return Poll::Ready(None);
        };
        if part.len() > BODY_CHUNK {
            let rest = part.split_off(BODY_CHUNK);
            this.parts.push_front(rest);
        }
        this.remaining -= part.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(part))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// A `GET`: the session's stream of notifications.
fn get(state: &State, session_id: Option<String>) -> Response<Body> {
    let Some(id) = session_id else {
        return plain(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
    };
    let Some(session) = state.sessions.lock().unwrap().get(&id).cloned() else {
        return plain(StatusCode::NOT_FOUND, "unknown session");
    };
    session.touch();
    let (tx, rx) = mpsc::channel(STREAM_QUEUE);
    // A new GET stream replaces the old one (which then ends).
    session.routes.lock().unwrap().standalone = Some(tx);
    let guard = PendingGuard {
        session,
        pending: Vec::new(),
        ephemeral: false,
    };
    sse_response(rx, guard, None)
}

/// Requests of one `POST` not answered yet.
struct PendingGuard {
    session: Arc<Session>,
    pending: Vec<String>,
    ephemeral: bool,
}

impl PendingGuard {
    fn answered(&mut self, id: &Value) {
        let key = id.to_string();
        self.pending.retain(|k| *k != key);
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let mut routes = self.session.routes.lock().unwrap();
        for key in self.pending.drain(..) {
            routes.waiting.remove(&key);
            routes.tokens.retain(|_, id| *id != key);
            if let Ok(id) = serde_json::from_str::<Value>(&key) {
                self.session.connection.cancel(&id);
            }
        }
        drop(routes);
        if self.ephemeral {
            self.session.connection.close();
        }
    }
}

/// An SSE response carrying what arrives on `rx`; it ends once every
/// request of `guard` is answered (a `GET` stream: when replaced). What an
/// event holds of the session's budget is given back when hyper asks for
/// the next one.
fn sse_response(
    rx: mpsc::Receiver<Outgoing>,
    guard: PendingGuard,
    session: Option<&str>,
) -> Response<Body> {
    let stream_for_get = guard.pending.is_empty();
    let events = futures::stream::unfold(
        (rx, guard, false, None::<Held>),
        move |(mut rx, mut guard, done, sent)| async move {
            drop(sent);
            if done {
                return None;
            }
            let Outgoing { msg, held } = rx.recv().await?;
            if msg.get("method").is_none() {
                guard.answered(&msg["id"]);
            }
            let finished = !stream_for_get && guard.pending.is_empty();
            let frame = Frame::data(Bytes::from(format!("event: message\ndata: {msg}\n\n")));
            Some((Ok::<_, Infallible>(frame), (rx, guard, finished, held)))
        },
    );
    let mut response = Response::new(StreamBody::new(events).boxed());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert(SESSION_HEADER, id);
    }
    response
}

fn json_response(status: StatusCode, body: &Value, session: Option<&str>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        response.headers_mut().insert(SESSION_HEADER, id);
    }
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    if !text.is_empty() {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    }
    response
}

/// `Origin` values that are the gateway itself: its address, and the
/// loopback names for it.
fn own_origins(local: &SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut origins = vec![format!("http://{local}")];
    if local.ip().is_loopback() || local.ip().is_unspecified() {
        origins.extend([
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ]);
    }
    origins
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A random session id (128 bits, hex); `None` when the system has no
/// randomness to give (ids must not be guessable).
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `key` escaped for a JSON pointer (`/` → `~1`).
fn pointer_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_by_content_and_length() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"x"));
    }

    #[test]
    fn only_loopback_binds_go_without_a_token() {
        assert!(check_bind(&"127.0.0.1:1".parse().unwrap(), false).is_ok());
        assert!(check_bind(&"[::1]:1".parse().unwrap(), false).is_ok());
        let e = check_bind(&"0.0.0.0:1".parse().unwrap(), false).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        assert!(check_bind(&"0.0.0.0:1".parse().unwrap(), true).is_ok());
    }
}
