//! Legacy HTTP+SSE transport (MCP 2024-11-05): a GET stream whose first
//! `endpoint` event names where to POST messages; responses and server
//! messages arrive on the stream. When the stream drops it is opened again
//! (requests in flight fail, their answers went with the old stream) and
//! the session is initialized again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::line_reader;
use super::send_bound::InFlight;
use super::{FrameSink, Transport};
use crate::config::NetworkConfig;
use crate::error::Error;
use crate::net::sse_parser::Item;
use crate::net::{self as http, StreamPosition};

/// How long one POST may take to be accepted (its answer comes on the
/// stream, so a server accepts at once).
const POST_TIME: Duration = Duration::from_secs(30);

/// Reconnect attempts in a row before the connection counts as gone.
const MAX_RECONNECTS: u32 = 5;

/// A legacy SSE connection to one server. Owned by its peer.
pub struct SseTransport {
    inner: Arc<Inner>,
}

struct Inner {
    label: String,
    url: url::Url,
    headers: HeaderMap,
    http: reqwest::Client,
    max_message_bytes: usize,
    sink: Weak<dyn FrameSink>,
    endpoint: watch::Sender<Option<url::Url>>,
    /// `initialize` and `notifications/initialized` as sent, for a new stream.
    handshake: Mutex<Vec<Vec<u8>>>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// Answers and notifications whose POST has not completed ([`super::send_bound`]).
    notices: InFlight,
    closed: AtomicBool,
    /// The runtime the transport was made on: messages may be sent from
    /// outside it (a call future dropped by a host thread).
    runtime: tokio::runtime::Handle,
    /// Why the stream was given up (an endpoint on another origin).
    refused: Mutex<Option<Error>>,
    /// Time allowed to open the stream.
    timeout: Duration,
}

impl SseTransport {
    /// Opens the stream and waits (within `timeout`) for the `endpoint`
    /// event; every request under `network`'s policy (the endpoint is on
    /// the stream's origin, so checking the URL once covers it).
    pub async fn connect(
        label: &str,
        config: &NetworkConfig,
        max_message_bytes: usize,
        timeout: Duration,
        sink: Weak<dyn FrameSink>,
        network: &http::Http,
    ) -> Result<Arc<SseTransport>, Error> {
        let (endpoint, mut known) = watch::channel(None);
        let inner = Arc::new(Inner {
            label: label.to_owned(),
            url: config.url.clone(),
            headers: http::header_map(label, &config.headers)?,
            http: network.bound_to(label, &config.url)?,
            max_message_bytes,
            sink,
            endpoint,
            handshake: Mutex::new(Vec::new()),
            tasks: Mutex::new(Vec::new()),
            notices: InFlight::default(),
            closed: AtomicBool::new(false),
            refused: Mutex::new(None),
            runtime: tokio::runtime::Handle::current(),
            timeout,
        });
        let first = inner.open().await?;
        let reader = tokio::spawn(inner.clone().read_forever(first));
        inner.tasks.lock().unwrap().push(reader.abort_handle());
        let transport = Arc::new(SseTransport { inner });
        let refused = |inner: &Inner| inner.refused.lock().unwrap().take();
        let waiting =
            known.wait_for(|e| e.is_some() || transport.inner.refused.lock().unwrap().is_some());
        let found = matches!(tokio::time::timeout(timeout, waiting).await, Ok(Ok(_)));
        if let Some(error) = refused(&transport.inner) {
            return Err(error);
        }
        match found {
            true => Ok(transport),
            false => Err(Error::ProtocolError(format!(
                "{label}: the SSE stream sent no 'endpoint' event within {:.1} s",
                timeout.as_secs_f64()
            ))),
        }
    }
}

