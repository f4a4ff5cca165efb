//! # mcpmux-node
//!
//! The native half of the `mcpmux` npm package (napi-rs). It stays thin:
//! argument conversion, async bridging, and error mapping (in [`error`]).
//! The public JavaScript API (`Hub`, `McpmuxError`, AbortSignal handling)
//! lives in `index.js`, which drives the classes below; they are not meant
//! to be used directly.
//!
//! ## How an operation reaches JavaScript
//!
//! The engine's I/O (server processes, pipes, timers) runs on a tokio
//! runtime owned by this addon (threads named `mcpmux-node`), never on the
//! JavaScript thread. Each asynchronous operation gets a numeric id from
//! JavaScript and ends as one completion `(id, outcome)` on the
//! [`Dispatcher`]'s queue. The first push into an empty queue wakes the
//! JavaScript thread once (one threadsafe-function call), which then takes
//! the whole queue as one batch and settles the matching promises: under
//! load many completions share one wake-up. Results travel as raw JSON
//! text that JavaScript parses itself.
//!
//! - Connect, list, read, prompt, refresh and close run as tasks on the
//!   runtime; the task posts the completion. So do the review-session
//!   verbs ([`session`]), whose `host` reviewer calls JavaScript through a
//!   threadsafe function.
//! - `callTool` is the hot path: its future (core's `Hub::call_tool`) is
//!   polled on the JavaScript thread, once when the call is made (which
//!   writes the request straight to the server's pipe with one
//!   non-blocking `write`) and again whenever the runtime wakes it (the
//!   response, a timeout): the waker queues the call on the dispatcher, and
//!   the JavaScript thread polls it while it takes the batch. So a call
//!   costs no task hand-off and no extra thread hop; each poll only does
//!   non-blocking work (routing, encoding, a pipe write, reading the
//!   response the runtime already received). Dropping the future (on
//!   abort) sends `notifications/cancelled`.
//! - Hub events are pulled: each `next(id)` of an [`events::NativeEvents`]
//!   is a runtime task that waits for the stream's next event and posts it
//!   like any completion, so `'event'` listeners and `hub.events()` run on
//!   the JavaScript thread and a slow consumer only gets core's `lagged`.
//!   The wrapper's `'event'` pump marks its reads weak: they never keep
//!   the process alive.
//!
//! ## Keeping the process alive
//!
//! The dispatcher's threadsafe function is created unreferenced: an idle
//! hub, open or closed, never keeps Node running. The wrapper calls
//! [`Dispatcher::hold`] while at least one operation is pending and
//! [`Dispatcher::release`] when none is, so a pending `await` does keep the
//! process alive, as Node users expect. When the process exits with a hub
//! still open, its server processes die with it (core starts them in their
//! own process group with a parent-death signal tied to the runtime's
//! threads, which live as long as the process); a hub that becomes garbage
//! kills its servers when it is finalized.

// The crate docs above link this crate's private modules: they are written
// for its maintainers (`cargo doc --document-private-items`); users read the
// JavaScript / Python API. `cargo doc -D warnings` must still pass.
#![allow(rustdoc::private_intra_doc_links)]

mod authorize;
mod error;
mod event_stream;
mod events;
mod policy;
mod requests;
mod session;

/// The addon's allocator (for the Rust code in the addon only; Node keeps
/// its own). A call allocates on the JavaScript thread and frees on the
/// runtime's threads (and back); mimalloc's per-thread heaps handle that
/// pattern with much less work than the system allocator (measured with
/// `bench/bench_calls.mjs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures::FutureExt;
use mcpmux_core::events_ext::{EventQuery, SubscribeOptions};
use mcpmux_core::{
    CallOptions, Config, ConfigSource, Error, EventStream, Hub, ProgressUpdate, ToolResult,
};
use napi::bindgen_prelude::{Function, JsValuesTupleIntoVec, ToNapiValue};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{sys, Env, Status};
use napi_derive::napi;
use serde_json::Value;

use crate::error::{error_json, internal, invalid_input};

/// Outcome kinds as JavaScript sees them in a batch (`index.js` mirrors these).
const KIND_JSON: u32 = 0;
const KIND_ERROR: u32 = 1;
const KIND_HUB: u32 = 2;
const KIND_VOID: u32 = 3;
const KIND_PROGRESS: u32 = 4;

/// What one operation hands back to JavaScript.
enum Outcome {
    /// A tool result (its JSON text goes to JavaScript unchanged).
    Tool(ToolResult),
    /// A result as JSON text (JavaScript parses it).
    Json(String),
    /// An error as the JSON text of [`error::error_json`].
    Failed(String),
    /// A connected hub, wrapped into a [`NativeHub`] on the JavaScript
    /// thread, with the event stream subscribed before it connected (the
    /// `onEvent` connect option).
    Hub(Hub, Option<EventStream>),
    /// Success without a value.
    Done,
    /// A progress notification of a pending call, as JSON text (does not
    /// settle the call).
    Progress(String),
}

impl Outcome {
    fn from_result(result: Result<Outcome, Error>) -> Outcome {
        result.unwrap_or_else(|e| Outcome::Failed(error_json(&e)))
    }
}

/// One finished operation, waiting for the JavaScript thread.
struct Completion {
    id: u32,
    outcome: Outcome,
}

/// Work waiting for the JavaScript thread.
#[derive(Default)]
struct Queue {
    /// Finished operations.
    done: Vec<Completion>,
    /// Calls whose future was woken and must be polled again.
    ready: Vec<Arc<CallTask>>,
}

impl Queue {
    fn is_empty(&self) -> bool {
        self.done.is_empty() && self.ready.is_empty()
    }
}

