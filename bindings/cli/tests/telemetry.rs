//! OpenTelemetry end to end: `mcpmux` runs with the standard `OTEL_*`
//! variables pointing at an OTLP/HTTP receiver in this test (hyper on
//! loopback), which decodes the real protobuf exports with
//! `opentelemetry-proto`'s types. A test server (`meta_recorder.py`) records
//! the `_meta` of every request it gets, so the trace context can be
//! followed from a host's span through mcpmux to the server.

mod common;

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use prost::Message;
use serde_json::{json, Value};

/// The host's span: what `TRACEPARENT` (or a gateway client's `_meta`) names.
const HOST_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HOST_SPAN: &str = "b7ad6b7169203331";

fn host_traceparent() -> String {
    format!("00-{HOST_TRACE}-{HOST_SPAN}-01")
}

/// Span kinds as OTLP numbers them.
const KIND_SERVER: i32 = 2;
const KIND_CLIENT: i32 = 3;

/// The POST bodies received, with their paths.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP receiver: every POST body kept by path, answered 200.
struct Receiver {
    addr: SocketAddr,
    got: Received,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let got: Received = Arc::default();
        let kept = got.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let kept = kept.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(
                            move |req: hyper::Request<hyper::body::Incoming>| {
                                let kept = kept.clone();
                                async move {
                                    let path = req.uri().path().to_owned();
                                    let body = match req.into_body().collect().await {
                                        Ok(b) => b.to_bytes().to_vec(),
                                        Err(_) => Vec::new(),
                                    };
                                    kept.lock().unwrap().push((path, body));
                                    Ok::<_, Infallible>(
                                        hyper::Response::builder()
                                            .header("content-type", "application/x-protobuf")
                                            .body(Full::new(Bytes::new()))
                                            .unwrap(),
                                    )
                                }
                            },
                        );
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
        });
        Receiver { addr, got }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn bodies(&self, path: &str) -> Vec<Vec<u8>> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, b)| b.clone())
            .collect()
    }

    fn spans(&self) -> Vec<Span> {
        let mut spans = Vec::new();
        for body in self.bodies("/v1/traces") {
            let req = ExportTraceServiceRequest::decode(&body[..]).expect("an OTLP trace export");
            for rs in req.resource_spans {
                let resource = rs
                    .resource
                    .map(|r| attrs(&r.attributes))
                    .unwrap_or_default();
                for ss in rs.scope_spans {
                    for s in ss.spans {
                        spans.push(Span {
                            name: s.name,
                            kind: s.kind,
                            trace_id: hex(&s.trace_id),
                            span_id: hex(&s.span_id),
                            parent: hex(&s.parent_span_id),
                            attrs: attrs(&s.attributes),
                            resource: resource.clone(),
                        });
                    }
                }
            }
        }
        spans
    }

    fn metric_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for body in self.bodies("/v1/metrics") {
            let req =
                ExportMetricsServiceRequest::decode(&body[..]).expect("an OTLP metrics export");
            for rm in req.resource_metrics {
                for sm in rm.scope_metrics {
                    names.extend(sm.metrics.into_iter().map(|m| m.name));
                }
            }
        }
        names
    }

    fn nothing_received(&self) -> bool {
        self.got.lock().unwrap().is_empty()
    }
}

#[derive(Debug, Clone)]
struct Span {
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent: String,
    attrs: HashMap<String, String>,
    resource: HashMap<String, String>,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attrs(list: &[KeyValue]) -> HashMap<String, String> {
    list.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                Some(any_value::Value::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

fn find<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        panic!("no span '{name}' among {names:?}")
    })
}

/// A sandbox whose one server, `rec`, records `_meta` into `meta.jsonl`
/// (every tool allowed, for the gateway's policy).
fn recorder() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let record = sb.path().join("meta.jsonl");
    let script = fault_server("meta_recorder.py");
    let config = stdio_server(
        "rec",
        &python(),
        &[script.to_str().unwrap(), record.to_str().unwrap()],
        "allow_all = true",
    );
    sb.write("mcpmux.toml", &config);
    (sb, record)
}

/// What the recorder saw: (method, `_meta`) per request.
fn recorded(record: &PathBuf) -> Vec<(String, Value)> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["method"].as_str().unwrap().to_owned(), v["meta"].clone())
        })
        .collect()
}

