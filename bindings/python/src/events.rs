//! `_native.Events`: one stream of a hub's events (core's
//! [`mcpmux_core::EventStream`]) for the Python `Hub.events()` iterator,
//! `AsyncHub.events()` async iterator and the `on_event=` delivery thread.
//!
//! Only converts: the events are core's (`HubEvent::to_json`), and a
//! consumer that falls behind gets core's `lagged` event. What this adds is
//! the end: core's stream lives as long as the hub's engine objects, so the
//! binding ends it when `close()` finished (after the events that closing
//! sent, which are still delivered) or when the hub is gone.

use std::sync::Arc;

use mcpmux_core::EventStream;
use pyo3::prelude::*;
use tokio::sync::{watch, Mutex};

use crate::bridge::{Exec, Op, Outcome};
use crate::hub::{run, Aio};

/// A stream plus the hub's "closed" signal (`true` once `close()` finished;
/// the sender dropped when the hub is gone).
struct Feed {
    stream: EventStream,
    closed: watch::Receiver<bool>,
    ended: bool,
}

impl Feed {
    /// The next event as JSON text; `None` once the hub closed (and the
    /// events it sent while closing were handed out) or is gone.
    async fn next(&mut self) -> Option<String> {
        if self.ended {
            return None;
        }
        let event = tokio::select! {
            biased;
            event = self.stream.recv() => event,
            _ = self.closed.wait_for(|closed| *closed) => self.stream.try_recv().ok().flatten(),
        };
        match event {
            Some(e) => Some(e.to_json().to_string()),
            None => {
                self.ended = true;
                None
            }
        }
    }
}

/// The events of one hub from when it was made (see the module docs).
/// Owned by the Python iterator; `next` may be called from any thread, one
/// caller at a time (others wait their turn).
#[pyclass(frozen, module = "mcpmux._native", name = "Events")]
pub struct NativeEvents {
    feed: Arc<Mutex<Feed>>,
}

impl NativeEvents {
    /// A feed of `stream` that ends when `closed` turns true or its sender
    /// is dropped.
    pub(crate) fn new(stream: EventStream, closed: watch::Receiver<bool>) -> NativeEvents {
        NativeEvents {
            feed: Arc::new(Mutex::new(Feed {
                stream,
                closed,
                ended: false,
            })),
        }
    }
}

#[pymethods]
impl NativeEvents {
    /// The next event as a dict, or `None` when the hub closed. Blocking
    /// (no `aio`: waits on the calling thread with the GIL released; Ctrl-C
    /// interrupts it and loses no event) or an asyncio future (`aio`).
    #[pyo3(signature = (aio=None))]
    fn next(&self, py: Python<'_>, aio: Option<Aio<'_>>) -> PyResult<Py<PyAny>> {
        let feed = self.feed.clone();
        let op: Op = Box::pin(async move {
            let mut feed = feed.lock().await;
            Ok(match feed.next().await {
                Some(json) => Outcome::Json(json),
                None => Outcome::Unit,
            })
        });
        run(py, op, aio, Exec::Here)
    }
}
