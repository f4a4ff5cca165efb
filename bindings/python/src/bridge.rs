//! Async bridging: engine futures to asyncio futures.
//!
//! An async call creates an `asyncio.Future` on the event loop, starts the
//! engine's future ([`submit`]) and awaits the asyncio future. Outcomes go
//! back to the loop through the loop's [`Bridge`]: a queue plus a pipe that
//! the loop watches (`loop.add_reader`). Whoever queues an item while the
//! bridge is idle writes one byte to the pipe; the loop then calls
//! [`Bridge::drain`] on its own thread, which sets results and exceptions.
//! Engine threads never take the GIL, and many completions cost one wake-up.
//!
//! Two ways to run the engine's future:
//!
//! - `Exec::Here` (tool calls and reads): the future is polled on the loop's
//!   thread, first right away (so the request is written to the server at
//!   once) and then each time it is woken: its waker queues it on the bridge.
//!   No engine thread runs it, which saves a thread hop per call; a poll
//!   never blocks.
//! - `Exec::Worker` (connect, refresh, close): a task on the runtime, which
//!   queues its outcome when done; server processes are then started from
//!   engine threads (see [`crate::runtime`]).
//!
//! Cancelling the awaiting task calls [`Pending::cancel`], which drops the
//! engine's future: that cancels the request (the server is sent
//! `notifications/cancelled`).
//!
//! While one call is waiting, the Python layer's stay-awake turns call
//! [`Bridge::read_now`]: the loop's thread reads the stdio server's answer
//! itself (core's `runtime::read_followed`) and delivers what that
//! completes at once, so a fast answer needs neither an engine thread nor
//! a byte through the pipe.

use std::cell::Cell;
use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use mcpmux_core::{Error, ProgressUpdate};
use pyo3::prelude::*;
use pyo3::{intern, IntoPyObjectExt};
use tokio::task::AbortHandle;

use crate::{errors, runtime};

/// What an engine operation produces, turned into Python on the loop's thread.
pub enum Outcome {
    /// JSON text, returned as plain Python objects (`json.loads`).
    Json(String),
    /// A tool result, returned as plain Python objects.
    Tool(mcpmux_core::ToolResult),
    /// A connected hub, returned as a new `_native.Hub`, with the event
    /// stream subscribed before it connected (`connect(events=True)`).
    Hub(mcpmux_core::Hub, Option<mcpmux_core::EventStream>),
    /// An open events-extension stream, returned as a new
    /// `_native.EventStream`.
    EventStream(mcpmux_core::events_ext::EventStreamHandle),
    /// Nothing (`None`).
    Unit,
}

impl Outcome {
    /// The Python value of this outcome. Needs the GIL.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self {
            Outcome::Json(text) => crate::convert::loads(py, &text).map(Bound::unbind),
            Outcome::Tool(result) => crate::convert::loads(py, result.json()).map(Bound::unbind),
            Outcome::Hub(hub, events) => {
                crate::handle::NativeHub::wrap(hub, events).into_py_any(py)
            }
            Outcome::EventStream(handle) => {
                crate::event_stream::NativeEventStream::new(handle).into_py_any(py)
            }
            Outcome::Unit => Ok(py.None()),
        }
    }
}

/// An engine operation, ready to run on the runtime.
pub type Op = Pin<Box<dyn Future<Output = Result<Outcome, Error>> + Send + 'static>>;

/// `op`, with a panic inside it turned into an `INTERNAL` error, so that
/// no panic reaches Python and no awaiting future is left unfinished.
pub fn guarded(op: Op) -> Op {
    Box::pin(CatchPanic(op))
}

struct CatchPanic(Op);

impl Future for CatchPanic {
    type Output = Result<Outcome, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Poll::Ready(Err(Error::Internal(format!(
                    "the mcpmux engine panicked: {what}"
                ))))
            }
        }
    }
}

