//! MCP tasks (revision 2025-11-25): the shapes on the wire and the bounds put
//! on what a server sends. A pure leaf: the client sends the requests
//! (`client::tasks`), the hub routes them (`hub::tasks`).
//!
//! On the wire: `tools/call` with `params.task = {"ttl": ms}` answers a
//! `CreateTaskResult` (`{"task": {taskId, status, statusMessage?, createdAt,
//! lastUpdatedAt, ttl, pollInterval?}}`); `tasks/get {taskId}` answers the
//! task itself, `tasks/result {taskId}` blocks until the task ends and answers
//! what `tools/call` would have, `tasks/cancel {taskId}` answers the
//! cancelled task, `tasks/list {cursor?}` answers `{tasks, nextCursor?}`, and
//! the server may send `notifications/tasks/status` with the task as params.
//!
//! The 2026-07-28 revision has them as the tasks extension (SEP-2663,
//! [`EXTENSION`]): the client declares it in every request's capabilities,
//! the server in `server/discover`; `tools/call` may answer a flat
//! `CreateTaskResult` (`{resultType: "task", taskId, status, ..., ttlMs,
//! pollIntervalMs?}`), `tasks/get` answers the task with its `result`,
//! `error` or `inputRequests` inline, `tasks/update {taskId,
//! inputResponses}` answers those, and `tasks/cancel` is acknowledged
//! (`tasks/result` and `tasks/list` are gone). Status pushes are
//! `notifications/tasks`.
//!
//! Everything here comes from a server and is treated as hostile: task ids
//! and messages are bounded, unknown statuses are refused, and the poll
//! interval a server asks for is clamped.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;

/// The longest task id accepted from a server or a host (bytes).
pub const MAX_TASK_ID_BYTES: usize = 512;
/// Status messages longer than this (characters) are cut.
pub const MAX_STATUS_MESSAGE_CHARS: usize = 4096;
/// The shortest wait between two polls, whatever the server asks.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between two polls, whatever the server asks.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// The wait between polls when the server suggests none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Most polls of one task in one wait (with [`MIN_POLL_INTERVAL`] that is
/// hours): a bound besides the call's deadline.
pub const MAX_POLLS: u32 = 100_000;

/// How a tool may be called, from its `execution.taskSupport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never as a task (also what an absent or unknown value means).
    Forbidden,
    /// As a task when the caller asks.
    Optional,
    /// Only as a task.
    Required,
}

/// The task support a tool declares in its `execution` object.
pub fn task_support(execution: Option<&Value>) -> TaskSupport {
    match execution
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
    {
        Some("required") => TaskSupport::Required,
        Some("optional") => TaskSupport::Optional,
        _ => TaskSupport::Forbidden,
    }
}

