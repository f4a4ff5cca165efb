//! WebSocket transport (subprotocol `mcp`): one JSON-RPC message per text
//! frame, `ws://` or `wss://` (rustls). Pings are answered and sent every
//! 30 s; when the socket closes, every request in flight fails at once.
//! What waits for the writer is bounded in bytes ([`super::send_bound`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

use super::send_bound::{InFlight, Slot};
use super::{stdio, FrameSink, Transport};
use crate::config::NetworkConfig;
use crate::error::Error;
use crate::net as http;
use crate::net::guard;
use crate::net::policy::NetworkPolicy;

/// Interval of our keep-alive pings.
const PING_EVERY: Duration = Duration::from_secs(30);

/// What one queued message costs beyond its payload, so that a flood of
/// empty pings is bounded too.
const ENTRY_BYTES: usize = 64;

/// A WebSocket connection to one server. Owned by its peer.
pub struct WebSocketTransport {
    label: String,
    outbox: mpsc::UnboundedSender<(Message, Option<Slot>)>,
    /// Bytes queued in `outbox`, at most `queue_limit`.
    queued: InFlight,
    queue_limit: usize,
    tasks: Mutex<Vec<AbortHandle>>,
    closed: AtomicBool,
}

impl WebSocketTransport {
    /// Opens the socket (within `timeout`) and starts its reader and
    /// writer. Under a `network` policy that checks addresses, the TCP
    /// connection is made here, to an address the policy lets through.
    pub async fn connect(
        label: &str,
        config: &NetworkConfig,
        max_message_bytes: usize,
        timeout: Duration,
        sink: Weak<dyn FrameSink>,
        network: &NetworkPolicy,
    ) -> Result<std::sync::Arc<WebSocketTransport>, Error> {
        network.check_url(label, &config.url)?;
        let shown = http::display_url(&config.url);
        let mut request = config.url.as_str().into_client_request().map_err(|e| {
            Error::ConfigInvalid(format!("{label}: bad WebSocket URL {shown}: {e}"))
        })?;
        let headers = request.headers_mut();
        headers.insert("sec-websocket-protocol", HeaderValue::from_static("mcp"));
        for (name, value) in http::header_map(label, &config.headers)? {
            if let Some(name) = name {
                headers.insert(name, value);
            }
        }
        let ws_config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(max_message_bytes))
            .max_frame_size(Some(max_message_bytes));
        let connecting = async {
            if !network.deny_private {
                return tokio_tungstenite::connect_async_with_config(
                    request,
                    Some(ws_config),
                    true,
                )
                .await
                .map_err(|e| format!("cannot open WebSocket {shown}: {e}"));
            }
            let host = config.url.host_str().unwrap_or_default();
            let port = config.url.port_or_known_default().unwrap_or(80);
            let stream = guard::connect_tcp(network, host, port, timeout)
                .await
                .map_err(|e| match http::refusal_in(&*e) {
                    Some(refused) => refused.to_string(),
                    None => format!("cannot open WebSocket {shown}: {e}"),
                })?;
            tokio_tungstenite::client_async_tls_with_config(request, stream, Some(ws_config), None)
                .await
                .map_err(|e| format!("cannot open WebSocket {shown}: {e}"))
        };
        let (socket, _) = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(ok)) => ok,
            Ok(Err(why)) => return Err(Error::TransportClosed(format!("{label}: {why}"))),
            Err(_) => {
                return Err(Error::Timeout(format!(
                    "{label}: WebSocket {shown} did not open within {:.1} s",
                    timeout.as_secs_f64()
                )))
            }
        };
        let (mut write, mut read) = socket.split();
        // Unbounded as a channel, bounded in bytes by `queued`: every message
        // but our own keep-alive ping carries its slot.
        let (tx, mut rx) = mpsc::unbounded_channel::<(Message, Option<Slot>)>();
        let queued = InFlight::default();
        let queue_limit = stdio::stdin_queue_limit(max_message_bytes);

        let writer = tokio::spawn(async move {
            let mut ping = tokio::time::interval(PING_EVERY);
            ping.tick().await;
            loop {
                let (message, slot) = tokio::select! {
                    m = rx.recv() => match m {
                        Some(m) => m,
                        None => break,
                    },
                    _ = ping.tick() => (Message::Ping(Default::default()), None),
                };
                let closing = matches!(message, Message::Close(_));
                let sent = write.send(message).await;
                drop(slot);
                if sent.is_err() || closing {
                    break;
                }
            }
            let _ = write.close().await;
        });

        let pong = tx.clone();
        let pong_queued = queued.clone();
        let reader_label = label.to_owned();
        let reader = tokio::spawn(async move {
            let why = loop {
                // What was read is handled past a bound: the socket pushes back.
                super::held_off(&sink).await;
                let message = match read.next().await {
                    None => break "the server closed the WebSocket".to_owned(),
                    Some(Err(e)) => break format!("WebSocket failed: {e}"),
                    Some(Ok(m)) => m,
                };
                let Some(sink) = sink.upgrade() else { return };
                match message {
                    Message::Text(text) => sink.on_frame(text.as_bytes()),
                    Message::Binary(bytes) => sink.on_frame(&bytes),
                    Message::Ping(payload) => {
                        // A server that pings but does not read gets no pong.
                        if let Some(slot) =
                            pong_queued.take(payload.len() + ENTRY_BYTES, queue_limit)
                        {
                            let _ = pong.send((Message::Pong(payload), Some(slot)));
                        }
                    }
                    Message::Close(frame) => {
                        break match frame {
                            Some(f) if !f.reason.is_empty() => format!(
                                "the server closed the WebSocket ({}: {})",
                                f.code, f.reason
                            ),
                            Some(f) => format!("the server closed the WebSocket ({})", f.code),
                            None => "the server closed the WebSocket".to_owned(),
                        }
                    }
                    Message::Pong(_) | Message::Frame(_) => {}
                }
            };
            if let Some(sink) = sink.upgrade() {
                sink.on_closed(Error::TransportClosed(format!("{reader_label}: {why}")));
            }
        });

        Ok(std::sync::Arc::new(WebSocketTransport {
            label: label.to_owned(),
            outbox: tx,
            queued,
            queue_limit,
            tasks: Mutex::new(vec![writer.abort_handle(), reader.abort_handle()]),
            closed: AtomicBool::new(false),
        }))
    }
}

