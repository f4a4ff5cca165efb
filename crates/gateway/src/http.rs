//! A gateway serving MCP's Streamable HTTP transport at `/mcp`
//! (`mcpmux gateway --http ADDR`): stateful sessions (`Mcp-Session-Id`,
//! revisions 2025-11-25 and older) and the stateless 2026-07-28 revision
//! (`server/discover`, per-request `_meta`, no session), answers as JSON or
//! as an SSE stream (which also carries the request's progress, opened once
//! progress or 50 ms pass before the answer), a `GET`
//! stream for the session's notifications, and `DELETE` to end a session.
//!
//! Who may talk to it: with a token (`--token-env`), every request needs
//! `Authorization: Bearer <token>` (401 otherwise; compared in constant
//! time, never logged); a request whose `Origin` is not the gateway's own
//! is 403 (DNS rebinding), and so is one whose `Host` is not a loopback
//! name or address (or one of [`HttpOptions::allowed_hosts`]) when the
//! gateway is bound to loopback or names its allowed hosts. Binding to
//! anything but loopback needs a token.
//!
//! The front door, before any of that: at most
//! [`HttpOptions::max_connections`] connections served at once; past it one
//! more waits accepted (the next ones in the listen queue) for a slot: the
//! next answer of known length says `Connection: close` and its connection
//! gives up its slot (pooling clients would otherwise hold every slot with
//! keep-alive connections until they are idle `header_read_timeout`). A
//! request head must arrive within
//! [`HttpOptions::header_read_timeout`] (which also closes a keep-alive
//! connection waiting that long for its next request), and a request body
//! that takes longer than [`HttpOptions::idle_timeout`], or a response the
//! client stops reading for that long, closes its connection.
//!
//! Each session owns one connection (`connection.rs`) whose messages are
//! routed where they are sent (`out.rs`): each answer to the `POST` that
//! carried its request, progress to the stream of the request that asked
//! for it, and everything else to the session's `GET` stream (dropped
//! when none is open). All bounded. An answer holds its session's budget
//! (`budget.rs`) until hyper has taken the last of it: a batch's answers
//! are assembled as their parts, never copied into one buffer, and those
//! past the budget are -32000 "gateway busy" errors.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

use super::access::{host_allowed, own_origins, same_secret};
use super::budget::{Held, Outgoing};
use super::connection::{error_answer, Connection};
use super::out::Out;
use super::session_token::{SessionKeys, SessionState};
use super::status::{self, StatusAccess};
use super::Gateway;
use mcpmux_core::error::Error;
use mcpmux_core::events_ext::SUBSCRIPTION_META;
use mcpmux_core::internal::stateless;
use mcpmux_core::internal::telemetry::ServedVia;

/// Most sessions open at once (the default of [`HttpOptions::max_sessions`]);
/// past it a new `initialize` ends the session idle longest among those
/// with no call in flight and no open `GET` stream, and is refused (503,
/// a JSON-RPC error) when there is none.
pub const MAX_SESSIONS: usize = 256;
/// Default [`HttpOptions::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 128;
/// Default [`HttpOptions::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`HttpOptions::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Messages waiting on one response stream.
const STREAM_QUEUE: usize = 256;
/// The session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// How often a draining gateway looks whether it may stop.
const DRAIN_CHECK: Duration = Duration::from_millis(50);

/// Sessions ended by `DELETE` that a replica remembers (so their tokens do
/// not carry them on here again).
const MAX_ENDED: usize = 4096;

