//! Running the engine's futures for Python: blocking on the calling
//! thread with the GIL released (signals checked, progress callbacks run on
//! this thread), or as an asyncio future through the loop's bridge.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcpmux_core::{Error, ProgressUpdate};
use pyo3::prelude::*;
use tokio::sync::mpsc;

use crate::bridge::{self, Bridge, Exec, Op, Outcome};
use crate::{errors, runtime};

/// How often a blocking call looks for signals (Ctrl-C) while it waits.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Most an interrupted blocking call waits for its engine task to be gone
/// (see [`block`]).
const ABORT_WAIT: Duration = Duration::from_secs(1);

/// The async form of a call: the asyncio future to complete and the loop's bridge.
pub(crate) type Aio<'py> = (Bound<'py, PyAny>, Bound<'py, Bridge>);

/// Runs `op` blocking (no `aio`) or as an asyncio future.
pub(crate) fn run(py: Python<'_>, op: Op, aio: Option<Aio<'_>>, exec: Exec) -> PyResult<Py<PyAny>> {
    match aio {
        Some((future, bridge)) => bridge::submit(py, &future, &bridge, op, exec),
        None => block(py, op, exec, None)?.into_py(py),
    }
}

/// A progress callback of a blocking call and the updates for it.
pub(crate) type Progress = (Py<PyAny>, mpsc::UnboundedReceiver<ProgressUpdate>);

/// Runs `op` to completion with the GIL released. Every
/// [`SIGNAL_CHECK`] it looks for signals, so Ctrl-C interrupts the wait
/// (and cancels the request); progress callbacks run on this thread.
pub(crate) fn block(
    py: Python<'_>,
    op: Op,
    exec: Exec,
    progress: Option<Progress>,
) -> PyResult<Outcome> {
    let rt = runtime::get().map_err(|e| errors::to_py(py, &e))?;
    let op = bridge::guarded(op);
    let nested = tokio::runtime::Handle::try_current().is_ok();
    let result: Result<Result<Outcome, Error>, PyErr> = py.detach(move || {
        if exec == Exec::Here && !nested {
            return mcpmux_core::runtime::block_on(rt.handle(), wait(op, progress));
        }
        // On an engine thread; wait for it from here.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (gone, task_gone) = std::sync::mpsc::channel::<()>();
        let op = DropsThenSignals { op, _gone: gone };
        let task = rt.spawn(async move {
            let _ = tx.send(op.await);
        });
        let waited = if nested {
            // Already inside some tokio runtime (a progress callback that
            // makes a blocking call, or another library's runtime): block
            // this thread on a plain channel instead of entering a runtime,
            // and look for signals from here. Only the thread that called
            // can handle them (Python runs signal handlers on the main
            // thread): checked on the engine thread that runs `wait`,
            // Ctrl-C would be lost until the call ended or timed out.
            let (tx2, rx2) = std::sync::mpsc::channel();
            let waiter = rt.spawn(async move {
                let _ = tx2.send(wait(rx, progress).await);
            });
            loop {
                match rx2.recv_timeout(SIGNAL_CHECK) {
                    Ok(done) => break done,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(interrupted) = Python::attach(|py| py.check_signals()) {
                            waiter.abort();
                            break Err(interrupted);
                        }
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                        break Ok(Ok(Err(Error::Internal(
                            "the engine task ended without an answer".into(),
                        ))))
                    }
                }
            }
        } else {
            mcpmux_core::runtime::block_on(rt.handle(), wait(rx, progress))
        };
        if waited.is_err() {
            task.abort();
            // The aborted task drops the call on an engine thread, and that
            // drop is what tells the server (`notifications/cancelled`).
            // Waiting for it keeps the order the host sees: the cancellation
            // goes out before whatever the host does next (closing the hub
            // first would leave no request to cancel and no pipe to tell).
            let _ = task_gone.recv_timeout(ABORT_WAIT);
        }
        waited.map(|r| {
            r.unwrap_or_else(|_| {
                Err(Error::Internal(
                    "the engine task ended without an answer".into(),
                ))
            })
        })
    });
    match result {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(e)) => Err(errors::to_py(py, &e)),
        Err(interrupted) => Err(interrupted),
    }
}

/// An engine future that, once dropped (finished or aborted), disconnects
/// `_gone`: fields drop in order, so whoever waits on the other end learns
/// only after the future's own drop has run.
struct DropsThenSignals {
    op: Op,
    _gone: std::sync::mpsc::Sender<()>,
}

impl Future for DropsThenSignals {
    type Output = <Op as Future>::Output;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.op.as_mut().poll(cx)
    }
}

/// Awaits `fut`, checking for signals and running progress callbacks.
async fn wait<F: Future + Unpin>(
    mut fut: F,
    mut progress: Option<Progress>,
) -> Result<F::Output, PyErr> {
    // A signal that landed just before the call (while Rust code held the
    // GIL, so Python did not handle it) interrupts it before it starts,
    // rather than after the request went out.
    Python::attach(|py| py.check_signals())?;
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + SIGNAL_CHECK, SIGNAL_CHECK);
    loop {
        let update = async {
            match progress.as_mut() {
                Some((_, rx)) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            out = &mut fut => {
                // Progress that arrived just before the result is delivered first.
                if let Some((cb, rx)) = progress.as_mut() {
                    while let Ok(u) = rx.try_recv() {
                        Python::attach(|py| bridge::call_progress_or_interrupt(py, cb, u))?;
                    }
                }
                return Ok(out);
            }
            Some(u) = update => {
                if let Some((cb, _)) = &progress {
                    Python::attach(|py| bridge::call_progress_or_interrupt(py, cb, u))?;
                }
            }
            _ = tick.tick() => Python::attach(|py| py.check_signals())?,
        }
    }
}

/// Runs a future of the engine that never waits (such as `Policy::report`,
/// which reads the hub's index) on this thread.
pub(crate) fn now<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let _enter = runtime::get().ok().map(|rt| rt.enter());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            return v;
        }
        // Not expected; should the engine ever wait here, wait politely.
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(crate) fn json_outcome<T: serde::Serialize + ?Sized>(value: &T) -> Outcome {
    match serde_json::to_string(value) {
        Ok(text) => Outcome::Json(text),
        Err(_) => Outcome::Json("null".into()),
    }
}

pub(crate) fn json_out<T: serde::Serialize + ?Sized>(
    py: Python<'_>,
    value: &T,
) -> PyResult<Py<PyAny>> {
    json_outcome(value).into_py(py)
}