/// The state shared by the dispatcher, the native hubs and the worker tasks.
struct Shared {
    /// What the JavaScript thread has not taken yet.
    queue: Mutex<Queue>,
    /// The sink, to give to hubs created on the JavaScript thread.
    sink: OnceLock<Weak<Sink>>,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes everything queued, polling the woken calls: what is finished.
    /// JavaScript thread, inside the runtime's context.
    fn take_done(&self) -> Vec<Completion> {
        let Queue { mut done, ready } = std::mem::take(&mut *self.queue());
        for task in ready {
            if let Some(outcome) = task.poll() {
                done.push(Completion {
                    id: task.id,
                    outcome,
                });
            }
        }
        done
    }
}

thread_local! {
    /// Set on the JavaScript thread inside [`Dispatcher::read_now`], which
    /// takes what it queues itself: no threadsafe-function wake-up for that.
    static READING_NOW: Cell<bool> = const { Cell::new(false) };
}

/// The queue plus the threadsafe function that wakes JavaScript.
struct Sink {
    shared: Arc<Shared>,
    tsfn: ThreadsafeFunction<(), (), Batch, Status, false, true>,
}

impl Sink {
    /// Queues a completion. Any thread.
    fn post(&self, id: u32, outcome: Outcome) {
        self.push(|q| q.done.push(Completion { id, outcome }));
    }

    /// Queues a woken call for polling. Any thread.
    fn schedule(&self, task: Arc<CallTask>) {
        self.push(|q| q.ready.push(task));
    }

    /// Wakes the JavaScript thread when the queue was empty (otherwise a
    /// wake-up is already on its way), unless this is the JavaScript thread
    /// inside `readNow`, which takes the queue right after.
    fn push(&self, add: impl FnOnce(&mut Queue)) {
        let was_empty = {
            let mut queue = self.shared.queue();
            let was_empty = queue.is_empty();
            add(&mut queue);
            was_empty
        };
        if was_empty && !READING_NOW.with(Cell::get) {
            // Fails only while the environment is being torn down, when no
            // one is left to settle.
            let _ = self.tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

type CallFuture = Pin<Box<dyn Future<Output = Result<Outcome, Error>> + Send>>;

/// A hub's pending calls that can be cancelled, by id.
type CallTable = Arc<Mutex<HashMap<u32, Arc<CallTask>>>>;

/// One pending `callTool`: its future, polled on the JavaScript thread only
/// (see the crate docs). Its waker (any thread) queues it on the sink.
struct CallTask {
    id: u32,
    sink: Arc<Sink>,
    /// `None` once finished or cancelled.
    future: Mutex<Option<CallFuture>>,
    /// Already in the sink's ready list.
    queued: AtomicBool,
    /// The hub's table of cancellable calls, when this call is one.
    cancellable: Option<CallTable>,
}

impl Wake for CallTask {
    fn wake(self: Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let sink = self.sink.clone();
            sink.schedule(self);
        }
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.sink.schedule(self.clone());
        }
    }
}

impl CallTask {
    /// Polls the call once; its outcome when it finished. JavaScript thread,
    /// inside the runtime's context.
    fn poll(self: &Arc<Self>) -> Option<Outcome> {
        self.queued.store(false, Ordering::Release);
        let mut slot = self.future.lock().unwrap_or_else(|p| p.into_inner());
        let future = slot.as_mut()?;
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        let outcome =
            match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))) {
                Ok(Poll::Pending) => return None,
                Ok(Poll::Ready(result)) => Outcome::from_result(result),
                Err(_) => Outcome::Failed(error_json(&internal("mcpmux panicked (a bug)"))),
            };
        *slot = None;
        drop(slot);
        if let Some(table) = &self.cancellable {
            table
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&self.id);
        }
        Some(outcome)
    }
}

/// Completions taken off the queue, handed to JavaScript as two arguments:
/// the JSON text of a flat array `[id, kind, payload, ...]` (results and
/// errors are embedded as the JSON they already are, so JavaScript parses
/// the whole batch at once), and an array of the [`NativeHub`]s that
/// `kind` 2 payloads index (`undefined` when there are none).
pub struct Batch {
    items: Vec<Completion>,
    sink: Option<Arc<Sink>>,
}

impl JsValuesTupleIntoVec for Batch {
    // napi-rs calls this on the JavaScript thread with the live `env` of the
    // threadsafe-function callback; the trait's signature is napi-rs's.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn into_vec(self, env: sys::napi_env) -> napi::Result<Vec<sys::napi_value>> {
        use std::fmt::Write as _;
        let size: usize = self
            .items
            .iter()
            .map(|c| {
                16 + match &c.outcome {
                    Outcome::Tool(r) => r.json().len(),
                    Outcome::Json(t) | Outcome::Failed(t) | Outcome::Progress(t) => t.len(),
                    Outcome::Hub(..) | Outcome::Done => 4,
                }
            })
            .sum();
        let mut text = String::with_capacity(size + 2);
        let mut hubs = Vec::new();
        text.push('[');
        for (i, Completion { id, outcome }) in self.items.into_iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let kind = match &outcome {
                Outcome::Tool(_) | Outcome::Json(_) => KIND_JSON,
                Outcome::Failed(_) => KIND_ERROR,
                Outcome::Progress(_) => KIND_PROGRESS,
                Outcome::Done => KIND_VOID,
                Outcome::Hub(..) if self.sink.is_some() => KIND_HUB,
                Outcome::Hub(..) => KIND_ERROR,
            };
            let _ = write!(text, "{id},{kind},");
            match outcome {
                Outcome::Tool(result) => text.push_str(result.json()),
                Outcome::Json(t) | Outcome::Failed(t) | Outcome::Progress(t) => text.push_str(&t),
                Outcome::Done => text.push_str("null"),
                Outcome::Hub(hub, first_events) => match &self.sink {
                    Some(sink) => {
                        let _ = write!(text, "{}", hubs.len());
                        hubs.push(NativeHub {
                            hub: Some(hub),
                            sink: sink.clone(),
                            cancellable: Arc::default(),
                            first_events: Mutex::new(first_events),
                        });
                    }
                    None => text.push_str(&error_json(&internal("the dispatcher is gone"))),
                },
            }
        }
        text.push(']');
        let text = unsafe { String::to_napi_value(env, text) }?;
        let hubs = if hubs.is_empty() {
            unsafe { <()>::to_napi_value(env, ()) }?
        } else {
            unsafe { Vec::<NativeHub>::to_napi_value(env, hubs) }?
        };
        Ok(vec![text, hubs])
    }
}

