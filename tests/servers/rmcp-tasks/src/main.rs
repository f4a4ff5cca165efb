//! `rmcp-tasks-server`: a test peer for mcpmux. An MCP server built on the
//! official Rust SDK (rmcp) that implements the tasks extension of the
//! 2026-07-28 revision (SEP-2663, `io.modelcontextprotocol/tasks`) on the
//! server side: `tools/call` may answer a `CreateTaskResult`, and the client
//! follows the task with `tasks/get`, `tasks/update` and `tasks/cancel`.
//!
//! It speaks stdio by default (2026-07-28 through `server/discover` and
//! per-request `_meta`, or a 2025-11-25 `initialize`, as rmcp allows), or
//! Streamable HTTP at `/mcp` with `--http ADDR`.
//!
//! Every message a client sends is recorded in the file named by
//! `RMCP_TASKS_LOG` (when set), one line each, so tests can assert what the
//! client sent: `method <name>` for a request (then `call-id <id>` for a
//! `tools/call`), `notification <name>` for a notification (then
//! `cancelled <requestId>` for `notifications/cancelled`), over HTTP `header mcp-method <value>` and
//! `header mcp-name <value>` (or `<missing>`) after a `tasks/*` request, and
//! `cancel <taskId>` after each `tasks/cancel`.
//!
//! The tasks live in memory (one map shared by every connection), at most
//! [`MAX_TASKS`] at once; task ids are random UUIDs (but `huge_id`'s).

use std::{
    collections::{BTreeMap, HashMap},
    convert::Infallible,
    io::Write,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use rmcp::{
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        ClientCapabilities, ContentBlock, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
        ServerNotification,
        SubscriptionFilter, ToolListChangedNotification, CreateTaskResult, DetailedTask, GetTaskParams,
        GetTaskResult, Implementation, InputRequest, InputRequests, InputRequiredResult,
        JsonObject, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Task, TaskPayload, TaskStatus,
        Tool, UpdateTaskParams,
    },
    service::{RequestContext, RoleServer, SubscriptionContext, SubscriptionSink},
    task_manager::current_timestamp,
    ErrorData as McpError, ServerHandler, ServiceExt,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The most tasks held at once. When full, the oldest finished task is
/// dropped; when none has finished, a new task is refused (-32603).
const MAX_TASKS: usize = 10_000;
/// The poll interval every task suggests.
const POLL_INTERVAL_MS: u64 = 100;
/// The TTL of tasks that end (the ones that never end have none: `null`).
/// Informational: tasks are only dropped to keep within [`MAX_TASKS`].
const TTL_MS: u64 = 300_000;
/// `slow_sum`'s default delay, and the longest it accepts.
const DEFAULT_SUM_MS: u64 = 300;
const MAX_SUM_MS: u64 = 3_600_000;
/// `fails`'s delay before failing.
const FAIL_AFTER_MS: u64 = 100;
/// The length of `huge_id`'s task id.
const HUGE_ID_CHARS: usize = 100_000;
/// `many_inputs`'s default and largest number of input requests.
const DEFAULT_MANY_INPUTS: usize = 200_000;
const MAX_MANY_INPUTS: usize = 1_000_000;
/// The largest HTTP request body read (`--http`).
const MAX_HTTP_BODY: usize = 64 << 20;

// ---------------------------------------------------------------------------
// The log of what clients sent.

/// Appends lines to the file named by `RMCP_TASKS_LOG`, if set.
#[derive(Default)]
struct Log(Option<Mutex<std::fs::File>>);

impl Log {
    fn from_env() -> Self {
        let Some(path) = std::env::var_os("RMCP_TASKS_LOG") else {
            return Self(None);
        };
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(file) => Self(Some(Mutex::new(file))),
            Err(e) => {
                eprintln!("rmcp-tasks-server: cannot open RMCP_TASKS_LOG {path:?}: {e}");
                Self(None)
            }
        }
    }

    fn lines(&self, lines: &[String]) {
        let Some(file) = &self.0 else { return };
        if lines.is_empty() {
            return;
        }
        let mut text = lines.join("\n");
        text.push('\n');
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        // One write of whole lines, in append mode: a reader never sees half a line
        // from us.
        let _ = file.write_all(text.as_bytes());
    }

    /// Records one raw JSON-RPC message (or batch) a client sent, with the
    /// HTTP headers it came with, if any.
    fn message(&self, raw: &[u8], headers: Option<&http::HeaderMap>) {
        if self.0.is_none() {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(raw) else {
            if raw.iter().any(|b| !b.is_ascii_whitespace()) {
                self.lines(&["unparsable message".to_owned()]);
            }
            return;
        };
        let mut lines = Vec::new();
        match &value {
            Value::Array(items) => items
                .iter()
                .for_each(|item| describe(item, headers, &mut lines)),
            item => describe(item, headers, &mut lines),
        }
        self.lines(&lines);
    }
}

fn describe(message: &Value, headers: Option<&http::HeaderMap>, lines: &mut Vec<String>) {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return; // a response to a request of ours (we send none) or junk
    };
    if message.get("id").is_none() {
        lines.push(format!("notification {method}"));
        if method == "notifications/cancelled" {
            let id = message.pointer("/params/requestId").unwrap_or(&Value::Null);
            lines.push(format!("cancelled {id}"));
        }
        return;
    }
    lines.push(format!("method {method}"));
    if method == "tools/call" {
        lines.push(format!("call-id {}", message["id"]));
    }
    if method.starts_with("tasks/") {
        if let Some(headers) = headers {
            for name in ["mcp-method", "mcp-name"] {
                let value = match headers.get(name) {
                    Some(v) => String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    None => "<missing>".to_owned(),
                };
                lines.push(format!("header {name} {value}"));
            }
        }
    }
    if method == "tasks/cancel" {
        let id = message
            .pointer("/params/taskId")
            .and_then(Value::as_str)
            .unwrap_or("<missing>");
        lines.push(format!("cancel {id}"));
    }
}

