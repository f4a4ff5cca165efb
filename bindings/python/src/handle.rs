//! The handle behind `_native.Hub`: the engine hub a Python hub object
//! owns, the registry of open hubs, and their shutdown at interpreter exit
//! ([`shutdown`]). The Python methods are in [`crate::hub`].
//!
//! Ownership: the Python object owns one clone of the engine hub. A hub
//! garbage-collected while open is closed in the background; at
//! interpreter exit [`shutdown`] closes what is left.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::Poll;
use std::time::Duration;

use mcpmux_core::{Error, EventStream, Hub};
use pyo3::prelude::*;

use crate::{errors, runtime};

/// Every hub of this process that may still be open, for [`shutdown`].
pub(crate) static LIVE: Mutex<Vec<Weak<HubState>>> = Mutex::new(Vec::new());

/// What every handle on one hub shares: the engine hub, whether it was
/// closed, the first event stream, and the fork generation.
pub(crate) struct HubState {
    pub(crate) hub: Hub,
    pub(crate) closed: AtomicBool,
    /// The stream subscribed before connecting (`events=True`), until
    /// `events(initial=True)` takes it.
    pub(crate) first_events: Mutex<Option<EventStream>>,
    /// The fork generation that created it (see [`runtime`]).
    generation: u64,
}

impl HubState {
    pub(crate) fn stale(&self) -> bool {
        self.generation != runtime::generation()
    }
}

impl Drop for HubState {
    fn drop(&mut self) {
        if self.stale() {
            // Connected by the parent before fork(): its servers are the
            // parent's; neither close nor kill them from here.
            std::mem::forget(self.hub.clone());
            return;
        }
        let _enter = runtime::get().ok().map(|rt| rt.enter());
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Garbage-collected while open: close gracefully in the background.
            if let Ok(rt) = runtime::get() {
                let hub = self.hub.clone();
                rt.spawn(async move { hub.close().await });
            }
        }
    }
}

/// An engine hub (see the module docs). Created by `Hub.connect`.
#[pyclass(frozen, module = "mcpmux._native", name = "Hub")]
pub struct NativeHub {
    pub(crate) state: Arc<HubState>,
}

impl NativeHub {
    /// Another handle on the same hub (for a policy bound to it).
    pub(crate) fn clone_ref(&self) -> NativeHub {
        NativeHub {
            state: self.state.clone(),
        }
    }
}

impl NativeHub {
    /// Wraps a connected engine hub (and the event stream subscribed
    /// before it connected, if any) and registers it for [`shutdown`].
    pub fn wrap(hub: Hub, first_events: Option<EventStream>) -> NativeHub {
        let state = Arc::new(HubState {
            hub,
            closed: AtomicBool::new(false),
            first_events: Mutex::new(first_events),
            generation: runtime::generation(),
        });
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&state));
        NativeHub { state }
    }

    /// The engine hub, unless this hub is closed (or from before fork()).
    pub(crate) fn hub(&self) -> Result<&Hub, Error> {
        if self.state.closed.load(Ordering::Acquire) {
            return Err(errors::closed());
        }
        if self.state.stale() {
            return Err(Error::TransportClosed(
                "this hub was connected before fork(); connect again in this process".into(),
            ));
        }
        Ok(&self.state.hub)
    }

    pub(crate) fn hub_py(&self, py: Python<'_>) -> PyResult<Hub> {
        self.hub().cloned().map_err(|e| errors::to_py(py, &e))
    }
}

/// Closes every hub of this process that is still open, all at once,
/// giving them `grace_seconds` to exit after their stdin is closed; what is
/// left then is killed (SIGKILL to its process group). Registered with
/// `atexit` by the Python layer, so that interpreter exit never hangs and
/// leaves no server behind.
#[pyfunction]
pub fn shutdown(py: Python<'_>, grace_seconds: f64) -> PyResult<()> {
    let hubs: Vec<Hub> = {
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        live.drain(..)
            .filter_map(|w| w.upgrade())
            .filter(|s| !s.stale() && !s.closed.swap(true, Ordering::AcqRel))
            .map(|s| s.hub.clone())
            .collect()
    };
    if hubs.is_empty() {
        return Ok(());
    }
    let rt = runtime::get().map_err(|e| errors::to_py(py, &e))?;
    let grace = Duration::try_from_secs_f64(grace_seconds).unwrap_or(Duration::from_secs(1));
    py.detach(move || {
        let all = async move {
            // Closing also ends the event streams (the on_event threads).
            let closes = hubs.iter().map(Hub::close);
            // Dropping the unfinished closes (on timeout) drops the last
            // handles on their servers, which kills their process groups.
            let _ = tokio::time::timeout(grace, join_all(closes)).await;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        rt.spawn(async move {
            all.await;
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(grace + Duration::from_secs(2));
    });
    // Spans and metrics go out too (bounded; nothing when telemetry is off).
    py.detach(mcpmux_core::telemetry::shutdown);
    Ok(())
}

/// Awaits every future of `futs` concurrently.
async fn join_all<F: Future<Output = ()>>(futs: impl IntoIterator<Item = F>) {
    let mut set = Vec::new();
    for f in futs {
        set.push(Box::pin(f));
    }
    std::future::poll_fn(|cx| {
        set.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if set.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}