/// A [`Batch`] returned from a call on the JavaScript thread instead of
/// passed to `onBatch` by the threadsafe function: the same two values, as
/// a two-element array.
pub struct ReadBatch(Batch);

impl ToNapiValue for ReadBatch {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let values = val.0.into_vec(env)?;
        let mut array = std::ptr::null_mut();
        // SAFETY: `env` is the live environment of this call; `array` and
        // the values are handles in its current scope.
        unsafe {
            check(sys::napi_create_array_with_length(
                env,
                values.len(),
                &mut array,
            ))?;
            for (i, value) in values.into_iter().enumerate() {
                check(sys::napi_set_element(env, array, i as u32, value))?;
            }
        }
        Ok(array)
    }
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            Status::from(status),
            "Node-API call failed while building a batch",
        ))
    }
}

/// The addon's tokio runtime, built by core's
/// [`mcpmux_core::runtime::builder`] (threads named `mcpmux-node`; one per
/// CPU up to four, or `$MCPMUX_WORKER_THREADS`, alias
/// `$MCPMUX_NODE_WORKER_THREADS`; a bad value fails every call with
/// INVALID_INPUT): created on first use and never shut down, because core
/// ties each server's parent-death signal to the thread that started it,
/// so the workers must live as long as the process. Its threads never keep
/// Node's event loop alive.
fn runtime() -> Result<&'static tokio::runtime::Handle, Error> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Handle, Error>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let default = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
            let rt = mcpmux_core::runtime::builder("mcpmux-node", None, Some(default))?
                .build()
                .map_err(|e| internal(format!("cannot start the mcpmux runtime: {e}")))?;
            let handle = rt.handle().clone();
            // Never dropped: see above.
            std::mem::forget(rt);
            Ok(handle)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The config `index.js` handed over; `kind` says what `config` is:
/// `"str"` (a string the caller gave: core decides whether it is a path or
/// text, [`Config::from_str_guess`]), `"path"` (from a `file:` URL) or
/// `"text"` (TOML or JSON text; an object arrives as its JSON). Only
/// converts: the rule is core's.
pub(crate) fn load_config(kind: &str, config: String) -> Result<Config, Error> {
    // The policy's and the sessions' config keys are checked on load.
    mcpmux_sessions::register_config_layers();
    match kind {
        "str" => Config::from_str_guess(&config),
        "path" => Config::from_source(ConfigSource::Path(config.into())),
        "text" => Config::from_source(ConfigSource::Text(config)),
        other => Err(internal(format!("unknown config kind '{other}'"))),
    }
}

/// Runs `fut` on the runtime and posts its outcome as completion `id`. A
/// panic inside becomes an `INTERNAL` error, so no promise is left pending.
fn spawn_op<F>(sink: &Arc<Sink>, id: u32, fut: F)
where
    F: Future<Output = Result<Outcome, Error>> + Send + 'static,
{
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return sink.post(id, Outcome::Failed(error_json(&e))),
    };
    let sink = sink.clone();
    rt.spawn(async move {
        let outcome = match AssertUnwindSafe(fut).catch_unwind().await {
            Ok(result) => Outcome::from_result(result),
            Err(_) => Outcome::Failed(error_json(&internal("mcpmux panicked (a bug)"))),
        };
        sink.post(id, outcome);
    });
}

/// Serializes `value` as the JSON text of an outcome.
fn json_outcome<T: serde::Serialize>(value: &T) -> Result<Outcome, Error> {
    serde_json::to_string(value)
        .map(Outcome::Json)
        .map_err(|e| internal(format!("cannot serialize a result: {e}")))
}

/// Parses optional JSON object text passed by the wrapper for `argument`.
fn parse_object(argument: &str, text: Option<String>) -> Result<Option<Value>, Error> {
    let Some(text) = text else { return Ok(None) };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| invalid_input(argument, format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(invalid_input(argument, "must be an object"));
    }
    Ok(Some(value))
}

/// Receives every completion of this addon instance and hands them to one
/// JavaScript function. Created once by `index.js` at load; owned by
/// JavaScript (the native hubs keep its queue alive while they run).
#[napi]
pub struct Dispatcher {
    sink: Arc<Sink>,
}