impl Inner {
    async fn open(&self) -> Result<reqwest::Response, Error> {
        let request = self
            .http
            .get(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream");
        let response = match tokio::time::timeout(self.timeout, request.send()).await {
            Ok(sent) => sent.map_err(|e| http::network_error(&self.label, &self.url, e))?,
            Err(_) => {
                return Err(Error::Timeout(format!(
                    "{}: {} did not answer within {:.1} s",
                    self.label,
                    http::display_url(&self.url),
                    self.timeout.as_secs_f64()
                )))
            }
        };
        if !response.status().is_success() {
            return Err(http::response_error(&self.label, &self.url, response).await);
        }
        let kind = http::content_type(&response);
        if kind != "text/event-stream" {
            return Err(Error::ProtocolError(format!(
                "{}: expected an SSE stream, got '{kind}'",
                self.label
            )));
        }
        Ok(response)
    }

    async fn read_forever(self: Arc<Self>, mut response: reqwest::Response) {
        let mut position = StreamPosition::default();
        let mut failures = 0u32;
        loop {
            self.pump(response, &mut position).await;
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            if let Some(error) = self.refused.lock().unwrap().clone() {
                if let Some(sink) = self.sink.upgrade() {
                    sink.on_closed(error);
                }
                return;
            }
            let Some(sink) = self.sink.upgrade() else {
                return;
            };
            sink.on_interrupted(Error::TransportClosed(format!(
                "{}: the SSE stream dropped",
                self.label
            )));
            drop(sink);
            self.endpoint.send_replace(None);
            loop {
                failures += 1;
                if failures > MAX_RECONNECTS {
                    if let Some(sink) = self.sink.upgrade() {
                        sink.on_closed(Error::TransportClosed(format!(
                            "{}: the SSE stream dropped and could not be reopened",
                            self.label
                        )));
                    }
                    return;
                }
                tokio::time::sleep(position.retry.unwrap_or(Duration::from_millis(500)) * failures)
                    .await;
                match self.open().await {
                    Ok(r) => {
                        response = r;
                        break;
                    }
                    Err(e) => {
                        tracing::debug!(server = %self.label, "reopening the SSE stream failed: {e}")
                    }
                }
            }
            // A new stream is a new session: initialize it again in the
            // background once the endpoint is known.
            let this = self.clone();
            tokio::spawn(async move {
                let mut known = this.endpoint.subscribe();
                if known.wait_for(Option::is_some).await.is_err() {
                    return;
                }
                let handshake = this.handshake.lock().unwrap().clone();
                for message in handshake {
                    if let Err(e) = this.post(&message).await {
                        tracing::warn!(server = %this.label, "initializing the new SSE session failed: {e}");
                        return;
                    }
                }
            });
            failures = 0;
        }
    }

    async fn pump(&self, response: reqwest::Response, position: &mut StreamPosition) {
        let mut events = http::events(response, self.max_message_bytes);
        loop {
            // What was read is handled past a bound: the socket pushes back.
            super::held_off(&self.sink).await;
            let Some(item) = events.next().await else {
                break;
            };
            let Ok(item) = item else { break };
            position.saw(events.parser());
            let event = match item {
                Item::Event(event) => event,
                Item::Oversized { size, head } => {
                    // The parser skips the rest of it; reading goes on.
                    if let Some(sink) = self.sink.upgrade() {
                        let id = line_reader::id_in_head(&head);
                        sink.on_oversized(id, size, self.max_message_bytes);
                    }
                    continue;
                }
            };
            match event.event.as_str() {
                "endpoint" => match self.url.join(event.data.trim()) {
                    // Messages (and the configured headers) go only to the
                    // origin the stream came from.
                    Ok(url) if http::same_origin(&url, &self.url) => {
                        self.endpoint.send_replace(Some(url));
                    }
                    Ok(url) => {
                        let error = Error::ProtocolError(format!(
                            "{}: the SSE endpoint {} is on another origin than {}; refused",
                            self.label,
                            http::display_url(&url),
                            http::display_url(&self.url)
                        ));
                        tracing::warn!(server = %self.label, "{error}");
                        *self.refused.lock().unwrap() = Some(error);
                        // Wake whoever waits for the endpoint.
                        self.endpoint.send_modify(|_| {});
                        return;
                    }
                    Err(_) => {
                        tracing::warn!(server = %self.label, "ignoring an invalid endpoint event")
                    }
                },
                "message" if !event.data.trim().is_empty() => {
                    if let Some(sink) = self.sink.upgrade() {
                        sink.on_frame(event.data.as_bytes());
                    }
                }
                _ => {}
            }
        }
    }

    async fn post(&self, message: &[u8]) -> Result<(), Error> {
        let mut known = self.endpoint.subscribe();
        let endpoint =
            match tokio::time::timeout(Duration::from_secs(30), known.wait_for(Option::is_some))
                .await
            {
                Ok(Ok(url)) => url.clone().expect("waited for Some"),
                _ => {
                    return Err(Error::TransportClosed(format!(
                        "{}: no SSE endpoint to post to",
                        self.label
                    )))
                }
            };
        let response = self
            .http
            .post(endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_vec())
            .send()
            .await
            .map_err(|e| http::network_error(&self.label, &endpoint, e))?;
        if response.status().is_success() {
            return Ok(());
        }
        Err(http::response_error(&self.label, &endpoint, response).await)
    }
}

impl Transport for SseTransport {
    fn send(&self, message: Vec<u8>) -> Result<(), Error> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(Error::TransportClosed(format!(
                "{}: connection closed",
                inner.label
            )));
        }
        #[derive(serde::Deserialize)]
        struct Probe {
            id: Option<serde_json::Value>,
            method: Option<String>,
        }
        let probe = serde_json::from_slice::<Probe>(&message).ok();
        let method = probe.as_ref().and_then(|p| p.method.clone());
        // Only a request's id is ours: an answer carries the server's.
        let id = probe
            .as_ref()
            .filter(|_| method.is_some())
            .and_then(|p| p.id.as_ref())
            .and_then(serde_json::Value::as_u64);
        // Our requests are bounded by the host; what the server makes us
        // send (answers, notifications) is bounded here.
        let slot = match id {
            Some(_) => None,
            None => Some(inner.notices.take_notice(&inner.label)?),
        };
        if matches!(
            method.as_deref(),
            Some("initialize" | "notifications/initialized")
        ) {
            let mut handshake = inner.handshake.lock().unwrap();
            if method.as_deref() == Some("initialize") {
                handshake.clear();
            }
            handshake.push(message.clone());
        }
        let this = inner.clone();
        let task = inner.runtime.spawn(async move {
            // The answer comes on the stream: a POST is accepted at once
            // (202), and one that is not is given up, task and connection.
            let posted = tokio::time::timeout(POST_TIME, this.post(&message))
                .await
                .unwrap_or_else(|_| {
                    Err(Error::Timeout(format!(
                        "{}: the server did not accept a message within {} s",
                        this.label,
                        POST_TIME.as_secs()
                    )))
                });
            if let Err(e) = posted {
                match (id, this.sink.upgrade()) {
                    (Some(id), Some(sink)) => sink.on_send_failed(id, e),
                    _ => tracing::warn!(server = %this.label, "{e}"),
                }
            }
            drop(slot);
        });
        let mut tasks = inner.tasks.lock().unwrap();
        tasks.retain(|t| !t.is_finished());
        tasks.push(task.abort_handle());
        Ok(())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.inner.closed.swap(true, Ordering::SeqCst) {
                return;
            }
            for task in self.inner.tasks.lock().unwrap().drain(..) {
                task.abort();
            }
            if let Some(sink) = self.inner.sink.upgrade() {
                sink.on_closed(Error::TransportClosed(format!(
                    "{}: connection closed",
                    self.inner.label
                )));
            }
        })
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        for task in self.inner.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}
