//! [`Peer`]: one JSON-RPC connection with many requests in flight.
//!
//! Ownership: a `Peer` owns its transport. The transport's reader task holds
//! the peer's state only weakly, so when the last `Peer` clone is dropped the
//! transport is dropped too and the connection ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::answer_gate::{Admission, AnswerGate, Backpressure};
use super::{
    codes, encode_notification, encode_request, encode_response, Incoming, Kind, RpcError,
};
use awake::{Wait, WaitChoice};
use deadlines::{Arm, Deadline, Sweep};

mod awake;
mod deadlines;
use crate::error::Error;
use crate::transport::{FrameSink, Transport};

/// A progress notification for one of our requests.
#[derive(Debug, Clone)]
pub struct ProgressUpdate {
    /// Progress so far (increases with each notification).
    pub progress: f64,
    /// Total, when the server knows it.
    pub total: Option<f64>,
    /// A human-readable message, when the server sent one.
    pub message: Option<String>,
}

/// Called for each progress notification of a request, on the connection's
/// reader task (or, for stdio, on a thread or task that reads the
/// connection while it waits for its answer: one in `runtime::block_on`,
/// an event loop, a lone call's task): it must return quickly and must not
/// block.
pub type ProgressCallback = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

/// How one request is run.
#[derive(Clone)]
pub struct RequestOptions {
    /// Time allowed without a response (reset by each progress notification).
    pub timeout: Duration,
    /// Upper bound on the whole request, however much progress arrives.
    pub max_total: Duration,
    /// Attach `_meta.progressToken` handling (the caller puts the token, equal
    /// to the request id, into the params).
    pub track_progress: bool,
    /// Receives progress notifications.
    pub on_progress: Option<ProgressCallback>,
    /// Send `notifications/cancelled` when the request times out or is dropped.
    /// Off for `initialize`, which must never be cancelled.
    pub cancellable: bool,
    /// Extra transport headers for this request (HTTP only).
    pub headers: Vec<(String, String)>,
    /// Asked, on the reader, whether to keep the result once it is read
    /// (see [`AnswerGate`]); `None` keeps it.
    pub answer_gate: Option<Arc<dyn AnswerGate>>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            timeout: Duration::from_secs(60),
            max_total: Duration::from_secs(600),
            track_progress: false,
            on_progress: None,
            cancellable: true,
            headers: Vec::new(),
            answer_gate: None,
        }
    }
}

/// Handles what the server sends on its own initiative.
pub trait Inbound: Send + Sync + 'static {
    /// A request from the server. The future runs on its own task; it is
    /// aborted when the server cancels the request.
    fn on_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, Result<serde_json::Value, RpcError>>;

    /// A notification from the server (other than progress and cancellation,
    /// which the peer handles). Runs on the reader task, or on a caller's
    /// thread or task that reads the answer to its request itself
    /// (`runtime::block_on`, an event loop, a lone call's task); must not
    /// block.
    fn on_notification(&self, method: &str, params: Option<&RawValue>);
}

type Reply = Result<Box<RawValue>, Error>;

/// How many requests of one server (sampling, roots, elicitation, ping) are
/// handled at once; more are answered with an error at once, so a server
/// cannot make the host hold an unbounded number of handlers.
pub const MAX_SERVER_REQUESTS: usize = 64;

/// How many bytes of params the server requests being handled may hold
/// together (as sent; a handler holds them parsed, often more): a request
/// that would pass it is answered with an error at once, unless it is the
/// only one. Without it, [`MAX_SERVER_REQUESTS`] requests of
/// `max_message_bytes` each could make the host hold gigabytes while a
/// user is asked.
pub const MAX_SERVING_BYTES: usize = 64 << 20;

/// How long a request whose send found the connection gone waits for the
/// transport's account of the end ([`Transport::reports_its_end`]): the
/// stdio reader waits up to 0.7 s for the process to exit and its stderr
/// to drain.
const END_REPORT_WAIT: Duration = Duration::from_secs(1);

/// How a pending request ends, as its caller receives it.
enum Answer {
    /// The response (or why there will be none).
    Reply(Reply),
    /// The deadline sweeper found it due (the caller words the error: it
    /// knows the method).
    TimedOut,
}

struct Pending {
    tx: oneshot::Sender<Answer>,
    progress: Option<Arc<ProgressState>>,
    /// Decides whether its result is kept (`RequestOptions::answer_gate`).
    gate: Option<Arc<dyn AnswerGate>>,
    deadline: Deadline,
    /// Tell the server when it times out (`RequestOptions::cancellable`).
    cancellable: bool,
}

struct ProgressState {
    /// Milliseconds since `Shared::epoch` of the last progress notification.
    last_ms: AtomicU64,
    callback: Option<ProgressCallback>,
}

/// A server request being handled.
struct Serving {
    /// Set once its task is spawned.
    task: Option<AbortHandle>,
    /// Its params' size, counted in [`Table::serving_bytes`].
    bytes: usize,
}

