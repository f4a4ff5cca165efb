//! Transports move JSON-RPC messages between the engine and one server.
//!
//! Outbound, a transport is a [`Transport`]: it takes complete, encoded
//! messages and never blocks the caller. Inbound, it hands every message it
//! reads to a [`FrameSink`] on its own reader task, and tells the sink once
//! when the connection is gone. The sink is held weakly, so dropping the
//! owner of a connection is enough to stop its reader.

pub(crate) mod line_reader;
mod pipe_writer;
pub mod send_bound;
mod stderr_reader;
mod stdout_reader;
// A transport whose Cargo feature is off is replaced by a stand-in of the
// same name whose connect fails with CONFIG_INVALID naming the feature.
#[cfg(feature = "sse")]
pub mod sse;
#[cfg(not(feature = "sse"))]
#[path = "sse_off.rs"]
pub mod sse;
pub mod stdio;
pub mod streamable_http;
#[cfg(feature = "websocket")]
pub mod websocket;
#[cfg(not(feature = "websocket"))]
#[path = "websocket_off.rs"]
pub mod websocket;

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;

use crate::auth::AuthOptions;
use crate::config::{ServerConfig, TransportConfig};
use crate::error::Error;
use crate::net::Http;

/// Opens the transport `config` asks for. `label` names the server in
/// errors; what the transport reads goes to `sink`; `auth` holds the host's
/// authorization hooks (used by Streamable HTTP servers whose config has
/// `auth.type = "oauth"`); every connection of a network transport is
/// under `network`'s policy.
pub async fn connect_with_auth(
    label: &str,
    config: &ServerConfig,
    sink: Weak<dyn FrameSink>,
    auth: &AuthOptions,
    network: &Http,
) -> Result<Arc<dyn Transport>, Error> {
    let max = config.max_message_bytes;
    Ok(match &config.transport {
        TransportConfig::Stdio(stdio) => {
            // Start the process from a runtime worker: the server is tied to
            // the thread that forks it (PR_SET_PDEATHSIG), and a host's own
            // thread may end long before the hub does.
            let (label, stdio) = (label.to_owned(), stdio.clone());
            let started =
                tokio::spawn(
                    async move { stdio::StdioTransport::spawn(&label, &stdio, max, sink) },
                );
            started
                .await
                .map_err(|e| Error::Internal(format!("starting a server failed: {e}")))??
        }
        TransportConfig::Http(net) => streamable_http::StreamableHttpTransport::with_auth(
            label,
            &config.name,
            net,
            max,
            sink,
            auth,
            network,
        )?,
        TransportConfig::Sse(net) => {
            sse::SseTransport::connect(label, net, max, config.timeout, sink, network).await?
        }
        TransportConfig::WebSocket(net) => {
            websocket::WebSocketTransport::connect(
                label,
                net,
                max,
                config.timeout,
                sink,
                network.policy(),
            )
            .await?
        }
    })
}

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

    /// Whether a [`send`](Transport::send) that fails with
    /// [`Error::TransportClosed`] is soon followed by the sink's `on_closed`
    /// with a fuller account of the end. Stdio: a write that finds the pipe
    /// broken knows only that; the stdout reader, which sees the end
    /// moments later, reports the exit status and the server's stderr.
    fn reports_its_end(&self) -> bool {
        false
    }

    /// Like [`send`](Transport::send), with extra HTTP headers for this
    /// message (`Mcp-Param-*`); transports without headers ignore them.
    fn send_with_headers(
        &self,
        message: Vec<u8>,
        headers: &[(String, String)],
    ) -> Result<(), Error> {
        let _ = headers;
        self.send(message)
    }

    /// The last `lines` lines the server wrote to its stderr, oldest first,
    /// with known secrets redacted (stdio; other transports have none).
    fn recent_stderr(&self, lines: usize) -> Vec<String> {
        let _ = lines;
        Vec::new()
    }

    /// Closes the connection gracefully and waits until it is gone
    /// (for stdio: the process and its group have exited).
    fn close(&self) -> BoxFuture<'_, ()>;

    /// The protocol revision in use, once known (`None` while negotiating).
    /// Network transports put it in the `MCP-Protocol-Version` header.
    fn set_protocol_version(&self, version: Option<&str>) {
        let _ = version;
    }

    /// The session id the server gave (`Mcp-Session-Id` of a legacy
    /// Streamable HTTP session), for telemetry's `mcp.session.id`.
    #[cfg(feature = "telemetry")]
    fn session_id(&self) -> Option<String> {
        None
    }

    /// Whether [`read_now`](Transport::read_now) reads anything: `true`
    /// for stdio; the others read only on their own tasks. A lone call
    /// asks this before it considers waiting awake, so a transport that
    /// cannot be read by its caller never spends a poll on it.
    fn can_read_now(&self) -> bool {
        false
    }

    /// Reads, without blocking, what the server has written and hands it to
    /// the sink on the calling thread (stdio: unless its reader task is
    /// reading at that moment). Does nothing where
    /// [`can_read_now`](Transport::can_read_now) is `false`.
    fn read_now(&self) {}
}

/// Receives what a transport reads. Called on the transport's reader task,
/// or (stdio) on a caller that reads the answer to its request itself (a
/// thread waiting in [`crate::runtime::block_on`], an event loop, a task
/// whose call is alone in flight, through [`Transport::read_now`]): never
/// two at once, always in order.
pub trait FrameSink: Send + Sync + 'static {
    /// One complete message (without the line terminator). Must not block.
    fn on_frame(&self, frame: &[u8]);

    /// A message was larger than the configured cap and was discarded.
    /// `id` is the request id found in what was read, when one was found.
    fn on_oversized(&self, id: Option<u64>, size: usize, limit: usize);

    /// The connection is gone; called once, last.
    fn on_closed(&self, error: Error);

    /// Sending request `id` failed (an HTTP error status, a refused
    /// connection): that request fails with `error`, the connection stays.
    fn on_send_failed(&self, id: u64, error: Error) {
        let _ = (id, error);
    }

    /// The link dropped and is being re-established: every request in
    /// flight fails with `error` (its answer would have come on the old link).
    /// Only the legacy SSE transport reconnects like this.
    #[cfg_attr(not(feature = "sse"), allow(dead_code))]
    fn on_interrupted(&self, error: Error) {
        let _ = error;
    }

    /// Whether request `id` still waits for its response.
    fn is_waiting(&self, id: u64) -> bool {
        let _ = id;
        false
    }

    /// A wait before the reader reads more from the server, or `None` to
    /// read on: what it handed on is being handled past a bound (an
    /// [`AnswerGate`](crate::jsonrpc::AnswerGate) said so), and the server's
    /// pipe or socket should push back meanwhile. Readers await it before
    /// each read (see [`held_off`]).
    fn hold_off(&self) -> Option<BoxFuture<'static, ()>> {
        None
    }

    /// Whether [`hold_off`](FrameSink::hold_off) would wait now: a reader
    /// stops reading, and a caller reading on its own thread
    /// ([`Transport::read_now`]) reads nothing.
    fn is_held_off(&self) -> bool {
        false
    }
}

/// Waits while `sink` holds its reader off ([`FrameSink::hold_off`]),
/// without keeping it alive meanwhile.
pub(crate) async fn held_off(sink: &Weak<dyn FrameSink>) {
    let wait = sink.upgrade().and_then(|sink| sink.hold_off());
    if let Some(wait) = wait {
        wait.await;
    }
}