#[napi]
impl Dispatcher {
    /// Creates the dispatcher. `onBatch(batch, hubs)` is called on the
    /// JavaScript thread: `batch` is the JSON text of a flat array
    /// `[id, kind, payload, ...]` (kind 0: a result, 1: an error object
    /// `{code, message, rpcCode?, data?}`, 2: an index into `hubs`,
    /// 3: nothing, 4: a progress object); it must not throw. Starts
    /// unreferenced (see [`hold`](Self::hold)).
    #[napi(constructor)]
    pub fn new(
        #[napi(ts_arg_type = "(batch: string, hubs: NativeHub[] | undefined) => void")]
        on_batch: Function<'_, Batch, ()>,
    ) -> napi::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            sink: OnceLock::new(),
        });
        let for_js = shared.clone();
        let tsfn = on_batch
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |_ctx| {
                let _guard = runtime().ok().map(|rt| rt.enter());
                let done = for_js.take_done();
                let sink = for_js.sink.get().and_then(Weak::upgrade);
                Ok(Batch { items: done, sink })
            })?;
        let sink = Arc::new(Sink { shared, tsfn });
        let _ = sink.shared.sink.set(Arc::downgrade(&sink));
        // This is the JavaScript thread: it may read its calls' answers
        // itself while it stays awake (`readNow`).
        mcpmux_core::runtime::follow_on_this_thread();
        Ok(Dispatcher { sink })
    }

    /// Reads, without blocking, what the stdio server this thread last
    /// sent a call to has answered (core's `runtime::read_followed`): the
    /// wrapper calls it while it stays awake for a single pending call, so
    /// the answer does not first have to wake an engine thread. Returns
    /// what is finished now, the two arguments `onBatch` takes (the
    /// wrapper hands them to it at once, without waiting for the
    /// threadsafe function's wake-up), or `null` when nothing is.
    /// JavaScript thread only.
    #[napi(ts_return_type = "[string, NativeHub[] | undefined] | null")]
    pub fn read_now(&self) -> Option<ReadBatch> {
        let rt = runtime().ok()?;
        let _guard = rt.enter();
        READING_NOW.with(|r| r.set(true));
        // A panic here would be a bug; the engine's reader task still
        // reads, and the flag must not stay set.
        let _ = std::panic::catch_unwind(mcpmux_core::runtime::read_followed);
        READING_NOW.with(|r| r.set(false));
        let items = self.sink.shared.take_done();
        (!items.is_empty()).then(|| {
            ReadBatch(Batch {
                items,
                sink: Some(self.sink.clone()),
            })
        })
    }

    /// Yields this thread's CPU (`sched_yield`): what the wrapper's loop
    /// does on each turn while it stays awake for several calls in flight,
    /// so that on a busy machine the engine's threads and the servers run
    /// first. JavaScript thread only.
    #[napi]
    pub fn yield_now(&self) {
        std::thread::yield_now();
    }

    /// Keeps the Node process alive until [`release`](Self::release)
    /// (called by the wrapper when the first operation becomes pending).
    /// JavaScript thread only.
    #[napi]
    pub fn hold(&self, env: Env) -> napi::Result<()> {
        check(unsafe { sys::napi_ref_threadsafe_function(env.raw(), self.sink.tsfn.raw()) })
    }

    /// Lets the Node process exit again (called by the wrapper once nothing
    /// is pending). JavaScript thread only.
    #[napi]
    pub fn release(&self, env: Env) -> napi::Result<()> {
        check(unsafe { sys::napi_unref_threadsafe_function(env.raw(), self.sink.tsfn.raw()) })
    }

    /// A review-session context (see [`session::NativeSessions`]).
    /// `config` (optional) and `kind` as for `load_config`; `host` (optional) is called as `host(callId, requestJson)` on
    /// this thread for each completion of a `host` reviewer. A bad config
    /// throws an error whose message is the JSON text `{code, message}`.
    #[napi]
    pub fn sessions(
        &self,
        config: Option<String>,
        kind: String,
        #[napi(ts_arg_type = "((callId: number, requestJson: string) => void) | undefined | null")]
        host: Option<Function<'_, napi::bindgen_prelude::FnArgs<(u32, String)>, ()>>,
    ) -> napi::Result<session::NativeSessions> {
        session::new_sessions(self.sink.clone(), config, &kind, host)
    }

    /// Answers host call `callId` (see [`sessions`](Self::sessions)) with a
    /// completion: JSON text of `{text, tool_calls?}` or of a string.
    /// Unknown ids are ignored.
    #[napi]
    pub fn host_resolve(&self, call_id: u32, completion_json: String) {
        let answer = serde_json::from_str(&completion_json)
            .map_err(|e| Error::ProviderError(format!("host: the answer is not JSON: {e}")));
        session::host_answer(call_id, answer);
    }

    /// Fails host call `callId` with `message` (the host function threw or
    /// its promise rejected): the round fails with that message.
    #[napi]
    pub fn host_reject(&self, call_id: u32, message: String) {
        session::host_answer(call_id, Err(Error::ProviderError(message)));
    }

    /// Starts connecting a hub; completion `id` carries a [`NativeHub`] or
    /// an error. `config` and `kind` as for `load_config`.
    /// `authorize(url, redirectUri, server)` resolves to the redirect URL
    /// of an OAuth authorization (the person in the loop; see authorize.rs).
    /// With `events`, an event stream is subscribed before the servers
    /// start (taken by `NativeHub.events(true)`). `onRequest(method,
    /// paramsJson)` answers the server requests of the kinds in `requests`
    /// (see requests.rs); `roots` are shared with every server.
    /// `denyPrivate`, `allowNetworks` and `requireHttps` are core's
    /// `HubOptions::network` (they add to the config's `[network]`).
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        &self,
        id: u32,
        config: String,
        kind: String,
        #[napi(
            ts_arg_type = "((url: string, redirectUri: string, server: string) => Promise<string>) | undefined | null"
        )]
        authorize: Option<authorize::JsFunction<'_>>,
        events: Option<bool>,
        startup_timeout_ms: Option<f64>,
        #[napi(
            ts_arg_type = "((method: string, paramsJson: string) => Promise<string>) | undefined | null"
        )]
        on_request: Option<requests::JsFunction<'_>>,
        requests: Option<Vec<String>>,
        roots: Option<Vec<String>>,
        deny_private: Option<bool>,
        allow_networks: Option<Vec<String>>,
        require_https: Option<bool>,
    ) -> napi::Result<()> {
        let network = mcpmux_core::NetworkPolicy::from_options(
            deny_private.unwrap_or(false),
            &allow_networks.unwrap_or_default(),
            require_https.unwrap_or(false),
            "options.allowNetworks",
        );
        let mut options = mcpmux_core::HubOptions::default();
        let startup_wait = millis_option(startup_timeout_ms, "startupTimeoutMs");
        if let Some(f) = authorize {
            options.auth.handler = Some(Arc::new(authorize::JsAuthorize::new(f)?));
        }
        if let Some(f) = on_request {
            options.handlers = requests::handlers(f, &requests.unwrap_or_default())?;
        }
        let roots = roots.map(|r| mcpmux_core::Roots::new(&r)).transpose();
        let first = events.unwrap_or(false).then(|| options.events.subscribe());
        spawn_op(&self.sink, id, async move {
            options.startup_wait = startup_wait?;
            options.roots = roots?;
            options.network = network?;
            let config = load_config(&kind, config)?;
            Ok(Outcome::Hub(
                Hub::connect_with(config, options).await?,
                first,
            ))
        });
        Ok(())
    }
}