/// The (trace id, parent span id) of a `traceparent`.
fn parse_traceparent(tp: &str) -> (String, String) {
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "traceparent {tp}");
    (parts[1].to_owned(), parts[2].to_owned())
}

/// `mcpmux ARGS` with only the telemetry variables this test sets.
fn run_with(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut run = sb.mcpmux(args);
    for var in OTEL_VARS {
        run.env(var, "");
    }
    for (k, v) in env {
        run.env(k, v);
    }
    run.run()
}

/// Variables of the test's own environment that must not leak in.
const OTEL_VARS: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "TRACEPARENT",
    "TRACESTATE",
];

#[test]
fn a_call_is_a_client_span_whose_context_reaches_the_server() {
    let receiver = Receiver::start();
    let (sb, record) = recorder();
    let endpoint = receiver.endpoint();
    let parent = host_traceparent();
    let out = run_with(
        &sb,
        &["--json", "call", "mcp_rec_echo", r#"{"text":"hi"}"#],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("TRACEPARENT", &parent),
        ],
    );
    out.ok();
    let spans = receiver.spans();
    let call = find(&spans, "tools/call echo");
    assert_eq!(call.kind, KIND_CLIENT);
    assert_eq!(call.trace_id, HOST_TRACE, "the host's trace goes on");
    assert_eq!(call.parent, HOST_SPAN, "a child of the host's span");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcpmux.tool.name", "mcp_rec_echo"),
        ("mcpmux.server.name", "rec"),
        ("network.transport", "pipe"),
    ] {
        assert_eq!(call.attr(key), Some(value), "{key} of {call:?}");
    }
    assert!(call.attr("jsonrpc.request.id").is_some(), "{call:?}");
    assert!(call.attr("mcp.protocol.version").is_some(), "{call:?}");
    assert!(call.attr("error.type").is_none(), "{call:?}");
    assert!(call.attr("server.address").is_none(), "stdio: {call:?}");
    assert_eq!(
        call.resource.get("service.name").map(String::as_str),
        Some("mcpmux")
    );
    // Arguments and results are never recorded.
    assert!(!format!("{:?}", call.attrs).contains("hi\""), "{call:?}");

    // Every request carried trace context; the call's names the call's span.
    let seen = recorded(&record);
    for method in ["initialize", "tools/list", "tools/call"] {
        let (_, meta) = seen
            .iter()
            .find(|(m, _)| m == method)
            .unwrap_or_else(|| panic!("no {method} in {seen:?}"));
        assert!(meta["traceparent"].is_string(), "{method}: {meta}");
    }
    let (_, meta) = seen.iter().find(|(m, _)| m == "tools/call").unwrap();
    let (trace, parent) = parse_traceparent(meta["traceparent"].as_str().unwrap());
    assert_eq!(trace, HOST_TRACE);
    assert_eq!(
        parent, call.span_id,
        "the server's parent is mcpmux's client span"
    );
    // The progress token is kept beside the trace context.
    let init = find(&spans, "initialize");
    assert_eq!(init.kind, KIND_CLIENT);
    find(&spans, "tools/list");

    let metrics = receiver.metric_names();
    assert!(
        metrics.iter().any(|m| m == "mcp.client.operation.duration"),
        "{metrics:?}"
    );
    assert!(
        metrics.iter().any(|m| m == "mcp.client.session.duration"),
        "{metrics:?}"
    );
}