// ---------------------------------------------------------------------------
// The tasks.

/// What a task does when `tasks/update` answers its input requests.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Answers nothing (`slow_sum`, `never_ends`, `fails`, `huge_id`).
    Plain,
    /// `ask_name`: completes with the name, or with an error when declined.
    AskName,
    /// `many_inputs`, `multi_input`: completes once every input request is
    /// answered.
    ManyInputs,
    /// `confirm_delete`: completes with what the answer to `confirm` said.
    Confirm,
}

struct Entry {
    task: Task,
    payload: TaskPayload,
    kind: Kind,
    created: Instant,
    /// The timer that ends the task (`slow_sum`, `fails`), aborted by a cancel.
    timer: Option<tokio::task::JoinHandle<()>>,
}

impl Entry {
    fn touch(&mut self) {
        self.task.last_updated_at = current_timestamp();
    }

    fn settle(&mut self, payload: TaskPayload) {
        self.payload = payload;
        self.task.status = self.payload.status();
        self.touch();
        if let Some(timer) = self.timer.take() {
            timer.abort();
        }
    }

    fn is_terminal(&self) -> bool {
        self.payload.status().is_terminal()
    }
}

#[derive(Default)]
struct Store {
    tasks: Mutex<HashMap<String, Entry>>,
}