/// One connected hub (the core `Hub`), owned by its JavaScript `Hub`
/// wrapper. Its methods are called on the JavaScript thread and return at
/// once; asynchronous ones post completion `id` to the dispatcher. When the
/// JavaScript object is garbage collected without `close()`, the hub is
/// dropped (on the JavaScript thread, in the finalizer), which kills its
/// server processes.
#[napi]
pub struct NativeHub {
    hub: Option<Hub>,
    sink: Arc<Sink>,
    /// Pending calls that can be cancelled, by id.
    cancellable: CallTable,
    /// The stream subscribed before connecting (`events` on connect), until
    /// `events(true)` takes it.
    first_events: Mutex<Option<EventStream>>,
}

impl Drop for NativeHub {
    fn drop(&mut self) {
        // Dropping the hub may touch tokio resources; give it the runtime.
        if let Some(hub) = self.hub.take() {
            match runtime() {
                Ok(rt) => {
                    let _guard = rt.enter();
                    drop(hub);
                }
                Err(_) => drop(hub),
            }
        }
    }
}

impl NativeHub {
    fn hub(&self) -> Hub {
        self.hub
            .clone()
            .expect("a NativeHub holds its hub until dropped")
    }

    /// Starts call `id`: polls its future once on this (the JavaScript)
    /// thread, which writes the request; the runtime wakes the rest (see
    /// the crate docs). A `cancellable` call is registered for
    /// [`cancel`](NativeHub::cancel).
    fn start_call(&self, id: u32, cancellable: bool, call: CallFuture) {
        let task = Arc::new(CallTask {
            id,
            sink: self.sink.clone(),
            future: Mutex::new(Some(call)),
            queued: AtomicBool::new(false),
            cancellable: cancellable.then(|| self.cancellable.clone()),
        });
        if cancellable {
            self.cancellable
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, task.clone());
        }
        let rt = match runtime() {
            Ok(rt) => rt,
            Err(e) => return self.sink.post(id, Outcome::Failed(error_json(&e))),
        };
        let _guard = rt.enter();
        if let Some(outcome) = task.poll() {
            self.sink.post(id, outcome);
        }
    }

    fn op<F, Fut>(&self, id: u32, f: F)
    where
        F: FnOnce(Hub) -> Fut,
        Fut: Future<Output = Result<Outcome, Error>> + Send + 'static,
    {
        spawn_op(&self.sink, id, f(self.hub()));
    }
}

#[napi]
impl NativeHub {
    /// The status of every configured server as JSON text (the objects of
    /// `mcpmux servers --json`). Synchronous: it only reads memory.
    #[napi]
    pub fn servers(&self) -> String {
        serde_json::to_string(&self.hub().servers()).unwrap_or_else(|_| "[]".into())
    }

    /// Replaces the roots shared with servers (`Hub::set_roots`).
    /// Synchronous: it only changes memory and queues notifications.
    #[napi]
    pub fn set_roots(&self, roots: Vec<String>) -> napi::Result<()> {
        self.hub()
            .set_roots(&roots)
            .map_err(|e| napi::Error::new(napi::Status::GenericFailure, error_json(&e)))
    }

    /// The roots shared with servers now, as JSON text (`[{uri, name}]`).
    #[napi]
    pub fn roots(&self) -> String {
        serde_json::to_string(&self.hub().roots()).unwrap_or_else(|_| "[]".into())
    }

    /// One line naming the servers that failed (their tools are missing
    /// from the lists), with their error codes; null when none did.
    /// Synchronous: it only reads memory.
    #[napi]
    pub fn failed_servers_note(&self) -> Option<String> {
        self.hub().failed_servers_note()
    }

    /// Lists every tool (the objects of `mcpmux tools --json`).
    #[napi]
    pub fn list_tools(&self, id: u32) {
        self.op(id, |hub| async move { json_outcome(&hub.list_tools()) });
    }

    /// The tools matching `query`, best first, at most `limit` (the
    /// objects of `listTools`; see `Hub::search_tools`).
    #[napi]
    pub fn search_tools(&self, id: u32, query: String, limit: u32) {
        self.op(id, move |hub| async move {
            json_outcome(&hub.search_tools(&query, limit as usize))
        });
    }

    /// Renders the tool list for `format` (`anthropic`, `openai`,
    /// `openai-responses`, `mcp`).
    #[napi]
    pub fn tools_for(&self, id: u32, format: String) {
        self.op(
            id,
            |hub| async move { json_outcome(&hub.tools_for(&format)?) },
        );
    }

