//! The OpenTelemetry SDK behind [`super`]: configuration from the `OTEL_*`
//! variables, the providers, and the spans and metrics of one request.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry::context::FutureExt as _;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::Error;

static TELEMETRY: OnceLock<Option<Telemetry>> = OnceLock::new();

/// The process's telemetry, set up from the environment on the first call.
pub(super) fn active() -> Option<&'static Telemetry> {
    TELEMETRY
        .get_or_init(|| from_settings(&Map::new()))
        .as_ref()
}

/// Sets telemetry up from a config's `[telemetry]` table (under the
/// environment), unless it already is.
pub(super) fn configure(table: &Map<String, Value>) {
    if !table.is_empty() {
        TELEMETRY.get_or_init(|| from_settings(table));
    }
}

/// The context a W3C `traceparent` / `tracestate` names.
pub(super) fn extract(traceparent: &str, tracestate: Option<&str>) -> Context {
    let mut map = HashMap::new();
    map.insert("traceparent".to_owned(), known_flags(traceparent));
    if let Some(state) = tracestate {
        map.insert("tracestate".to_owned(), state.to_owned());
    }
    TraceContextPropagator::new().extract_with_context(&Context::new(), &Carrier(map))
}

/// `traceparent` with only the trace flags version `00` defines: W3C Trace
/// Context reads the flags it knows (`sampled`, 0x01) and ignores the
/// others, such as Level 2's `random` (0x02), which OpenTelemetry SDKs set
/// (`-03`). The SDK's propagator refuses flags above 0x02 instead, and a
/// refused parent made the call a trace of its own. Anything else is
/// returned as given, for the propagator to judge.
fn known_flags(traceparent: &str) -> String {
    let bytes = traceparent.as_bytes();
    if bytes.len() == 55 && traceparent.starts_with("00-") && bytes[52] == b'-' {
        if let Ok(flags) = u8::from_str_radix(&traceparent[53..], 16) {
            return format!("{}{:02x}", &traceparent[..53], flags & 0x01);
        }
    }
    traceparent.to_owned()
}

/// Whether telemetry was set up and is on (without setting it up).
pub(super) fn started() -> bool {
    matches!(TELEMETRY.get(), Some(Some(_)))
}

/// Histogram buckets of the MCP semantic conventions (seconds).
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The exporters and instruments of this process.
pub(crate) struct Telemetry {
    traces: Option<(SdkTracerProvider, SdkTracer)>,
    metrics: Option<(SdkMeterProvider, Instruments)>,
    propagator: TraceContextPropagator,
    /// Tool arguments and results on client spans (opt-in:
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).
    capture: bool,
}

/// Most bytes of arguments or result text one span records.
pub(crate) const CAPTURE_LIMIT: usize = 8 * 1024;