fn unknown_task(task_id: &str) -> McpError {
    let shown: String = task_id.chars().take(80).collect();
    McpError::invalid_params(format!("unknown task: {shown}"), None)
}

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates a task in `payload`'s status and answers its seed state (the
    /// `CreateTaskResult`'s task). Durable before it returns: a `tasks/get`
    /// finds it at once.
    fn create(
        &self,
        task_id: String,
        payload: TaskPayload,
        kind: Kind,
        ttl_ms: Option<u64>,
    ) -> Result<Task, McpError> {
        let now = current_timestamp();
        let mut task = Task::new(task_id.clone(), TaskStatus::Working, now.clone(), now)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        task.ttl_ms = ttl_ms;
        let seed = task.clone();
        let mut tasks = self.lock();
        if tasks.len() >= MAX_TASKS {
            // Drop the oldest finished tasks to make room.
            let mut finished: Vec<(Instant, String)> = tasks
                .iter()
                .filter(|(_, e)| e.is_terminal())
                .map(|(id, e)| (e.created, id.clone()))
                .collect();
            finished.sort();
            let excess = tasks.len() + 1 - MAX_TASKS;
            for (_, id) in finished.into_iter().take(excess) {
                tasks.remove(&id);
            }
            if tasks.len() >= MAX_TASKS {
                return Err(McpError::internal_error(
                    format!("too many tasks (at most {MAX_TASKS} unfinished)"),
                    None,
                ));
            }
        }
        task.status = payload.status();
        tasks.insert(
            task_id,
            Entry {
                task,
                payload,
                kind,
                created: Instant::now(),
                timer: None,
            },
        );
        Ok(seed)
    }

    /// Ends the task with `payload` after `delay`, unless it has ended (or
    /// been dropped) by then.
    fn settle_after(
        self: &Arc<Self>,
        task_id: &str,
        delay: Duration,
        payload: TaskPayload,
        status_message: Option<&'static str>,
    ) {
        let store = Arc::clone(self);
        let id = task_id.to_owned();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let mut tasks = store.lock();
            if let Some(entry) = tasks.get_mut(&id) {
                if !entry.is_terminal() {
                    entry.timer = None; // this very task: nothing to abort
                    if let Some(message) = status_message {
                        entry.task.status_message = Some(message.to_owned());
                    }
                    entry.settle(payload);
                }
            }
        });
        if let Some(entry) = self.lock().get_mut(task_id) {
            if entry.is_terminal() {
                timer.abort();
            } else {
                entry.timer = Some(timer);
            }
        }
    }

    fn get(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        let tasks = self.lock();
        let entry = tasks.get(task_id).ok_or_else(|| unknown_task(task_id))?;
        Ok(DetailedTask::new(entry.task.clone(), entry.payload.clone()))
    }

    /// `tasks/update`: answers to keys that are not outstanding are ignored
    /// (SEP-2663); a partial set leaves the task in `input_required`.
    fn update(&self, task_id: &str, responses: BTreeMap<String, Value>) -> Result<(), McpError> {
        let mut tasks = self.lock();
        let entry = tasks
            .get_mut(task_id)
            .ok_or_else(|| unknown_task(task_id))?;
        let TaskPayload::InputRequired { input_requests } = &mut entry.payload else {
            return Ok(());
        };
        let mut answered = Vec::new();
        for (key, value) in responses {
            if input_requests.remove(&key).is_some() {
                answered.push((key, value));
            }
        }
        if answered.is_empty() {
            return Ok(());
        }
        let done = input_requests.is_empty();
        let result = match entry.kind {
            Kind::AskName => answered
                .iter()
                .find(|(key, _)| key == "name")
                .map(|(_, response)| ask_name_result(response)),
            Kind::ManyInputs if done => Some(CallToolResult::success(vec![ContentBlock::text(
                "every input answered",
            )])),
            Kind::Confirm => answered
                .iter()
                .find(|(key, _)| key == "confirm")
                .map(|(_, response)| confirm_result(response)),
            _ => None,
        };
        match result {
            Some(result) => entry.settle(TaskPayload::Completed {
                result: to_object(&result),
            }),
            None => entry.touch(),
        }
        Ok(())
    }

    /// `tasks/cancel`: an unfinished task is `cancelled` at once; a finished
    /// one keeps its status (the ack is the same).
    fn cancel(&self, task_id: &str) -> Result<(), McpError> {
        let mut tasks = self.lock();
        let entry = tasks
            .get_mut(task_id)
            .ok_or_else(|| unknown_task(task_id))?;
        if !entry.is_terminal() {
            entry.task.status_message = Some("cancelled by the client".to_owned());
            entry.settle(TaskPayload::Cancelled);
        }
        Ok(())
    }
}