impl Transport for WebSocketTransport {
    fn send(&self, message: Vec<u8>) -> Result<(), Error> {
        let closed = || Error::TransportClosed(format!("{}: connection closed", self.label));
        if self.closed.load(Ordering::SeqCst) {
            return Err(closed());
        }
        let mut text = String::from_utf8(message)
            .map_err(|_| Error::InvalidInput(format!("{}: message is not UTF-8", self.label)))?;
        while text.ends_with('\n') {
            text.pop();
        }
        let slot = self
            .queued
            .take(text.len() + ENTRY_BYTES, self.queue_limit)
            .ok_or_else(|| {
                Error::LimitExceeded(format!(
                    "{}: the server does not read its WebSocket: {} bytes wait to be sent \
                 (limit {} bytes, 2 × max_message_bytes); this message is dropped",
                    self.label,
                    self.queued.now(),
                    self.queue_limit
                ))
            })?;
        self.outbox
            .send((Message::text(text), Some(slot)))
            .map_err(|_| closed())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.closed.swap(true, Ordering::SeqCst) {
                return;
            }
            let _ = self.outbox.send((Message::Close(None), None));
            tokio::time::sleep(Duration::from_millis(50)).await;
            for task in self.tasks.lock().unwrap().drain(..) {
                task.abort();
            }
        })
    }
}

impl Drop for WebSocketTransport {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}