struct Instruments {
    client_operation: Histogram<f64>,
    client_session: Histogram<f64>,
    server_operation: Histogram<f64>,
    restarts: Counter<u64>,
    failures: Counter<u64>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A string of the config's `[telemetry]` table.
fn setting<'a>(table: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    table
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Where `signal` (`TRACES`, `METRICS`) goes: `None` when the environment
/// names it (the exporter reads the variables itself), else the full URL
/// the table gives (`{signal}_endpoint` as is, `endpoint` + `/v1/...`).
fn table_endpoint(table: &Map<String, Value>, signal: &str) -> Option<String> {
    if var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")).is_some()
        || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
    {
        return None;
    }
    let lower = signal.to_ascii_lowercase();
    if let Some(url) = setting(table, &format!("{lower}_endpoint")) {
        return Some(url.to_owned());
    }
    setting(table, "endpoint").map(|base| format!("{}/v1/{lower}", base.trim_end_matches('/')))
}

/// Whether `signal` (`TRACES`, `METRICS`) is exported: an endpoint for it
/// (its own or the general one, in the environment or the table), and its
/// exporter not `none`.
fn wanted(table: &Map<String, Value>, signal: &str) -> bool {
    let endpoint = var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")).is_some()
        || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || table_endpoint(table, signal).is_some();
    let exporter = var(&format!("OTEL_{signal}_EXPORTER"));
    endpoint && exporter.as_deref().is_none_or(|e| e != "none")
}

/// The protocol of `signal`, when this build can export it.
fn protocol(table: &Map<String, Value>, signal: &str) -> Result<Protocol, String> {
    let chosen = var(&format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"))
        .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .or_else(|| setting(table, "protocol").map(str::to_owned));
    match chosen.as_deref() {
        None | Some("http/protobuf") => Ok(Protocol::HttpBinary),
        Some(other) => Err(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported by mcpmux (only http/protobuf); \
             {} not exported",
            signal.to_ascii_lowercase()
        )),
    }
}

/// Telemetry from the environment over the config's `[telemetry]` table
/// (empty when there is none).
fn from_settings(table: &Map<String, Value>) -> Option<Telemetry> {
    let disabled = match var("OTEL_SDK_DISABLED") {
        Some(v) => v.eq_ignore_ascii_case("true"),
        None => table.get("disabled").and_then(Value::as_bool) == Some(true),
    };
    if disabled {
        return None;
    }
    let want_traces = wanted(table, "TRACES");
    let want_metrics = wanted(table, "METRICS");
    if !want_traces && !want_metrics {
        return None;
    }
    let resource = resource(table);
    let scope = InstrumentationScope::builder("mcpmux")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_schema_url("https://opentelemetry.io/schemas/1.37.0")
        .build();
    let traces = if want_traces {
        match traces(table, resource.clone()) {
            Ok(provider) => {
                let tracer = provider.tracer_with_scope(scope.clone());
                Some((provider, tracer))
            }
            Err(why) => {
                tracing::warn!("telemetry: {why}");
                None
            }
        }
    } else {
        None
    };
    let metrics = if want_metrics {
        match metrics(table, resource) {
            Ok(provider) => {
                let instruments = Instruments::new(&provider, scope);
                Some((provider, instruments))
            }
            Err(why) => {
                tracing::warn!("telemetry: {why}");
                None
            }
        }
    } else {
        None
    };
    if traces.is_none() && metrics.is_none() {
        return None;
    }
    at_exit();
    Some(Telemetry {
        traces,
        metrics,
        propagator: TraceContextPropagator::new(),
        capture: var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
    })
}

/// Spans and metrics go out when the process ends (C's `exit`, Python's
/// and Node's at their end, a CLI that returns from `main`): a
/// [`shutdown`] bounded by [`super::FLUSH_LIMIT`]; a no-op after an
/// earlier one.
fn at_exit() {
    #[cfg(unix)]
    {
        extern "C" fn flush_at_exit() {
            // Never unwind into the C runtime.
            let _ = std::panic::catch_unwind(|| shutdown(super::FLUSH_LIMIT));
        }
        // SAFETY: registers a function that takes no arguments and does not unwind.
        unsafe {
            libc::atexit(flush_at_exit);
        }
    }
}

/// `service.name` is `mcpmux` unless `OTEL_SERVICE_NAME` (or
/// `OTEL_RESOURCE_ATTRIBUTES`) names another; the rest of
/// `OTEL_RESOURCE_ATTRIBUTES` as every SDK reads it.
fn resource(table: &Map<String, Value>) -> Resource {
    // Keys the environment sets win over the table's.
    let env_keys: Vec<String> = var("OTEL_RESOURCE_ATTRIBUTES")
        .map(|a| {
            a.split(',')
                .filter_map(|kv| kv.split('=').next())
                .map(|k| k.trim().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let named = var("OTEL_SERVICE_NAME").is_some() || env_keys.iter().any(|k| k == "service.name");
    let mut builder = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if let Some(Value::Object(attrs)) = table.get("resource_attributes") {
        for (key, value) in attrs {
            if let (Some(value), false) = (value.as_str(), env_keys.contains(key)) {
                if named && key == "service.name" {
                    continue;
                }
                builder = builder.with_attribute(KeyValue::new(key.clone(), value.to_owned()));
            }
        }
    }
    let table_named = matches!(table.get("resource_attributes"), Some(Value::Object(a)) if a.contains_key("service.name"));
    if named {
        builder.build()
    } else if let Some(name) = setting(table, "service_name") {
        builder.with_service_name(name.to_owned()).build()
    } else if table_named {
        builder.build()
    } else {
        builder.with_service_name("mcpmux").build()
    }
}

/// The table's `headers` (the `OTEL_EXPORTER_OTLP_*HEADERS` variables are
/// added over them by the exporter).
fn table_headers(table: &Map<String, Value>) -> HashMap<String, String> {
    match table.get("headers") {
        Some(Value::Object(h)) => h
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
        _ => HashMap::new(),
    }
}

fn traces(table: &Map<String, Value>, resource: Resource) -> Result<SdkTracerProvider, String> {
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol(table, "TRACES")?)
        .with_headers(table_headers(table));
    if let Some(url) = table_endpoint(table, "TRACES") {
        builder = builder.with_endpoint(url);
    }
    let exporter = builder
        .build()
        .map_err(|e| format!("cannot export traces: {e}"))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

fn metrics(table: &Map<String, Value>, resource: Resource) -> Result<SdkMeterProvider, String> {
    let mut builder = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(protocol(table, "METRICS")?)
        .with_headers(table_headers(table));
    if let Some(url) = table_endpoint(table, "METRICS") {
        builder = builder.with_endpoint(url);
    }
    let exporter = builder
        .build()
        .map_err(|e| format!("cannot export metrics: {e}"))?;
    Ok(SdkMeterProvider::builder()
        .with_periodic_exporter(exporter)
        .with_resource(resource)
        .build())
}

impl Instruments {
    fn new(provider: &SdkMeterProvider, scope: InstrumentationScope) -> Instruments {
        let meter = provider.meter_with_scope(scope);
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Instruments {
            client_operation: seconds(
                "mcp.client.operation.duration",
                "The duration of one MCP request as the client sees it",
            ),
            client_session: seconds(
                "mcp.client.session.duration",
                "The duration of one MCP session (connection) as the client sees it",
            ),
            server_operation: seconds(
                "mcp.server.operation.duration",
                "The duration of one MCP request served by the mcpmux gateway",
            ),
            restarts: meter
                .u64_counter("mcpmux.server.restarts")
                .with_unit("{restart}")
                .with_description("Restarts of a server by the hub's supervisor")
                .build(),
            failures: meter
                .u64_counter("mcpmux.server.failures")
                .with_unit("{failure}")
                .with_description("Connections to a server that ended in failure")
                .build(),
        }
    }
}

/// Runs `f` on a thread of its own and waits for it at most `limit` (the
/// process may then end with it still running).
fn bounded(limit: Duration, jobs: Vec<Box<dyn FnOnce() + Send>>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut started = 0;
    for job in jobs {
        let tx = tx.clone();
        let spawned = std::thread::Builder::new()
            .name("mcpmux-otel-flush".into())
            .spawn(move || {
                job();
                let _ = tx.send(());
            });
        started += usize::from(spawned.is_ok());
    }
    let deadline = Instant::now() + limit;
    for _ in 0..started {
        let left = deadline.saturating_duration_since(Instant::now());
        if rx.recv_timeout(left).is_err() {
            return;
        }
    }
}

pub(super) fn flush(limit: Duration) {
    let Some(Some(t)) = TELEMETRY.get() else {
        return;
    };
    let mut jobs: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    if let Some((provider, _)) = &t.traces {
        jobs.push(Box::new(move || {
            let _ = provider.force_flush();
        }));
    }
    if let Some((provider, _)) = &t.metrics {
        jobs.push(Box::new(move || {
            let _ = provider.force_flush();
        }));
    }
    bounded(limit, jobs);
}

pub(super) fn shutdown(limit: Duration) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(Some(t)) = TELEMETRY.get() else {
        return;
    };
    if DONE.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let mut jobs: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    if let Some((provider, _)) = &t.traces {
        jobs.push(Box::new(move || {
            let _ = provider.shutdown_with_timeout(limit);
        }));
    }
    if let Some((provider, _)) = &t.metrics {
        jobs.push(Box::new(move || {
            let _ = provider.shutdown_with_timeout(limit);
        }));
    }
    bounded(limit, jobs);
}

/// The hub's name of the tool being called, carried in the context from
/// `Hub::call_tool` to the client span (`mcpmux.tool.name`).
#[derive(Clone)]
struct HubTool(Arc<str>);

/// A map as the W3C propagator reads and writes it.
struct Carrier(HashMap<String, String>);

impl opentelemetry::propagation::Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

impl opentelemetry::propagation::Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// `error.type` (and the JSON-RPC code, for a server's error) of an outcome.
fn error_type(
    method: &str,
    outcome: Result<Option<bool>, &Error>,
) -> (Option<String>, Option<String>) {
    match outcome {
        Ok(Some(true)) if method == "tools/call" => (Some("tool_error".into()), None),
        Ok(_) => (None, None),
        Err(Error::ServerError { code, .. }) => {
            let code = code.to_string();
            (Some(code.clone()), Some(code))
        }
        Err(e) => (Some(e.code().to_owned()), None),
    }
}

/// Whether a `tools/call` result says `isError: true`.
fn raw_is_error(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<Flag>(raw.get()).is_ok_and(|f| f.is_error == Some(true))
}

/// What a request is about: the span name's target and its attributes.
fn describe(method: &str, params: &Value, attrs: &mut Vec<KeyValue>) -> Option<String> {
    let field = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
    match method {
        "tools/call" => {
            let name = field("name")?;
            attrs.push(KeyValue::new("gen_ai.tool.name", name.clone()));
            attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            Some(name)
        }
        "prompts/get" => {
            let name = field("name")?;
            attrs.push(KeyValue::new("gen_ai.prompt.name", name.clone()));
            Some(name)
        }
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            if let Some(uri) = field("uri") {
                attrs.push(KeyValue::new("mcp.resource.uri", uri));
            }
            None
        }
        _ => None,
    }
}

fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    }
}