#[test]
fn tool_and_json_rpc_errors_have_their_error_type() {
    let receiver = Receiver::start();
    let (sb, _) = recorder();
    let endpoint = receiver.endpoint();
    let env = [
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{endpoint}/v1/traces"),
        ),
        ("OTEL_SERVICE_NAME", "my-agent-tools".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run_with(&sb, &["--json", "call", "mcp_rec_fail", "{}"], &env);
    out.expect_exit(1);
    let out = run_with(&sb, &["--json", "call", "mcp_rec_rpcfail", "{}"], &env);
    assert_ne!(out.code(), Some(0));
    let spans = receiver.spans();
    let fail = find(&spans, "tools/call fail");
    assert_eq!(fail.attr("error.type"), Some("tool_error"));
    assert_eq!(fail.attr("rpc.response.status_code"), None);
    let rpc = find(&spans, "tools/call rpcfail");
    assert_eq!(rpc.attr("error.type"), Some("-32002"));
    assert_eq!(rpc.attr("rpc.response.status_code"), Some("-32002"));
    assert_eq!(
        rpc.resource.get("service.name").map(String::as_str),
        Some("my-agent-tools")
    );
    // Only the traces endpoint: metrics stay off.
    assert!(receiver.bodies("/v1/metrics").is_empty());
}

#[test]
fn the_gateway_chains_a_server_span_and_its_client_span() {
    let receiver = Receiver::start();
    let (sb, record) = recorder();
    let mut child = Command::new(mcpmux_bin())
        .arg("--config")
        .arg(sb.path().join("mcpmux.toml"))
        .arg("gateway")
        .current_dir(sb.path())
        .env_remove("MCPMUX_CONFIG")
        .env("XDG_STATE_HOME", state_home())
        .env("XDG_CONFIG_HOME", sb.path().join(".xdg-config"))
        .envs(OTEL_VARS.iter().map(|v| (*v, "")))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let answer = |id: u64| -> Value {
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(30))
                .expect("an answer from the gateway");
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == id {
                return msg;
            }
        }
    };
    let send = |stdin: &mut std::process::ChildStdin, msg: Value| {
        writeln!(stdin, "{msg}").unwrap();
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "agent", "version": "0"}}}),
    );
    answer(1);
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "mcp_rec_echo", "arguments": {"text": "via gateway"},
            "_meta": {"traceparent": host_traceparent()}}}),
    );
    let called = answer(2);
    assert_eq!(
        called["result"]["content"][0]["text"], "via gateway",
        "{called}"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    let spans = receiver.spans();
    let server = find(&spans, "tools/call mcp_rec_echo");
    assert_eq!(server.kind, KIND_SERVER);
    assert_eq!(server.trace_id, HOST_TRACE);
    assert_eq!(server.parent, HOST_SPAN);
    assert_eq!(server.attr("gen_ai.tool.name"), Some("mcp_rec_echo"));
    assert_eq!(server.attr("network.transport"), Some("pipe"));
    assert_eq!(
        server.attr("client.address"),
        None,
        "stdio has no client address"
    );
    let client = find(&spans, "tools/call echo");
    assert_eq!(client.kind, KIND_CLIENT);
    assert_eq!(client.trace_id, HOST_TRACE);
    assert_eq!(
        client.parent, server.span_id,
        "the downstream call is the server span's child"
    );
    assert_eq!(client.attr("mcpmux.tool.name"), Some("mcp_rec_echo"));
    let seen = recorded(&record);
    let (_, meta) = seen.iter().find(|(m, _)| m == "tools/call").unwrap();
    let (trace, parent) = parse_traceparent(meta["traceparent"].as_str().unwrap());
    assert_eq!(
        (trace.as_str(), parent.as_str()),
        (HOST_TRACE, client.span_id.as_str())
    );
    let metrics = receiver.metric_names();
    assert!(
        metrics.iter().any(|m| m == "mcp.server.operation.duration"),
        "{metrics:?}"
    );
}

/// One HTTP/1.1 `POST /mcp` on a connection of its own: the connection's
/// local port, the status, the `Mcp-Session-Id` and the body.
fn http_post(
    gateway: SocketAddr,
    session: Option<&str>,
    body: &Value,
) -> (u16, u16, Option<String>, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(gateway).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let port = stream.local_addr().unwrap().port();
    let body = body.to_string();
    let session = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {gateway}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let session = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    (port, status, session, body.to_owned())
}

