//! `mcpmux-demo-server`: a small, dependency-light MCP server for trying and
//! testing mcpmux.
//!
//! It speaks the Model Context Protocol over stdio: newline-delimited JSON-RPC
//! 2.0, one message per line on stdin and stdout, with diagnostics on stderr
//! only. It offers a handful of tools that exercise the interesting parts of a
//! client (progress, cancellation, tool errors, crashes, large payloads and
//! `list_changed` notifications), one resource plus a resource template, and
//! one prompt.
//!
//! The server doubles as the echo peer for latency benchmarks, so the hot
//! path (`tools/call` of `echo`) borrows everything from the input line and
//! writes its reply with a single `write` system call.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead, BufReader, ErrorKind, Stdout, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{json, Value};

/// Name reported in `serverInfo`.
const SERVER_NAME: &str = "mcpmux-demo-server";
/// Version reported in `serverInfo`.
const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Protocol versions this server accepts verbatim from the client.
const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Protocol version offered when the client asks for an unknown one.
const LATEST_VERSION: &str = "2025-11-25";
/// Largest payload the `big` tool will produce (64 MiB).
const MAX_BIG_BYTES: u64 = 64 << 20;
/// Largest number of progress steps the `slow` tool accepts.
const MAX_SLOW_STEPS: u64 = 10_000;
/// Capacity of the stdin reader.
const READ_BUFFER: usize = 1 << 16;

/// JSON-RPC: invalid JSON was received.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a valid request object.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the method does not exist.
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: invalid method parameters.
const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: internal server error.
const INTERNAL_ERROR: i64 = -32603;
/// MCP: the requested resource does not exist.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// Text of the `demo://readme` resource.
const README: &str = "mcpmux demo server\n\n\
Tools: echo, add, slow, fail, crash, big, grow (and extra_<n> after grow).\n\
Resources: demo://readme and the template demo://item/{id}.\n\
Prompts: greet (argument: name).\n";

/// Output of `--help`.
const USAGE: &str = "\
Usage: mcpmux-demo-server [--help | --version]

A small MCP server: reads newline-delimited JSON-RPC 2.0 from stdin, answers
on stdout, logs to stderr, and exits with status 0 at end of input.
Tools: echo, add, slow, fail, crash, big, grow (see tools/list).

Environment:
  DEMO_PAGE_SIZE=N   return at most N tools per tools/list page
  DEMO_EVENT_LOG=F   append a line to file F per slow call and cancellation
  DEMO_INIT_BARRIER=D:N  answer initialize once N servers reached directory D
  DEMO_ADD_OUTPUT=M  add breaks its outputSchema: wrong_type (sum as a string),
                     missing (no structuredContent), is_error (a tool error)
";

fn main() -> ExitCode {
    if let Some(arg) = std::env::args().nth(1) {
        match arg.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "-V" | "--version" => {
                println!("{SERVER_NAME} {SERVER_VERSION}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("{SERVER_NAME}: unknown argument `{other}` (try --help)");
                return ExitCode::from(2);
            }
        }
    }
    Arc::new(Server::new(page_size_from_env())).run();
    ExitCode::SUCCESS
}

/// Reads `DEMO_PAGE_SIZE`; `None` means "everything in one page".
fn page_size_from_env() -> Option<usize> {
    let raw = std::env::var("DEMO_PAGE_SIZE").ok()?;
    match raw.trim().parse::<usize>() {
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(_) => {
            eprintln!("{SERVER_NAME}: ignoring invalid DEMO_PAGE_SIZE={raw:?}");
            None
        }
    }
}

/// A JSON object whose values are left unparsed, borrowed from the input.
///
/// Keys are borrowed too, unless one of them contains escape sequences.
enum Obj<'a> {
    /// All keys borrowed from the input.
    Borrowed(BTreeMap<&'a str, &'a RawValue>),
    /// Fallback when a key had to be unescaped.
    Owned(BTreeMap<String, &'a RawValue>),
}