impl Telemetry {
    fn tracer(&self) -> Option<&SdkTracer> {
        self.traces.as_ref().map(|(_, t)| t)
    }

    fn instruments(&self) -> Option<&Instruments> {
        self.metrics.as_ref().map(|(_, i)| i)
    }

    /// The context a W3C `traceparent` / `tracestate` names.
    pub(crate) fn extract(&self, traceparent: &str, tracestate: Option<&str>) -> Context {
        extract(traceparent, tracestate)
    }

    /// `_meta.traceparent` / `_meta.tracestate` of a request's params.
    fn extract_meta(&self, params: &Value) -> Context {
        let meta = params.get("_meta");
        let field = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
        match field("traceparent") {
            Some(parent) => self.extract(parent, field("tracestate")),
            None => Context::new(),
        }
    }

    fn inject(&self, cx: &Context) -> HashMap<String, String> {
        let mut carrier = Carrier(HashMap::new());
        self.propagator.inject_context(cx, &mut carrier);
        carrier.0
    }

    pub(crate) fn current_traceparent(&self) -> Option<String> {
        let cx = Context::current();
        if !cx.span().span_context().is_valid() {
            return None;
        }
        self.inject(&cx).remove("traceparent")
    }

    /// Runs `fut` (a hub call of tool `name`) with the hub's name in the
    /// context, for the client span's `mcpmux.tool.name`.
    pub(crate) async fn with_hub_tool<F: Future>(&self, name: &str, fut: F) -> F::Output {
        let cx = Context::current().with_value(HubTool(name.into()));
        fut.with_context(cx).await
    }

