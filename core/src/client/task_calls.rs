//! Tool calls run as MCP tasks (wire shapes and bounds in `crate::tasks`).
//!
//! [`Client::call_tool`] runs a tool as a task when its
//! `execution.taskSupport` is `required` (or `optional` and
//! [`CallOptions::task`] asks) and the server accepts task-augmented
//! `tools/call`: it sends `tools/call` with `params.task`, polls `tasks/get`
//! at the server's `pollInterval` (clamped), and fetches `tasks/result` once
//! the task ends. When the task needs input (`input_required`), `tasks/result`
//! is called at once: the server sends its `elicitation/create` or
//! `sampling/createMessage` requests while that request is open, and the
//! host's handlers answer them as any other server request. The whole wait
//! is bounded by the call's total time (`max_total_timeout`); past it, or
//! when the caller drops the call, the task is cancelled with `tasks/cancel`.
//!
//! On the 2026-07-28 revision the tasks extension replaces all of that
//! (SEP-2663): the server decides which `tools/call` becomes a task and
//! answers `resultType: "task"`; the client polls `tasks/get`, which carries
//! the task's `result` or `error` once it ended, answers its
//! `inputRequests` through the host's handlers with `tasks/update` (each key
//! once), and cancels with `tasks/cancel` (acknowledged only). There is no
//! `tasks/list`, so listing is refused naming the revision.
//!
//! Every status seen (a poll, `notifications/tasks/status` or
//! `notifications/tasks`) becomes one `task_status` event per change.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::{CallOptions, Client, ToolResult};
use crate::error::Error;
use crate::events::HubEvent;
use crate::jsonrpc::RequestOptions;
use crate::tasks::{self, Task, TaskStatus, TaskSupport};

/// Most `inputRequests` keys one 2026-07-28 task may have answered over its
/// life: each is a host handler's call, perhaps a person's prompt.
const MAX_TASK_INPUTS: usize = 256;

/// Longest error message of a failed task kept (the server chose it).
const MAX_TASK_ERROR_CHARS: usize = 4096;

/// Whether a 2026-07-28 `tools/call` answer is a task (`resultType:
/// "task"`), read without parsing the rest.
pub(super) fn is_task_answer(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "resultType", borrow)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<Probe>(raw.get()).is_ok_and(|p| p.result_type.as_deref() == Some("task"))
}

/// Most tasks whose last status a client remembers (for one event per
/// change); past it the memory starts again, costing at most a repeated event.
const MAX_SEEN_TASKS: usize = 1024;

/// The last status told per task id.
#[derive(Default)]
pub(super) struct Seen {
    last: HashMap<String, (TaskStatus, Option<String>)>,
}

/// The `task_status` event of `task` (its message with secrets replaced).
pub(super) fn status_event(task: &Task) -> HubEvent {
    HubEvent::TaskStatus {
        server: task.server.clone(),
        task_id: task.task_id.clone(),
        status: task.status.as_str().to_owned(),
        message: task
            .message
            .as_deref()
            .map(|m| crate::secrets::redact(m).into_owned()),
    }
}

/// Cancels the task (`tasks/cancel`, on a new engine task) when the call
/// waiting for it is dropped before it ended: also while the `tools/call`
/// that creates it is still unanswered (it runs on its own engine task, so
/// the id that comes back is cancelled).
struct CancelOnDrop {
    client: Client,
    state: Guard,
}