impl<'a> Obj<'a> {
    /// Parses `json` as an object; fails on invalid JSON or a non-object.
    fn parse(json: &'a str) -> serde_json::Result<Self> {
        match serde_json::from_str(json) {
            Ok(map) => Ok(Self::Borrowed(map)),
            Err(_) => serde_json::from_str(json).map(Self::Owned),
        }
    }

    /// Parses an optional raw value as an object.
    fn from_raw(raw: Option<&'a RawValue>) -> Option<Self> {
        Self::parse(raw?.get()).ok()
    }

    /// Returns the raw value stored under `key`.
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        match self {
            Self::Borrowed(map) => map.get(key).copied(),
            Self::Owned(map) => map.get(key).copied(),
        }
    }
}

/// Decodes a raw JSON string, borrowing when it contains no escapes.
fn as_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let json = raw.get();
    match serde_json::from_str::<&str>(json) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(json).ok().map(Cow::Owned),
    }
}

/// Fully parses an optional raw value; absent values become `null`.
fn to_value(raw: Option<&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

/// Canonical text of a request id, used to match `notifications/cancelled`.
fn id_key(raw: &RawValue) -> String {
    to_value(Some(raw)).to_string()
}

/// A JSON-RPC error to send back to the client.
struct RpcError {
    /// The JSON-RPC error code.
    code: i64,
    /// Human-readable description.
    message: String,
}

impl RpcError {
    /// Builds an error from a code and a message.
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// What a request handler produced.
enum Outcome {
    /// A reply the caller should send now.
    Reply(Result<Value, RpcError>),
    /// The handler already replied, or a background thread will.
    Handled,
}

/// A text-only tool result.
fn text_result(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }] })
}

/// A tool result reporting a failure (`isError: true`).
fn tool_error(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": true })
}

/// Parameters of one `slow` call.
struct SlowJob {
    /// Total time to spend.
    duration: Duration,
    /// The duration as the client gave it, for the final message.
    seconds: f64,
    /// Number of progress notifications to send.
    steps: u32,
    /// Progress token from `params._meta.progressToken`, if any.
    token: Option<Value>,
}

/// Shared server state.
struct Server {
    /// Standard output; every message is written under this lock.
    out: Mutex<Stdout>,
    /// `tools/list` page size, from `DEMO_PAGE_SIZE`.
    page_size: Option<usize>,
    /// How many `extra_<n>` tools `grow` has added.
    extra_tools: AtomicUsize,
    /// Running `slow` calls by request id: generation and cancel handle.
    /// Dropping the sender cancels the call.
    running: Mutex<HashMap<String, (u64, Sender<()>)>>,
    /// Generation counter for `running` entries.
    next_generation: AtomicU64,
    /// Whether the "ready" log message was already sent.
    announced: AtomicBool,
}

impl Server {
    /// Creates the server state.
    fn new(page_size: Option<usize>) -> Self {
        Self {
            out: Mutex::new(io::stdout()),
            page_size,
            extra_tools: AtomicUsize::new(0),
            running: Mutex::new(HashMap::new()),
            next_generation: AtomicU64::new(0),
            announced: AtomicBool::new(false),
        }
    }

