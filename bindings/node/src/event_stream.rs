//! `NativeEventStream`: one open stream of the events extension (core's
//! [`mcpmux_core::events_ext::EventStreamHandle`]) for the JavaScript
//! `EventStream` of `hub.streamEvents()`.
//!
//! Only converts: `NativeHub::stream_events` returns this object at once
//! and opens the stream on the runtime; the handle lands here when core
//! returns it, and the completion settles the JavaScript promise. The
//! stream's occurrences and state changes reach JavaScript on the hub's
//! own events (`event`, `event_stream`). Dropping this object (garbage
//! collection) stops the stream, by core's rule.

use std::sync::{Arc, Mutex, MutexGuard};

use mcpmux_core::events_ext::EventStreamHandle;
use napi_derive::napi;

/// Where an opened stream's handle is kept (shared with the task that opens it).
pub(crate) type Slot = Arc<Mutex<Option<EventStreamHandle>>>;

/// An open `events/stream` (see the module docs).
#[napi]
pub struct NativeEventStream {
    slot: Slot,
}

impl NativeEventStream {
    /// An empty stream object; the opening task fills `slot`.
    pub(crate) fn new(slot: Slot) -> NativeEventStream {
        NativeEventStream { slot }
    }

    fn handle(&self) -> MutexGuard<'_, Option<EventStreamHandle>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[napi]
impl NativeEventStream {
    /// The stream's id (the `subscription` of its events); `null` until
    /// it is open.
    #[napi(getter)]
    pub fn id(&self) -> Option<f64> {
        self.handle().as_ref().map(|h| h.id() as f64)
    }

    /// The latest cursor (to keep and resume from), or `null`.
    #[napi(getter)]
    pub fn cursor(&self) -> Option<String> {
        self.handle().as_ref().and_then(EventStreamHandle::cursor)
    }

    /// Ends the stream; idempotent.
    #[napi]
    pub fn stop(&self) {
        if let Some(handle) = self.handle().as_mut() {
            handle.stop();
        }
    }
}