/// One request being answered, until its response body is sent.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn start(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::Relaxed);
        InFlight(count.clone())
    }

    /// `body`, counted until it is sent or dropped.
    fn hold(self, body: Body) -> Body {
        Body::new(CountedBody {
            body,
            _counted: self,
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body that keeps its request counted as in flight.
struct CountedBody {
    body: Body,
    _counted: InFlight,
}

impl hyper::body::Body for CountedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Who may use the HTTP gateway, how big a request may be, and how many
/// connections it holds for how long. [`HttpOptions::default`]: no token,
/// the config's default message bound, the `DEFAULT_*` limits. Build them
/// with the `with_*` methods, or set the public fields; new fields may come
/// in any release.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The bearer token clients must send; `None` = none needed (loopback
    /// only).
    pub token: Option<String>,
    /// Largest request body, in bytes.
    pub max_message_bytes: usize,
    /// `Host` names (or `name:port`) served besides the loopback ones
    /// (`--allowed-host`, behind a reverse proxy). Bound to loopback, or
    /// with any name here, a request for another `Host` is 403.
    pub allowed_hosts: Vec<String>,
    /// Most connections served at once; the next ones wait (one accepted,
    /// the rest in the listen queue) until one closes; the next answer
    /// then says `Connection: close` and its connection closes for them.
    pub max_connections: usize,
    /// Most sessions open at once ([`MAX_SESSIONS`] by default).
    pub max_sessions: usize,
    /// How long a request head may take to arrive, counted from when the
    /// connection waits for one (so also a keep-alive connection's idle
    /// time between requests).
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive, and how long a response
    /// may wait for a client that does not read it, before the connection
    /// is closed.
    pub idle_timeout: Duration,
    /// The keys session ids are sealed with and this replica's name;
    /// `None`: a random key of this process. Only keys read from a key file
    /// ([`SessionKeys::shared`]) carry sessions begun elsewhere on.
    pub session_keys: Option<Arc<SessionKeys>>,
    /// How long [`serve_http_until`] drains before it returns: answering
    /// `/readyz` with 503 and refusing new sessions, while what is in
    /// flight finishes (`--drain-seconds`). Zero: it returns at once.
    pub drain_time: Duration,
    /// Also serve the status page at `/status` (`--status`), to whom
    /// [`StatusAccess`] says; `None`: not served (404). The gateway needs
    /// [`GatewayOptions::status`](crate::GatewayOptions::status) for its
    /// calls to be shown.
    pub status: Option<StatusAccess>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            max_message_bytes: mcpmux_core::config::DEFAULT_MAX_MESSAGE_BYTES,
            allowed_hosts: Vec::new(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_sessions: MAX_SESSIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            session_keys: None,
            drain_time: Duration::ZERO,
            status: None,
        }
    }
}

impl HttpOptions {
    /// The defaults ([`HttpOptions::default`]).
    pub fn new() -> Self {
        HttpOptions::default()
    }

    /// Sets [`HttpOptions::session_keys`].
    pub fn with_session_keys(mut self, keys: SessionKeys) -> Self {
        self.session_keys = Some(Arc::new(keys));
        self
    }

    /// Sets [`HttpOptions::status`].
    pub fn with_status(mut self, access: StatusAccess) -> Self {
        self.status = Some(access);
        self
    }

    /// Sets [`HttpOptions::drain_time`].
    pub fn with_drain_time(mut self, drain_time: Duration) -> Self {
        self.drain_time = drain_time;
        self
    }

    /// Sets [`HttpOptions::token`].
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Sets [`HttpOptions::max_message_bytes`].
    pub fn with_max_message_bytes(mut self, max_message_bytes: usize) -> Self {
        self.max_message_bytes = max_message_bytes;
        self
    }

    /// Sets [`HttpOptions::allowed_hosts`].
    pub fn with_allowed_hosts(mut self, allowed_hosts: Vec<String>) -> Self {
        self.allowed_hosts = allowed_hosts;
        self
    }

    /// Sets [`HttpOptions::max_connections`].
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Sets [`HttpOptions::max_sessions`].
    pub fn with_max_sessions(mut self, max_sessions: usize) -> Self {
        self.max_sessions = max_sessions;
        self
    }

    /// Sets [`HttpOptions::header_read_timeout`].
    pub fn with_header_read_timeout(mut self, header_read_timeout: Duration) -> Self {
        self.header_read_timeout = header_read_timeout;
        self
    }

    /// Sets [`HttpOptions::idle_timeout`].
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("max_message_bytes", &self.max_message_bytes)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("max_connections", &self.max_connections)
            .field("max_sessions", &self.max_sessions)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("status", &self.status)
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
    serve_http_until(gateway, listener, options, std::future::pending()).await
}

/// [`serve_http`] until `shutdown` resolves, then drains for at most
/// [`HttpOptions::drain_time`]: `/readyz` answers 503, a new session is
/// refused (503), everything else is still served, and it returns as soon
/// as no request is being answered (or the time is up). Streams a client
/// keeps open (`GET`) do not hold it.
pub async fn serve_http_until(
    gateway: Gateway,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let local = listener
        .local_addr()
        .map_err(|e| Error::Internal(format!("gateway: local address: {e}")))?;
    check_bind(&local, options.token.is_some())?;
    let enforce_host = local.ip().is_loopback() || !options.allowed_hosts.is_empty();
    let mut origins = own_origins(&local);
    for host in &options.allowed_hosts {
        origins.extend([format!("http://{host}"), format!("https://{host}")]);
    }
    let keys = match &options.session_keys {
        Some(keys) => keys.clone(),
        None => Arc::new(SessionKeys::ephemeral(None)?),
    };
    if keys.shared() {
        // The fleet's key seals the task ids any replica can serve (a
        // gateway serves HTTP once: set at most once).
        let _ = gateway.inner.fleet_keys.set(keys.clone());
    }
    let status = state_status(&options, enforce_host, &origins);
    let state = Arc::new(State {
        gateway,
        status,
        sessions: Mutex::default(),
        ended: Mutex::default(),
        origins,
        enforce_host,
        keys,
        draining: AtomicBool::new(false),
        in_flight: Arc::new(AtomicUsize::new(0)),
        options,
    });
    let mut shutdown = std::pin::pin!(shutdown);
    let mut drain_until: Option<tokio::time::Instant> = None;
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(state.options.header_read_timeout);
    let slots = Arc::new(Semaphore::new(state.options.max_connections.max(1)));
    let door = Arc::new(Door::default());
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown, if drain_until.is_none() => {
                if state.options.drain_time.is_zero() {
                    return Ok(());
                }
                state.draining.store(true, Ordering::Relaxed);
                drain_until = Some(tokio::time::Instant::now() + state.options.drain_time);
                continue;
            }
            () = tokio::time::sleep(DRAIN_CHECK), if drain_until.is_some() => {
                let idle = state.in_flight.load(Ordering::Relaxed) == 0;
                if idle || drain_until.is_some_and(|t| tokio::time::Instant::now() >= t) {
                    return Ok(());
                }
                continue;
            }
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            // Out of descriptors and the like: try again, never exit.
            Err(e) => {
                tracing::warn!("gateway: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Past the cap this connection waits, accepted (the next ones wait
        // in the listen queue), for the slot the next answer gives up
        // (keep-alive connections that clients keep pooled would otherwise
        // hold every slot until `header_read_timeout`, while this one waits).
        let Some(slot) = door.slot(&slots).await else {
            return Ok(());
        };
        // Answers are small and go out at once: without this, Nagle's
        // algorithm and delayed ACKs hold each one back ~40 ms.
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let builder = builder.clone();
        let door = door.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let idle = state.options.idle_timeout;
            let stall = Arc::new(Stall::default());
            let io = Watched {
                inner: stream,
                stall: stall.clone(),
            };
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (state, door) = (state.clone(), door.clone());
                async move {
                    // Counted until its body is sent (a draining gateway
                    // waits for it); a GET stream is not counted.
                    let counted =
                        (req.method() != Method::GET).then(|| InFlight::start(&state.in_flight));
                    let mut response = handle(&state, req, peer).await;
                    door.answering(&mut response);
                    if let Some(counted) = counted {
                        response = response.map(|body| counted.hold(body));
                    }
                    Ok::<_, Infallible>(response)
                }
            });
            let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
            // A response the client stops reading holds its connection
            // for `idle` at most.
            tokio::select! {
                _ = connection => {}
                () = stall.expired(idle) => {}
            }
        });
    }
}