    /// [`super::span`] when telemetry is on.
    pub(crate) async fn in_span<T, F>(
        &self,
        name: String,
        client: bool,
        attrs: Vec<(&'static str, String)>,
        fut: F,
    ) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        let Some(tracer) = self.tracer() else {
            return fut.await;
        };
        let span = tracer
            .span_builder(name)
            .with_kind(if client {
                SpanKind::Client
            } else {
                SpanKind::Internal
            })
            .with_attributes(attrs.into_iter().map(|(k, v)| KeyValue::new(k, v)))
            .start(tracer);
        let cx = Context::current_with_span(span);
        let out = fut.with_context(cx.clone()).await;
        let span = cx.span();
        if let Err(e) = &out {
            let (error, _) = error_type("", Err(e));
            if let Some(error) = error {
                span.set_attribute(KeyValue::new("error.type", error.clone()));
                span.set_status(Status::error(error));
            }
        }
        span.end();
        out
    }

    /// Counts a restart of `server` by the supervisor.
    pub(crate) fn count_restart(&self, server: &str) {
        if let Some(i) = self.instruments() {
            i.restarts
                .add(1, &[KeyValue::new("mcpmux.server.name", server.to_owned())]);
        }
    }

    /// Counts a connection to `server` that ended in failure (`code`).
    pub(crate) fn count_failure(&self, server: &str, code: &str) {
        if let Some(i) = self.instruments() {
            i.failures.add(
                1,
                &[
                    KeyValue::new("mcpmux.server.name", server.to_owned()),
                    KeyValue::new("error.type", code.to_owned()),
                ],
            );
        }
    }