/// The tasks extension's name (2026-07-28, SEP-2663): a key of
/// `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a `server/discover` result's capabilities offer the tasks
/// extension.
pub fn offers_extension(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// Client capabilities with `extensions` declared (each as `{}`), as the
/// 2026-07-28 revision's extensions are declared (the tasks extension,
/// and the events extension, which a client MAY declare).
pub fn declare_extension(capabilities: &Value, names: &[&str]) -> Value {
    let mut capabilities = capabilities.clone();
    if let Value::Object(map) = &mut capabilities {
        let extensions = map
            .entry("extensions")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(extensions) = extensions {
            for name in names {
                extensions.insert((*name).into(), Value::Object(Default::default()));
            }
        }
    }
    capabilities
}

/// The task a 2026-07-28 `tools/call` answered (`resultType: "task"`), or
/// `None` for any other result.
pub fn created_task_flat(server: &str, result: &Value) -> Option<Result<Task, Error>> {
    if result.get("resultType").and_then(Value::as_str) != Some("task") {
        return None;
    }
    Some(Task::from_wire(server, result))
}

/// Whether a server's capabilities accept task-augmented `tools/call`
/// (`capabilities.tasks.requests.tools.call`); without it a client must
/// not ask for a task.
pub fn accepts_tool_tasks(capabilities: &Value) -> bool {
    // Looked up on every call: `Value::pointer` would allocate per segment.
    capabilities
        .get("tasks")
        .and_then(|c| c.get("requests"))
        .and_then(|c| c.get("tools"))
        .and_then(|c| c.get("call"))
        .is_some_and(|c| !c.is_null())
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the requestor: `tasks/result` delivers the server's
    /// questions (elicitation, sampling).
    InputRequired,
    /// Done; `tasks/result` has the result.
    Completed,
    /// Ended in failure; `tasks/result` has the error or an `isError` result.
    Failed,
    /// Cancelled (by `tasks/cancel` or the server).
    Cancelled,
}

impl TaskStatus {
    /// The status as the protocol spells it (`working`, `input_required`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the task can change no more (`completed`, `failed`, `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    fn parse(s: &str) -> Option<TaskStatus> {
        [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What a host keeps to find a task again: the configured server and the
/// server's task id (a plain string, so it can be stored and used after a
/// host restart while the server keeps the task).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskHandle {
    /// The configured server name.
    pub server: String,
    /// The server's task id.
    pub task_id: String,
}

/// One task as a server reported it (serialized with these snake_case
/// names for every front end).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    /// The configured server name.
    pub server: String,
    /// The server's task id.
    pub task_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// The server's `statusMessage` (cut at [`MAX_STATUS_MESSAGE_CHARS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `createdAt` (ISO 8601), as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// `lastUpdatedAt` (ISO 8601), as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// `ttl` in milliseconds (`None`: unlimited or not said).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `pollInterval` in milliseconds, as suggested by the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// Reads a task object (a `tasks/get` or `tasks/cancel` result, the
    /// `task` of a `CreateTaskResult`, `notifications/tasks/status`
    /// params) from `server`. A missing or oversized id, or an unknown
    /// status, is `PROTOCOL_ERROR` naming the server.
    pub fn from_wire(server: &str, v: &Value) -> Result<Task, Error> {
        let bad =
            |what: &str| Error::ProtocolError(format!("server '{server}': invalid task: {what}"));
        let task_id = v
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no string 'taskId'"))?;
        check_task_id(task_id).map_err(|_| bad("'taskId' is empty or too long"))?;
        let status = v
            .get("status")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no string 'status'"))?;
        let status = TaskStatus::parse(status).ok_or_else(|| {
            bad(&format!(
                "unknown status '{}'",
                status.chars().take(40).collect::<String>()
            ))
        })?;
        let text = |key: &str, max: usize| {
            v.get(key)
                .and_then(Value::as_str)
                .map(|s| s.chars().take(max).collect::<String>())
        };
        Ok(Task {
            server: server.to_owned(),
            task_id: task_id.to_owned(),
            status,
            message: text("statusMessage", MAX_STATUS_MESSAGE_CHARS),
            created_at: text("createdAt", 64),
            last_updated_at: text("lastUpdatedAt", 64),
            // 2025-11-25 names, then the 2026-07-28 extension's.
            ttl_ms: v
                .get("ttl")
                .or_else(|| v.get("ttlMs"))
                .and_then(Value::as_u64),
            poll_interval_ms: v
                .get("pollInterval")
                .or_else(|| v.get("pollIntervalMs"))
                .and_then(Value::as_u64),
        })
    }

    /// How long to wait before the next poll: the server's `pollInterval`
    /// clamped to [`MIN_POLL_INTERVAL`]..=[`MAX_POLL_INTERVAL`], or
    /// [`DEFAULT_POLL_INTERVAL`].
    pub fn poll_interval(&self) -> Duration {
        self.poll_interval_ms
            .map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis)
            .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
    }

    /// The handle to find this task again.
    pub fn handle(&self) -> TaskHandle {
        TaskHandle {
            server: self.server.clone(),
            task_id: self.task_id.clone(),
        }
    }
}