#[derive(Default)]
struct Table {
    pending: HashMap<u64, Pending>,
    /// Server requests being handled, by their id as raw JSON text (the
    /// handle is set once the task is spawned). At most
    /// [`MAX_SERVER_REQUESTS`] entries.
    serving: HashMap<String, Serving>,
    /// The params bytes of the requests in `serving`, together.
    serving_bytes: usize,
    /// Set once the connection is gone; every later request fails with it.
    closed: Option<Error>,
    /// The deadline sweeper's state ([`deadlines`]).
    sweep: Sweep,
}

impl Table {
    /// Forgets server request `key` (done or cancelled); returns its task.
    fn stop_serving(&mut self, key: &str) -> Option<AbortHandle> {
        let serving = self.serving.remove(key)?;
        self.serving_bytes -= serving.bytes;
        serving.task
    }
}

struct Shared {
    label: String,
    next_id: AtomicU64,
    table: Mutex<Table>,
    transport: OnceLock<Arc<dyn Transport>>,
    inbound: Arc<dyn Inbound>,
    epoch: Instant,
    /// Ourselves, weakly: server requests need an owned handle to reply later.
    me: Weak<Shared>,
    /// Flips to `true` once the connection is gone ([`Peer::closed`]).
    gone: tokio::sync::watch::Sender<bool>,
    /// Wakes the deadline sweeper ([`deadlines`]).
    sweep_wake: Arc<tokio::sync::Notify>,
    /// How a lone call waits for its answer ([`awake`]).
    wait_choice: WaitChoice,
    /// Why the reader holds off (see [`FrameSink::hold_off`]): the
    /// pressures answer gates reported, each once, until relieved (dropped
    /// whenever the reader looks); at most one per answer read since.
    held_off: Mutex<Vec<Arc<dyn Backpressure>>>,
    /// The server as spans describe it, set only while telemetry is on:
    /// then each request is a client span ([`Peer::request`]).
    #[cfg(feature = "telemetry")]
    trace: OnceLock<crate::telemetry::PeerInfo>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The sweeper may be waiting for a request that will never come.
        self.sweep_wake.notify_one();
    }
}

/// One JSON-RPC connection. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
}

impl Peer {
    /// A peer named `label` (used in error messages) whose server-initiated
    /// messages go to `inbound`. Attach a transport before sending.
    pub fn new(label: impl Into<String>, inbound: Arc<dyn Inbound>) -> Peer {
        Peer {
            shared: Arc::new_cyclic(|me| Shared {
                label: label.into(),
                next_id: AtomicU64::new(1),
                table: Mutex::new(Table::default()),
                transport: OnceLock::new(),
                inbound,
                epoch: Instant::now(),
                me: me.clone(),
                gone: tokio::sync::watch::Sender::new(false),
                sweep_wake: Arc::default(),
                wait_choice: WaitChoice::default(),
                held_off: Mutex::default(),
                #[cfg(feature = "telemetry")]
                trace: OnceLock::new(),
            }),
        }
    }

    /// The sink to give the transport; it holds this peer weakly.
    pub fn sink(&self) -> Weak<dyn FrameSink> {
        let weak: Weak<Shared> = Arc::downgrade(&self.shared);
        weak
    }

    /// Connects the peer to its transport (once).
    pub fn attach(&self, transport: Arc<dyn Transport>) {
        let _ = self.shared.transport.set(transport);
    }

    /// The last `lines` lines of the server's stderr its transport kept
    /// ([`Transport::recent_stderr`]); none before a transport is attached.
    pub fn recent_stderr(&self, lines: usize) -> Vec<String> {
        self.shared
            .transport
            .get()
            .map(|t| t.recent_stderr(lines))
            .unwrap_or_default()
    }

    /// Allocates the id of the next request (also used as its progress token).
    pub fn next_id(&self) -> u64 {
        self.shared.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Traces this connection's requests as client spans of `info`'s server
    /// (set once, before the first request, only while telemetry is on).
    #[cfg(feature = "telemetry")]
    pub(crate) fn set_trace_info(&self, info: crate::telemetry::PeerInfo) {
        let _ = self.shared.trace.set(info);
    }

    /// Tells the transport which protocol revision is in use.
    pub fn set_protocol_version(&self, version: Option<&str>) {
        #[cfg(feature = "telemetry")]
        if let Some(info) = self.shared.trace.get() {
            info.set_protocol_version(version);
        }
        if let Some(t) = self.shared.transport.get() {
            t.set_protocol_version(version);
        }
    }

    /// Whether the connection is gone, and why.
    pub fn closed_error(&self) -> Option<Error> {
        self.shared.table.lock().unwrap().closed.clone()
    }

    /// Waits until the connection is gone (the server exited, the socket
    /// closed, a rule was broken, or [`Peer::close`]) and returns why.
    pub async fn closed(&self) -> Error {
        let mut gone = self.shared.gone.subscribe();
        let _ = gone.wait_for(|gone| *gone).await;
        self.closed_error().unwrap_or_else(|| {
            Error::TransportClosed(format!("{}: connection closed", self.shared.label))
        })
    }

    /// Sends a notification.
    pub fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), Error> {
        let line = encode_notification(method, params)?;
        self.shared.send(line)
    }