    /// Calls tool `name` with `args` (JSON object text, or none). The result
    /// is the MCP `CallToolResult` JSON text exactly as the server sent it.
    /// With `progress`, progress notifications are posted under the same id;
    /// with `cancellable`, [`cancel`](Self::cancel) can abandon the call.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn call_tool(
        &self,
        id: u32,
        name: String,
        args: Option<String>,
        timeout_ms: Option<f64>,
        progress: bool,
        cancellable: bool,
        policy: Option<&policy::NativePolicy>,
        task: Option<bool>,
        traceparent: Option<String>,
        tracestate: Option<String>,
        max_total_timeout_ms: Option<f64>,
        task_ttl_ms: Option<f64>,
        validate_output: Option<String>,
    ) {
        let policy = policy.map(|p| p.policy.clone() as Arc<dyn mcpmux_core::CallPolicy>);
        let on_progress = progress.then(|| {
            let sink = self.sink.clone();
            Arc::new(move |update: ProgressUpdate| {
                let mut v = serde_json::json!({ "progress": update.progress });
                if let Some(total) = update.total {
                    v["total"] = total.into();
                }
                if let Some(message) = update.message {
                    v["message"] = message.into();
                }
                sink.post(id, Outcome::Progress(v.to_string()));
            }) as mcpmux_core::ProgressCallback
        });
        let hub = self.hub();
        let call: CallFuture = Box::pin(async move {
            let timeout = timeout_option(timeout_ms)?;
            let opts = {
                let mut options = CallOptions::default().with_task(task.unwrap_or(false));
                options.timeout = timeout;
                options.max_total_timeout =
                    millis_option(max_total_timeout_ms, "maxTotalTimeoutMs")?;
                options.task_ttl = millis_option(task_ttl_ms, "taskTtlMs")?;
                if let Some(v) = validate_output.as_deref() {
                    options.validate_output =
                        mcpmux_core::ValidateOutput::parse("validateOutput", v)?;
                }
                options.on_progress = on_progress;
                options.policy = policy;
                options
            };
            // The host's active OpenTelemetry span, the parent of the call's.
            let result = mcpmux_core::telemetry::in_context(
                traceparent.as_deref(),
                tracestate.as_deref(),
                hub.call_tool_json(&name, args.as_deref(), &opts),
            )
            .await?;
            Ok(Outcome::Tool(result))
        });
        self.start_call(id, cancellable, call);
    }

    /// [`call_tool`](Self::call_tool) without options (no timeout of its
    /// own, progress, cancellation, policy or task): the common call, with
    /// the fewest arguments to convert.
    #[napi]
    pub fn call_tool_plain(&self, id: u32, name: String, args: Option<String>) {
        let hub = self.hub();
        let call: CallFuture = Box::pin(async move {
            let opts = CallOptions::default();
            let result = hub.call_tool_json(&name, args.as_deref(), &opts).await?;
            Ok(Outcome::Tool(result))
        });
        self.start_call(id, false, call);
    }

    /// Abandons pending call `id` (made with `cancellable`): its future is
    /// dropped, which sends `notifications/cancelled` to the server. Nothing
    /// is posted for it afterwards. Unknown ids are ignored.
    #[napi]
    pub fn cancel(&self, id: u32) {
        let task = self
            .cancellable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(task) = task {
            let future = task.future.lock().unwrap_or_else(|p| p.into_inner()).take();
            // Dropped inside the runtime's context: it unregisters its timer.
            let _guard = runtime().ok().map(|rt| rt.enter());
            drop(future);
        }
    }

    /// Lists resources of every server, or of `server`.
    #[napi]
    pub fn list_resources(&self, id: u32, server: Option<String>) {
        self.op(id, |hub| async move {
            json_outcome(&hub.list_resources(server.as_deref()).await?)
        });
    }

    /// Lists resource templates of every server, or of `server`.
    #[napi]
    pub fn list_resource_templates(&self, id: u32, server: Option<String>) {
        self.op(id, |hub| async move {
            json_outcome(&hub.list_resource_templates(server.as_deref()).await?)
        });
    }

    /// Reads resource `uri` (from `server`, or the server that lists it).
    #[napi]
    pub fn read_resource(&self, id: u32, uri: String, server: Option<String>) {
        self.op(id, |hub| async move {
            json_outcome(&hub.read_resource(&uri, server.as_deref()).await?)
        });
    }

    /// Lists prompts of every server, or of `server`.
    #[napi]
    pub fn list_prompts(&self, id: u32, server: Option<String>) {
        self.op(id, |hub| async move {
            json_outcome(&hub.list_prompts(server.as_deref()).await?)
        });
    }

    /// Gets prompt `name` with `args` (JSON object text, or none).
    #[napi]
    pub fn get_prompt(&self, id: u32, name: String, args: Option<String>, server: Option<String>) {
        self.op(id, |hub| async move {
            let args = parse_object("args", args)?;
            json_outcome(
                &hub.get_prompt(&name, args.as_ref(), server.as_deref())
                    .await?,
            )
        });
    }

    /// A policy for calls on this hub (see [`policy::NativePolicy`]):
    /// `settings` is JSON object text of `scope`, `max_tool_calls`,
    /// `call_timeout_seconds`, `max_output_bytes`, `redact` (over the
    /// config's `[session]` table); `auditPath` a JSON-lines file;
    /// `onAudit(eventJson)` runs on this thread after each call. A bad
    /// setting throws an error whose message is the JSON text `{code, message}`.
    #[napi]
    pub fn policy(
        &self,
        settings: Option<String>,
        audit_path: Option<String>,
        #[napi(ts_arg_type = "((eventJson: string) => void) | undefined | null")] on_audit: Option<
            napi::bindgen_prelude::Function<'_, String, ()>,
        >,
    ) -> napi::Result<policy::NativePolicy> {
        policy::new_policy(
            self.hub(),
            self.sink.clone(),
            settings,
            audit_path,
            on_audit,
        )
    }

    /// Reconnects `server` and lists its tools again.
    #[napi]
    pub fn refresh(&self, id: u32, server: String) {
        self.op(id, |hub| async move {
            hub.refresh(&server).await?;
            Ok(Outcome::Done)
        });
    }

    /// Applies a new config (`config` and `kind` as for `connect`): the
    /// engine keeps unchanged servers, closes removed ones and starts added
    /// and changed ones (`Hub::reload`).
    #[napi]
    pub fn reload(&self, id: u32, config: String, kind: String) {
        self.op(id, |hub| async move {
            hub.reload(load_config(&kind, config)?).await?;
            Ok(Outcome::Done)
        });
    }

    /// Closes every server and waits until they are gone; core then ends
    /// the hub's event streams (after the events closing sent).
    #[napi]
    pub fn close(&self, id: u32) {
        self.op(id, |hub| async move {
            hub.close().await;
            Ok(Outcome::Done)
        });
    }

    /// A stream of the hub's events from now on (see
    /// [`events::NativeEvents`]); with `initial`, the one subscribed before
    /// connecting (`events` on connect), once.
    #[napi]
    pub fn events(&self, initial: bool) -> events::NativeEvents {
        let first = initial
            .then(|| {
                self.first_events
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
            })
            .flatten();
        let stream = first.unwrap_or_else(|| self.hub().events());
        events::NativeEvents::new(stream, self.sink.clone())
    }

    /// Starts tool `name` as an MCP task; resolves to its handle
    /// `{"server", "task_id"}` (JSON text).
    #[napi]
    pub fn call_tool_as_task(
        &self,
        id: u32,
        name: String,
        args: Option<String>,
        timeout_ms: Option<f64>,
        task_ttl_ms: Option<f64>,
    ) {
        self.op(id, |hub| async move {
            let opts = {
                let mut options = CallOptions::default();
                options.timeout = timeout_option(timeout_ms)?;
                options.task_ttl = millis_option(task_ttl_ms, "taskTtlMs")?;
                options
            };
            let args = parse_object("args", args)?;
            json_outcome(&hub.call_tool_as_task(&name, args.as_ref(), &opts).await?)
        });
    }

    /// The status of task `task_id` of `server` (`tasks/get`), JSON text.
    #[napi]
    pub fn task(&self, id: u32, server: String, task_id: String) {
        self.op(id, |hub| async move {
            json_outcome(&hub.task(&server, &task_id).await?)
        });
    }

    /// Waits for task `task_id` of `server` to end (at most `timeout_ms`,
    /// else the server's `max_total_timeout_seconds`); its `CallToolResult`.
    #[napi]
    pub fn task_result(&self, id: u32, server: String, task_id: String, timeout_ms: Option<f64>) {
        self.op(id, |hub| async move {
            let opts = {
                let mut options = CallOptions::default();
                options.max_total_timeout = timeout_option(timeout_ms)?;
                options
            };
            Ok(Outcome::Tool(
                hub.task_result(&server, &task_id, &opts).await?,
            ))
        });
    }

    /// Cancels task `task_id` of `server` (`tasks/cancel`); the task after,
    /// JSON text.
    #[napi]
    pub fn cancel_task(&self, id: u32, server: String, task_id: String) {
        self.op(id, |hub| async move {
            json_outcome(&hub.cancel_task(&server, &task_id).await?)
        });
    }

    /// The tasks `server` keeps for this hub (`tasks/list`), JSON text.
    #[napi]
    pub fn list_tasks(&self, id: u32, server: String) {
        self.op(id, |hub| async move {
            json_outcome(&hub.list_tasks(&server).await?)
        });
    }

    /// Pings `server`; the round-trip time in seconds.
    #[napi]
    pub fn ping(&self, id: u32, server: String) {
        self.op(id, |hub| async move {
            json_outcome(&hub.ping(&server).await?.as_secs_f64())
        });
    }

    /// Asks `server` for log messages at `level` or above (`log` events).
    #[napi]
    pub fn set_log_level(&self, id: u32, server: String, level: String) {
        self.op(id, |hub| async move {
            hub.set_log_level(&server, &level).await?;
            Ok(Outcome::Done)
        });
    }

    /// `completion/complete`: `reference`, `argument` and `context` are
    /// JSON object text; the result is the server's `completion` object.
    #[napi]
    pub fn complete(
        &self,
        id: u32,
        reference: String,
        argument: String,
        context: Option<String>,
        server: Option<String>,
    ) {
        self.op(id, |hub| async move {
            let reference = parse_object("ref", Some(reference))?.unwrap_or_default();
            let argument = parse_object("argument", Some(argument))?.unwrap_or_default();
            let context = parse_object("context", context)?;
            json_outcome(
                &hub.complete(&reference, &argument, context.as_ref(), server.as_deref())
                    .await?,
            )
        });
    }

    /// Event types of every server offering the events extension, or of
    /// `server` (`events/list`), JSON text.
    #[napi]
    pub fn list_events(&self, id: u32, server: Option<String>) {
        self.op(id, |hub| async move {
            json_outcome(&hub.list_events(server.as_deref()).await?)
        });
    }

    /// One page of event type `name` of `server` from `cursor`
    /// (`events/poll`), JSON text as core serializes it; `args` is JSON
    /// object text.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn poll_events(
        &self,
        id: u32,
        server: String,
        name: String,
        args: Option<String>,
        cursor: Option<String>,
        max_events: Option<u32>,
        max_age_ms: Option<f64>,
    ) {
        self.op(id, |hub| async move {
            let args = parse_object("arguments", args)?;
            let query = EventQuery {
                cursor,
                max_events,
                max_age: millis_option(max_age_ms, "maxAgeMs")?,
                heartbeat: None,
            };
            json_outcome(
                &hub.poll_events_with(&server, &name, args.as_ref(), &query)
                    .await?,
            )
        });
    }

    /// Opens a stream of event type `name` of `server` from `cursor`
    /// (`events/stream`): returns its object at once; completion `id`
    /// (nothing, or the error) comes once core opened it. Its occurrences
    /// arrive on the hub's events.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn stream_events(
        &self,
        id: u32,
        server: String,
        name: String,
        args: Option<String>,
        cursor: Option<String>,
        max_age_ms: Option<f64>,
        heartbeat_ms: Option<f64>,
    ) -> event_stream::NativeEventStream {
        let slot = event_stream::Slot::default();
        let kept = slot.clone();
        self.op(id, |hub| async move {
            let args = parse_object("arguments", args)?;
            let query = EventQuery {
                cursor,
                max_age: millis_option(max_age_ms, "maxAgeMs")?,
                heartbeat: millis_option(heartbeat_ms, "heartbeatMs")?,
                max_events: None,
            };
            let handle = hub
                .stream_events_with(&server, &name, args.as_ref(), &query)
                .await?;
            *kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
            Ok(Outcome::Done)
        });
        event_stream::NativeEventStream::new(slot)
    }

    /// Subscribes webhook `url` (signed with `secret`) to event type `name`
    /// of `server` (`events/subscribe`); the subscription as core reads
    /// it, JSON text.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn subscribe_events(
        &self,
        id: u32,
        server: String,
        name: String,
        url: String,
        secret: String,
        args: Option<String>,
        cursor: Option<String>,
        ttl_ms: Option<f64>,
        no_expiry: Option<bool>,
        max_age_ms: Option<f64>,
    ) {
        self.op(id, |hub| async move {
            let args = parse_object("arguments", args)?;
            let hook = mcpmux_core::events_ext::Webhook {
                url,
                secret,
                cursor,
                ttl: millis_option(ttl_ms, "ttlMs")?,
            };
            let options = SubscribeOptions {
                no_expiry: no_expiry.unwrap_or(false),
                max_age: millis_option(max_age_ms, "maxAgeMs")?,
            };
            json_outcome(
                &hub.subscribe_events_with(&server, &name, args.as_ref(), &hook, &options)
                    .await?,
            )
        });
    }

    /// Ends the webhook subscription of `url` to event type `name` of
    /// `server` with these `args` (`events/unsubscribe`).
    #[napi]
    pub fn unsubscribe_events(
        &self,
        id: u32,
        server: String,
        name: String,
        url: String,
        args: Option<String>,
    ) {
        self.op(id, |hub| async move {
            let args = parse_object("arguments", args)?;
            hub.unsubscribe_events(&server, &name, args.as_ref(), &url)
                .await?;
            Ok(Outcome::Done)
        });
    }

    /// `resources/subscribe` (`unsubscribe` when `on` is false) for `uri`
    /// on `server`, or on the server that lists it.
    #[napi]
    pub fn subscribe(&self, id: u32, uri: String, server: Option<String>, on: bool) {
        self.op(id, |hub| async move {
            if on {
                hub.subscribe(&uri, server.as_deref()).await?;
            } else {
                hub.unsubscribe(&uri, server.as_deref()).await?;
            }
            Ok(Outcome::Done)
        });
    }
}

