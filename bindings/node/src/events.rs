//! `NativeEvents`: one stream of a hub's events (core's
//! [`mcpmux_core::EventStream`]) for the JavaScript `hub.events()` async
//! iterator and the `'event'` emitter of `index.js`.
//!
//! Pull-based: JavaScript asks for the next event (`next(id)`) and gets it
//! as a completion on the dispatcher (its threadsafe function), on the
//! JavaScript thread. The engine never waits for JavaScript: a consumer that
//! falls behind gets core's `lagged` event. Core's stream lives as long as
//! the hub's engine objects, so this ends it when `close()` finished (after
//! the events closing sent) or when the hub is gone.

use std::sync::Arc;

use mcpmux_core::EventStream;
use napi_derive::napi;
use tokio::sync::{watch, Mutex};

use crate::{spawn_op, Outcome, Sink};

/// A stream plus the hub's "closed" signal (`true` once `close()`
/// finished; the sender dropped when the hub is gone).
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

/// The events of one hub from when it was made, owned by one JavaScript
/// iterator (or the hub's `'event'` pump).
#[napi]
pub struct NativeEvents {
    feed: Arc<Mutex<Feed>>,
    sink: Arc<Sink>,
}

impl NativeEvents {
    /// A feed of `stream` that ends when `closed` turns true or its sender
    /// is dropped; completions go to `sink`.
    pub(crate) fn new(
        stream: EventStream,
        closed: watch::Receiver<bool>,
        sink: Arc<Sink>,
    ) -> NativeEvents {
        NativeEvents {
            feed: Arc::new(Mutex::new(Feed {
                stream,
                closed,
                ended: false,
            })),
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
        let feed = self.feed.clone();
        spawn_op(&self.sink, id, async move {
            let mut feed = feed.lock().await;
            Ok(match feed.next().await {
                Some(json) => Outcome::Json(json),
                None => Outcome::Done,
            })
        });
    }
}