enum Guard {
    /// The creating `tools/call` is in flight on this engine task.
    Creating(tokio::task::JoinHandle<Result<Box<RawValue>, Error>>),
    /// The task exists and the call waits for it.
    Waiting(String),
    /// Nothing to cancel.
    Done,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let state = std::mem::replace(&mut self.state, Guard::Done);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let task_id = match state {
            Guard::Done => return,
            Guard::Waiting(id) => futures::future::Either::Left(async move { Some(id) }),
            Guard::Creating(creating) => {
                let server = client.name().to_owned();
                futures::future::Either::Right(async move {
                    let raw = creating.await.ok()?.ok()?;
                    let value: Value = serde_json::from_str(raw.get()).ok()?;
                    Some(tasks::created_task(&server, &value)?.ok()?.task_id)
                })
            }
        };
        runtime.spawn(async move {
            let Some(task_id) = task_id.await else {
                return;
            };
            if let Err(e) = client.cancel_task(&task_id).await {
                tracing::debug!(server = %client.name(), task_id, error = %e, "tasks/cancel after a dropped call failed");
            }
        });
    }
}

impl Client {
    /// Whether the server accepts task-augmented `tools/call`
    /// (`capabilities.tasks.requests.tools.call`), or on the 2026-07-28
    /// revision offers the tasks extension in `server/discover`.
    pub fn accepts_tool_tasks(&self) -> bool {
        let capabilities = &self.init().capabilities;
        if self.is_stateless() {
            return tasks::offers_extension(capabilities);
        }
        tasks::accepts_tool_tasks(capabilities)
    }

    /// How tool `name` (the server's own name) may run as a task, from its
    /// listed `execution.taskSupport`.
    pub fn task_support(&self, name: &str) -> TaskSupport {
        self.tools()
            .iter()
            .find(|t| t.name == name)
            .map_or(TaskSupport::Forbidden, |t| {
                tasks::task_support(t.execution().as_ref())
            })
    }

    /// Whether the host can call tool `name` at all: a tool that requires a
    /// task on a server that does not accept task calls cannot be.
    pub fn can_call(&self, name: &str) -> bool {
        // On 2026-07-28 `execution.taskSupport` is not used: the server
        // decides, and the client always understands a task answer.
        self.is_stateless()
            || self.task_support(name) != TaskSupport::Required
            || self.accepts_tool_tasks()
    }

    pub(super) fn wants_task(&self, name: &str, opts: &CallOptions) -> bool {
        !self.is_stateless()
            && self.accepts_tool_tasks()
            && match self.task_support(name) {
                TaskSupport::Required => true,
                TaskSupport::Optional => opts.task,
                TaskSupport::Forbidden => false,
            }
    }

    /// Runs tool `name` as a task and waits for its result (see the module doc).
    pub(super) async fn call_as_task(
        &self,
        name: &str,
        arguments: &Value,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let deadline = crate::runtime::deadline_after(self.total_time(opts));
        let creating = {
            let (client, name, arguments, opts) = (
                self.clone(),
                name.to_owned(),
                arguments.clone(),
                opts.clone(),
            );
            tokio::spawn(async move {
                client
                    .send_tools_call(&name, &arguments, Some(&task_params(&opts)), &opts)
                    .await
            })
        };
        let mut guard = CancelOnDrop {
            client: self.clone(),
            state: Guard::Creating(creating),
        };
        let Guard::Creating(creating) = &mut guard.state else {
            unreachable!("just set")
        };
        let created = creating.await;
        guard.state = Guard::Done;
        let raw =
            created.map_err(|e| Error::Internal(format!("tools/call task failed: {e}")))??;
        let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let task = match tasks::created_task(self.name(), &value) {
            // The server ran it at once: that is the result.
            None => {
                return ToolResult::new(raw)
                    .map_err(|e| e.context(format!("server '{}'", self.name())))
            }
            Some(task) => task?,
        };
        if let Some(on_task) = &opts.on_task {
            on_task(&task);
        }
        let task_id = task.task_id.clone();
        guard.state = Guard::Waiting(task_id.clone());
        let result = self.wait_task(task, deadline, name).await;
        guard.state = Guard::Done;
        if !task_ended(&result) {
            // Nobody will fetch it: tell the server to stop.
            if let Err(e) = self.cancel_task(&task_id).await {
                tracing::debug!(server = %self.name(), task_id, error = %e, "tasks/cancel of a call given up on failed");
            }
        }
        result
    }