/// Checks a task id (from a host or a server): non-empty and at most
/// [`MAX_TASK_ID_BYTES`]; else `INVALID_INPUT`.
pub fn check_task_id(task_id: &str) -> Result<(), Error> {
    if task_id.is_empty() || task_id.len() > MAX_TASK_ID_BYTES {
        return Err(Error::InvalidInput(format!(
            "task id must be 1 to {MAX_TASK_ID_BYTES} bytes (got {})",
            task_id.len()
        )));
    }
    Ok(())
}

/// The task of a `tools/call` answer: `Some` for a `CreateTaskResult`
/// (`{"task": {...}}` without `content`), `None` for a plain result (a
/// server may run a call at once although a task was asked for).
pub fn created_task(server: &str, result: &Value) -> Option<Result<Task, Error>> {
    let task = result.get("task").filter(|t| t.is_object())?;
    if result.get("content").is_some() {
        return None;
    }
    Some(Task::from_wire(server, task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_task_and_clamps_its_poll_interval() {
        let t = Task::from_wire(
            "s",
            &json!({"taskId": "t1", "status": "input_required", "statusMessage": "x".repeat(10_000),
                    "pollInterval": 1, "ttl": 5}),
        )
        .unwrap();
        assert_eq!(t.status, TaskStatus::InputRequired);
        assert_eq!(t.message.as_ref().unwrap().len(), MAX_STATUS_MESSAGE_CHARS);
        assert_eq!(t.poll_interval(), MIN_POLL_INTERVAL);
        let slow = Task {
            poll_interval_ms: Some(u64::MAX),
            ..t.clone()
        };
        assert_eq!(slow.poll_interval(), MAX_POLL_INTERVAL);
        assert_eq!(
            serde_json::to_value(&t).unwrap()["status"],
            "input_required"
        );
    }

    #[test]
    fn reads_the_extensions_flat_task_and_declares_the_extension() {
        let created = json!({"resultType": "task", "taskId": "t9", "status": "working",
            "ttlMs": 60000, "pollIntervalMs": 250, "createdAt": "2026-01-01T00:00:00Z"});
        let t = created_task_flat("s", &created).unwrap().unwrap();
        assert_eq!(
            (t.task_id.as_str(), t.ttl_ms, t.poll_interval_ms),
            ("t9", Some(60000), Some(250))
        );
        assert!(
            created_task_flat("s", &json!({"content": [], "resultType": "complete"})).is_none()
        );
        let caps = declare_extension(&json!({"roots": {}}), &[EXTENSION]);
        assert_eq!(caps["extensions"][EXTENSION], json!({}));
        assert_eq!(caps["roots"], json!({}));
        assert!(offers_extension(&json!({"extensions": {EXTENSION: {}}})));
        assert!(!offers_extension(&json!({"tasks": {}})));
    }

    #[test]
    fn refuses_hostile_tasks() {
        for bad in [
            json!({"status": "working"}),
            json!({"taskId": "", "status": "working"}),
            json!({"taskId": "x".repeat(MAX_TASK_ID_BYTES + 1), "status": "working"}),
            json!({"taskId": "t", "status": "sleeping"}),
            json!({"taskId": 7, "status": "working"}),
        ] {
            let e = Task::from_wire("s", &bad).unwrap_err();
            assert_eq!(e.code(), "PROTOCOL_ERROR", "{bad}");
        }
    }

    #[test]
    fn task_support_and_capability() {
        assert_eq!(
            task_support(Some(&json!({"taskSupport": "required"}))),
            TaskSupport::Required
        );
        assert_eq!(
            task_support(Some(&json!({"taskSupport": "optional"}))),
            TaskSupport::Optional
        );
        assert_eq!(task_support(None), TaskSupport::Forbidden);
        assert!(accepts_tool_tasks(
            &json!({"tasks": {"requests": {"tools": {"call": {}}}}})
        ));
        assert!(!accepts_tool_tasks(&json!({"tasks": {"list": {}}})));
        assert!(created_task("s", &json!({"content": []})).is_none());
        assert!(
            created_task("s", &json!({"task": {"taskId": "a", "status": "working"}}))
                .unwrap()
                .is_ok()
        );
    }
}