#[test]
fn the_http_gateway_names_the_transport_and_the_client_of_its_server_spans() {
    let receiver = Receiver::start();
    let (sb, _) = recorder();
    let mut child = Command::new(mcpmux_bin())
        .arg("--config")
        .arg(sb.path().join("mcpmux.toml"))
        .args(["gateway", "--http", "127.0.0.1:0"])
        .current_dir(sb.path())
        .env_remove("MCPMUX_CONFIG")
        .env("XDG_STATE_HOME", state_home())
        .env("XDG_CONFIG_HOME", sb.path().join(".xdg-config"))
        .envs(OTEL_VARS.iter().map(|v| (*v, "")))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let gateway: SocketAddr = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the gateway never said where it serves");
        if let Some(at) = line.split("serving MCP at http://").nth(1) {
            break at.trim().trim_end_matches("/mcp").parse().unwrap();
        }
    };
    let (_, status, session, body) = http_post(
        gateway,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "agent", "version": "0"}}}),
    );
    assert_eq!(status, 200, "{body}");
    let session = session.expect("an Mcp-Session-Id");
    http_post(
        gateway,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let (port, status, _, body) = http_post(
        gateway,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "mcp_rec_echo", "arguments": {"text": "over http"},
            "_meta": {"traceparent": host_traceparent()}}}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("over http"), "{body}");
    // SIGTERM: the gateway stops and its spans go out.
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    child.wait().unwrap();

    let spans = receiver.spans();
    let server = find(&spans, "tools/call mcp_rec_echo");
    assert_eq!(server.kind, KIND_SERVER);
    assert_eq!(server.trace_id, HOST_TRACE);
    assert_eq!(server.attr("network.transport"), Some("tcp"));
    assert_eq!(server.attr("client.address"), Some("127.0.0.1"));
    assert_eq!(
        server.attr("client.port"),
        Some(port.to_string().as_str()),
        "the port of the connection that carried the call"
    );
    let init = spans
        .iter()
        .find(|s| s.name == "initialize" && s.kind == KIND_SERVER)
        .expect("the SERVER span of the client's initialize");
    assert_eq!(init.attr("network.transport"), Some("tcp"));
}