    /// Runs `fut`, the gateway's answer to request `method`, as a SERVER
    /// span: a child of the request's `_meta.traceparent` (a root without
    /// one), and the parent of the downstream client spans; `via`: how the
    /// request came (`network.transport`, `client.address`, `client.port`).
    pub(crate) async fn serve<F>(
        &self,
        via: Option<super::ServedVia>,
        method: &str,
        params: &Value,
        fut: F,
    ) -> F::Output
    where
        F: Future<Output = Result<Value, Error>>,
    {
        let start = Instant::now();
        let mut attrs = vec![KeyValue::new("mcp.method.name", method.to_owned())];
        let transport = via.map(|via| match via {
            super::ServedVia::Pipe => "pipe",
            super::ServedVia::Tcp(client) => {
                if let Some(client) = client {
                    attrs.push(KeyValue::new("client.address", client.ip().to_string()));
                    attrs.push(KeyValue::new("client.port", i64::from(client.port())));
                }
                "tcp"
            }
        });
        if let Some(transport) = transport {
            attrs.push(KeyValue::new("network.transport", transport));
        }
        let target = describe(method, params, &mut attrs);
        let tool = (method == "tools/call").then(|| target.clone()).flatten();
        let out = match self.tracer() {
            Some(tracer) => {
                let parent = self.extract_meta(params);
                let span = tracer
                    .span_builder(span_name(method, target.as_deref()))
                    .with_kind(SpanKind::Server)
                    .with_attributes(attrs)
                    .start_with_context(tracer, &parent);
                let cx = parent.with_span(span);
                let out = fut.with_context(cx.clone()).await;
                let flag = out
                    .as_ref()
                    .map(|v| v.get("isError").and_then(Value::as_bool));
                let (error, rpc) = error_type(method, flag);
                let span = cx.span();
                if let Some(e) = &error {
                    span.set_attribute(KeyValue::new("error.type", e.clone()));
                    span.set_status(Status::error(e.clone()));
                }
                if let Some(code) = rpc {
                    span.set_attribute(KeyValue::new("rpc.response.status_code", code));
                }
                span.end();
                self.record_server(method, transport, tool, error, start);
                return out;
            }
            None => fut.await,
        };
        let flag = out
            .as_ref()
            .map(|v| v.get("isError").and_then(Value::as_bool));
        let (error, _) = error_type(method, flag);
        self.record_server(method, transport, tool, error, start);
        out
    }

    fn record_server(
        &self,
        method: &str,
        transport: Option<&'static str>,
        tool: Option<String>,
        error: Option<String>,
        start: Instant,
    ) {
        if let Some(i) = self.instruments() {
            let mut attrs = vec![KeyValue::new("mcp.method.name", method.to_owned())];
            if let Some(transport) = transport {
                attrs.push(KeyValue::new("network.transport", transport));
            }
            if let Some(tool) = tool {
                attrs.push(KeyValue::new("gen_ai.tool.name", tool));
            }
            if let Some(e) = error {
                attrs.push(KeyValue::new("error.type", e));
            }
            i.server_operation
                .record(start.elapsed().as_secs_f64(), &attrs);
        }
    }
}

/// What the spans of one connection say about its server; held by the
/// connection's peer (only while telemetry is on). Its drop ends the
/// session (`mcp.client.session.duration`).
pub(crate) struct PeerInfo {
    telemetry: &'static Telemetry,
    server: String,
    transport: &'static str,
    address: Option<String>,
    port: Option<u16>,
    protocol: Mutex<Option<String>>,
    started: Instant,
}

impl PeerInfo {
    /// The connection to `server`, at `url` for a network server (`None`
    /// for stdio).
    pub(crate) fn new(
        telemetry: &'static Telemetry,
        server: &str,
        url: Option<&url::Url>,
    ) -> PeerInfo {
        PeerInfo {
            telemetry,
            server: server.to_owned(),
            transport: if url.is_some() { "tcp" } else { "pipe" },
            address: url.and_then(|u| u.host_str()).map(str::to_owned),
            port: url.and_then(url::Url::port_or_known_default),
            protocol: Mutex::new(None),
            started: Instant::now(),
        }
    }

    /// Whether tool arguments and results are recorded (opt-in), when
    /// spans are exported at all.
    pub(crate) fn captures(&self) -> bool {
        self.telemetry.capture && self.telemetry.traces.is_some()
    }