    /// Creates a task for tool `name` (the server's own name) and returns it
    /// without waiting. A tool whose `taskSupport` is `forbidden` (or
    /// absent), or a server that does not accept task calls, is
    /// `INVALID_INPUT`; a server that ran the call at once instead is
    /// `PROTOCOL_ERROR`.
    pub async fn create_task(
        &self,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<Task, Error> {
        if self.is_stateless() {
            return self.create_task_flat(name, arguments, opts).await;
        }
        if self.task_support(name) == TaskSupport::Forbidden {
            return Err(Error::InvalidInput(format!(
                "tool '{name}' of server '{}' cannot run as a task (its execution.taskSupport is not 'optional' or 'required')",
                self.name()
            )));
        }
        if !self.accepts_tool_tasks() {
            return Err(Error::InvalidInput(format!(
                "server '{}' does not accept tool calls as tasks (no capabilities.tasks.requests.tools.call)",
                self.name()
            )));
        }
        let empty = Value::Object(Default::default());
        let arguments = arguments.unwrap_or(&empty);
        if !arguments.is_object() {
            return Err(Error::InvalidInput(format!(
                "arguments of tool '{name}' must be a JSON object"
            )));
        }
        let raw = self
            .send_tools_call(name, arguments, Some(&task_params(opts)), opts)
            .await?;
        let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let task = tasks::created_task(self.name(), &value).unwrap_or_else(|| {
            Err(Error::ProtocolError(format!(
                "server '{}': tool '{name}' answered at once instead of creating a task",
                self.name()
            )))
        })?;
        self.note_task(&task);
        Ok(task)
    }

    /// [`create_task`](Self::create_task) on 2026-07-28: the call is sent
    /// as it is and the server decides; one it answers at once is
    /// `PROTOCOL_ERROR` saying so (its result is not kept).
    async fn create_task_flat(
        &self,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<Task, Error> {
        let empty = Value::Object(Default::default());
        let arguments = arguments.unwrap_or(&empty);
        if !arguments.is_object() {
            return Err(Error::InvalidInput(format!(
                "arguments of tool '{name}' must be a JSON object"
            )));
        }
        let raw = self.send_tools_call(name, arguments, None, opts).await?;
        let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let task = tasks::created_task_flat(self.name(), &value).unwrap_or_else(|| {
            Err(Error::ProtocolError(format!(
                "server '{}' ({}): tool '{name}' answered at once instead of creating a task \
                 (on this revision the server decides which calls become tasks; use call_tool)",
                self.name(),
                crate::stateless::VERSION
            )))
        })?;
        self.note_task(&task);
        Ok(task)
    }

    /// Waits for the task a 2026-07-28 `tools/call` answered with (`raw`),
    /// as [`call_as_task`](Self::call_as_task) does for one it asked for:
    /// cancelled when the wait times out, fails on our side or is dropped.
    pub(super) async fn follow_created_task(
        &self,
        raw: Box<RawValue>,
        name: &str,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let deadline = crate::runtime::deadline_after(self.total_time(opts));
        let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let task = tasks::created_task_flat(self.name(), &value)
            .unwrap_or_else(|| Err(Error::ProtocolError("not a task".into())))
            .map_err(|e| e.context(format!("tool '{name}'")))?;
        if let Some(on_task) = &opts.on_task {
            on_task(&task);
        }
        let task_id = task.task_id.clone();
        let mut guard = CancelOnDrop {
            client: self.clone(),
            state: Guard::Waiting(task_id.clone()),
        };
        let result = self.wait_flat(task, None, deadline, name).await;
        guard.state = Guard::Done;
        if !task_ended(&result) {
            if let Err(e) = self.cancel_task(&task_id).await {
                tracing::debug!(server = %self.name(), task_id, error = %e, "tasks/cancel of a call given up on failed");
            }
        }
        result
    }

    /// The task's current status (`tasks/get`).
    pub async fn get_task(&self, task_id: &str) -> Result<Task, Error> {
        let deadline = Instant::now() + self.inner.config.timeout;
        self.get_task_within(task_id, deadline).await
    }

    async fn get_task_within(&self, task_id: &str, deadline: Instant) -> Result<Task, Error> {
        tasks::check_task_id(task_id)?;
        let ropts = self.task_request_options(deadline, false);
        let raw = self
            .rpc("tasks/get", Some(json!({ "taskId": task_id })), &ropts)
            .await?;
        let task = self.read_task(task_id, raw.get())?;
        self.note_task(&task);
        Ok(task)
    }

    /// Waits for the task to end and returns its result (as
    /// [`Client::call_tool`] would), polling `tasks/get` and answering
    /// `input_required` through the host's handlers, within the call's total
    /// time (`opts.max_total_timeout`, else the server's). The task is not
    /// cancelled when this gives up: its owner may wait again.
    pub async fn task_result(
        &self,
        task_id: &str,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let deadline = crate::runtime::deadline_after(self.total_time(opts));
        if self.is_stateless() {
            let (task, detailed) = self.get_detailed(task_id, deadline).await?;
            return self.wait_flat(task, Some(detailed), deadline, "").await;
        }
        let task = self.get_task_within(task_id, deadline).await?;
        self.wait_task(task, deadline, "").await
    }

    /// Cancels the task (`tasks/cancel`) and returns it as the server now
    /// reports it.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Task, Error> {
        tasks::check_task_id(task_id)?;
        let deadline = Instant::now() + self.inner.config.timeout;
        let ropts = self.task_request_options(deadline, false);
        let raw = self
            .rpc("tasks/cancel", Some(json!({ "taskId": task_id })), &ropts)
            .await?;
        if self.is_stateless() {
            // Only acknowledged on 2026-07-28: the task as it is now.
            return self.get_task_within(task_id, deadline).await;
        }
        let task = self.read_task(task_id, raw.get())?;
        self.note_task(&task);
        Ok(task)
    }

    /// One look at a 2026-07-28 task (`tasks/get`): the server's whole
    /// answer, with its `result`, `error` or `inputRequests`, checked as a
    /// task of that id (else `PROTOCOL_ERROR`). Nothing is answered or
    /// waited for: what a proxy that keeps no state of the task serves
    /// from (a gateway replica that did not start it). On a 2025-11-25
    /// server, whose `tasks/get` carries none of that, `INVALID_INPUT`
    /// naming the revision.
    pub async fn task_detailed(&self, task_id: &str) -> Result<Value, Error> {
        self.require_tasks_extension("the whole tasks/get answer")?;
        let deadline = Instant::now() + self.inner.config.timeout;
        let (task, detailed) = self.get_detailed(task_id, deadline).await?;
        self.note_task(&task);
        Ok(detailed)
    }

    /// Answers inputs of a 2026-07-28 task as given (`tasks/update` with
    /// `responses`: `inputRequests` keys to their answers, at most 16 of
    /// them, each key at most [`tasks::MAX_TASK_ID_BYTES`] long, else
    /// `INVALID_INPUT`). For a
    /// proxy passing its client's answers on; a host answers through its
    /// handlers instead. On a 2025-11-25 server, `INVALID_INPUT` naming
    /// the revision.
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: &serde_json::Map<String, Value>,
    ) -> Result<(), Error> {
        self.require_tasks_extension("tasks/update")?;
        tasks::check_task_id(task_id)?;
        if responses.len() > crate::stateless::MAX_INPUT_REQUESTS
            || responses.keys().any(|k| k.len() > tasks::MAX_TASK_ID_BYTES)
        {
            return Err(Error::InvalidInput(format!(
                "tasks/update: at most {} inputResponses, each key at most {} bytes",
                crate::stateless::MAX_INPUT_REQUESTS,
                tasks::MAX_TASK_ID_BYTES
            )));
        }
        let deadline = Instant::now() + self.inner.config.timeout;
        let ropts = self.task_request_options(deadline, false);
        self.rpc(
            "tasks/update",
            Some(json!({ "taskId": task_id, "inputResponses": responses })),
            &ropts,
        )
        .await
        .map_err(|e| e.context(format!("server '{}': tasks/update", self.name())))?;
        Ok(())
    }