    /// Sends request `id` (from [`next_id`](Peer::next_id)) and waits for its
    /// result under `opts`. Dropping the returned future cancels the request.
    pub async fn request<P: Serialize + ?Sized>(
        &self,
        id: u64,
        method: &str,
        params: Option<&P>,
        opts: &RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        // The one check telemetry costs when it is off.
        #[cfg(feature = "telemetry")]
        if let Some(info) = self.shared.trace.get() {
            return Box::pin(self.request_traced(info, id, method, params, opts)).await;
        }
        let line = encode_request(id, method, params)?;
        self.send_request(id, method, line, opts).await
    }

    /// [`Peer::request`] as a client span, its context put into
    /// `params._meta` (`traceparent`, `tracestate`).
    #[cfg(feature = "telemetry")]
    async fn request_traced<P: Serialize + ?Sized>(
        &self,
        info: &crate::telemetry::PeerInfo,
        id: u64,
        method: &str,
        params: Option<&P>,
        opts: &RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        let mut value = match params {
            Some(p) => serde_json::to_value(p).map_err(|e| {
                Error::InvalidInput(format!("cannot encode '{method}' params: {e}"))
            })?,
            None => serde_json::Value::Null,
        };
        let session = self.shared.transport.get().and_then(|t| t.session_id());
        // Arguments and results only when asked for, with config secrets
        // redacted and cut at CAPTURE_LIMIT bytes.
        let capture = method == "tools/call" && info.captures();
        let arguments = capture
            .then(|| value.get("arguments").map(|a| captured(&a.to_string())))
            .flatten();
        let call =
            crate::telemetry::ClientCall::start(info, id, method, session, arguments, &mut value);
        let line = if value.is_null() {
            encode_request::<()>(id, method, None)?
        } else {
            encode_request(id, method, Some(&value))?
        };
        let result = self.send_request(id, method, line, opts).await;
        let text = match &result {
            Ok(raw) if capture => Some(captured(raw.get())),
            _ => None,
        };
        call.end(&result, text);
        result
    }

    /// Sends the encoded request `line` (id `id`) and waits for its answer.
    async fn send_request(
        &self,
        id: u64,
        method: &str,
        line: Vec<u8>,
        opts: &RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        let (tx, mut rx) = oneshot::channel();
        let progress = opts.track_progress.then(|| {
            Arc::new(ProgressState {
                last_ms: AtomicU64::new(0),
                callback: opts.on_progress.clone(),
            })
        });
        let start = Instant::now();
        let deadline = Deadline::new(start, opts.timeout, opts.max_total);
        let first = deadline.first();
        let (arm, alone) = {
            let mut table = self.shared.table.lock().unwrap();
            if let Some(err) = &table.closed {
                return Err(err.clone());
            }
            table.pending.insert(
                id,
                Pending {
                    tx,
                    progress,
                    gate: opts.answer_gate.clone(),
                    deadline,
                    cancellable: opts.cancellable,
                },
            );
            (table.sweep.arm(first), table.pending.len() == 1)
        };
        match arm {
            Arm::Nothing => {}
            Arm::Wake => self.shared.sweep_wake.notify_one(),
            Arm::Start => deadlines::start(&self.shared),
        }
        let mut guard = InFlight {
            shared: &self.shared,
            id,
            cancellable: opts.cancellable,
            armed: true,
        };
        let sent = if opts.headers.is_empty() {
            self.shared.send(line)
        } else {
            self.shared.send_with_headers(line, &opts.headers)
        };
        if let Err(e) = sent {
            return Err(self.shared.explained(e, &mut rx).await);
        }
        let answer = if alone {
            self.shared.wait_alone(rx, start).await
        } else {
            rx.await
        };
        // Whatever came, the request has left the table.
        guard.armed = false;
        match answer {
            Ok(Answer::Reply(reply)) => reply,
            Ok(Answer::TimedOut) => Err(Error::Timeout(format!(
                "{}: no response to '{method}' within {:.1} s",
                self.shared.label,
                start.elapsed().as_secs_f64()
            ))),
            Err(_) => Err(self.shared.gone()),
        }
    }
}