    /// Serves stdin until end of input.
    fn run(self: &Arc<Self>) {
        let mut reader = BufReader::with_capacity(READ_BUFFER, io::stdin().lock());
        let mut line = String::with_capacity(4096);
        let mut buf = Vec::with_capacity(4096);
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) => return,
                Ok(_) if line.trim().is_empty() => {}
                Ok(_) => self.handle_line(&line, &mut buf),
                Err(err) if err.kind() == ErrorKind::InvalidData => {
                    self.send_error(&mut buf, None, PARSE_ERROR, "Parse error: invalid UTF-8");
                }
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) => {
                    eprintln!("{SERVER_NAME}: reading stdin failed: {err}");
                    return;
                }
            }
            if buf.capacity() > 1 << 20 {
                buf = Vec::with_capacity(4096);
            }
        }
    }

    /// Writes one complete message line and flushes it.
    ///
    /// If stdout is gone the client cannot hear us any more, so we exit.
    fn write_line(&self, line: &[u8]) {
        let out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = out.lock();
        if let Err(err) = out.write_all(line).and_then(|()| out.flush()) {
            if err.kind() == ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            eprintln!("{SERVER_NAME}: writing stdout failed: {err}");
            std::process::exit(1);
        }
    }

    /// Sends a successful response.
    fn send_result(&self, buf: &mut Vec<u8>, id: &RawValue, result: &Value) {
        buf.clear();
        buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        buf.extend_from_slice(id.get().as_bytes());
        buf.extend_from_slice(br#","result":"#);
        serde_json::to_writer(&mut *buf, result).expect("serializing a Value cannot fail");
        buf.extend_from_slice(b"}\n");
        self.write_line(buf);
    }

    /// Sends an error response; `id` is `null` when unknown.
    fn send_error(&self, buf: &mut Vec<u8>, id: Option<&RawValue>, code: i64, message: &str) {
        buf.clear();
        buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        buf.extend_from_slice(id.map_or("null", RawValue::get).as_bytes());
        buf.extend_from_slice(format!(r#","error":{{"code":{code},"message":"#).as_bytes());
        serde_json::to_writer(&mut *buf, message).expect("serializing a str cannot fail");
        buf.extend_from_slice(b"}}\n");
        self.write_line(buf);
    }

    /// Sends a notification.
    fn send_notification(&self, buf: &mut Vec<u8>, method: &str, params: &Value) {
        buf.clear();
        let message = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        serde_json::to_writer(&mut *buf, &message).expect("serializing a Value cannot fail");
        buf.push(b'\n');
        self.write_line(buf);
    }

    /// Handles one input line.
    fn handle_line(self: &Arc<Self>, line: &str, buf: &mut Vec<u8>) {
        let msg = match Obj::parse(line) {
            Ok(msg) => msg,
            Err(err) => {
                if serde_json::from_str::<&RawValue>(line).is_ok() {
                    let text = "Invalid Request: expected a JSON object";
                    self.send_error(buf, None, INVALID_REQUEST, text);
                } else {
                    self.send_error(buf, None, PARSE_ERROR, &format!("Parse error: {err}"));
                }
                return;
            }
        };
        let id = msg.get("id");
        let params = msg.get("params");
        let Some(method) = msg.get("method").and_then(as_str) else {
            let is_response = msg.get("result").is_some() || msg.get("error").is_some();
            if let (Some(id), false) = (id, is_response) {
                self.send_error(buf, Some(id), INVALID_REQUEST, "Invalid Request: no method");
            }
            return;
        };
        let Some(id) = id else {
            self.handle_notification(&method, params, buf);
            return;
        };
        match self.handle_request(id, &method, params, buf) {
            Outcome::Reply(Ok(result)) => self.send_result(buf, id, &result),
            Outcome::Reply(Err(err)) => self.send_error(buf, Some(id), err.code, &err.message),
            Outcome::Handled => {}
        }
    }

    /// Handles a notification (a message without an id); never replies.
    fn handle_notification(&self, method: &str, params: Option<&RawValue>, buf: &mut Vec<u8>) {
        match method {
            "notifications/initialized" if !self.announced.swap(true, Ordering::Relaxed) => {
                let params =
                    json!({ "level": "info", "logger": "demo", "data": "demo server ready" });
                self.send_notification(buf, "notifications/message", &params);
            }
            "notifications/cancelled" => {
                let request = Obj::from_raw(params).and_then(|p| p.get("requestId"));
                if let Some(request) = request {
                    event(&format!("cancelled {}", id_key(request)));
                    // Dropping the sender wakes the `slow` thread, which then stops.
                    self.lock_running().remove(&id_key(request));
                }
            }
            _ => {}
        }
    }

    /// Handles a request and says how to answer it.
    fn handle_request(
        self: &Arc<Self>,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
        buf: &mut Vec<u8>,
    ) -> Outcome {
        if method == "tools/call" {
            return self.call_tool(id, params, buf);
        }
        let params = to_value(params);
        Outcome::Reply(match method {
            "initialize" => Ok(initialize(&params)),
            "ping" | "logging/setLevel" => Ok(json!({})),
            "tools/list" => self.list_tools(&params),
            "resources/list" => Ok(json!({ "resources": catalog()["resources"] })),
            "resources/templates/list" => {
                Ok(json!({ "resourceTemplates": catalog()["resourceTemplates"] }))
            }
            "resources/read" => read_resource(&params),
            "prompts/list" => Ok(json!({ "prompts": catalog()["prompts"] })),
            "prompts/get" => get_prompt(&params),
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        })
    }

    /// `tools/list`, paginated when `DEMO_PAGE_SIZE` is set.
    fn list_tools(&self, params: &Value) -> Result<Value, RpcError> {
        let mut tools = catalog()["tools"].as_array().cloned().unwrap_or_default();
        let extras = self.extra_tools.load(Ordering::SeqCst);
        tools.extend((1..=extras).map(extra_tool));
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(cursor) => cursor
                .as_str()
                .and_then(|c| c.parse::<usize>().ok())
                .filter(|&start| start <= tools.len())
                .ok_or_else(|| RpcError::new(INVALID_PARAMS, "Invalid cursor"))?,
        };
        let total = tools.len();
        let end = self
            .page_size
            .map_or(total, |size| start.saturating_add(size).min(total));
        let page: Vec<Value> = tools.drain(start..end).collect();
        let mut result = json!({ "tools": page });
        if end < total {
            result["nextCursor"] = Value::String(end.to_string());
        }
        Ok(result)
    }

    /// `tools/call`: the hot path for `echo`, and every other tool.
    fn call_tool(
        self: &Arc<Self>,
        id: &RawValue,
        params: Option<&RawValue>,
        buf: &mut Vec<u8>,
    ) -> Outcome {
        let params = Obj::from_raw(params);
        let name = params.as_ref().and_then(|p| p.get("name")).and_then(as_str);
        let (Some(params), Some(name)) = (params, name) else {
            let text = "Invalid params: expected an object with a tool name";
            return Outcome::Reply(Err(RpcError::new(INVALID_PARAMS, text)));
        };
        let args = params.get("arguments");
        let result = match &*name {
            "echo" => return self.echo(id, args, buf),
            "slow" => return self.start_slow(id, args, params.get("_meta")),
            "big" => return self.big(id, args, buf),
            "crash" => {
                eprintln!("demo-server: crashing on purpose");
                std::process::exit(3);
            }
            "add" => add(&to_value(args)),
            "fail" => {
                let args = to_value(args);
                let message = args.get("message").and_then(Value::as_str);
                tool_error(message.unwrap_or("this tool always fails"))
            }
            "grow" => {
                let n = self.extra_tools.fetch_add(1, Ordering::SeqCst) + 1;
                self.send_notification(buf, "notifications/tools/list_changed", &json!({}));
                text_result(&format!("added extra_{n}"))
            }
            other if self.is_extra_tool(other) => return self.echo(id, args, buf),
            other => {
                let text = format!("Unknown tool: {other}");
                return Outcome::Reply(Err(RpcError::new(INVALID_PARAMS, text)));
            }
        };
        Outcome::Reply(Ok(result))
    }

    /// Whether `name` is one of the `extra_<n>` tools added by `grow`.
    fn is_extra_tool(&self, name: &str) -> bool {
        let count = self.extra_tools.load(Ordering::SeqCst);
        name.strip_prefix("extra_")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| (1..=count).contains(&n) && name == format!("extra_{n}"))
    }

    /// `echo`: copies the raw JSON string of `text` straight into the reply.
    fn echo(&self, id: &RawValue, args: Option<&RawValue>, buf: &mut Vec<u8>) -> Outcome {
        let text = Obj::from_raw(args)
            .and_then(|args| args.get("text"))
            .filter(|text| text.get().starts_with('"'));
        let Some(text) = text else {
            return Outcome::Reply(Ok(tool_error("echo: argument `text` must be a string")));
        };
        buf.clear();
        buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        buf.extend_from_slice(id.get().as_bytes());
        buf.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
        buf.extend_from_slice(text.get().as_bytes());
        buf.extend_from_slice(b"}]}}\n");
        self.write_line(buf);
        Outcome::Handled
    }

    /// `big`: a text block of exactly `bytes` 'x' characters, then `tail`
    /// (at most 4 KiB) when given, built in place; with `structured`, no
    /// text block and the same string as `structuredContent.log`.
    fn big(&self, id: &RawValue, args: Option<&RawValue>, buf: &mut Vec<u8>) -> Outcome {
        let args = to_value(args);
        let tail = match args.get("tail") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(t)) if t.len() <= 4096 => t.clone(),
            Some(_) => {
                return Outcome::Reply(Ok(tool_error(
                    "big: argument `tail` must be a string of at most 4096 bytes",
                )))
            }
        };
        let bytes = args.get("bytes").and_then(Value::as_u64);
        let Some(bytes) = bytes.filter(|&b| b <= MAX_BIG_BYTES) else {
            let text =
                format!("big: argument `bytes` must be an integer between 0 and {MAX_BIG_BYTES}");
            return Outcome::Reply(Ok(tool_error(&text)));
        };
        buf.clear();
        buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        buf.extend_from_slice(id.get().as_bytes());
        let structured = args.get("structured") == Some(&Value::Bool(true));
        if structured {
            buf.extend_from_slice(br#","result":{"content":[],"structuredContent":{"log":""#);
        } else {
            buf.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
        }
        // Bounded by MAX_BIG_BYTES, so the conversion cannot truncate.
        buf.resize(buf.len() + bytes as usize, b'x');
        // The JSON string of `tail` without its quotes.
        let quoted = Value::String(tail).to_string();
        buf.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
        if structured {
            buf.extend_from_slice(b"\"}}}\n");
        } else {
            buf.extend_from_slice(b"\"}]}}\n");
        }
        self.write_line(buf);
        Outcome::Handled
    }

    /// `slow`: validates the arguments and answers from a new thread.
    fn start_slow(
        self: &Arc<Self>,
        id: &RawValue,
        args: Option<&RawValue>,
        meta: Option<&RawValue>,
    ) -> Outcome {
        let job = match slow_job(&to_value(args), meta) {
            Ok(job) => job,
            Err(text) => return Outcome::Reply(Ok(tool_error(&text))),
        };
        let key = id_key(id);
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let (cancel_tx, cancel_rx) = mpsc::channel();
        {
            let mut running = self.lock_running();
            if running.contains_key(&key) {
                let text = "Invalid Request: a request with this id is still running";
                return Outcome::Reply(Err(RpcError::new(INVALID_REQUEST, text)));
            }
            running.insert(key.clone(), (generation, cancel_tx));
        }
        event(&format!("slow {key}"));
        let server = Arc::clone(self);
        let owned_id = id.to_owned();
        let spawned = thread::Builder::new()
            .name("slow".into())
            .spawn(move || server.run_slow(&owned_id, &key, generation, &cancel_rx, job));
        match spawned {
            Ok(_) => Outcome::Handled,
            Err(err) => {
                self.lock_running().remove(id_key(id).as_str());
                let text = format!("Cannot start a thread: {err}");
                Outcome::Reply(Err(RpcError::new(INTERNAL_ERROR, text)))
            }
        }
    }

    /// Body of a `slow` thread: wait, report progress, then reply unless cancelled.
    fn run_slow(
        &self,
        id: &RawValue,
        key: &str,
        generation: u64,
        cancel: &Receiver<()>,
        job: SlowJob,
    ) {
        let mut buf = Vec::new();
        let start = Instant::now();
        let waits = job.steps.max(1);
        for step in 1..=waits {
            let deadline = start + job.duration * step / waits;
            let timeout = deadline.saturating_duration_since(Instant::now());
            if cancel.recv_timeout(timeout) != Err(RecvTimeoutError::Timeout) {
                return; // Cancelled: the sender was dropped.
            }
            if let (Some(token), true) = (&job.token, job.steps > 0) {
                let params = json!({
                    "progressToken": token,
                    "progress": step,
                    "total": job.steps,
                    "message": format!("step {step}"),
                });
                self.send_notification(&mut buf, "notifications/progress", &params);
            }
        }
        let still_wanted = {
            let mut running = self.lock_running();
            let ours = running.get(key).is_some_and(|(g, _)| *g == generation);
            ours && running.remove(key).is_some()
        };
        if still_wanted {
            let text = format!("done after {} s", job.seconds);
            self.send_result(&mut buf, id, &text_result(&text));
        }
    }

    /// Locks the table of running `slow` calls.
    fn lock_running(&self) -> MutexGuard<'_, HashMap<String, (u64, Sender<()>)>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Appends `line` to the file named by `DEMO_EVENT_LOG`, when set: what
