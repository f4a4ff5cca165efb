//! `NativeEvents`: one stream of a hub's events (core's
//! [`mcpmux_core::EventStream`]) for the JavaScript `hub.events()` async
//! iterator and the `'event'` emitter of `index.js`.
//!
//! Pull-based: JavaScript asks for the next event (`next(id)`) and gets it
//! as a completion on the dispatcher (its threadsafe function), on the
//! JavaScript thread. The engine never waits for JavaScript: a consumer that
//! falls behind gets core's `lagged` event, and the stream ends where core
//! ends it (the hub closed, after the events closing sent, or gone).

use std::sync::Arc;

use mcpmux_core::EventStream;
use napi_derive::napi;
use tokio::sync::Mutex;

use crate::{spawn_op, Outcome, Sink};

/// The events of one hub from when it was made, owned by one JavaScript
/// iterator (or the hub's `'event'` pump).
#[napi]
pub struct NativeEvents {
    stream: Arc<Mutex<EventStream>>,
    sink: Arc<Sink>,
}

impl NativeEvents {
    /// Hands `stream` to JavaScript; completions go to `sink`.
    pub(crate) fn new(stream: EventStream, sink: Arc<Sink>) -> NativeEvents {
        NativeEvents {
            stream: Arc::new(Mutex::new(stream)),
            sink,
        }
    }
}

#[napi]
impl NativeEvents {
    /// Posts completion `id`: the next event as JSON text, or nothing
    /// (`undefined`) once the hub is closed. Calls are answered in order.
    #[napi]
    pub fn next(&self, id: u32) {
        let stream = self.stream.clone();
        spawn_op(&self.sink, id, async move {
            let mut stream = stream.lock().await;
            Ok(match stream.recv().await {
                Some(event) => Outcome::Json(event.to_json().to_string()),
                None => Outcome::Done,
            })
        });
    }
}