/// Whether a connection waits for a slot, past the cap.
#[derive(Default)]
struct Door {
    /// A slot is wanted: the next answer of known length says
    /// `Connection: close` (its client then sends no request on that
    /// connection: no race), and its connection closes once it is sent.
    wanted: AtomicBool,
}

impl Door {
    /// A slot for a connection: a free one, else the one the next answer
    /// of known length gives up; `None` once the slots are gone. An idle
    /// connection is never closed for it: its client may send a request on
    /// it at that moment, which would then fail.
    async fn slot(&self, slots: &Arc<Semaphore>) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if let Ok(slot) = slots.clone().try_acquire_owned() {
            return Some(slot);
        }
        self.wanted.store(true, Ordering::SeqCst);
        let slot = slots.clone().acquire_owned().await.ok();
        self.wanted.store(false, Ordering::SeqCst);
        slot
    }

    /// An answer of known length takes the want of a slot, if any, and
    /// says `Connection: close`.
    fn answering(&self, response: &mut Response<Body>) {
        use hyper::body::Body as _;
        if self.wanted.load(Ordering::Relaxed)
            && response.body().size_hint().exact().is_some()
            && self.wanted.swap(false, Ordering::SeqCst)
        {
            response
                .headers_mut()
                .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
}

/// When a connection's writes last stopped making progress, if they have.
#[derive(Default)]
struct Stall {
    since: Mutex<Option<std::time::Instant>>,
}

impl Stall {
    /// Ends once writes have made no progress for `idle`.
    async fn expired(&self, idle: Duration) {
        loop {
            let since = *self.since.lock().unwrap();
            match since {
                Some(t) if t.elapsed() >= idle => return,
                Some(t) => tokio::time::sleep_until((t + idle).into()).await,
                None => tokio::time::sleep(idle).await,
            }
        }
    }
}

/// A connection's socket, noting when its writes stall.
struct Watched {
    inner: tokio::net::TcpStream,
    stall: Arc<Stall>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(polled.is_pending());
        polled
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(polled.is_pending());
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Watched {
    /// A write that could not proceed starts the stall clock (unless it
    /// runs); one that did stops it.
    fn note(&self, blocked: bool) {
        let mut since = self.stall.since.lock().unwrap();
        if !blocked {
            *since = None;
        } else if since.is_none() {
            *since = Some(std::time::Instant::now());
        }
    }
}

/// The status page's side of the listener, when it is served.
fn state_status(
    options: &HttpOptions,
    enforce_host: bool,
    origins: &[String],
) -> Option<status::Site> {
    let access = options.status.clone()?;
    Some(status::Site::new(
        access,
        enforce_host,
        options.allowed_hosts.clone(),
        origins.to_vec(),
    ))
}

/// What every request shares.
struct State {
    gateway: Gateway,
    /// The status page (`--status`), when served.
    status: Option<status::Site>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Sessions ended here by `DELETE` (their tokens would open again),
    /// the newest [`MAX_ENDED`].
    ended: Mutex<VecDeque<String>>,
    /// What session ids are sealed with.
    keys: Arc<SessionKeys>,
    /// Shutting down: `/readyz` is 503 and new sessions are refused.
    draining: AtomicBool,
    /// Requests being answered (their bodies not yet sent), `GET`s aside.
    in_flight: Arc<AtomicUsize>,
    /// `Origin` values that are the gateway itself.
    origins: Vec<String>,
    /// Whether `Host` must be loopback or one of `options.allowed_hosts`.
    enforce_host: bool,
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

    /// Ends the session: its calls are cancelled, each answered with an
    /// error saying `why` (on the POST that carried it), and its GET
    /// stream ends.
    fn end(&self, why: &str) {
        self.connection.close();
        let mut routes = self.routes.lock().unwrap();
        routes.standalone = None;
        routes.tokens.clear();
        for (key, stream) in routes.waiting.drain() {
            let id = serde_json::from_str(&key).unwrap_or(Value::Null);
            // Each POST keeps a slot per request for its answer.
            let _ = stream.tx.try_send(cancelled_answer(&id, why).into());
        }
    }

    /// Whether a call is in flight or a `GET` stream is open.
    fn busy(&self) -> bool {
        let routes = self.routes.lock().unwrap();
        !routes.waiting.is_empty() || routes.standalone.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Answers request `id` with an error saying `why` when it is still
    /// unanswered (whichever comes first, this or its own answer, is the
    /// one the client gets).
    fn resolve(&self, id: &Value, why: &str) {
        let key = id.to_string();
        let mut routes = self.routes.lock().unwrap();
        routes.tokens.retain(|_, k| *k != key);
        if let Some(stream) = routes.waiting.remove(&key) {
            let _ = stream.tx.try_send(cancelled_answer(id, why).into());
        }
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
    /// A session whose connection's messages are routed where they are
    /// sent (by the task that answered, or the engine thread reporting
    /// progress).
    fn start(gateway: Gateway) -> Session {
        Session::with_connection(gateway, Connection::new)
    }

    /// A session for one request of the stateless revision, of a client
    /// that sent `credential` (the tasks it makes are that credential's).
    fn stateless(gateway: Gateway, credential: Option<&str>) -> Session {
        let holder = crate::tasks::holder_of(credential);
        Session::with_connection(gateway, move |gateway, out| {
            Connection::stateless(gateway, out, holder)
        })
    }

    fn with_connection(
        gateway: Gateway,
        connect: impl FnOnce(Gateway, Out) -> Connection,
    ) -> Session {
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let table = routes.clone();
        let out = Out::Route(Arc::new(move |msg| route(&table, msg)));
        Session {
            connection: connect(gateway, out),
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
    /// Whether the client takes an SSE stream as the answer: only then
    /// can notifications of its requests (a stream's occurrences) go on it.
    sse: bool,
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
    } else if let Some(stream) = msg["params"]["_meta"]
        .get(SUBSCRIPTION_META)
        .and_then(|id| routes.waiting.get(&id.to_string()))
        .filter(|stream| stream.sse)
    {
        // A notification of a long-lived request (an events stream, a
        // listen stream) goes on that request's own response stream, the
        // only channel of the stateless revision.
        (stream.tx.capacity() > stream.reserved).then(|| stream.tx.clone())
    } else {
        routes.standalone.clone()
    };
    if let Some(target) = target {
        // Full: the client is not reading its notification stream, and
        // this notification is dropped (answers always have room).
        let _ = target.try_send(out);
    }
}

/// One HTTP request from the client at `peer`.
async fn handle(state: &State, req: Request<Incoming>, peer: SocketAddr) -> Response<Body> {
    if let Some(site) = &state.status {
        if status::is_status_path(req.uri().path()) {
            let fleet = || status::Fleet {
                replica: Some(state.keys.replica().to_owned()),
                transport: "http",
                ready: readiness(state).map_err(str::to_owned),
            };
            return status::respond(&state.gateway, site, req, peer, fleet).await;
        }
    }
    // The balancer's probes: cheap, unauthenticated, telling nothing else.
    match req.uri().path() {
        "/mcp" => {}
        "/healthz" => return plain(StatusCode::OK, "alive"),
        "/readyz" => {
            return match readiness(state) {
                Ok(()) => plain(StatusCode::OK, "ready"),
                Err(why) => plain(StatusCode::SERVICE_UNAVAILABLE, why),
            }
        }
        _ => return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp"),
    }
    if state.enforce_host {
        // The target's authority (absolute form) wins over the header.
        let host = match req.uri().authority() {
            Some(authority) => Some(authority.as_str()),
            None => req.headers().get(HOST).and_then(|v| v.to_str().ok()),
        };
        if !host.is_some_and(|h| host_allowed(h, &state.options.allowed_hosts)) {
            return plain(
                StatusCode::FORBIDDEN,
                "forbidden: Host is not this gateway (see --allowed-host)",
            );
        }
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
    let credential = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    if let Some(token) = &state.options.token {
        let sent = credential.as_deref().unwrap_or_default();
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
        Method::POST => post(state, req, session_id, credential.as_deref(), peer).await,
        Method::GET => get(state, session_id, credential.as_deref()),
        Method::DELETE => {
            let Some(id) = session_id else {
                return plain(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
            };
            match find_session(state, &id, credential.as_deref()) {
                Some(session) => {
                    state.sessions.lock().unwrap().remove(&id);
                    let mut ended = state.ended.lock().unwrap();
                    if ended.len() >= MAX_ENDED {
                        ended.pop_front();
                    }
                    ended.push_back(id);
                    drop(ended);
                    session.end("the session was ended (DELETE)");
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

/// A `POST`'s messages after registering its requests with the session
/// (the stream each answer goes to, progress tokens), with the keys of those
/// requests and whether any asked for progress. A request whose id is in
/// flight already, in the session or earlier in the batch, is answered in
/// `local` and left out.
fn register_requests(
    session: &Session,
    messages: Vec<Value>,
    stream: &PostStream,
    local: &mut Vec<Value>,
) -> (Vec<Value>, Vec<String>, bool) {
    let is_request = |m: &Value| m.get("method").is_some() && m.get("id").is_some();
    let mut requests: Vec<String> = Vec::new();
    let mut asked_for_progress = false;
    let mut routes = session.routes.lock().unwrap();
    let messages = messages
        .into_iter()
        .filter(|msg| {
            if !is_request(msg) {
                return true;
            }
            let key = msg["id"].to_string();
            // An id in flight in this session, or twice in this batch:
            // refused, and the first one left alone.
            if routes.waiting.contains_key(&key) {
                local.push(error_answer(
                    &msg["id"],
                    -32600,
                    "a request with this id is already in flight",
                    None,
                ));
                return false;
            }
            routes.waiting.insert(key.clone(), stream.clone());
            let token = msg
                .get("params")
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get("progressToken"));
            if let Some(token) = token {
                routes.tokens.insert(token.to_string(), key.clone());
                asked_for_progress = true;
            }
            requests.push(key);
            true
        })
        .collect();
    (messages, requests, asked_for_progress)
}

/// What a `POST` carries: its messages (a batch or one), whether it was a
/// batch, the `MCP-Protocol-Version` header and whether the client takes
/// an SSE stream; or the response refusing it (unknown revision, a body
/// too slow, too large or not JSON-RPC).
struct Posted {
    messages: Vec<Value>,
    batch: bool,
    header_version: Option<String>,
    wants_sse: bool,
    /// `Mcp-Method` and `Mcp-Name` as sent.
    routing: Routing,
}

/// The routing headers of a 2026-07-28 request.
#[derive(Default)]
struct Routing {
    method: Option<String>,
    name: Option<String>,
}

/// The `400` (JSON-RPC -32020, HeaderMismatch) for a request whose
/// `Mcp-Method` or `Mcp-Name` is missing or disagrees with its body.
fn header_mismatch(routing: &Routing, msg: &Value) -> Option<Response<Body>> {
    let method = msg["method"].as_str().unwrap_or_default();
    let named = match method {
        "tools/call" | "prompts/get" => msg.pointer("/params/name"),
        "resources/read" => msg.pointer("/params/uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => msg.pointer("/params/taskId"),
        _ => None,
    }
    .and_then(Value::as_str);
    let why = if routing.method.as_deref() != Some(method) {
        Some(format!(
            "Mcp-Method header {:?} does not match the body's method {method:?}",
            routing.method.as_deref().unwrap_or("(missing)")
        ))
    } else if let Some(name) = named {
        let sent = routing
            .name
            .as_deref()
            .and_then(mcpmux_core::internal::param_headers::decode_text);
        (sent.as_deref() != Some(name))
            .then(|| format!("Mcp-Name header does not match the body's name of this {method}"))
    } else {
        None
    };
    why.map(|why| {
        json_response(
            StatusCode::BAD_REQUEST,
            &error_answer(&msg["id"], -32020, &why, Some("INVALID_INPUT")),
            None,
        )
    })
}

/// Reads and checks a `POST`'s headers and body (see [`Posted`]).
async fn read_post(state: &State, req: Request<Incoming>) -> Result<Posted, Response<Body>> {
    // The revision the client says it speaks, in the standard header: an
    // unknown one is refused (400), as the transport asks of servers.
    let header_version = req
        .headers()
        .get("mcp-protocol-version")
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    if let Some(version) = &header_version {
        let known = version == stateless::VERSION
            || mcpmux_core::protocol::STATEFUL_VERSIONS.contains(&version.as_str());
        if !known {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                "unsupported MCP-Protocol-Version",
            ));
        }
    }
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let routing = Routing {
        method: header("mcp-method"),
        name: header("mcp-name"),
    };
    let wants_sse = req
        .headers()
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    // A body that trickles in holds its connection `idle_timeout` at most.
    let collected = tokio::time::timeout(
        state.options.idle_timeout,
        Limited::new(req.into_body(), state.options.max_message_bytes).collect(),
    )
    .await;
    let body = match collected {
        Ok(Ok(body)) => body.to_bytes(),
        Err(_) => return Err(plain(StatusCode::REQUEST_TIMEOUT, "request body too slow")),
        Ok(Err(_)) => {
            return Err(json_response(
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
            ))
        }
    };
    let (messages, batch) = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(batch)) if !batch.is_empty() => (batch, true),
        Ok(msg @ Value::Object(_)) => (vec![msg], false),
        Ok(_) | Err(_) => {
            return Err(json_response(
                StatusCode::BAD_REQUEST,
                &error_answer(
                    &Value::Null,
                    -32700,
                    "parse error: expected a JSON-RPC message",
                    None,
                ),
                None,
            ))
        }
    };
    Ok(Posted {
        messages,
        batch,
        header_version,
        wants_sse,
        routing,
    })
}

/// The session a `POST` belongs to, with the id of a new one (for the
/// response header) and whether it serves this request alone: an existing
/// session, a new one for `initialize` (making room by ending the idlest
/// session that is not busy), or one for the stateless revision.
// The refusal is the response itself, made once per refused POST.
#[allow(clippy::result_large_err)]
fn pick_session(
    state: &State,
    session_id: Option<&String>,
    initialize: Option<&Value>,
    stateless: bool,
    credential: Option<&str>,
) -> Result<(Arc<Session>, Option<String>, bool), Response<Body>> {
    match (session_id, initialize, stateless) {
        (Some(id), _, _) => match find_session(state, id, credential) {
            Some(s) => Ok((s, None, false)),
            None => Err(plain(
                StatusCode::NOT_FOUND,
                "unknown session (it ended or never was)",
            )),
        },
        (None, Some(init), _) => {
            if state.draining.load(Ordering::Relaxed) {
                let mut refusal = json_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &error_answer(
                        &init["id"],
                        -32000,
                        "this gateway replica is shutting down; start the session on another",
                        None,
                    ),
                    None,
                );
                refusal
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from_static("1"));
                return Err(refusal);
            }
            let params = init.get("params").cloned().unwrap_or(Value::Null);
            let version = crate::connection::negotiated(&params);
            let token = SessionState::new(version, &params, credential);
            let Some(id) = state.keys.seal(&token) else {
                return Err(plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no randomness for a session id",
                ));
            };
            let session = Arc::new(Session::start(state.gateway.clone()));
            if let Err(why) = keep_session(state, &id, &session) {
                return Err(json_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &error_answer(&init["id"], -32000, &why, Some("LIMIT_EXCEEDED")),
                    None,
                ));
            }
            Ok((session, Some(id), false))
        }
        (None, None, true) => {
            let session = Session::stateless(state.gateway.clone(), credential);
            Ok((Arc::new(session), None, true))
        }
        (None, None, false) => Err(plain(
            StatusCode::BAD_REQUEST,
            "missing Mcp-Session-Id (initialize first, or use the stateless revision)",
        )),
    }
}

/// The session `id` names: this replica's, or, with a key file, one another
/// replica (or this one, before a restart or after making room) sealed
/// with a key of ours, carried on here. An id ended here by `DELETE` stays
/// ended.
fn find_session(state: &State, id: &str, credential: Option<&str>) -> Option<Arc<Session>> {
    if let Some(s) = state.sessions.lock().unwrap().get(id) {
        s.touch();
        return Some(s.clone());
    }
    // Without a key file a token opens nowhere else, and a session this
    // replica ended (to make room) stays ended, as a lone gateway's always
    // did.
    if !state.keys.shared() {
        return None;
    }
    let opened = state.keys.open(id, credential)?;
    if state.ended.lock().unwrap().iter().any(|e| e == id) {
        return None;
    }
    let session = Arc::new(Session::start(state.gateway.clone()));
    session
        .connection
        .resume(&opened.version, &opened.capabilities);
    // Two requests of a session may both carry it on: the first one kept
    // is the session.
    if let Some(s) = state.sessions.lock().unwrap().get(id) {
        return Some(s.clone());
    }
    keep_session(state, id, &session).ok()?;
    Some(session)
}

/// Keeps `session` under `id`, making room when [`HttpOptions::max_sessions`]
/// are kept by ending the one idle longest that is not busy; the refusal
/// when every one is busy.
fn keep_session(state: &State, id: &str, session: &Arc<Session>) -> Result<(), String> {
    let mut sessions = state.sessions.lock().unwrap();
    let max = state.options.max_sessions.max(1);
    if sessions.len() >= max && !sessions.contains_key(id) {
        // Only a session with nothing running and no open stream may make
        // room: the one idle longest.
        let idlest = sessions
            .iter()
            .filter(|(_, s)| !s.busy())
            .min_by_key(|(_, s)| *s.last_used.lock().unwrap())
            .map(|(id, _)| id.clone());
        match idlest.and_then(|id| sessions.remove(&id)) {
            Some(old) => old.end("the session was ended to make room for a new one"),
            None => {
                return Err(format!(
                    "too many sessions (at most {max}, all busy); try again later"
                ))
            }
        }
    }
    sessions.insert(id.to_owned(), session.clone());
    Ok(())
}

/// Whether this replica should be sent new work: not draining, and no
/// server still on its first start (the others are connected, or given
/// up on as the startup rules say, and answer their calls with errors).
fn readiness(state: &State) -> Result<(), &'static str> {
    if state.draining.load(Ordering::Relaxed) {
        return Err("draining: this replica is shutting down");
    }
    let starting = state
        .gateway
        .hub()
        .servers()
        .iter()
        .any(|s| s.state == mcpmux_core::ServerState::Starting);
    if starting {
        return Err("not ready: a server is still starting");
    }
    Ok(())
}

/// A `POST`: one JSON-RPC message, or a batch, from the client at `peer`.
async fn post(
    state: &State,
    req: Request<Incoming>,
    session_id: Option<String>,
    credential: Option<&str>,
    peer: SocketAddr,
) -> Response<Body> {
    let Posted {
        messages,
        batch,
        header_version,
        wants_sse,
        routing,
    } = match read_post(state, req).await {
        Ok(posted) => posted,
        Err(refusal) => return refusal,
    };
    // Answers the POST gives itself (invalid messages, duplicate ids): every
    // request whose id is known is answered once, with that id.
    let mut local: Vec<Value> = Vec::new();
    let messages: Vec<Value> = messages
        .into_iter()
        .filter_map(|m| match invalid(&m) {
            Some(refusal) => {
                local.push(refusal);
                None
            }
            None => Some(m),
        })
        .collect();
    if messages.is_empty() {
        return local_answers(local, batch);
    }
    let is_request = |m: &Value| m.get("method").is_some() && m.get("id").is_some();
    // The revision that mirrors a request in its headers: they must agree
    // with its body (SEP-2243), or a balancer routing on them is misled.
    if header_version.as_deref() == Some(stateless::VERSION) && !batch {
        if let Some(refusal) = messages
            .iter()
            .filter(|m| is_request(m))
            .find_map(|m| header_mismatch(&routing, m))
        {
            return refusal;
        }
    }
    let initialize = messages.iter().find(|m| m["method"] == "initialize");
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
    let (session, new_id, ephemeral) = match pick_session(
        state,
        session_id.as_ref(),
        initialize,
        stateless,
        credential,
    ) {
        Ok(picked) => picked,
        Err(refusal) => return refusal,
    };
    let count = messages.iter().filter(|m| is_request(m)).count();
    // Requests whose answer is a stream of notifications, ended only when
    // the client cancels: on the stateless revision their POST is the only
    // channel those notifications have.
    let long_lived = messages
        .iter()
        .any(|m| is_request(m) && LONG_LIVED.iter().any(|&l| m["method"] == l));
    let (tx, rx) = mpsc::channel::<Outgoing>(STREAM_QUEUE + count.max(1));
    let stream = PostStream {
        tx,
        reserved: count,
        sse: wants_sse,
    };
    let (messages, requests, asked_for_progress) =
        register_requests(&session, messages, &stream, &mut local);
    drop(stream);
    if requests.is_empty() {
        for msg in messages {
            forward(&session, msg, peer).await;
        }
        if ephemeral {
            session.connection.close();
        }
        return local_answers(local, batch);
    }
    // Cancels what is still unanswered when the response goes away early
    // (the client disconnected), and ends a one-request session.
    let guard = PendingGuard {
        session: session.clone(),
        pending: requests,
        ephemeral,
    };
    for msg in messages {
        forward(&session, msg, peer).await;
    }
    let header = new_id.as_deref();
    // An SSE stream only when there is something to stream before the
    // answer (progress); a plain JSON answer costs less.
    if wants_sse && (asked_for_progress || long_lived) {
        progress_answers(rx, guard, local, batch, header).await
    } else {
        json_answers(rx, guard, local, VecDeque::new(), batch, header).await
    }
}

/// Methods whose answer comes only when the client cancels, after any
/// number of notifications (the events extension's stream, the 2026-07-28
/// revision's subscriptions): their `POST` is answered with an SSE stream.
const LONG_LIVED: [&str; 2] = ["events/stream", "subscriptions/listen"];

/// How long a `POST` whose requests asked for progress waits before it
/// opens an SSE stream. Answered within it, with no notification first, it
/// gets one JSON body instead (the client accepts both): one write
/// carries headers and answer, where a stream takes two and chunk framing.
/// mcpmux's own clients ask for progress on every call, so this is most
/// calls through the gateway. Short, because a stream's headers tell a
/// client that its request was taken.
const SSE_AFTER: Duration = Duration::from_millis(50);

/// The answers of a `POST` whose requests asked for progress: an SSE
/// stream as soon as a notification (progress) comes before the last
/// answer, or [`SSE_AFTER`] passes; one JSON body when every answer comes
/// first.
async fn progress_answers(
    mut rx: mpsc::Receiver<Outgoing>,
    mut guard: PendingGuard,
    local: Vec<Value>,
    batch: bool,
    header: Option<&str>,
) -> Response<Body> {
    let deadline = tokio::time::Instant::now() + SSE_AFTER;
    let mut early = VecDeque::new();
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(out)) => {
                let answer = out.msg.get("method").is_none();
                if answer {
                    guard.answered(&out.msg["id"]);
                }
                early.push_back(out);
                if !answer {
                    break;
                }
                if guard.pending.is_empty() {
                    return json_answers(rx, guard, local, early, batch, header).await;
                }
            }
            // The session ended: the rest are answered there.
            Ok(None) => return json_answers(rx, guard, local, early, batch, header).await,
            Err(_) => break,
        }
    }
    let first = local.into_iter().map(Outgoing::from).chain(early).collect();
    sse_response(rx, guard, first, header)
}

