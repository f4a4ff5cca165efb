//! `_native.Events`: one stream of a hub's events (core's
//! [`mcpmux_core::EventStream`]) for the Python `Hub.events()` iterator,
//! `AsyncHub.events()` async iterator and the `on_event=` delivery thread.
//!
//! Only converts: the events, the `lagged` event of a consumer that falls
//! behind and the end of the stream (the hub closed or gone) are core's.

use std::sync::Arc;

use mcpmux_core::EventStream;
use pyo3::prelude::*;
use tokio::sync::Mutex;

use crate::bridge::{Exec, Op, Outcome};
use crate::calls::{run, Aio};

/// The events of one hub from when it was made (see the module docs).
/// Owned by the Python iterator; `next` may be called from any thread, one
/// caller at a time (others wait their turn).
#[pyclass(frozen, module = "mcpmux._native", name = "Events")]
pub struct NativeEvents {
    stream: Arc<Mutex<EventStream>>,
}

impl NativeEvents {
    /// Hands `stream` to Python.
    pub(crate) fn new(stream: EventStream) -> NativeEvents {
        NativeEvents {
            stream: Arc::new(Mutex::new(stream)),
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
        let stream = self.stream.clone();
        let op: Op = Box::pin(async move {
            let mut stream = stream.lock().await;
            Ok(match stream.recv().await {
                Some(event) => Outcome::Json(event.to_json().to_string()),
                None => Outcome::Unit,
            })
        });
        run(py, op, aio, Exec::Here)
    }
}