    /// The protocol revision in use (`mcp.protocol.version`).
    pub(crate) fn set_protocol_version(&self, version: Option<&str>) {
        *self.protocol.lock().unwrap() = version.map(str::to_owned);
    }

    fn common(&self, attrs: &mut Vec<KeyValue>) {
        attrs.push(KeyValue::new("network.transport", self.transport));
        attrs.push(KeyValue::new("mcpmux.server.name", self.server.clone()));
        if let Some(v) = self.protocol.lock().unwrap().clone() {
            attrs.push(KeyValue::new("mcp.protocol.version", v));
        }
    }
}

impl Drop for PeerInfo {
    fn drop(&mut self) {
        if let Some(i) = self.telemetry.instruments() {
            let mut attrs = Vec::with_capacity(3);
            self.common(&mut attrs);
            i.client_session
                .record(self.started.elapsed().as_secs_f64(), &attrs);
        }
    }
}

/// One request to a server: its CLIENT span (a child of the current
/// context) and its duration. Dropped without [`ClientCall::end`], the
/// request was abandoned (`error.type = cancelled`).
pub(crate) struct ClientCall {
    telemetry: &'static Telemetry,
    span: Option<opentelemetry_sdk::trace::Span>,
    method: String,
    tool: Option<String>,
    server: String,
    start: Instant,
    done: bool,
}

impl ClientCall {
    /// Starts the span of request `id` and puts its context into
    /// `params._meta` (`params` becomes an object when it was absent).
    pub(crate) fn start(
        info: &PeerInfo,
        id: u64,
        method: &str,
        session: Option<String>,
        arguments: Option<String>,
        params: &mut Value,
    ) -> ClientCall {
        let telemetry = info.telemetry;
        let mut tool = None;
        let span = telemetry.tracer().map(|tracer| {
            let mut attrs = Vec::with_capacity(10);
            attrs.push(KeyValue::new("mcp.method.name", method.to_owned()));
            attrs.push(KeyValue::new("jsonrpc.request.id", id.to_string()));
            info.common(&mut attrs);
            if let Some(address) = &info.address {
                attrs.push(KeyValue::new("server.address", address.clone()));
            }
            if let Some(port) = info.port {
                attrs.push(KeyValue::new("server.port", i64::from(port)));
            }
            if let Some(session) = session {
                attrs.push(KeyValue::new("mcp.session.id", session));
            }
            if let Some(arguments) = arguments {
                attrs.push(KeyValue::new("gen_ai.tool.call.arguments", arguments));
            }
            let target = describe(method, params, &mut attrs);
            if method == "tools/call" {
                if let Some(hub) = Context::map_current(|cx| cx.get::<HubTool>().cloned()) {
                    attrs.push(KeyValue::new("mcpmux.tool.name", hub.0.to_string()));
                }
                tool.clone_from(&target);
            }
            tracer
                .span_builder(span_name(method, target.as_deref()))
                .with_kind(SpanKind::Client)
                .with_attributes(attrs)
                .start(tracer)
        });
        if let Some(span) = &span {
            let cx = Context::new().with_remote_span_context(span.span_context().clone());
            let fields = telemetry.inject(&cx);
            if params.is_null() {
                *params = Value::Object(Default::default());
            }
            if let Some(obj) = params.as_object_mut() {
                let meta = obj
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(meta) = meta.as_object_mut() {
                    for (key, value) in fields {
                        if !value.is_empty() {
                            meta.insert(key, Value::String(value));
                        }
                    }
                }
            }
        } else if method == "tools/call" {
            tool = params
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        ClientCall {
            telemetry,
            span,
            method: method.to_owned(),
            tool,
            server: info.server.clone(),
            start: Instant::now(),
            done: false,
        }
    }

    /// Ends the span with the request's outcome and records its duration.
    /// `captured`: the result as recorded (opt-in, redacted, capped).
    pub(crate) fn end(mut self, result: &Result<Box<RawValue>, Error>, captured: Option<String>) {
        let flag = result
            .as_ref()
            .map(|raw| (self.method == "tools/call").then(|| raw_is_error(raw)));
        let (error, rpc) = error_type(&self.method, flag);
        if let (Some(span), Some(text)) = (&mut self.span, captured) {
            span.set_attribute(KeyValue::new("gen_ai.tool.call.result", text));
        }
        self.finish(error, rpc);
    }

    fn finish(&mut self, error: Option<String>, rpc: Option<String>) {
        self.done = true;
        if let Some(mut span) = self.span.take() {
            if let Some(e) = &error {
                span.set_attribute(KeyValue::new("error.type", e.clone()));
                span.set_status(Status::error(e.clone()));
            }
            if let Some(code) = rpc {
                span.set_attribute(KeyValue::new("rpc.response.status_code", code));
            }
            span.end();
        }
        if let Some(i) = self.telemetry.instruments() {
            let mut attrs = vec![
                KeyValue::new("mcp.method.name", self.method.clone()),
                KeyValue::new("mcpmux.server.name", self.server.clone()),
            ];
            if let Some(tool) = self.tool.take() {
                attrs.push(KeyValue::new("gen_ai.tool.name", tool));
            }
            if let Some(e) = error {
                attrs.push(KeyValue::new("error.type", e));
            }
            i.client_operation
                .record(self.start.elapsed().as_secs_f64(), &attrs);
        }
    }
}

impl Drop for ClientCall {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Some("cancelled".into()), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_types_follow_the_conventions() {
        let rpc = Error::ServerError {
            code: -32002,
            message: "x".into(),
            data: None,
        };
        assert_eq!(
            error_type("tools/call", Err(&rpc)),
            (Some("-32002".into()), Some("-32002".into()))
        );
        assert_eq!(
            error_type("tools/call", Err(&Error::Timeout("t".into()))),
            (Some("TIMEOUT".into()), None)
        );
        assert_eq!(
            error_type("tools/call", Ok(Some(true))),
            (Some("tool_error".into()), None)
        );
        assert_eq!(error_type("tools/call", Ok(Some(false))), (None, None));
        assert_eq!(error_type("ping", Ok(None)), (None, None));
    }