/// tests check instead of timings (a `slow` call started, a cancellation
/// arrived). Off by default, so the benchmarks' hot path never pays for it.
fn event(line: &str) {
    static LOG: OnceLock<Option<String>> = OnceLock::new();
    let Some(path) = LOG.get_or_init(|| std::env::var("DEMO_EVENT_LOG").ok()) else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut file) = file {
        // One `write` per line: lines of several servers never interleave.
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}

/// `DEMO_INIT_BARRIER=<dir>:<n>`: `initialize` leaves a file in `<dir>` and
/// answers only once `<n>` servers have arrived there, so a test can tell
/// servers started together from servers started one after another (those
/// never meet: after 30 s the server gives up and exits with status 3).
fn init_barrier() {
    let Ok(spec) = std::env::var("DEMO_INIT_BARRIER") else {
        return;
    };
    let Some((dir, n)) = spec.rsplit_once(':') else {
        return;
    };
    let n: usize = n.parse().unwrap_or(1);
    let _ = std::fs::create_dir_all(dir);
    let _ = std::fs::write(format!("{dir}/{}", std::process::id()), b"");
    for _ in 0..3000 {
        let here = std::fs::read_dir(dir).map_or(0, Iterator::count);
        if here >= n {
            event(&format!("barrier met by {here}"));
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!("{SERVER_NAME}: DEMO_INIT_BARRIER: fewer than {n} servers arrived");
    std::process::exit(3);
}

/// `initialize`: negotiates the protocol version and describes the server.
fn initialize(params: &Value) -> Value {
    init_barrier();
    // A start-up delay for connect benchmarks: a sleep, not work.
    if let Some(ms) = std::env::var("DEMO_INIT_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = requested
        .filter(|v| SUPPORTED_VERSIONS.contains(v))
        .unwrap_or(LATEST_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": { "listChanged": true },
            "resources": {},
            "prompts": {},
            "logging": {},
        },
        "serverInfo": { "name": SERVER_NAME, "version": SERVER_VERSION },
        "instructions": "Demo server for mcpmux. Tools: echo, add, slow, fail, crash, big, grow. \
            Resource demo://readme, template demo://item/{id}, prompt greet.",
    })
}

/// `add`: sums two numbers, exactly for integers.
fn add(args: &Value) -> Value {
    let (Some(a), Some(b)) = (args.get("a"), args.get("b")) else {
        return tool_error("add: arguments `a` and `b` are required");
    };
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) if (a + b).is_finite() => json!(a + b),
            (Some(_), Some(_)) => return tool_error("add: the sum is not a finite number"),
            _ => return tool_error("add: arguments `a` and `b` must be numbers"),
        },
    };
    // `DEMO_ADD_OUTPUT` makes `add` break its own outputSchema, for the
    // tests of clients that check results against it.
    static MODE: OnceLock<Option<String>> = OnceLock::new();
    let mode = MODE.get_or_init(|| std::env::var("DEMO_ADD_OUTPUT").ok());
    let text = json!([{ "type": "text", "text": sum.to_string() }]);
    match mode.as_deref() {
        // The sum as a string: `number` expected at `/sum`.
        Some("wrong_type") => {
            json!({"content": text, "structuredContent": { "sum": sum.to_string() }})
        }
        // No structuredContent at all.
        Some("missing") => json!({ "content": text }),
        // A tool error, which no client checks against the schema.
        Some("is_error") => json!({ "content": text, "isError": true }),
        _ => json!({ "content": text, "structuredContent": { "sum": sum } }),
    }
}

