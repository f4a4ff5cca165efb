//! OpenTelemetry: every request to a server a CLIENT span (by the MCP
//! semantic conventions), every request the gateway serves a SERVER span,
//! `params._meta.traceparent` on every request, and the MCP metrics, exported
//! over OTLP (HTTP/protobuf) to where the standard `OTEL_*` variables say.
//!
//! Off unless `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! or `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` is set (and `OTEL_SDK_DISABLED`
//! is not `true`), and off in builds without the `telemetry` feature. The
//! environment is read once, on first use; when off, a request
//! pays one `OnceLock` read on its connection. mcpmux has its own tracer and
//! meter providers (never the process's global ones): a host's own
//! OpenTelemetry setup is not touched; only its active context is read (by
//! the front ends, handed in as a W3C `traceparent`).
//!
//! Exports run on the SDK's own threads with bounded queues: a collector that
//! is down or slow never slows a call; what does not fit is dropped (and the
//! SDK's internal log counts it). [`shutdown`] (the CLI at exit, the
//! bindings at process exit, the gateway when it stops) and [`flush`]
//! (`Hub::close`) wait a bounded time.

use std::time::Duration;

#[cfg(feature = "telemetry")]
mod otel;

#[cfg(feature = "telemetry")]
pub(crate) use otel::{ClientCall, PeerInfo, Telemetry, CAPTURE_LIMIT};

/// How long [`shutdown`] and [`flush`] wait for the exporters at most.
pub const FLUSH_LIMIT: Duration = Duration::from_millis(2500);

/// The telemetry of this process, when the environment turns it on (read
/// once, on the first call).
#[cfg(feature = "telemetry")]
pub(crate) fn active() -> Option<&'static Telemetry> {
    otel::active()
}

/// Sets telemetry up from the config's `[telemetry]` table (under the
/// `OTEL_*` variables, which win), unless it is already set up; what
/// `Hub::connect` does before its servers start. A no-op for an empty table.
pub fn configure(table: &serde_json::Map<String, serde_json::Value>) {
    #[cfg(feature = "telemetry")]
    otel::configure(table);
    #[cfg(not(feature = "telemetry"))]
    let _ = table;
}

/// Whether spans or metrics are exported (reads the environment on the
/// first call). Always `false` without the `telemetry` feature.
pub fn enabled() -> bool {
    #[cfg(feature = "telemetry")]
    {
        otel::active().is_some()
    }
    #[cfg(not(feature = "telemetry"))]
    {
        false
    }
}

/// Exports what is queued, waiting at most [`FLUSH_LIMIT`]; the exporters
/// stay up. Blocking: from async code use [`flush_async`].
pub fn flush() {
    #[cfg(feature = "telemetry")]
    otel::flush(FLUSH_LIMIT);
}

/// [`flush`] on tokio's blocking pool (what `Hub::close` awaits).
pub async fn flush_async() {
    #[cfg(feature = "telemetry")]
    if otel::started() {
        let _ = tokio::task::spawn_blocking(flush).await;
    }
}

/// Exports what is queued and stops the exporters, waiting at most
/// [`FLUSH_LIMIT`] (a collector that is down or slow costs no more). For the
/// end of a process: spans and metrics recorded later are dropped. A no-op
/// when telemetry never started.
pub fn shutdown() {
    #[cfg(feature = "telemetry")]
    otel::shutdown(FLUSH_LIMIT);
}

/// Runs `fut` as a child of the W3C trace context `traceparent` (and
/// `tracestate`): what a host hands in (C's call options, the Python and
/// Node bindings' active span). Without telemetry, or with a malformed
/// `traceparent`, just `fut`.
pub async fn in_context<F: std::future::Future>(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
    fut: F,
) -> F::Output {
    // Without setting telemetry up: it may be set up later in `fut`
    // (from a config's table), and the context costs nothing otherwise.
    #[cfg(feature = "telemetry")]
    if let Some(parent) = traceparent {
        let cx = otel::extract(parent, tracestate);
        return opentelemetry::context::FutureExt::with_context(fut, cx).await;
    }
    let _ = (traceparent, tracestate);
    fut.await
}

/// The current trace context as a W3C `traceparent`, when telemetry is on
/// and a span is active (e.g. inside a review round, for the detached
/// runner to continue).
pub fn current_traceparent() -> Option<String> {
    #[cfg(feature = "telemetry")]
    {
        otel::active().and_then(|t| t.current_traceparent())
    }
    #[cfg(not(feature = "telemetry"))]
    {
        None
    }
}

/// Runs `fut` as a span `name` (kind CLIENT when `client`, else INTERNAL),
/// a child of the current context and the parent of what `fut` does, with
/// `attrs` (made only when telemetry is on) and `error.type` on failure:
/// a review round, a model's turn. Without telemetry, just `fut`.
pub async fn span<T, F>(
    name: impl FnOnce() -> String,
    client: bool,
    attrs: impl FnOnce() -> Vec<(&'static str, String)>,
    fut: F,
) -> Result<T, crate::error::Error>
where
    F: std::future::Future<Output = Result<T, crate::error::Error>>,
{
    #[cfg(feature = "telemetry")]
    if let Some(t) = otel::active() {
        return t.in_span(name(), client, attrs(), fut).await;
    }
    let _ = (name, client, attrs);
    fut.await
}

/// How a request the gateway serves reached it: what its SERVER span says
/// of the network (`network.transport`, and over TCP `client.address` /
/// `client.port`, the peer of the connection that carried it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServedVia {
    /// A pipe, the stdio gateway's stdin: `network.transport = pipe`.
    Pipe,
    /// A TCP connection (Streamable HTTP) from this client, when known:
    /// `network.transport = tcp`, `client.address`, `client.port`.
    Tcp(Option<std::net::SocketAddr>),
}

/// Runs `fut`, the gateway's answer to a client's request `method`, as a
/// SERVER span: a child of the request's `_meta.traceparent` (a root
/// without one), and the parent of the downstream client spans. Without
/// telemetry, just `fut`. [`serve_via`] also names the transport.
pub async fn serve<F>(method: &str, params: &serde_json::Value, fut: F) -> F::Output
where
    F: std::future::Future<Output = Result<serde_json::Value, crate::error::Error>>,
{
    #[cfg(feature = "telemetry")]
    if let Some(t) = otel::active() {
        return t.serve(None, method, params, fut).await;
    }
    let _ = (method, params);
    fut.await
}

/// [`serve`] for a request that came `via` a pipe or a TCP connection (the
/// span's `network.transport`, `client.address`, `client.port`).
pub async fn serve_via<F>(
    via: ServedVia,
    method: &str,
    params: &serde_json::Value,
    fut: F,
) -> F::Output
where
    F: std::future::Future<Output = Result<serde_json::Value, crate::error::Error>>,
{
    #[cfg(feature = "telemetry")]
    if let Some(t) = otel::active() {
        return t.serve(Some(via), method, params, fut).await;
    }
    let _ = (via, method, params);
    fut.await
}