    #[test]
    fn is_error_is_read_from_the_raw_result() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert!(raw_is_error(&raw(r#"{"content":[],"isError":true}"#)));
        assert!(!raw_is_error(&raw(
            r#"{"content":[{"type":"text","text":"isError"}]}"#
        )));
        assert!(!raw_is_error(&raw(r#"{"isError":false}"#)));
    }

    #[test]
    fn spans_are_named_by_method_and_target() {
        let mut attrs = Vec::new();
        let params = serde_json::json!({"name": "echo", "arguments": {}});
        let target = describe("tools/call", &params, &mut attrs);
        assert_eq!(
            span_name("tools/call", target.as_deref()),
            "tools/call echo"
        );
        assert!(attrs.contains(&KeyValue::new("gen_ai.operation.name", "execute_tool")));
        let mut attrs = Vec::new();
        let params = serde_json::json!({"uri": "file:///x"});
        let target = describe("resources/read", &params, &mut attrs);
        assert_eq!(
            span_name("resources/read", target.as_deref()),
            "resources/read"
        );
        assert!(attrs.contains(&KeyValue::new("mcp.resource.uri", "file:///x")));
    }

    #[test]
    fn a_traceparent_round_trips() {
        let t = Telemetry {
            traces: None,
            metrics: None,
            propagator: TraceContextPropagator::new(),
            capture: false,
        };
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let cx = t.extract(parent, None);
        assert!(cx.span().span_context().is_valid());
        assert_eq!(
            t.inject(&cx).get("traceparent").map(String::as_str),
            Some(parent)
        );
    }

    #[test]
    fn unknown_trace_flags_are_ignored_not_refused() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        // 03: sampled and Level 2's random flag, as OpenTelemetry SDKs send.
        for (flags, sampled) in [("03", true), ("02", false), ("ff", true), ("80", false)] {
            let cx = extract(&format!("00-{trace}-b7ad6b7169203331-{flags}"), None);
            let span = cx.span();
            let sc = span.span_context();
            assert!(sc.is_valid(), "flags {flags}");
            assert_eq!(sc.trace_id().to_string(), trace);
            assert_eq!(sc.is_sampled(), sampled, "flags {flags}");
        }
        // Malformed ones stay refused.
        for bad in [
            format!("00-{trace}-b7ad6b7169203331-zz"),
            format!("00-{trace}-0000000000000000-01"),
            format!("00-{trace}-b7ad6b7169203331"),
        ] {
            assert!(
                !extract(&bad, None).span().span_context().is_valid(),
                "{bad}"
            );
        }
    }
}