/// One piece of news for the loop.
enum Item {
    /// An operation finished: set the future's result or exception.
    Done {
        future: Py<PyAny>,
        result: Result<Outcome, Error>,
    },
    /// A call's future was woken: poll it on the loop's thread.
    Poll(Arc<Call>),
    /// A progress notification for a call: call the host's callback.
    Progress {
        callback: Arc<Py<PyAny>>,
        update: ProgressUpdate,
    },
}

#[derive(Default)]
struct Queue {
    items: Vec<Item>,
    /// A byte is in the pipe (or about to be) and `drain` has not run since.
    signalled: bool,
}

struct Inner {
    queue: Mutex<Queue>,
    read: OwnedFd,
    write: OwnedFd,
}

thread_local! {
    /// Set on the loop's thread inside [`Bridge::read_now`], which delivers
    /// what it queues itself: no byte through the pipe for that.
    static READING_NOW: Cell<bool> = const { Cell::new(false) };
}

impl Inner {
    /// Queues `item`; wakes the loop if the bridge was idle. Any thread, no GIL.
    fn push(&self, item: Item) {
        let wake = {
            let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            q.items.push(item);
            // Inside `read_now` the items are taken right after: `signalled`
            // stays as it is (a byte written by another thread is still
            // drained, finding nothing or what came since).
            !READING_NOW.with(Cell::get) && !std::mem::replace(&mut q.signalled, true)
        };
        if wake {
            // SAFETY: `write` is open while `self` lives. A full pipe
            // (EAGAIN) already holds a byte, which is all the loop needs.
            unsafe { libc::write(self.write.as_raw_fd(), b"!".as_ptr().cast(), 1) };
        }
    }
}

/// Completions of one event loop's calls. Created by the Python layer once
/// per loop, which registers [`Bridge::drain`] with `loop.add_reader` on
/// [`Bridge::fileno`]. Owns its pipe; the pipe is closed when the bridge
/// and every engine task that may still report to it are gone.
#[pyclass(frozen, module = "mcpmux._native")]
pub struct Bridge {
    inner: Arc<Inner>,
}