/// Validates the arguments of `slow`; errors are tool-error texts.
fn slow_job(args: &Value, meta: Option<&RawValue>) -> Result<SlowJob, String> {
    let seconds = match args.get("seconds") {
        None | Some(Value::Null) => 1.0,
        Some(v) => v.as_f64().ok_or("slow: `seconds` must be a number")?,
    };
    let duration = Duration::try_from_secs_f64(seconds)
        .map_err(|_| "slow: `seconds` must be a non-negative, finite number".to_string())?;
    let steps = match args.get("steps") {
        None | Some(Value::Null) => 5,
        Some(v) => v.as_u64().filter(|&s| s <= MAX_SLOW_STEPS).ok_or(format!(
            "slow: `steps` must be an integer between 0 and {MAX_SLOW_STEPS}"
        ))?,
    };
    let token = Obj::from_raw(meta)
        .and_then(|meta| meta.get("progressToken"))
        .map(|t| to_value(Some(t)))
        .filter(|t| !t.is_null());
    Ok(SlowJob {
        duration,
        seconds,
        steps: u32::try_from(steps).expect("bounded by MAX_SLOW_STEPS"),
        token,
    })
}

/// `resources/read`.
fn read_resource(params: &Value) -> Result<Value, RpcError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::new(INVALID_PARAMS, "Invalid params: missing uri"))?;
    let text = if uri == "demo://readme" {
        README.to_string()
    } else if let Some(id) = uri.strip_prefix("demo://item/").filter(|id| !id.is_empty()) {
        format!("item {id}")
    } else {
        let text = format!("Resource not found: {uri}");
        return Err(RpcError::new(RESOURCE_NOT_FOUND, text));
    };
    Ok(json!({ "contents": [{ "uri": uri, "mimeType": "text/plain", "text": text }] }))
}

