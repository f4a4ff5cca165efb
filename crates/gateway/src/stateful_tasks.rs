//! Tasks the gateway hands out to its 2025-11-25 clients: the protocol's
//! own tasks (2025-11-25 "Tasks", server side), beside the tasks
//! extension of 2026-07-28 clients (`tasks`), in the same store.
//!
//! A client that initialized on 2025-11-25, when a server behind the
//! gateway can run tasks, is told `capabilities.tasks` (list, cancel,
//! `tools/call`). A `tools/call` it augments with `params.task` is accepted
//! at once: the client gets a `CreateTaskResult` (`{task}`) under an id of
//! the gateway's, the hub's call goes on in the background (as a task
//! upstream when the server can run one), and the client uses
//! `tasks/get`, `tasks/result` (waits for the end; the call's result, or
//! its JSON-RPC error), `tasks/list` and `tasks/cancel`. A question the
//! server asks within the call is sent to the client as a request of the
//! gateway's carrying `_meta["io.modelcontextprotocol/related-task"]`, the
//! task `input_required` until it is answered.
//!
//! A task belongs to the connection that made it: another connection is
//! told it does not exist, and `tasks/list` lists only the caller's. The
//! TTL a client asks for is kept when shorter than the gateway's
//! ([`super::tasks::TTL`]); the store's bounds are the extension's.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcpmux_core::client::CallOptions;
use mcpmux_core::error::Error;
use serde_json::{json, Map, Value};

use super::out::Out;
use super::relay::{RelayTarget, RELATED_TASK};
use super::tasks::{self, GatewayTask};
use super::Gateway;

/// Tasks one `tasks/list` page holds.
const PAGE: usize = 100;

/// The shortest TTL kept (a shorter ask would end the task before a
/// client could read it).
const MIN_TTL: Duration = Duration::from_secs(1);

/// Whether the revision `version` (a client's, negotiated) has the
/// protocol's own tasks.
pub(crate) fn in_revision(version: &str) -> bool {
    // Revisions are dates: every stateful one from 2025-11-25 on.
    version >= "2025-11-25"
}

/// The `capabilities.tasks` the gateway declares to such a client.
pub(crate) fn capability() -> Value {
    json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
}

/// Whether a `tools/call` asks to run as a task (`params.task`).
pub(crate) fn requested(params: &Value) -> bool {
    params.get("task").is_some_and(Value::is_object)
}

/// The task as this revision shows it (`Task`).
fn shown(task: &GatewayTask) -> Value {
    let state = task.lock();
    let mut shown = Map::new();
    shown.insert("taskId".into(), task.id().into());
    shown.insert("status".into(), state.status.into());
    if let Some(m) = &state.message {
        shown.insert("statusMessage".into(), m.clone().into());
    }
    shown.insert(
        "createdAt".into(),
        super::tasks::shown_time(task.created_at).into(),
    );
    shown.insert(
        "lastUpdatedAt".into(),
        super::tasks::shown_time(state.last_updated_at).into(),
    );
    shown.insert("ttl".into(), (task.ttl.as_millis() as u64).into());
    shown.insert("pollInterval".into(), tasks::POLL_INTERVAL_MS.into());
    Value::Object(shown)
}

/// The task `params.taskId` names, when it is `owner`'s.
fn owned(gateway: &Gateway, params: &Value, owner: u64) -> Result<Arc<GatewayTask>, Error> {
    let id = tasks::task_id(params)?;
    gateway
        .inner
        .tasks
        .get(id)
        .ok()
        .filter(|t| t.owner == Some(owner))
        .ok_or_else(|| tasks::not_here(gateway, tasks::TASK_PREFIX, id, tasks::unknown_task(id)))
}

/// Runs a `tools/call` augmented with `params.task` for the connection
/// `owner` (whose questions go to `client`, and its status changes to
/// `out`), a tool of `server` (which its id names): the `CreateTaskResult`
/// at once, the call in the background. `call` runs the hub's call with the
/// options given and gives the client's result.
pub(crate) fn call<C>(
    gateway: &Gateway,
    server: &str,
    params: &Value,
    owner: u64,
    client: Weak<dyn RelayTarget>,
    out: Out,
    call: C,
) -> Result<Value, Error>
where
    C: FnOnce(CallOptions) -> futures::future::BoxFuture<'static, Result<Value, Error>>,
{
    let ttl = params["task"]
        .get("ttl")
        .and_then(Value::as_u64)
        .map_or(tasks::TTL, |ms| {
            Duration::from_millis(ms).clamp(MIN_TTL, tasks::TTL)
        });
    let task = GatewayTask::with_owner(gateway, server, Some(owner), ttl, Some(client))
        .ok_or_else(|| {
            Error::Internal("no randomness for a task id; call without params.task".into())
        })?;
    task.lock().published = true;
    if !gateway.inner.tasks.insert(&task) {
        return Err(Error::LimitExceeded(format!(
            "the gateway keeps at most {} tasks; call without params.task",
            tasks::MAX_TASKS
        )));
    }
    let mut opts = CallOptions::default()
        .with_task(true)
        .with_handlers(task.handlers(None));
    let relay = gateway.inner.relay.clone();
    let routed: Weak<dyn RelayTarget> = {
        let weak: Weak<GatewayTask> = Arc::downgrade(&task);
        weak
    };
    opts.on_task = Some(Arc::new(move |upstream| {
        // A 2025-11-25 server asks its questions as requests of its own,
        // naming its task: they come to this task.
        if let Some(relay) = &relay {
            relay.route_task(&upstream.server, &upstream.task_id, routed.clone());
        }
    }));
    let running = tokio::spawn(call(opts));
    *task.call.lock().unwrap_or_else(|e| e.into_inner()) = Some(running.abort_handle());
    let created = json!({ "task": shown(&task) });
    tokio::spawn(push_status(task.clone(), out));
    let gateway = gateway.clone();
    tokio::spawn(async move {
        let outcome = match running.await {
            Ok(outcome) => outcome,
            Err(e) if e.is_cancelled() => Err(Error::Cancelled("cancelled by the client".into())),
            Err(e) => Err(Error::Internal(format!("tools/call: {e}"))),
        };
        gateway.inner.tasks.finish(&task, outcome);
    });
    Ok(created)
}