/// `text` as a span records it: config secrets redacted, at most
/// [`CAPTURE_LIMIT`](crate::telemetry::CAPTURE_LIMIT) bytes.
#[cfg(feature = "telemetry")]
fn captured(text: &str) -> String {
    let text = crate::secrets::redact(text);
    let limit = crate::telemetry::CAPTURE_LIMIT;
    if text.len() <= limit {
        return text.into_owned();
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

/// Removes a request from the table when its caller stops waiting, and tells
/// the server (`notifications/cancelled`) unless the response already came.
struct InFlight<'a> {
    shared: &'a Arc<Shared>,
    id: u64,
    cancellable: bool,
    armed: bool,
}

impl InFlight<'_> {
    fn cancel(&mut self, reason: &str) {
        if !self.armed {
            return;
        }
        self.armed = false;
        let was_pending = self
            .shared
            .table
            .lock()
            .unwrap()
            .pending
            .remove(&self.id)
            .is_some();
        if was_pending && self.cancellable {
            self.shared.send_cancelled(self.id, reason);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.cancel("request abandoned by the client");
    }
}

impl Shared {
    /// Tells the server that we no longer wait for request `id`.
    fn send_cancelled(&self, id: u64, reason: &str) {
        let params = serde_json::json!({ "requestId": id, "reason": reason });
        // The connection may already be gone; then there is no one to tell.
        let _ = encode_notification("notifications/cancelled", Some(&params))
            .and_then(|line| self.send(line));
    }

    /// The error for a request whose send failed with `error`: when the
    /// transport found the connection gone and reports its end, the
    /// account that report fails the request with (`rx` is the request's),
    /// if it comes within [`END_REPORT_WAIT`]; else `error`.
    async fn explained(&self, error: Error, rx: &mut oneshot::Receiver<Answer>) -> Error {
        let reports = self.transport.get().is_some_and(|t| t.reports_its_end());
        if !reports || !matches!(error, Error::TransportClosed(_)) {
            return error;
        }
        match tokio::time::timeout(END_REPORT_WAIT, rx).await {
            Ok(Ok(Answer::Reply(Err(reported)))) => reported,
            _ => error,
        }
    }

    fn send(&self, line: Vec<u8>) -> Result<(), Error> {
        match self.transport.get() {
            Some(t) => t.send(line),
            None => Err(Error::Internal(format!(
                "{}: no transport attached",
                self.label
            ))),
        }
    }

    fn send_with_headers(&self, line: Vec<u8>, headers: &[(String, String)]) -> Result<(), Error> {
        match self.transport.get() {
            Some(t) => t.send_with_headers(line, headers),
            None => Err(Error::Internal(format!(
                "{}: no transport attached",
                self.label
            ))),
        }
    }

    /// Waits for the answer to the only request in flight, sent at `sent`:
    /// asleep or awake, as [`awake`] chooses for this connection, on a task
    /// of an engine thread whose transport can be read by the caller
    /// (stdio); otherwise asleep. Awake, the task reads the transport itself
    /// and yields to the thread's other tasks in turn, for up to
    /// [`stay_awake`](crate::runtime::stay_awake), then sleeps.
    async fn wait_alone(
        &self,
        mut rx: oneshot::Receiver<Answer>,
        sent: Instant,
    ) -> Result<Answer, oneshot::error::RecvError> {
        let window = crate::runtime::stay_awake();
        let transport = match self.transport.get() {
            Some(t)
                if t.can_read_now()
                    && !window.is_zero()
                    && !crate::runtime::reads_its_answers() =>
            {
                t
            }
            _ => return rx.await,
        };
        let how = self.wait_choice.next();
        let answer = match how {
            Wait::Asleep => rx.await,
            Wait::Awake => loop {
                if let Poll::Ready(answer) = futures::poll!(&mut rx) {
                    break answer;
                }
                transport.read_now();
                if sent.elapsed() >= window {
                    break rx.await;
                }
                if let Poll::Ready(answer) = futures::poll!(&mut rx) {
                    break answer;
                }
                // Deferred: runs the thread's other tasks and polls its I/O
                // driver, without waking another thread.
                tokio::task::yield_now().await;
            },
        };
        self.wait_choice.record(how, sent.elapsed(), window * 4);
        answer
    }

    fn gone(&self) -> Error {
        self.table
            .lock()
            .unwrap()
            .closed
            .clone()
            .unwrap_or_else(|| Error::TransportClosed(format!("{}: connection closed", self.label)))
    }

    fn complete(&self, id: u64, reply: Reply) {
        let pending = self.table.lock().unwrap().pending.remove(&id);
        match pending {
            Some(p) => {
                let _ = p.tx.send(Answer::Reply(reply));
            }
            None => {
                tracing::debug!(server = %self.label, id, "response to a request no longer waited for")
            }
        }
    }

    /// Hands `result` (of a message of `bytes` bytes) to request `id`, a
    /// copy of it if the request's gate keeps it (before the copy is made:
    /// one it refuses is never copied).
    fn complete_result(&self, id: u64, result: &RawValue, bytes: usize) {
        let Some(pending) = self.table.lock().unwrap().pending.remove(&id) else {
            return tracing::debug!(server = %self.label, id, "response to a request no longer waited for");
        };
        let admission = match &pending.gate {
            Some(gate) => gate.admit(bytes),
            None => Admission::Keep,
        };
        let reply = match admission {
            Admission::Keep => Ok(result.to_owned()),
            Admission::KeepAndHoldOff(pressure) => {
                let mut held_off = self.held_off.lock().unwrap();
                if !held_off.iter().any(|p| Arc::ptr_eq(p, &pressure)) {
                    held_off.push(pressure);
                }
                Ok(result.to_owned())
            }
            Admission::Refuse(why) => Err(Error::LimitExceeded(why)),
        };
        let _ = pending.tx.send(Answer::Reply(reply));
    }

    /// The pressures the reader still holds off for (the relieved ones
    /// forgotten).
    fn pressures(&self) -> Vec<Arc<dyn Backpressure>> {
        let mut held_off = self.held_off.lock().unwrap();
        held_off.retain(|p| !p.is_relieved());
        held_off.clone()
    }

    /// Fails every request in flight with `error` (the connection stays up).
    fn fail_all(&self, error: &Error) {
        let drained: Vec<Pending> = self
            .table
            .lock()
            .unwrap()
            .pending
            .drain()
            .map(|(_, p)| p)
            .collect();
        for p in drained {
            let _ = p.tx.send(Answer::Reply(Err(error.clone())));
        }
    }

    fn on_progress(&self, params: Option<&RawValue>) {
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(rename = "progressToken", borrow)]
            token: &'a RawValue,
            #[serde(default)]
            progress: f64,
            total: Option<f64>,
            message: Option<String>,
        }
        let Some(p) = params.and_then(|p| serde_json::from_str::<Params>(p.get()).ok()) else {
            return;
        };
        let Some(id) = super::id_as_u64(p.token) else {
            return;
        };
        let state = {
            let table = self.table.lock().unwrap();
            table.pending.get(&id).and_then(|e| e.progress.clone())
        };
        if let Some(state) = state {
            let ms = (self.epoch.elapsed().as_millis() as u64).max(1);
            state.last_ms.store(ms, Ordering::Relaxed);
            if let Some(cb) = &state.callback {
                cb(ProgressUpdate {
                    progress: p.progress,
                    total: p.total,
                    message: p.message,
                });
            }
        }
    }

    fn on_cancelled(&self, params: Option<&RawValue>) {
        let Some(v) = params.and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
        else {
            return;
        };
        let key = v
            .get("requestId")
            .map(|id| id.to_string())
            .unwrap_or_default();
        if let Some(handle) = self.table.lock().unwrap().stop_serving(&key) {
            handle.abort();
        }
    }

    fn on_request(self: &Arc<Self>, msg: &Incoming<'_>) {
        let (Some(method), Some(id)) = (&msg.method, msg.id) else {
            return;
        };
        let key = id.get().to_owned();
        let bytes = msg.params.map_or(0, |p| p.get().len());
        let refused = {
            let mut table = self.table.lock().unwrap();
            if table.serving.contains_key(&key) {
                Some(format!("request id {key:.64} is already in flight"))
            } else if table.serving.len() >= MAX_SERVER_REQUESTS {
                Some(format!(
                    "too many requests in flight: at most {MAX_SERVER_REQUESTS} at once"
                ))
            } else if !table.serving.is_empty() && table.serving_bytes + bytes > MAX_SERVING_BYTES {
                Some(format!(
                    "too many bytes in flight: the requests being handled hold {} bytes \
                     of params, at most {MAX_SERVING_BYTES} at once",
                    table.serving_bytes
                ))
            } else {
                // Reserved before the task exists, so that a task that ends
                // at once finds (and removes) its own entry.
                table
                    .serving
                    .insert(key.clone(), Serving { task: None, bytes });
                table.serving_bytes += bytes;
                None
            }
        };
        if let Some(why) = refused {
            tracing::debug!(server = %self.label, method = %method, "refused a server request: {why}");
            let outcome = Err(RpcError::new(codes::SERVER_BUSY, why));
            if let Ok(line) = encode_response(id, &outcome) {
                let _ = self.send(line);
            }
            return;
        }
        let id: Box<RawValue> = id.to_owned();
        let fut = self.inbound.on_request(method, msg.params);
        let weak = Arc::downgrade(self);
        let key_for_task = key.clone();
        let task = tokio::spawn(async move {
            let outcome = fut.await;
            if let Some(shared) = weak.upgrade() {
                shared.table.lock().unwrap().stop_serving(&key_for_task);
                match encode_response(&id, &outcome) {
                    Ok(line) => {
                        let _ = shared.send(line);
                    }
                    Err(e) => {
                        tracing::warn!(server = %shared.label, error = %e, "cannot encode a response")
                    }
                }
            }
        });
        match self.table.lock().unwrap().serving.get_mut(&key) {
            Some(slot) => slot.task = Some(task.abort_handle()),
            // Cancelled meanwhile (or already done: then this does nothing).
            None => task.abort(),
        }
    }

    fn protocol_violation(&self, what: &str) {
        let err = Error::ProtocolError(format!("{}: {what}", self.label));
        tracing::warn!(server = %self.label, "{err}");
        self.fail_all(&err);
    }
}