#[pymethods]
impl Bridge {
    /// A new bridge with its own non-blocking pipe.
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let mut fds: [libc::c_int; 2] = [-1; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        let rc = unsafe { libc::pipe(fds.as_mut_ptr()) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(errors::to_py(
                py,
                &Error::Internal(format!("cannot create a pipe for asyncio: {e}")),
            ));
        }
        for fd in fds {
            // SAFETY: plain fcntl calls on descriptors we just created.
            unsafe {
                libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        Ok(Bridge {
            inner: Arc::new(Inner {
                queue: Mutex::default(),
                // SAFETY: both descriptors are new and owned by nobody else.
                read: unsafe { OwnedFd::from_raw_fd(fds[0]) },
                write: unsafe { OwnedFd::from_raw_fd(fds[1]) },
            }),
        })
    }

    /// The descriptor the event loop watches for readability.
    fn fileno(&self) -> RawFd {
        self.inner.read.as_raw_fd()
    }

    /// Delivers everything queued: sets results and exceptions of finished
    /// futures (skipping futures already cancelled) and calls progress
    /// callbacks. Runs on the loop's thread, as its reader callback; an
    /// exception from one item is reported to `sys.unraisablehook` and
    /// does not stop the others.
    fn drain(&self, py: Python<'_>) {
        let mut buf = [0u8; 64];
        // One byte per wake-up is written, so one read nearly always empties
        // the pipe; read again only when the buffer came back full.
        // SAFETY: reads into a local buffer from our own non-blocking pipe.
        while unsafe { libc::read(self.inner.read.as_raw_fd(), buf.as_mut_ptr().cast(), 64) } == 64
        {
        }
        let items = {
            let mut q = self
                .inner
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            q.signalled = false;
            std::mem::take(&mut q.items)
        };
        deliver_items(py, items);
    }

    /// Reads, without blocking, what the stdio server this thread last sent
    /// a call to has answered (core's `runtime::read_followed`) and delivers
    /// what that completes, as [`drain`](Self::drain) would. Called by the
    /// Python layer on the loop's thread while one call waits and the loop
    /// stays awake; does nothing when an engine thread is reading that
    /// server at the moment.
    fn read_now(&self, py: Python<'_>) {
        let Ok(rt) = runtime::get() else { return };
        let items = {
            let _enter = rt.enter();
            READING_NOW.with(|r| r.set(true));
            // A panic here would be a bug; the engine's reader task still
            // reads, and the flag must not stay set.
            let _ = std::panic::catch_unwind(mcpmux_core::runtime::read_followed);
            READING_NOW.with(|r| r.set(false));
            let mut q = self
                .inner
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            std::mem::take(&mut q.items)
        };
        if !items.is_empty() {
            deliver_items(py, items);
        }
    }
}

/// Delivers queued items on the loop's thread (GIL held): results and
/// exceptions, polls of woken calls, progress callbacks. An exception from
/// one item is reported to `sys.unraisablehook` and does not stop the others.
fn deliver_items(py: Python<'_>, items: Vec<Item>) {
    // Engine objects dropped here (a hub whose connect was cancelled, say)
    // may need the runtime.
    let _enter = runtime::get().ok().map(|rt| rt.enter());
    for item in items {
        match item {
            Item::Done { future, result } => {
                let future = future.into_bound(py);
                if let Err(e) = deliver(py, &future, result) {
                    e.write_unraisable(py, Some(&future));
                }
            }
            Item::Poll(call) => {
                call.poll(py);
            }
            Item::Progress { callback, update } => {
                call_progress(py, &callback, update);
            }
        }
    }
}

/// Calls a host progress callback `(progress, total, message)` with the GIL
/// held; an exception it raises is reported to `sys.unraisablehook`.
pub fn call_progress(py: Python<'_>, callback: &Py<PyAny>, update: ProgressUpdate) {
    if let Err(e) = call_progress_or_interrupt(py, callback, update) {
        e.write_unraisable(py, Some(callback.bind(py)));
    }
}

/// [`call_progress`] for a blocking call's own thread: a `KeyboardInterrupt`
/// raised while the callback runs (Ctrl-C landing in its Python code) is
/// returned, to interrupt the call, instead of being swallowed as
/// unraisable. Other errors are reported as unraisable as usual.
pub fn call_progress_or_interrupt(
    py: Python<'_>,
    callback: &Py<PyAny>,
    update: ProgressUpdate,
) -> PyResult<()> {
    let callback = callback.bind(py);
    match callback.call1((update.progress, update.total, update.message)) {
        Ok(_) => Ok(()),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => Err(e),
        Err(e) => {
            e.write_unraisable(py, Some(callback));
            Ok(())
        }
    }
}

/// A progress callback for the engine that hands each update to `bridge`.
pub fn progress_to_bridge(
    bridge: &Bound<'_, Bridge>,
    callback: Py<PyAny>,
) -> mcpmux_core::ProgressCallback {
    let inner = bridge.get().inner.clone();
    let callback = Arc::new(callback);
    Arc::new(move |update| {
        inner.push(Item::Progress {
            callback: callback.clone(),
            update,
        });
    })
}

/// Sets `future`'s result (or exception) from `result`, unless it is done.
fn deliver(
    py: Python<'_>,
    future: &Bound<'_, PyAny>,
    result: Result<Outcome, Error>,
) -> PyResult<()> {
    if future.call_method0(intern!(py, "done"))?.is_truthy()? {
        return Ok(()); // cancelled while the engine worked
    }
    let value = result
        .map_err(|e| errors::to_py(py, &e))
        .and_then(|o| o.into_py(py));
    match value {
        Ok(v) => future.call_method1(intern!(py, "set_result"), (v,))?,
        Err(e) => future.call_method1(intern!(py, "set_exception"), (e.into_value(py),))?,
    };
    Ok(())
}

/// The engine work behind one async call. `cancel()` drops its future,
/// which cancels the request.
#[pyclass(frozen, module = "mcpmux._native")]
pub struct Pending {
    work: Work,
}

enum Work {
    /// A task on the runtime.
    Task(AbortHandle),
    /// A future polled on the loop's thread.
    Local(Arc<Call>),
}

#[pymethods]
impl Pending {
    /// Cancels the engine's work for this call (idempotent).
    fn cancel(&self) {
        match &self.work {
            Work::Task(abort) => abort.abort(),
            Work::Local(call) => call.cancel(),
        }
    }
}

/// A future polled on the event loop's thread: its waker queues it on the
/// bridge, and [`Bridge::drain`] polls it again. No engine thread is
/// involved until the server answers, which saves a thread hop per call.
struct Call {
    op: Mutex<Option<Op>>,
    future: Py<PyAny>,
    bridge: Arc<Inner>,
}

impl Call {
    /// Drops the future (which cancels its request), inside the runtime:
    /// network transports cancel through a runtime task.
    fn cancel(&self) {
        let op = self
            .op
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(op) = op {
            drop_in_runtime(op);
        }
    }

    /// Polls the future (GIL held, loop's thread); delivers its outcome
    /// when it is ready. Returns whether it is finished.
    fn poll(self: Arc<Self>, py: Python<'_>) -> bool {
        let Ok(rt) = runtime::get() else {
            return false;
        };
        let ready = {
            let mut slot = self.op.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(op) = slot.as_mut() else {
                return true; // finished or cancelled already
            };
            let _enter = rt.enter();
            let waker = Waker::from(self.clone());
            match op.as_mut().poll(&mut Context::from_waker(&waker)) {
                Poll::Ready(result) => {
                    *slot = None;
                    Some(result)
                }
                Poll::Pending => None,
            }
        };
        match ready {
            Some(result) => {
                let future = self.future.bind(py);
                if let Err(e) = deliver(py, future, result) {
                    e.write_unraisable(py, Some(future));
                }
                true
            }
            None => false,
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let op = self
            .op
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(op) = op {
            drop_in_runtime(op);
        }
    }
}

/// Drops an engine future with the runtime entered (whatever the thread).
fn drop_in_runtime(op: Op) {
    let _enter = runtime::get().ok().map(|rt| rt.enter());
    drop(op);
}

impl std::task::Wake for Call {
    fn wake(self: Arc<Self>) {
        let bridge = self.bridge.clone();
        bridge.push(Item::Poll(self));
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.bridge.push(Item::Poll(self.clone()));
    }
}

/// Runs `op` for the asyncio future `future`, reporting to `bridge`.
///
/// `Exec::Worker`: `op` runs as a task on the runtime (for anything that
/// starts a server process, see [`runtime`]). `Exec::Here`: `op` is polled
/// right here (on the loop's thread, GIL held; a poll never blocks) and
/// then again on the loop's thread each time it is woken; a request goes
/// out at once. If it is finished already, `future` is set now and `None`
/// is returned; otherwise a [`Pending`] is.
pub fn submit(
    py: Python<'_>,
    future: &Bound<'_, PyAny>,
    bridge: &Bound<'_, Bridge>,
    op: Op,
    exec: Exec,
) -> PyResult<Py<PyAny>> {
    let rt = runtime::get().map_err(|e| errors::to_py(py, &e))?;
    let _enter = rt.enter();
    let inner = bridge.get().inner.clone();
    let future = future.clone().unbind();
    let op = guarded(op);
    let work = match exec {
        Exec::Here => {
            // The loop's thread: a stdio transport it sends on offers its
            // stdout to `Bridge::read_now`.
            mcpmux_core::runtime::follow_on_this_thread();
            let call = Arc::new(Call {
                op: Mutex::new(Some(op)),
                future,
                bridge: inner,
            });
            if call.clone().poll(py) {
                return Ok(py.None());
            }
            Work::Local(call)
        }
        Exec::Worker => {
            let task = rt.spawn(async move {
                let result = op.await;
                inner.push(Item::Done { future, result });
            });
            Work::Task(task.abort_handle())
        }
    };
    Pending { work }.into_py_any(py)
}

/// Where an operation runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Exec {
    /// On the calling thread: blocking calls `block_on` there; async calls
    /// are polled on the event loop's thread.
    Here,
    /// On an engine thread: for anything that may start a server process,
    /// which the kernel kills when the thread that started it ends.
    Worker,
}