#[test]
fn nothing_is_exported_when_unset_or_disabled() {
    let receiver = Receiver::start();
    let endpoint = receiver.endpoint();
    // Unset: nothing exported, no trace context sent.
    let (sb, record) = recorder();
    run_with(&sb, &["--json", "call", "mcp_rec_echo", "{}"], &[]).ok();
    // OTEL_SDK_DISABLED=true wins over an endpoint.
    let (sb2, record2) = recorder();
    run_with(
        &sb2,
        &["--json", "call", "mcp_rec_echo", "{}"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SDK_DISABLED", "true"),
        ],
    )
    .ok();
    // An unsupported protocol: a warning, nothing exported.
    run_with(
        &sb2,
        &["--json", "call", "mcp_rec_echo", "{}"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    )
    .ok();
    std::thread::sleep(Duration::from_millis(200));
    assert!(receiver.nothing_received());
    for seen in [recorded(&record), recorded(&record2)] {
        assert!(!seen.is_empty());
        for (method, meta) in seen {
            assert!(meta.get("traceparent").is_none(), "{method}: {meta}");
        }
    }
}

#[test]
fn a_dead_collector_costs_a_call_nothing() {
    // A port nothing listens on: every export is refused.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (sb, record) = recorder();
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = run_with(
        &sb,
        &["--json", "call", "mcp_rec_echo", r#"{"text":"still here"}"#],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    out.ok();
    assert!(out.stdout.contains("still here"), "{}", out.stdout);
    let seen = recorded(&record);
    assert!(seen
        .iter()
        .any(|(m, meta)| m == "tools/call" && meta["traceparent"].is_string()));
}

#[test]
fn a_review_round_continues_the_trace_of_its_begin() {
    let receiver = Receiver::start();
    let sb = Sandbox::with_config(&format!(
        "{}\n[session]\nreviewer = \"command\"\nmax_rounds = 3\n",
        demo_entry("demo", "")
    ));
    let input = sb.write(
        "plan.md",
        "---\nUSER_REQUEST: add a flag\n---\n## PLAN\n1. parse it\n",
    );
    let path = format!(
        "{}:{}",
        workspace_root().join("tests/fixtures/fake-codex").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let endpoint = receiver.endpoint();
    let mut begin = sb.mcpmux(&["review", "begin", "--skill", "review-plan", "--input"]);
    begin.arg(&input);
    for var in OTEL_VARS {
        begin.env(var, "");
    }
    let out = begin
        .env("PATH", &path)
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{endpoint}/v1/traces"),
        )
        .env("TRACEPARENT", host_traceparent())
        .run();
    out.ok();
    // The detached runner exports its spans when it exits, after the round.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let spans = loop {
        let spans = receiver.spans();
        if spans.iter().any(|s| s.name == "review round") {
            break spans;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no round span: {spans:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let begun = find(&spans, "review begin");
    assert_eq!(begun.trace_id, HOST_TRACE);
    assert_eq!(begun.parent, HOST_SPAN);
    let round = find(&spans, "review round");
    assert_eq!(round.trace_id, HOST_TRACE, "the runner continues the trace");
    assert_eq!(
        round.parent, begun.span_id,
        "the round is the begin's child"
    );
    assert_eq!(round.attr("mcpmux.session.round"), Some("1"));
}

#[test]
fn arguments_and_results_are_recorded_only_when_asked_and_redacted() {
    let receiver = Receiver::start();
    let sb = Sandbox::new();
    let record = sb.path().join("meta.jsonl");
    let script = fault_server("meta_recorder.py");
    // An `env` value is a config secret: redacted wherever it comes back.
    let config = stdio_server(
        "rec",
        &python(),
        &[script.to_str().unwrap(), record.to_str().unwrap()],
        "env = { API_TOKEN = \"tok-4f9a2c1e\" }",
    );
    sb.write("mcpmux.toml", &config);
    let endpoint = receiver.endpoint();
    let out = run_with(
        &sb,
        &[
            "--json",
            "call",
            "mcp_rec_echo",
            r#"{"text":"key tok-4f9a2c1e here"}"#,
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ],
    );
    out.ok();
    let spans = receiver.spans();
    let call = find(&spans, "tools/call echo");
    let arguments = call
        .attr("gen_ai.tool.call.arguments")
        .expect("arguments recorded");
    let result = call
        .attr("gen_ai.tool.call.result")
        .expect("result recorded");
    for text in [arguments, result] {
        assert!(text.contains("[REDACTED:config]"), "{text}");
        assert!(!text.contains("tok-4f9a2c1e"), "{text}");
    }
    assert!(arguments.contains("\"text\""), "{arguments}");
}

#[test]
fn the_config_table_turns_it_on_and_the_environment_wins() {
    let receiver = Receiver::start();
    let (sb, record) = recorder();
    let config = std::fs::read_to_string(sb.path().join("mcpmux.toml")).unwrap();
    sb.write(
        "mcpmux.toml",
        &format!(
            "{config}\n[telemetry]\nendpoint = {}\nservice_name = \"from-config\"\n\
             resource_attributes = {{ \"deployment.environment\" = \"test\" }}\n",
            q(receiver.endpoint())
        ),
    );
    let call = ["--json", "call", "mcp_rec_echo", "{}"];
    run_with(&sb, &call, &[]).ok();
    let spans = receiver.spans();
    let span = find(&spans, "tools/call echo");
    assert_eq!(
        span.resource.get("service.name").map(String::as_str),
        Some("from-config")
    );
    assert_eq!(
        span.resource
            .get("deployment.environment")
            .map(String::as_str),
        Some("test")
    );
    assert!(receiver
        .metric_names()
        .iter()
        .any(|m| m == "mcp.client.operation.duration"));
    // The variables win over the table.
    run_with(&sb, &call, &[("OTEL_SERVICE_NAME", "from-env")]).ok();
    let names: Vec<String> = receiver
        .spans()
        .iter()
        .filter(|s| s.name == "tools/call echo")
        .map(|s| s.resource["service.name"].clone())
        .collect();
    assert_eq!(names, ["from-config", "from-env"]);
    let before = receiver.bodies("/v1/traces").len();
    let calls_before = recorded(&record).len();
    run_with(&sb, &call, &[("OTEL_SDK_DISABLED", "true")]).ok();
    assert_eq!(receiver.bodies("/v1/traces").len(), before);
    let seen = recorded(&record);
    assert!(seen.len() > calls_before);
    assert!(seen[calls_before..]
        .iter()
        .all(|(_, meta)| meta.get("traceparent").is_none()));
    // An unknown key is refused at load, naming the nearest.
    sb.write(
        "mcpmux.toml",
        &format!("{config}\n[telemetry]\nendpont = \"http://127.0.0.1:1\"\n"),
    );
    let out = run_with(&sb, &call, &[]);
    let message = out.fails_with("CONFIG_INVALID");
    assert!(message.contains("endpoint"), "{message}");
}