fn ask_name_result(response: &Value) -> CallToolResult {
    match response.get("action").and_then(Value::as_str) {
        Some("accept") => match response.pointer("/content/name").and_then(Value::as_str) {
            Some(name) => {
                CallToolResult::success(vec![ContentBlock::text(format!("Hello, {name}"))])
            }
            None => CallToolResult::error(vec![ContentBlock::text("accepted without a name")]),
        },
        Some("decline") => CallToolResult::error(vec![ContentBlock::text("declined")]),
        Some("cancel") => CallToolResult::error(vec![ContentBlock::text("cancelled")]),
        _ => CallToolResult::error(vec![ContentBlock::text("not an elicitation result")]),
    }
}

fn confirm_result(response: &Value) -> CallToolResult {
    let confirmed = response.get("action").and_then(Value::as_str) == Some("accept")
        && response.pointer("/content/confirm").and_then(Value::as_bool) == Some(true);
    text(if confirmed { "deleted" } else { "kept" })
}

/// `test_tool_with_task`'s and `ask_plain`'s one question (SEP-2322).
fn name_question() -> InputRequests {
    let mut requests = InputRequests::new();
    requests.insert(
        "user_name".to_owned(),
        elicitation(
            "What is your name?",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }),
        ),
    );
    requests
}

/// The name a retried request answered `user_name` with, if it did.
fn answered_name(request: &CallToolRequestParams) -> Option<String> {
    let answer = request.input_responses.as_ref()?.get("user_name")?;
    (answer.get("action").and_then(Value::as_str) == Some("accept")).then(|| {
        answer
            .pointer("/content/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    })
}

fn to_object(value: &CallToolResult) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

fn elicitation(message: &str, requested_schema: Value) -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": requested_schema}
    }))
    .expect("a valid elicitation/create request")
}

// ---------------------------------------------------------------------------
// The MCP server.

#[derive(Clone)]
struct TasksServer {
    store: Arc<Store>,
    /// The open `subscriptions/listen` streams (every connection's).
    listeners: Arc<Mutex<Vec<SubscriptionSink>>>,
    /// Tools `add_tool` added, listed after [`tools`]'.
    added: Arc<Mutex<Vec<String>>>,
}

impl TasksServer {
    fn new() -> TasksServer {
        TasksServer {
            store: Arc::new(Store::default()),
            listeners: Arc::default(),
            added: Arc::default(),
        }
    }

    /// Sends `notification` on every open stream that accepted it; how many
    /// took it.
    async fn broadcast(&self, notification: ServerNotification) -> usize {
        let sinks = self.listeners.lock().unwrap().clone();
        let mut sent = 0;
        for sink in sinks {
            if sink.send(notification.clone()).await.is_ok() {
                sent += 1;
            }
        }
        sent
    }

    fn all_tools(&self) -> Vec<Tool> {
        let mut all = tools();
        for name in self.added.lock().unwrap().iter() {
            all.push(Tool::new(name.clone(), "Added by add_tool.", no_args()));
        }
        all
    }
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are objects"),
    }
}

