//! `_native.EventStream`: one open stream of the events extension (core's
//! [`mcpmux_core::events_ext::EventStreamHandle`], from
//! `Hub.stream_events`) for the Python `mcpmux.EventStream`.
//!
//! Only converts: the stream's occurrences and state changes reach Python
//! on the hub's own event streams (`event`, `event_stream`); this object
//! holds the handle, reads its cursor and stops it. Dropping it (garbage
//! collection) stops the stream, by core's rule.

use std::sync::{Mutex, PoisonError};

use mcpmux_core::events_ext::EventStreamHandle;
use pyo3::prelude::*;

/// An open `events/stream` (see the module docs).
#[pyclass(frozen, module = "mcpmux._native", name = "EventStream")]
pub struct NativeEventStream {
    handle: Mutex<EventStreamHandle>,
}

impl NativeEventStream {
    /// Hands `handle` to Python.
    pub(crate) fn new(handle: EventStreamHandle) -> NativeEventStream {
        NativeEventStream {
            handle: Mutex::new(handle),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut EventStreamHandle) -> T) -> T {
        f(&mut self.handle.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[pymethods]
impl NativeEventStream {
    /// The stream's id: the `subscription` of its events.
    #[getter]
    fn id(&self) -> u64 {
        self.with(|h| h.id())
    }

    /// The latest cursor (to keep and resume from), or `None`.
    #[getter]
    fn cursor(&self) -> Option<String> {
        self.with(|h| h.cursor())
    }

    /// Ends the stream; idempotent.
    fn stop(&self) {
        self.with(EventStreamHandle::stop)
    }
}
