//! Where one connection's outgoing messages go: a queue its transport
//! drains (stdio: the writer task), or a router called in place (HTTP: the
//! session's routes, which put each message on the stream it belongs to).
//! Routing in place saves a task hop per message: the answer goes from the
//! task that made it straight to its `POST`'s stream.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::budget::Outgoing;

/// Puts one message where it belongs, at once, without waiting; called on
/// whichever task or engine thread sends the message (it must not block).
pub(crate) type Router = Arc<dyn Fn(Outgoing) + Send + Sync>;

/// A connection's outgoing side. Cheap to clone; every clone sends to the
/// same place.
#[derive(Clone)]
pub(crate) enum Out {
    /// A bounded queue the transport drains.
    Queue(mpsc::Sender<Outgoing>),
    /// A router called in place.
    Route(Router),
}

impl Out {
    /// Sends `msg`, waiting for room in a full queue (a router never
    /// waits); dropped when the queue's reader is gone.
    pub(crate) async fn send(&self, msg: Outgoing) {
        match self {
            Out::Queue(queue) => {
                let _ = queue.send(msg).await;
            }
            Out::Route(route) => route(msg),
        }
    }

    /// Sends `msg` if a queue has room now (a router always takes it, and
    /// may then drop what its target has no room for); false when it was
    /// dropped here.
    pub(crate) fn try_send(&self, msg: Outgoing) -> bool {
        match self {
            Out::Queue(queue) => queue.try_send(msg).is_ok(),
            Out::Route(route) => {
                route(msg);
                true
            }
        }
    }

    /// Whether nothing takes messages any more: a queue whose reader is
    /// gone (a router takes them as long as it exists).
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Out::Queue(queue) => queue.is_closed(),
            Out::Route(_) => false,
        }
    }
}