fn no_args() -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": {}}))
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "quick",
            "Answers at once: \"quick: <text>\".",
            schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            })),
        ),
        Tool::new(
            "add_tool",
            "Adds tool `name` and tells every subscriptions/listen stream \
             (notifications/tools/list_changed).",
            schema(json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            })),
        ),
        Tool::new(
            "touch",
            "Sends notifications/resources/updated for `uri` on every stream that \
             subscribed to it.",
            schema(json!({
                "type": "object",
                "properties": {"uri": {"type": "string"}},
                "required": ["uri"]
            })),
        ),
        Tool::new(
            "slow_sum",
            "A task (needs the tasks extension) that completes after `ms` milliseconds \
             (default 300) with \"sum: <a+b>\" and structuredContent {\"sum\": a+b}.",
            schema(json!({
                "type": "object",
                "properties": {
                    "a": {"type": "number"},
                    "b": {"type": "number"},
                    "ms": {"type": "integer", "minimum": 0}
                },
                "required": ["a", "b"]
            })),
        ),
        Tool::new(
            "ask_name",
            "A task that asks for a name (an elicitation under inputRequests key \"name\") \
             and completes with \"Hello, <name>\".",
            no_args(),
        ),
        Tool::new(
            "never_ends",
            "A task that stays working until tasks/cancel.",
            no_args(),
        ),
        Tool::new("endless_working", "The same as never_ends.", no_args()),
        Tool::new(
            "fails",
            "A task that fails after about 100 ms with error -32603.",
            no_args(),
        ),
        // The fixtures the conformance suite's tasks scenarios require.
        Tool::new(
            "greet",
            "Conformance fixture, sync only: \"Hello, <name>!\".",
            schema(json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            })),
        ),
        Tool::new(
            "slow_compute",
            "Conformance fixture: sleeps `seconds`, then answers; a task when the request \
             declared the tasks extension, else a plain call.",
            schema(json!({
                "type": "object",
                "properties": {"seconds": {"type": "number", "minimum": 0}, "label": {"type": "string"}}
            })),
        ),
        Tool::new(
            "failing_job",
            "Conformance fixture: a task whose tool reports an error after about 1 s.",
            no_args(),
        ),
        Tool::new(
            "protocol_error_job",
            "Conformance fixture: a task that fails with a protocol error.",
            no_args(),
        ),
        Tool::new(
            "confirm_delete",
            "Conformance fixture: a task that asks to confirm (an elicitation under \
             inputRequests key \"confirm\") and completes with \"deleted\" or \"kept\".",
            schema(json!({
                "type": "object",
                "properties": {"filename": {"type": "string"}}
            })),
        ),
        Tool::new(
            "multi_input",
            "Conformance fixture: a task with two input requests open at once.",
            no_args(),
        ),
        Tool::new(
            "test_tool_with_task",
            "Conformance fixture: asks for a name with an input-required result (SEP-2322), \
             then, retried with the answer, becomes a task that completes with \"Hello, <name>\".",
            no_args(),
        ),
        Tool::new(
            "ask_plain",
            "Asks for a name with an input-required result (SEP-2322), then, retried with \
             the answer, completes at once with \"Hello, <name>\" (no task).",
            no_args(),
        ),
        Tool::new(
            "huge_id",
            "Hostile: a task whose id is 100,000 characters long.",
            no_args(),
        ),
        Tool::new(
            "many_inputs",
            "Hostile: a task in input_required with `count` input requests (default 200,000).",
            schema(json!({
                "type": "object",
                "properties": {"count": {"type": "integer", "minimum": 1, "maximum": MAX_MANY_INPUTS}}
            })),
        ),
    ]
}

/// `slow_compute`'s `seconds` (0 to an hour).
fn slow_compute_seconds(args: &JsonObject) -> Result<f64, McpError> {
    match args.get("seconds") {
        None | Some(Value::Null) => Ok(0.0),
        Some(v) => v
            .as_f64()
            .filter(|s| (0.0..=3600.0).contains(s))
            .ok_or_else(|| McpError::invalid_params("seconds must be 0..=3600", None)),
    }
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s.into())])
}

fn new_task_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// a + b, as integers when both are, else as floats.
fn sum(a: &Value, b: &Value) -> Option<Value> {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        if let Some(s) = a.checked_add(b) {
            return Some(json!(s));
        }
    }
    let s = a.as_f64()? + b.as_f64()?;
    serde_json::Number::from_f64(s).map(Value::Number)
}