impl Shared {
    /// One message of a line or of a batch (never a batch itself).
    fn on_message(&self, trimmed: &[u8]) {
        let msg: Incoming = match serde_json::from_slice(trimmed) {
            Ok(m) => m,
            Err(_) => {
                return self.protocol_violation(&format!(
                    "sent a line that is not JSON-RPC: {:?}",
                    preview(trimmed)
                ));
            }
        };
        match msg.kind() {
            Kind::Response => {
                let Some(id) = msg.numeric_id() else {
                    return tracing::debug!(server = %self.label, "response with an id we never sent");
                };
                let reply = match (msg.result, msg.error) {
                    (_, Some(err)) => Err(Error::from(err)),
                    (Some(result), None) => return self.complete_result(id, result, trimmed.len()),
                    (None, None) => unreachable!("kind() checked result or error"),
                };
                self.complete(id, reply);
            }
            Kind::Notification => match msg.method.as_deref() {
                Some("notifications/progress") => self.on_progress(msg.params),
                Some("notifications/cancelled") => self.on_cancelled(msg.params),
                Some(method) => self.inbound.on_notification(method, msg.params),
                None => {}
            },
            Kind::Request => {
                if let Some(this) = self.me.upgrade() {
                    this.on_request(&msg);
                }
            }
            Kind::Invalid => {
                // A malformed reply to one of our requests fails just that request.
                if let Some(id) = msg.numeric_id() {
                    let err = Error::ProtocolError(format!(
                        "{}: malformed response to request {id}",
                        self.label
                    ));
                    return self.complete(id, Err(err));
                }
                if let (Some(err), None) = (&msg.error, msg.id) {
                    // An error with a null id: the server could not read
                    // something; it names no request of ours to fail.
                    return tracing::warn!(server = %self.label, code = err.code, "server error without id: {}", crate::secrets::redact(&err.message));
                }
                self.protocol_violation("sent a message that is not JSON-RPC 2.0")
            }
        }
    }
}

