//! Transports move JSON-RPC messages between the engine and one server.
//!
//! Outbound, a transport is a [`Transport`]: it takes complete, encoded
//! messages and never blocks the caller. Inbound, it hands every message it
//! reads to a [`FrameSink`] on its own reader task, and tells the sink once
//! when the connection is gone. The sink is held weakly, so dropping the
//! owner of a connection is enough to stop its reader.

mod line_reader;
mod pipe_writer;
pub mod stdio;

use futures::future::BoxFuture;

use crate::error::Error;

/// The sending half of a connection to one server.
///
/// Owned by the [`Peer`](crate::jsonrpc::Peer) of that server. Dropping it
/// without [`close`](Transport::close) still tears the connection down (for
/// stdio: the process group is killed).
pub trait Transport: Send + Sync + 'static {
    /// Queues one encoded message (a JSON-RPC line ending in `\n`).
    ///
    /// Returns [`Error::TransportClosed`] once the connection is gone.
    fn send(&self, message: Vec<u8>) -> Result<(), Error>;

    /// Closes the connection gracefully and waits until it is gone
    /// (for stdio: the process and its group have exited).
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// Receives what a transport reads. Called on the transport's reader task.
pub trait FrameSink: Send + Sync + 'static {
    /// One complete message (without the line terminator). Must not block.
    fn on_frame(&self, frame: &[u8]);

    /// A message was larger than the configured cap and was discarded.
    /// `id` is the request id found in what was read, when one was found.
    fn on_oversized(&self, id: Option<u64>, size: usize, limit: usize);

    /// The connection is gone; called once, last.
    fn on_closed(&self, error: Error);
}