impl TasksServer {
    fn task_result(&self, task: Task) -> Result<CallToolResponse, McpError> {
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    fn start_task(&self, name: &str, args: &JsonObject) -> Result<CallToolResponse, McpError> {
        let store = &self.store;
        match name {
            "slow_sum" => {
                let (Some(a), Some(b)) = (args.get("a"), args.get("b")) else {
                    return Err(McpError::invalid_params("slow_sum needs a and b", None));
                };
                let sum = sum(a, b)
                    .ok_or_else(|| McpError::invalid_params("a and b must be numbers", None))?;
                let ms = match args.get("ms") {
                    None | Some(Value::Null) => DEFAULT_SUM_MS,
                    Some(v) => v
                        .as_u64()
                        .filter(|ms| *ms <= MAX_SUM_MS)
                        .ok_or_else(|| McpError::invalid_params("ms must be 0..=3600000", None))?,
                };
                let mut result = text(format!("sum: {sum}"));
                result.structured_content = Some(json!({"sum": sum}));
                let task = store.create(
                    new_task_id(),
                    TaskPayload::Working,
                    Kind::Plain,
                    Some(TTL_MS),
                )?;
                store.settle_after(
                    &task.task_id,
                    Duration::from_millis(ms),
                    TaskPayload::Completed {
                        result: to_object(&result),
                    },
                    None,
                );
                self.task_result(task)
            }
            "ask_name" => {
                let mut requests = InputRequests::new();
                requests.insert(
                    "name".to_owned(),
                    elicitation(
                        "What is your name?",
                        json!({
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"]
                        }),
                    ),
                );
                let task = store.create(
                    new_task_id(),
                    TaskPayload::InputRequired {
                        input_requests: requests,
                    },
                    Kind::AskName,
                    Some(TTL_MS),
                )?;
                self.task_result(task)
            }
            "never_ends" | "endless_working" => {
                let task = store.create(new_task_id(), TaskPayload::Working, Kind::Plain, None)?;
                self.task_result(task)
            }
            "fails" => {
                let task = store.create(
                    new_task_id(),
                    TaskPayload::Working,
                    Kind::Plain,
                    Some(TTL_MS),
                )?;
                let mut error = JsonObject::new();
                error.insert("code".to_owned(), json!(-32603));
                error.insert("message".to_owned(), json!("the task failed on purpose"));
                store.settle_after(
                    &task.task_id,
                    Duration::from_millis(FAIL_AFTER_MS),
                    TaskPayload::Failed { error },
                    Some("the task failed on purpose"),
                );
                self.task_result(task)
            }
            "slow_compute" => {
                let seconds = slow_compute_seconds(args)?;
                let task = store.create(new_task_id(), TaskPayload::Working, Kind::Plain, Some(TTL_MS))?;
                let label = args.get("label").and_then(Value::as_str).unwrap_or("");
                store.settle_after(
                    &task.task_id,
                    Duration::from_secs_f64(seconds),
                    TaskPayload::Completed {
                        result: to_object(&text(format!("computed {label} in {seconds} s"))),
                    },
                    None,
                );
                self.task_result(task)
            }
            "failing_job" => {
                let task = store.create(new_task_id(), TaskPayload::Working, Kind::Plain, Some(TTL_MS))?;
                store.settle_after(
                    &task.task_id,
                    Duration::from_millis(1000),
                    TaskPayload::Completed {
                        result: to_object(&CallToolResult::error(vec![ContentBlock::text(
                            "the job failed".to_owned(),
                        )])),
                    },
                    None,
                );
                self.task_result(task)
            }
            "protocol_error_job" => {
                let task = store.create(new_task_id(), TaskPayload::Working, Kind::Plain, Some(TTL_MS))?;
                let mut error = JsonObject::new();
                error.insert("code".to_owned(), json!(-32603));
                error.insert("message".to_owned(), json!("internal error in protocol_error_job"));
                store.settle_after(
                    &task.task_id,
                    Duration::from_millis(200),
                    TaskPayload::Failed { error },
                    Some("internal error in protocol_error_job"),
                );
                self.task_result(task)
            }
            "confirm_delete" => {
                let mut requests = InputRequests::new();
                let file = args.get("filename").and_then(Value::as_str).unwrap_or("");
                requests.insert(
                    "confirm".to_owned(),
                    elicitation(
                        &format!("Delete {file:.200}?"),
                        json!({
                            "type": "object",
                            "properties": {"confirm": {"type": "boolean"}},
                            "required": ["confirm"]
                        }),
                    ),
                );
                let task = store.create(
                    new_task_id(),
                    TaskPayload::InputRequired {
                        input_requests: requests,
                    },
                    Kind::Confirm,
                    Some(TTL_MS),
                )?;
                self.task_result(task)
            }
            "multi_input" => {
                let requests: InputRequests = ["first", "second"]
                    .into_iter()
                    .map(|key| {
                        let question = elicitation(
                            &format!("The {key} answer?"),
                            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                        );
                        (key.to_owned(), question)
                    })
                    .collect();
                let task = store.create(
                    new_task_id(),
                    TaskPayload::InputRequired {
                        input_requests: requests,
                    },
                    Kind::ManyInputs,
                    Some(TTL_MS),
                )?;
                self.task_result(task)
            }
            "huge_id" => {
                let mut id = new_task_id();
                id.push('-');
                while id.len() < HUGE_ID_CHARS {
                    id.push('x');
                }
                let task = store.create(id, TaskPayload::Working, Kind::Plain, None)?;
                self.task_result(task)
            }
            "many_inputs" => {
                let count = match args.get("count") {
                    None | Some(Value::Null) => DEFAULT_MANY_INPUTS,
                    Some(v) => v
                        .as_u64()
                        .map(|n| n as usize)
                        .filter(|n| (1..=MAX_MANY_INPUTS).contains(n))
                        .ok_or_else(|| {
                            McpError::invalid_params("count must be 1..=1000000", None)
                        })?,
                };
                let one = elicitation("m", json!({"type": "object", "properties": {}}));
                let requests: InputRequests =
                    (0..count).map(|i| (format!("k{i}"), one.clone())).collect();
                let task = store.create(
                    new_task_id(),
                    TaskPayload::InputRequired {
                        input_requests: requests,
                    },
                    Kind::ManyInputs,
                    None,
                )?;
                self.task_result(task)
            }
            other => Err(McpError::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }
}

impl ServerHandler for TasksServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(
            "mcpmux-rmcp-tasks-server",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.all_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        if request.name == "quick" {
            let said = args.get("text").and_then(Value::as_str).unwrap_or("");
            return Ok(CallToolResponse::Complete(text(format!("quick: {said}"))));
        }
        if request.name == "add_tool" {
            let Some(name) = args.get("name").and_then(Value::as_str) else {
                return Err(McpError::invalid_params("add_tool needs a name", None));
            };
            self.added.lock().unwrap().push(name.to_owned());
            let told = self
                .broadcast(ServerNotification::ToolListChangedNotification(
                    ToolListChangedNotification::default(),
                ))
                .await;
            return Ok(CallToolResponse::Complete(text(format!("added {name}; told {told}"))));
        }
        if request.name == "touch" {
            let Some(uri) = args.get("uri").and_then(Value::as_str) else {
                return Err(McpError::invalid_params("touch needs a uri", None));
            };
            let told = self
                .broadcast(ServerNotification::ResourceUpdatedNotification(
                    ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri)),
                ))
                .await;
            return Ok(CallToolResponse::Complete(text(format!("told {told}"))));
        }
        if request.name == "greet" {
            let name = args.get("name").and_then(Value::as_str).unwrap_or("");
            return Ok(CallToolResponse::Complete(text(format!("Hello, {name}!"))));
        }
        let declared = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        if request.name == "slow_compute" && !declared {
            // Task-supporting, so a client without the extension gets a plain call.
            let seconds = slow_compute_seconds(&args)?;
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            let label = args.get("label").and_then(Value::as_str).unwrap_or("");
            return Ok(CallToolResponse::Complete(text(format!(
                "computed {label} in {seconds} s"
            ))));
        }
        if request.name == "ask_plain" || request.name == "test_tool_with_task" {
            // SEP-2322: the first round asks, the retry carries the answer.
            let Some(name) = answered_name(&request) else {
                return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                    Some(name_question()),
                    Some(format!("round-1:{}", request.name)),
                )));
            };
            let hello = text(format!("Hello, {name}"));
            if request.name == "ask_plain" || !declared {
                return Ok(CallToolResponse::Complete(hello));
            }
            let task = self.store.create(
                new_task_id(),
                TaskPayload::Working,
                Kind::Plain,
                Some(TTL_MS),
            )?;
            self.store.settle_after(
                &task.task_id,
                Duration::from_millis(100),
                TaskPayload::Completed {
                    result: to_object(&hello),
                },
                None,
            );
            return self.task_result(task);
        }
        if !self.all_tools().iter().any(|t| t.name == request.name) {
            return Err(McpError::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        // Every other tool only runs as a task: a client that did not declare
        // the extension on this request gets -32021 (SEP-2663), before
        // anything is created.
        if !declared {
            return Err(McpError::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        self.start_task(&request.name, &args)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.listeners.lock().unwrap().push(context.sink().clone());
        context.cancelled().await;
        let id = context.sink().id().clone();
        self.listeners.lock().unwrap().retain(|s| *s.id() != id);
        Ok(())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.store.get(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.store.update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.store.cancel(&request.task_id)
    }
}

// ---------------------------------------------------------------------------
// Transports.

/// stdio: every line read from stdin is logged, then handed to rmcp.
async fn serve_stdio(server: TasksServer, log: Arc<Log>) -> Result<(), Box<dyn std::error::Error>> {
    let (mut to_rmcp, from_stdin) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            match stdin.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            log.message(&line, None);
            if to_rmcp.write_all(&line).await.is_err() {
                break;
            }
        }
        // Dropping the writer ends rmcp's input: the server stops.
    });
    let running = server.serve((from_stdin, tokio::io::stdout())).await?;
    running.waiting().await?;
    Ok(())
}