/// The start of a line a server should not have sent, for an error
/// message: at most 80 characters, with known secrets replaced (redacted
/// before it is cut, so that a secret across the cut is not half shown).
fn preview(line: &[u8]) -> String {
    let head = String::from_utf8_lossy(&line[..line.len().min(4096)]);
    crate::secrets::redact(&head).chars().take(80).collect()
}

impl FrameSink for Shared {
    fn on_frame(&self, frame: &[u8]) {
        let trimmed = frame.trim_ascii();
        if trimmed.is_empty() {
            return;
        }
        if trimmed[0] != b'[' {
            return self.on_message(trimmed);
        }
        // A JSON-RPC batch (2025-03-26): handle each member. Not
        // recursively: a batch nested a hundred thousand deep (a few
        // hundred kilobytes) would overflow the reading thread's stack and
        // abort the host.
        match serde_json::from_slice::<Vec<&RawValue>>(trimmed) {
            Ok(items) if items.iter().any(|m| m.get().starts_with('[')) => {
                self.protocol_violation("sent a batch inside a batch")
            }
            Ok(items) => items
                .iter()
                .for_each(|m| self.on_message(m.get().as_bytes())),
            Err(_) => self.protocol_violation("sent a line that is not JSON-RPC"),
        }
    }

    fn on_oversized(&self, id: Option<u64>, size: usize, limit: usize) {
        let err = Error::ProtocolError(format!(
            "{}: message of at least {size} bytes exceeds the limit of {limit} bytes (max_message_bytes)",
            self.label
        ));
        tracing::warn!(server = %self.label, "{err}");
        let known = id.filter(|id| self.table.lock().unwrap().pending.contains_key(id));
        match known {
            Some(id) => self.complete(id, Err(err)),
            None => self.fail_all(&err),
        }
    }

    fn on_send_failed(&self, id: u64, error: Error) {
        self.complete(id, Err(error));
    }

    fn on_interrupted(&self, error: Error) {
        self.fail_all(&error);
    }

    fn is_waiting(&self, id: u64) -> bool {
        self.table.lock().unwrap().pending.contains_key(&id)
    }

    fn hold_off(&self) -> Option<BoxFuture<'static, ()>> {
        let pressures = self.pressures();
        if pressures.is_empty() {
            return None;
        }
        Some(Box::pin(async move {
            for pressure in pressures {
                pressure.relieved().await;
            }
        }))
    }

    fn is_held_off(&self) -> bool {
        !self.pressures().is_empty()
    }

    fn on_closed(&self, error: Error) {
        let (pending, serving) = {
            let mut table = self.table.lock().unwrap();
            table.closed.get_or_insert(error.clone());
            table.serving_bytes = 0;
            // Nothing more is read: nothing to hold off for.
            self.held_off.lock().unwrap().clear();
            (
                std::mem::take(&mut table.pending),
                std::mem::take(&mut table.serving),
            )
        };
        for (_, p) in pending {
            let _ = p.tx.send(Answer::Reply(Err(error.clone())));
        }
        for handle in serving.into_values().filter_map(|s| s.task) {
            handle.abort();
        }
        self.gone.send_replace(true);
        self.sweep_wake.notify_one();
    }
}