/// Sends `notifications/tasks/status` (the task as `tasks/get` shows it)
/// to its connection on each change of its state until it ended or the
/// connection is gone: the revision lets a server tell instead of being
/// polled.
async fn push_status(task: Arc<GatewayTask>, out: Out) {
    let mut changes = task.watch_changes();
    while changes.changed().await.is_ok() {
        let ended = task.has_ended();
        let status = json!({
            "jsonrpc": "2.0",
            "method": "notifications/tasks/status",
            "params": shown(&task),
        });
        // A full queue loses this one (the client polls too); a closed one
        // ends the pushes.
        let delivered = out.try_send(status.into()) || !out.is_closed();
        if !delivered || ended {
            return;
        }
    }
}

/// `tasks/get`.
pub(crate) fn get(gateway: &Gateway, params: &Value, owner: u64) -> Result<Value, Error> {
    owned(gateway, params, owner).map(|t| shown(&t))
}

/// `tasks/result`: waits until the task ended, then answers what the call
/// would have: its result (with the related-task `_meta`), or its error.
pub(crate) async fn result(gateway: &Gateway, params: &Value, owner: u64) -> Result<Value, Error> {
    let task = owned(gateway, params, owner)?;
    task.wait_ended().await;
    let state = task.lock();
    match (state.status, &state.result, &state.error) {
        ("completed", Some(result), _) => {
            let mut result = result.clone();
            if let Value::Object(o) = &mut result {
                let meta = o
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if !meta.is_object() {
                    *meta = Value::Object(Map::new());
                }
                meta[RELATED_TASK] = json!({ "taskId": task.id() });
            }
            Ok(result)
        }
        ("failed", _, Some(error)) => Err(Error::ServerError {
            code: error["code"].as_i64().unwrap_or(-32603),
            message: error["message"]
                .as_str()
                .unwrap_or("the task failed")
                .to_owned(),
            data: None,
        }),
        (status, _, _) => Err(Error::ServerError {
            code: -32603,
            message: format!(
                "task {} was {status}: {}",
                task.id(),
                state.message.as_deref().unwrap_or("no result")
            ),
            data: None,
        }),
    }
}

/// `tasks/list`: the caller's tasks, oldest first, [`PAGE`] at a time
/// (the cursor is the number of tasks already listed).
pub(crate) fn list(gateway: &Gateway, params: &Value, owner: u64) -> Result<Value, Error> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(cursor) => cursor
            .as_str()
            .and_then(|c| c.parse::<usize>().ok())
            .ok_or_else(|| Error::ServerError {
                code: -32602,
                message: "tasks/list: invalid cursor".into(),
                data: None,
            })?,
    };
    let owned = gateway.inner.tasks.owned_by(owner);
    let page: Vec<Value> = owned
        .iter()
        .skip(start)
        .take(PAGE)
        .map(|t| shown(t))
        .collect();
    let mut answer = json!({ "tasks": page });
    if start + PAGE < owned.len() {
        answer["nextCursor"] = (start + PAGE).to_string().into();
    }
    Ok(answer)
}

/// `tasks/cancel`: an ended task is refused (-32602), as the revision
/// says; else it is cancelled, the server's task with it.
pub(crate) fn cancel(gateway: &Gateway, params: &Value, owner: u64) -> Result<Value, Error> {
    let task = owned(gateway, params, owner)?;
    let status = task.lock().status;
    if tasks::terminal(status) {
        return Err(Error::ServerError {
            code: -32602,
            message: format!("task {} already ended ({status})", task.id()),
            data: None,
        });
    }
    task.cancel("cancelled by the client");
    Ok(shown(&task))
}

/// Cancels the tasks of a connection that closed: nobody can read them.
pub(crate) fn forget(gateway: &Gateway, owner: u64) {
    for task in gateway.inner.tasks.owned_by(owner) {
        task.cancel("the client's connection closed");
    }
}