type HttpBody = BoxBody<Bytes, Infallible>;

fn plain(status: http::StatusCode, body: &'static str) -> http::Response<HttpBody> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

/// Streamable HTTP at `/mcp`: each POST body is logged with its headers,
/// then handed to rmcp's `StreamableHttpService`.
async fn serve_http(
    server: TasksServer,
    log: Arc<Log>,
    addr: SocketAddr,
) -> Result<(), Box<dyn std::error::Error>> {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    let config = StreamableHttpServerConfig::default().with_sse_keep_alive(None);
    let service: StreamableHttpService<TasksServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    // Tests read the address (useful with port 0) from stderr.
    eprintln!(
        "rmcp-tasks-server: listening on http://{}/mcp",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        let log = Arc::clone(&log);
        tokio::spawn(async move {
            let handler =
                hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let mut service = service.clone();
                    let log = Arc::clone(&log);
                    async move {
                        if request.uri().path() != "/mcp" {
                            return Ok::<_, Infallible>(plain(
                                http::StatusCode::NOT_FOUND,
                                "not found",
                            ));
                        }
                        let (parts, body) = request.into_parts();
                        let bytes = match Limited::new(body, MAX_HTTP_BODY).collect().await {
                            Ok(collected) => collected.to_bytes(),
                            Err(_) => {
                                return Ok(plain(
                                    http::StatusCode::PAYLOAD_TOO_LARGE,
                                    "body too large or broken",
                                ))
                            }
                        };
                        if parts.method == http::Method::POST {
                            log.message(&bytes, Some(&parts.headers));
                        }
                        let request = http::Request::from_parts(parts, Full::new(bytes));
                        tower_service::Service::call(&mut service, request).await
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await;
        });
    }
}

fn usage() -> ! {
    eprintln!("usage: rmcp-tasks-server [--http ADDR]   (stdio by default; ADDR like 127.0.0.1:0)");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut http_addr = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => {
                let Some(addr) = args.next().and_then(|a| a.parse::<SocketAddr>().ok()) else {
                    usage()
                };
                http_addr = Some(addr);
            }
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    let log = Arc::new(Log::from_env());
    let server = TasksServer::new();
    let outcome = match http_addr {
        Some(addr) => serve_http(server, log, addr).await,
        None => serve_stdio(server, log).await,
    };
    if let Err(e) = outcome {
        eprintln!("rmcp-tasks-server: {e}");
        std::process::exit(1);
    }
}