impl Peer {
    /// Ends the connection because the server broke a rule: every request
    /// in flight and every later one fails with `error` (so the server shows
    /// as failed with it), and the transport is closed on a background task.
    pub fn fail(&self, error: Error) {
        self.shared.on_closed(error);
        if let Some(t) = self.shared.transport.get().cloned() {
            tokio::spawn(async move { t.close().await });
        }
    }

    /// Fails every request in flight and every later one, then closes the
    /// transport and waits until it is gone.
    pub async fn close(&self) {
        let err = Error::TransportClosed(format!("{}: connection closed", self.shared.label));
        self.shared.on_closed(err);
        if let Some(t) = self.shared.transport.get() {
            t.close().await;
        }
    }
}

/// For the tests of this module's parts: a peer whose server sends nothing
/// that needs handling (requests are refused, notifications ignored).
#[cfg(test)]
struct NoInbound;

#[cfg(test)]
impl Inbound for NoInbound {
    fn on_request(
        &self,
        _: &str,
        _: Option<&RawValue>,
    ) -> BoxFuture<'static, Result<serde_json::Value, RpcError>> {
        Box::pin(async { Err(RpcError::new(-32601, "no")) })
    }
    fn on_notification(&self, _: &str, _: Option<&RawValue>) {}
}

/// For the tests of this module's parts: a transport that records what is
/// sent and never answers.
#[cfg(test)]
#[derive(Default)]
struct Silent {
    sent: Mutex<Vec<serde_json::Value>>,
}

#[cfg(test)]
impl Transport for Silent {
    fn send(&self, message: Vec<u8>) -> Result<(), Error> {
        self.sent
            .lock()
            .unwrap()
            .push(serde_json::from_slice(&message).unwrap());
        Ok(())
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn peer() -> Peer {
        let peer = Peer::new("test", Arc::new(NoInbound));
        peer.attach(Arc::new(Silent::default()));
        peer
    }

    /// Handles server requests for ever.
    struct Hanging;

    impl Inbound for Hanging {
        fn on_request(
            &self,
            _: &str,
            _: Option<&RawValue>,
        ) -> BoxFuture<'static, Result<Value, RpcError>> {
            Box::pin(futures::future::pending())
        }
        fn on_notification(&self, _: &str, _: Option<&RawValue>) {}
    }