/// The stable error code strings (docs/errors.md#codes), as core lists them.
#[napi]
pub fn error_codes() -> Vec<&'static str> {
    mcpmux_core::error::ALL_CODES.to_vec()
}

/// The version of the mcpmux engine inside this addon.
#[napi]
pub fn engine_version() -> &'static str {
    mcpmux_core::VERSION
}

/// Whether mcpmux exports telemetry (the `OTEL_*` variables): `callTool`
/// then hands the host's active OpenTelemetry context to the engine.
#[napi]
pub fn telemetry_enabled() -> bool {
    mcpmux_core::telemetry::enabled()
}

/// How long, in microseconds, the event loop stays awake after a
/// `callTool` goes out (core's `runtime::stay_awake`:
/// `$MCPMUX_STAY_AWAKE_US`, 0 to sleep at once).
#[napi]
pub fn stay_awake_micros() -> u32 {
    u32::try_from(mcpmux_core::runtime::stay_awake().as_micros()).unwrap_or(u32::MAX)
}

/// A `timeoutMs` option as a duration, by core's one rule
/// ([`mcpmux_core::contract::millis`]: positive, at most
/// [`mcpmux_core::contract::MAX_TIMEOUT_MS`]), else `INVALID_INPUT`.
fn timeout_option(timeout_ms: Option<f64>) -> Result<Option<Duration>, Error> {
    millis_option(timeout_ms, "timeoutMs")
}

/// An option `name` in milliseconds as a duration, by the rule of
/// [`timeout_option`]; the error names `name`.
fn millis_option(ms: Option<f64>, name: &str) -> Result<Option<Duration>, Error> {
    ms.map(|ms| mcpmux_core::contract::millis(name, ms))
        .transpose()
}

/// Core's contract of call options, policy options and search as JSON
/// text (`mcpmux_core::contract::schemas`): what the drift tests read and
/// where the options' names come from.
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub fn contract() -> String {
    mcpmux_core::contract::schemas().to_string()
}

/// What an options object says of `key`, which is none of `known` (its
/// names as Node spells them): core's one message, naming the nearest
/// known name (`mcpmux_core::contract::unknown_option`).
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub fn unknown_option(key: String, known: Vec<String>) -> String {
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    mcpmux_core::contract::unknown_option(&key, &known)
}