    /// `INVALID_INPUT` unless the connection speaks the revision of the
    /// tasks extension (`what` names what needed it).
    fn require_tasks_extension(&self, what: &str) -> Result<(), Error> {
        if self.is_stateless() {
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "server '{}': {what} is of the {} tasks extension; this connection speaks an older revision",
            self.name(),
            crate::stateless::VERSION
        )))
    }

    /// Every task the server keeps for this connection (`tasks/list`,
    /// following pagination, bounded as every listing).
    pub async fn list_tasks(&self) -> Result<Vec<Task>, Error> {
        if self.is_stateless() {
            return Err(Error::InvalidInput(format!(
                "server '{}' speaks {}, whose tasks extension has no tasks/list: \
                 keep the ids of the tasks you start (task, task_result and cancel_task take them)",
                self.name(),
                crate::stateless::VERSION
            )));
        }
        let items = self.list_all("tasks/list", "tasks").await?;
        items
            .iter()
            .map(|item| Task::from_wire(self.name(), item))
            .collect()
    }

    /// Polls until the task ends, then fetches its result. `tool` names the
    /// tool in errors (empty when unknown).
    async fn wait_task(
        &self,
        mut task: Task,
        deadline: Instant,
        tool: &str,
    ) -> Result<ToolResult, Error> {
        if self.is_stateless() {
            return Box::pin(self.wait_flat(task, None, deadline, tool)).await;
        }
        let label = self.task_label(&task.task_id, tool);
        let what = || label.clone();
        let mut polls = 0u32;
        loop {
            self.note_task(&task);
            match task.status {
                // `tasks/result` blocks until the end; for `input_required`
                // the server asks its questions while it is open.
                TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired => {
                    return self.fetch_result(&task, deadline).await.map_err(|e| {
                        let why = match (&task.status, &task.message) {
                            (TaskStatus::Failed, Some(m)) => {
                                format!(" failed ({})", crate::secrets::redact(m))
                            }
                            (TaskStatus::Failed, None) => " failed".to_owned(),
                            _ => String::new(),
                        };
                        e.context(format!("{}{why}", what()))
                    });
                }
                TaskStatus::Cancelled => {
                    let why = task
                        .message
                        .as_deref()
                        .map(|m| format!(": {}", crate::secrets::redact(m)))
                        .unwrap_or_default();
                    return Err(Error::Cancelled(format!("{} was cancelled{why}", what())));
                }
                TaskStatus::Working => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || polls >= tasks::MAX_POLLS {
                return Err(Error::Timeout(format!(
                    "{} did not finish within the call's total time (max_total_timeout_seconds) after {polls} polls",
                    what()
                )));
            }
            tokio::time::sleep(task.poll_interval().min(left)).await;
            polls += 1;
            if Instant::now() >= deadline {
                continue;
            }
            task = match self.get_task_within(&task.task_id, deadline).await {
                Ok(task) => task,
                // A poll sent just before the call's deadline times out
                // with it: that is the call's total time running out (said
                // at the top of the loop), not a silent server.
                Err(Error::Timeout(_)) if Instant::now() >= deadline => continue,
                Err(e) => return Err(e),
            };
        }
    }

    /// `tasks/get` on 2026-07-28: the task and the whole answer (its
    /// `result`, `error` or `inputRequests`).
    async fn get_detailed(&self, task_id: &str, deadline: Instant) -> Result<(Task, Value), Error> {
        tasks::check_task_id(task_id)?;
        let ropts = self.task_request_options(deadline, false);
        let raw = self
            .rpc("tasks/get", Some(json!({ "taskId": task_id })), &ropts)
            .await?;
        let task = self.read_task(task_id, raw.get())?;
        let detailed = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        Ok((task, detailed))
    }

    /// Polls a 2026-07-28 task until it ends and returns its result
    /// (`detailed`: the last `tasks/get` answer, when there is one). Input it
    /// asks for is answered through the host's handlers with `tasks/update`,
    /// each key once. `tool` names the tool in errors (empty when unknown).
    async fn wait_flat(
        &self,
        mut task: Task,
        mut detailed: Option<Value>,
        deadline: Instant,
        tool: &str,
    ) -> Result<ToolResult, Error> {
        let label = self.task_label(&task.task_id, tool);
        let mut answered: HashSet<String> = HashSet::new();
        let mut polls = 0u32;
        // Status notifications asked for on the listen stream (SEP-2663):
        // where the server pushes the task, polling is only a safety net.
        let mut pushes = self
            .inner
            .listener
            .as_ref()
            .and_then(|l| l.follow_task(&task.task_id));
        let mut polled_since_acknowledged = false;
        loop {
            self.note_task(&task);
            // What `tasks/get` said; a `CreateTaskResult` carries none of it.
            let told = detailed.as_ref();
            match task.status {
                TaskStatus::Completed => {
                    if let Some(result) = told.and_then(|d| d.get("result")) {
                        let raw = serde_json::value::to_raw_value(result)
                            .map_err(|e| Error::Internal(format!("{label}: {e}")))?;
                        return ToolResult::new(raw).map_err(|e| e.context(label.clone()));
                    }
                    if told.is_some() {
                        return Err(Error::ProtocolError(format!(
                            "{label} completed without a result"
                        )));
                    }
                }
                TaskStatus::Failed => {
                    if let Some(error) = told.and_then(|d| d.get("error")) {
                        return Err(task_error(error).context(format!("{label} failed")));
                    }
                    if told.is_some() {
                        let why = task
                            .message
                            .as_deref()
                            .map(|m| format!(": {}", crate::secrets::redact(m)))
                            .unwrap_or_default();
                        return Err(Error::ServerError {
                            code: crate::jsonrpc::codes::INTERNAL_ERROR,
                            message: format!("{label} failed{why}"),
                            data: None,
                        });
                    }
                }
                TaskStatus::Cancelled => {
                    let why = task
                        .message
                        .as_deref()
                        .map(|m| format!(": {}", crate::secrets::redact(m)))
                        .unwrap_or_default();
                    return Err(Error::Cancelled(format!("{label} was cancelled{why}")));
                }
                TaskStatus::InputRequired => {
                    if let Some(requests) = told.and_then(|d| d.get("inputRequests")) {
                        self.answer_task_inputs(&task, requests, &mut answered, deadline, &label)
                            .await?;
                    }
                }
                TaskStatus::Working => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || polls >= tasks::MAX_POLLS {
                return Err(Error::Timeout(format!(
                    "{label} did not finish within the call's total time (max_total_timeout_seconds) after {polls} polls"
                )));
            }
            // The first look after creation is at once when the task is
            // already past `working` (its result or questions are there).
            if detailed.is_some() || task.status == TaskStatus::Working {
                // Once the server agreed to push, a poll that starts after
                // its acknowledgment catches what ended before it; after
                // that, polls are only a safety net.
                let acknowledged = pushes.as_ref().is_some_and(|w| w.acknowledged());
                let wait = if acknowledged && polled_since_acknowledged {
                    tasks::MAX_POLL_INTERVAL
                } else {
                    task.poll_interval()
                };
                polled_since_acknowledged = acknowledged;
                let pushed = match pushes.as_mut() {
                    Some(watch) => watch.next(wait.min(left)).await,
                    None => {
                        tokio::time::sleep(wait.min(left)).await;
                        None
                    }
                };
                // A pushed task is what `tasks/get` would answer: no poll.
                if let Some(pushed) = pushed {
                    polls += 1;
                    match self.read_task(&task.task_id, &pushed.to_string()) {
                        Ok(read) => {
                            (task, detailed) = (read, Some(pushed));
                            continue;
                        }
                        Err(e) => {
                            tracing::debug!(server = %self.name(), error = %e, "pushed task ignored")
                        }
                    }
                }
            }
            polls += 1;
            if Instant::now() >= deadline {
                continue;
            }
            (task, detailed) = match self.get_detailed(&task.task_id, deadline).await {
                Ok((task, value)) => (task, Some(value)),
                Err(Error::Timeout(_)) if Instant::now() >= deadline => continue,
                Err(e) => return Err(e),
            };
        }
    }

    /// Answers the `inputRequests` of a 2026-07-28 task not answered yet
    /// (`answered` holds the keys sent), with one `tasks/update`.
    async fn answer_task_inputs(
        &self,
        task: &Task,
        requests: &Value,
        answered: &mut HashSet<String>,
        deadline: Instant,
        label: &str,
    ) -> Result<(), Error> {
        let requests = requests.as_object().ok_or_else(|| {
            Error::ProtocolError(format!("{label}: 'inputRequests' is not an object"))
        })?;
        let fresh: Vec<(&String, &Value)> = requests
            .iter()
            .filter(|(key, _)| !answered.contains(key.as_str()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        if fresh.len() > crate::stateless::MAX_INPUT_REQUESTS
            || answered.len() + fresh.len() > MAX_TASK_INPUTS
        {
            return Err(Error::ProtocolError(format!(
                "{label} asked for {} inputs at once, {} before (at most {} at once, {MAX_TASK_INPUTS} in all)",
                fresh.len(),
                answered.len(),
                crate::stateless::MAX_INPUT_REQUESTS
            )));
        }
        if let Some(key) = fresh
            .iter()
            .find(|(key, _)| key.len() > tasks::MAX_TASK_ID_BYTES)
        {
            return Err(Error::ProtocolError(format!(
                "{label}: an inputRequests key of {} bytes",
                key.0.len()
            )));
        }
        // Asked together: the task waits for all of them, and a host (or a
        // gateway's client) sees them at once.
        let asked = fresh.into_iter().map(|(key, question)| async move {
            Ok::<_, Error>((key.clone(), self.answer(question.clone()).await?))
        });
        let left = deadline.saturating_duration_since(Instant::now());
        let responses: serde_json::Map<String, Value> =
            tokio::time::timeout(left, futures::future::try_join_all(asked))
                .await
                .map_err(|_| {
                    Error::Timeout(format!(
                        "{label}: the host did not answer its input within the call's total time"
                    ))
                })??
                .into_iter()
                .collect();
        let keys: Vec<String> = responses.keys().cloned().collect();
        let ropts = self.task_request_options(deadline, false);
        self.rpc(
            "tasks/update",
            Some(json!({ "taskId": task.task_id, "inputResponses": responses })),
            &ropts,
        )
        .await
        .map_err(|e| e.context(format!("{label}: tasks/update")))?;
        answered.extend(keys);
        Ok(())
    }

    /// `tasks/result`: blocks until the task ends (up to `deadline`).
    async fn fetch_result(&self, task: &Task, deadline: Instant) -> Result<ToolResult, Error> {
        let ropts = self.task_request_options(deadline, true);
        if ropts.timeout.is_zero() {
            return Err(Error::Timeout(
                "no time left for tasks/result (max_total_timeout_seconds)".into(),
            ));
        }
        let raw = self
            .rpc(
                "tasks/result",
                Some(json!({ "taskId": task.task_id })),
                &ropts,
            )
            .await?;
        ToolResult::new(raw)
    }

    /// Reads a task answer for `task_id`; one about another id is a
    /// `PROTOCOL_ERROR`.
    fn read_task(&self, task_id: &str, raw: &str) -> Result<Task, Error> {
        let value: Value = serde_json::from_str(raw).map_err(|e| {
            Error::ProtocolError(format!("server '{}': invalid task: {e}", self.name()))
        })?;
        let task = Task::from_wire(self.name(), &value)?;
        if task.task_id != task_id {
            return Err(Error::ProtocolError(format!(
                "server '{}': asked for task '{}', got task '{}'",
                self.name(),
                task_id_short(task_id),
                task_id_short(&task.task_id)
            )));
        }
        Ok(task)
    }

    /// Sends a `task_status` event when this status (or its message) is new
    /// for the task. A task that ended stays ended: a late, older status is
    /// not told.
    pub(super) fn note_task(&self, task: &Task) {
        let now = (task.status, task.message.clone());
        {
            let mut seen = self.inner.task_seen.lock().unwrap();
            match seen.last.get(&task.task_id) {
                Some(last) if *last == now => return,
                Some((last, _)) if last.is_terminal() && !task.status.is_terminal() => return,
                Some(_) => {}
                None if seen.last.len() >= MAX_SEEN_TASKS => seen.last.clear(),
                None => {}
            }
            seen.last.insert(task.task_id.clone(), now);
        }
        self.inner.events.send(status_event(task));
    }

    /// The total time of one call: `max_total_timeout` (never less than its
    /// `timeout`).
    fn total_time(&self, opts: &CallOptions) -> Duration {
        let config = &self.inner.config;
        let timeout = opts.timeout.unwrap_or(config.timeout);
        opts.max_total_timeout
            .unwrap_or(config.max_total_timeout)
            .max(timeout)
    }

    /// Options of one task request: the server's timeout, never past
    /// `deadline`; a `blocking` one (`tasks/result`) may take all the time
    /// left.
    fn task_request_options(&self, deadline: Instant, blocking: bool) -> RequestOptions {
        let mut ropts = self.request_options(&CallOptions::default());
        let left = deadline.saturating_duration_since(Instant::now());
        ropts.timeout = if blocking {
            left
        } else {
            ropts.timeout.min(left)
        };
        ropts.max_total = ropts.timeout;
        ropts
    }
}

impl Client {
    /// How errors name a task: its server, id and tool (`tool` empty when
    /// unknown).
    fn task_label(&self, task_id: &str, tool: &str) -> String {
        let of = if tool.is_empty() {
            String::new()
        } else {
            format!(" of tool '{tool}'")
        };
        format!(
            "server '{}': task '{}'{of}",
            self.name(),
            task_id_short(task_id)
        )
    }
}

/// `params.task` of a task-augmented request.
fn task_params(opts: &CallOptions) -> Value {
    match opts.task_ttl {
        Some(ttl) => json!({ "ttl": u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX) }),
        None => json!({}),
    }
}

/// A task id as put in an error message (ids are bounded, but messages are
/// kept short).
fn task_id_short(task_id: &str) -> String {
    task_id.chars().take(80).collect()
}

/// A failed 2026-07-28 task's `error` (`{code, message, data?}`) as the
/// server error it stands for; its message cut to a bound.
/// Whether the wait for a task ended with the task (its result, its
/// failure, its cancellation) rather than giving up on it (out of time, a
/// server breaking the rules, a question the host could not answer): a
/// task given up on is left running unless cancelled.
fn task_ended(result: &Result<ToolResult, Error>) -> bool {
    matches!(
        result,
        Ok(_) | Err(Error::Cancelled(_) | Error::ServerError { .. })
    )
}

fn task_error(error: &Value) -> Error {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(crate::jsonrpc::codes::INTERNAL_ERROR);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message")
        .chars()
        .take(MAX_TASK_ERROR_CHARS)
        .collect::<String>();
    Error::ServerError {
        code,
        message: crate::secrets::redact(&message).into_owned(),
        data: error.get("data").cloned(),
    }
}