/// The answers of a `POST` as one JSON body (a batch as an array): the
/// local ones first, then those already received (`early`, answers only,
/// each already marked answered in `guard`), then each forwarded request's
/// answer as it comes, serialized at once and holding its share of the
/// session's budget until hyper has sent it.
async fn json_answers(
    mut rx: mpsc::Receiver<Outgoing>,
    mut guard: PendingGuard,
    local: Vec<Value>,
    early: VecDeque<Outgoing>,
    batch: bool,
    header: Option<&str>,
) -> Response<Body> {
    // Each answer serialized as it comes (its value dropped), and what
    // it holds of the session's budget kept until hyper has sent it.
    let mut parts = VecDeque::new();
    let mut held = Vec::new();
    let push = |parts: &mut VecDeque<Bytes>, bytes: Vec<u8>| {
        if batch {
            parts.push_back(Bytes::from_static(if parts.is_empty() {
                b"["
            } else {
                b","
            }));
        }
        parts.push_back(Bytes::from(bytes));
    };
    for msg in local {
        push(&mut parts, msg.to_string().into_bytes());
    }
    for out in early {
        let (bytes, answer_held) = out.into_bytes();
        push(&mut parts, bytes);
        held.extend(answer_held);
    }
    while !guard.pending.is_empty() {
        let Some(out) = rx.recv().await else {
            break;
        };
        if out.msg.get("method").is_none() {
            guard.answered(&out.msg["id"]);
            let (bytes, answer_held) = out.into_bytes();
            push(&mut parts, bytes);
            held.extend(answer_held);
        }
    }
    // The session ended under them: the rest are answered here.
    for msg in guard.give_up() {
        push(&mut parts, msg.to_string().into_bytes());
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

/// Hands one message from the client at `peer` to the session's
/// connection; a `notifications/cancelled` also answers the request it
/// names (an error), if still unanswered.
async fn forward(session: &Session, msg: Value, peer: SocketAddr) {
    let cancelled = (msg["method"] == "notifications/cancelled")
        .then(|| msg["params"]["requestId"].clone())
        .filter(|id| !id.is_null());
    session
        .connection
        .handle(msg, ServedVia::Tcp(Some(peer)))
        .await;
    if let Some(id) = cancelled {
        session.resolve(&id, "the request was cancelled by the client");
    }
}

/// The refusal of a message that is no valid JSON-RPC message (-32600,
/// with its id when it has one), or `None`.
fn invalid(msg: &Value) -> Option<Value> {
    let Value::Object(fields) = msg else {
        return Some(error_answer(
            &Value::Null,
            -32600,
            "invalid request: a batch member must be a JSON-RPC object",
            None,
        ));
    };
    let id = fields.get("id");
    let problem = match fields.get("method") {
        Some(Value::String(_)) => return None,
        Some(_) => "invalid request: method must be a string",
        // An answer to a request the gateway relayed.
        None if fields.contains_key("result") || fields.contains_key("error") => return None,
        None => "invalid request: no method",
    };
    Some(error_answer(
        id.unwrap_or(&Value::Null),
        -32600,
        problem,
        None,
    ))
}

/// The response of a `POST` whose answers are all its own: 202 when there
/// are none.
fn local_answers(mut local: Vec<Value>, batch: bool) -> Response<Body> {
    if local.is_empty() {
        return plain(StatusCode::ACCEPTED, "");
    }
    let body = if batch {
        Value::Array(local)
    } else {
        local.pop().unwrap_or(Value::Null)
    };
    json_response(StatusCode::OK, &body, None)
}

/// The answer to request `id` when it is cancelled or its session ends.
fn cancelled_answer(id: &Value, why: &str) -> Value {
    error_answer(id, -32603, why, Some("CANCELLED"))
}

/// A `GET`: the session's stream of notifications.
fn get(state: &State, session_id: Option<String>, credential: Option<&str>) -> Response<Body> {
    let Some(id) = session_id else {
        return plain(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
    };
    let Some(session) = find_session(state, &id, credential) else {
        return plain(StatusCode::NOT_FOUND, "unknown session");
    };
    let (tx, rx) = mpsc::channel(STREAM_QUEUE);
    // A new GET stream replaces the old one (which then ends).
    session.routes.lock().unwrap().standalone = Some(tx);
    let guard = PendingGuard {
        session,
        pending: Vec::new(),
        ephemeral: false,
    };
    sse_response(rx, guard, VecDeque::new(), None)
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

    /// Answers for the requests still pending once their stream has closed
    /// (their session ended): nothing else will answer them.
    fn give_up(&mut self) -> Vec<Value> {
        self.pending
            .drain(..)
            .map(|key| {
                let id = serde_json::from_str(&key).unwrap_or(Value::Null);
                cancelled_answer(&id, "the session ended")
            })
            .collect()
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

/// An SSE response carrying `first` (answers among them already marked
/// answered in `guard`), then what arrives on `rx`; it ends once every
/// request of `guard` is answered (a `GET` stream: when replaced). What an
/// event holds of the session's budget is given back when hyper asks for
/// the next one.
fn sse_response(
    rx: mpsc::Receiver<Outgoing>,
    guard: PendingGuard,
    first: VecDeque<Outgoing>,
    session: Option<&str>,
) -> Response<Body> {
    // Nothing pending from the start, and nothing to send: a `GET` stream.
    let stream_for_get = guard.pending.is_empty() && first.is_empty();
    let events = futures::stream::unfold(
        (rx, guard, first, None::<Held>),
        move |(mut rx, mut guard, mut queue, sent)| async move {
            drop(sent);
            let out = match queue.pop_front() {
                Some(out) => out,
                None if !stream_for_get && guard.pending.is_empty() => return None,
                None => match rx.recv().await {
                    Some(out) => {
                        if out.msg.get("method").is_none() {
                            guard.answered(&out.msg["id"]);
                        }
                        out
                    }
                    None => {
                        // The session ended: what is pending is answered here.
                        queue.extend(guard.give_up().into_iter().map(Outgoing::from));
                        queue.pop_front()?
                    }
                },
            };
            let (event, held) = out.into_framed(b"event: message\ndata: ", b"\n\n");
            let frame = Frame::data(Bytes::from(event));
            Some((Ok::<_, Infallible>(frame), (rx, guard, queue, held)))
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

/// A random session id (128 bits, hex); `None` when the system has no
/// randomness to give (ids must not be guessable).
/// `key` escaped for a JSON pointer (`/` → `~1`).
fn pointer_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_binds_go_without_a_token() {
        assert!(check_bind(&"127.0.0.1:1".parse().unwrap(), false).is_ok());
        assert!(check_bind(&"[::1]:1".parse().unwrap(), false).is_ok());
        let e = check_bind(&"0.0.0.0:1".parse().unwrap(), false).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        assert!(check_bind(&"0.0.0.0:1".parse().unwrap(), true).is_ok());
    }
}