/// `prompts/get`.
fn get_prompt(params: &Value) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str);
    if name != Some("greet") {
        let text = format!("Unknown prompt: {}", name.unwrap_or_default());
        return Err(RpcError::new(INVALID_PARAMS, text));
    }
    let who = params
        .pointer("/arguments/name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::new(INVALID_PARAMS, "Missing required argument: name"))?;
    Ok(json!({
        "description": "Asks the model to greet someone warmly.",
        "messages": [{
            "role": "user",
            "content": { "type": "text", "text": format!("Please greet {who} warmly.") },
        }],
    }))
}

/// The static catalogue: tools, resources, templates and prompts.
fn catalog() -> &'static Value {
    static CATALOG: OnceLock<Value> = OnceLock::new();
    CATALOG.get_or_init(|| {
        serde_json::from_str(include_str!("catalog.json")).expect("catalog.json is valid JSON")
    })
}

/// Definition of the `extra_<n>` tool added by the n-th `grow` call.
fn extra_tool(n: usize) -> Value {
    let mut tool = catalog()["extraTool"].clone();
    tool["name"] = format!("extra_{n}").into();
    tool["title"] = format!("Extra {n}").into();
    tool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_matches_the_code() {
        let tools = catalog()["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["echo", "add", "slow", "fail", "crash", "big", "grow"]
        );
        let props = |i: usize| &tools[i]["inputSchema"]["properties"];
        assert_eq!(props(2)["steps"]["maximum"], MAX_SLOW_STEPS);
        assert_eq!(props(5)["bytes"]["maximum"], MAX_BIG_BYTES);
        assert_eq!(props(5)["tail"]["type"], "string");
        assert_eq!(extra_tool(2)["name"], "extra_2");
    }
}