    #[tokio::test]
    async fn server_requests_held_are_bounded_by_their_bytes() {
        let peer = Peer::new("test", Arc::new(Hanging));
        let transport = Arc::new(Silent::default());
        peer.attach(transport.clone());
        let sink = peer.sink().upgrade().unwrap();
        let params = format!(r#"{{"pad":"{}"}}"#, "x".repeat(2 << 20));
        let request = |id: usize| {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"sampling/createMessage","params":{params}}}"#
            );
            sink.on_frame(line.as_bytes());
        };
        let refused = |id: usize| {
            transport
                .sent
                .lock()
                .unwrap()
                .iter()
                .any(|m| m["id"] == id && m["error"]["code"] == codes::SERVER_BUSY)
        };
        // As many as fit are held (fewer than MAX_SERVER_REQUESTS), the
        // next is refused at once.
        let fit = MAX_SERVING_BYTES / params.len();
        assert!(fit < MAX_SERVER_REQUESTS);
        for id in 1..=fit + 1 {
            request(id);
        }
        assert!((1..=fit).all(|id| !refused(id)));
        assert!(refused(fit + 1));
        // A cancelled one gives its bytes back.
        sink.on_frame(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        );
        request(fit + 2);
        assert!(!refused(fit + 2));
        request(fit + 3);
        assert!(refused(fit + 3));
    }

    /// A gate that answers one admission as told, and notes the size asked.
    struct Scripted(Mutex<Option<Admission>>, AtomicU64);

    impl AnswerGate for Scripted {
        fn admit(&self, bytes: usize) -> Admission {
            self.1.store(bytes as u64, Ordering::Relaxed);
            self.0.lock().unwrap().take().expect("one admission")
        }
    }

    /// Pressure relieved once the flag is set.
    struct Relief(tokio::sync::watch::Sender<bool>);

    impl Backpressure for Relief {
        fn is_relieved(&self) -> bool {
            *self.0.borrow()
        }
        fn relieved(self: Arc<Self>) -> BoxFuture<'static, ()> {
            Box::pin(async move {
                let _ = self.0.subscribe().wait_for(|relieved| *relieved).await;
            })
        }
    }

    /// A request whose answer `{"n":n}` the gate meets with `admission`:
    /// its outcome, and the size the gate was asked about with the line's.
    async fn gated(
        peer: &Peer,
        admission: Admission,
        n: u64,
    ) -> (Result<Box<RawValue>, Error>, u64, usize) {
        let gate = Arc::new(Scripted(Mutex::new(Some(admission)), AtomicU64::new(0)));
        let opts = RequestOptions {
            answer_gate: Some(gate.clone()),
            ..RequestOptions::default()
        };
        let id = peer.next_id();
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"n":{n}}}}}"#);
        let sink = peer.sink().upgrade().unwrap();
        let answer = async {
            tokio::task::yield_now().await;
            sink.on_frame(line.as_bytes());
        };
        let (outcome, ()) =
            futures::future::join(peer.request::<Value>(id, "x", None, &opts), answer).await;
        (outcome, gate.1.load(Ordering::Relaxed), line.len())
    }

    #[tokio::test]
    async fn an_answer_gate_keeps_or_refuses_a_result_and_may_hold_the_reader_off() {
        let peer = peer();
        let sink = peer.sink().upgrade().unwrap();
        let (kept, asked, size) = gated(&peer, Admission::Keep, 1).await;
        assert_eq!(kept.unwrap().get(), r#"{"n":1}"#);
        assert_eq!(asked as usize, size, "asked about the whole message");
        let (refused, _, _) = gated(&peer, Admission::Refuse("no room".into()), 2).await;
        let e = refused.unwrap_err();
        assert_eq!(e.code(), "LIMIT_EXCEEDED");
        assert!(e.to_string().contains("no room"), "{e}");
        assert!(!sink.is_held_off() && sink.hold_off().is_none());
        // Kept, with the reader held off until the pressure is relieved.
        let relief = Arc::new(Relief(tokio::sync::watch::Sender::new(false)));
        let (held, _, _) = gated(&peer, Admission::KeepAndHoldOff(relief.clone()), 3).await;
        assert_eq!(held.unwrap().get(), r#"{"n":3}"#);
        assert!(sink.is_held_off());
        let wait = sink.hold_off().expect("held off");
        relief.0.send_replace(true);
        wait.await;
        assert!(!sink.is_held_off() && sink.hold_off().is_none());
    }

    #[tokio::test]
    async fn a_batch_answers_each_of_its_requests() {
        let peer = peer();
        let (a, b) = (peer.next_id(), peer.next_id());
        let opts = RequestOptions::default();
        let calls = futures::future::join(
            peer.request::<Value>(a, "ping", None, &opts),
            peer.request::<Value>(b, "ping", None, &opts),
        );
        let batch = format!(
            r#" [{{"jsonrpc":"2.0","id":{b},"result":{{"n":2}}}}, {{"jsonrpc":"2.0","id":{a},"result":{{"n":1}}}}] "#
        );
        let sink = peer.sink().upgrade().unwrap();
        let answer = async {
            tokio::task::yield_now().await;
            sink.on_frame(batch.as_bytes());
        };
        let ((ra, rb), ()) = futures::future::join(calls, answer).await;
        assert_eq!(ra.unwrap().get(), r#"{"n":1}"#);
        assert_eq!(rb.unwrap().get(), r#"{"n":2}"#);
    }

    #[tokio::test]
    async fn a_batch_nested_deep_is_a_protocol_error_not_a_stack_overflow() {
        let peer = peer();
        let id = peer.next_id();
        let opts = RequestOptions::default();
        // 200 000 levels: a few hundred kilobytes, far under any message
        // cap; handled recursively, this overflows a 2 MiB stack.
        let depth = 200_000;
        let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let sink = peer.sink().upgrade().unwrap();
        let answer = async {
            tokio::task::yield_now().await;
            sink.on_frame(nested.as_bytes());
        };
        let (reply, ()) =
            futures::future::join(peer.request::<Value>(id, "ping", None, &opts), answer).await;
        let err = reply.unwrap_err();
        assert_eq!(err.code(), "PROTOCOL_ERROR", "{err}");
        assert!(err.to_string().contains("batch inside a batch"), "{err}");
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_rpc_is_shown_without_known_secrets() {
        crate::secrets::register(["tok-preview-5f2a9c"]);
        let peer = peer();
        let id = peer.next_id();
        let opts = RequestOptions::default();
        // The secret crosses the 80-character cut: its first 8 would show.
        let line = format!("{}Authorization: Bearer tok-preview-5f2a9c", "x".repeat(50));
        let sink = peer.sink().upgrade().unwrap();
        let answer = async {
            tokio::task::yield_now().await;
            sink.on_frame(line.as_bytes());
        };
        let (reply, ()) =
            futures::future::join(peer.request::<Value>(id, "ping", None, &opts), answer).await;
        let err = reply.unwrap_err().to_string();
        assert!(err.contains("not JSON-RPC"), "{err}");
        assert!(!err.contains("tok-prev"), "{err}");
    }
}
