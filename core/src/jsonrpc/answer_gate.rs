//! A caller's say over the response to its request before the engine keeps
//! a copy of it: an [`AnswerGate`] (set with
//! [`CallOptions::answer_gate`](crate::client::CallOptions::answer_gate))
//! is asked on the connection's reader, as soon as the response is read,
//! whether to keep it; and it may ask the reader to read nothing more from
//! that server for a while ([`Backpressure`]), so that the server's pipe or
//! socket pushes back.
//!
//! The gateway uses it to count an answer against its client's memory
//! budget from the moment it is read (see `mcpmux-gateway`'s `budget.rs`):
//! without it, answers read faster than they are handled would pile up
//! uncounted between the reader and their callers.

use std::sync::Arc;

use futures::future::BoxFuture;

/// Decides, on the connection's reader, whether the response to one
/// request is kept. Only a call's final result is offered (not a task's
/// handle, nor a 2026-07-28 server's interim answers): holding off the
/// reader until what it admitted is handled must never wait for the reader.
pub trait AnswerGate: Send + Sync {
    /// A response of `bytes` bytes (as read, one JSON-RPC message) was read
    /// for this request. Called at most once per request, on the reader:
    /// it must return at once and must not block.
    fn admit(&self, bytes: usize) -> Admission;
}

/// What an [`AnswerGate`] decided.
pub enum Admission {
    /// Keep the response.
    Keep,
    /// Keep it, and read nothing more from this server until `pressure`
    /// is relieved (messages already read are still handed on).
    KeepAndHoldOff(Arc<dyn Backpressure>),
    /// Drop it: the request fails with `LIMIT_EXCEEDED` and this message.
    Refuse(String),
}

/// Why a connection's reader holds off: something it handed on is being
/// handled past a bound. Relieved without the reader's help (what holds it
/// is already read), so the wait always ends.
pub trait Backpressure: Send + Sync {
    /// Whether the reader may read on.
    fn is_relieved(&self) -> bool;

    /// Ends once [`is_relieved`](Backpressure::is_relieved) would say so.
    fn relieved(self: Arc<Self>) -> BoxFuture<'static, ()>;
}
