//! Tasks any replica of a fleet can serve: a 2026-07-28 client's task
//! that follows a task of a server every replica reaches the same way (a
//! server over HTTP on the 2026-07-28 revision, whose tasks no connection
//! binds) gets an id sealed with the fleet's key (`--session-key-file`).
//!
//! The id is `mcpmux-[<replica>.]<server>-~<sealed>`: the replica that
//! made it (balancers route on that prefix while it is up, and it answers
//! from the task it follows), then, sealed with AES-256-GCM, the server,
//! the server's own task id, the tool as the client called it and the
//! holder ([`super::tasks::holder_of`] the client's credential). Another
//! replica, or the same one after a restart, opens it and answers
//! `tasks/get`, `tasks/update` and `tasks/cancel` straight from the
//! server: a completed task's result is screened as a call's
//! (`SessionPolicy::screen_for_host`: the tool still offered, its
//! `outputSchema`, redaction, output caps, then the gateway's UI names and
//! framing); `inputRequests` and answers pass as the server keys them.
//! Nothing is kept: the server holds the task.
//!
//! While the replica that made a task is up, requests about it should reach
//! that replica (the shipped balancer configs route them there): it is
//! the one following the task, and its questions (`inputRequests`) are
//! keyed by it. A request that another replica serves meanwhile still
//! reads the server's truth; a `tasks/update` sent there answers the
//! server directly, and the first replica's own question is then left
//! to the call's time limit.
//!
//! Without a shared key, or for a stdio server's task (which lives in one
//! replica's process), ids are as before: they name the replica, which
//! alone can serve them.

use mcpmux_core::error::Error;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::tasks::{task_id, task_id_prefix, unknown_task};
use super::Gateway;

/// What the sealed part is sealed for (so no other sealed text opens as
/// a task, nor a task id as anything else).
const PURPOSE: &str = "mcpmux task";

/// What separates the sealed part from the readable prefix (base64url
/// never holds it; the prefix cannot).
const SEALED_MARK: char = '~';

/// What a sealed id holds.
#[derive(Serialize, Deserialize)]
struct SealedTask {
    /// The configured server.
    #[serde(rename = "s")]
    server: String,
    /// The server's own task id.
    #[serde(rename = "t")]
    task: String,
    /// The tool as the client called it.
    #[serde(rename = "n")]
    tool: String,
    /// Who may use it ([`super::tasks::holder_of`]).
    #[serde(rename = "h", default)]
    holder: Option<u64>,
}

/// The id of a task following task `upstream` of `server`, started by a
/// call of `tool` (as the client named it) by `holder`, sealed so that any
/// replica sharing this one's key can serve it; `None` when the gateway
/// has no shared key, when the server's tasks live in this replica only,
/// or when the id would be longer than a task id may be.
pub(crate) fn sealed_id(
    gateway: &Gateway,
    server: &str,
    upstream: &str,
    tool: &str,
    holder: Option<u64>,
) -> Option<String> {
    let keys = gateway.inner.fleet_keys.get()?;
    if !gateway.inner.hub.tasks_outlive_connection(server) {
        return None;
    }
    let plain = serde_json::to_vec(&SealedTask {
        server: server.to_owned(),
        task: upstream.to_owned(),
        tool: tool.to_owned(),
        holder,
    })
    .ok()?;
    let mut id = task_id_prefix(gateway.inner.options.replica.as_deref(), server);
    id.push(SEALED_MARK);
    id.push_str(&keys.seal_for(PURPOSE, plain)?);
    (id.len() <= mcpmux_core::tasks::MAX_TASK_ID_BYTES).then_some(id)
}

/// The task a sealed `id` stands for, when the fleet's key opens it.
fn open(gateway: &Gateway, id: &str) -> Option<SealedTask> {
    let keys = gateway.inner.fleet_keys.get()?;
    let (_, sealed) = id.rsplit_once(SEALED_MARK)?;
    let plain = keys.open_for(PURPOSE, sealed, mcpmux_core::tasks::MAX_TASK_ID_BYTES)?;
    serde_json::from_slice(&plain).ok()
}

/// Answers `method` (`tasks/get`, `tasks/update` or `tasks/cancel`) of a
/// client holding `holder` about a sealed task this replica does not
/// follow, from its server; `None` when `params` names no such task (one
/// this replica follows, or an id that is not sealed with the fleet's
/// key): the caller answers as for any other.
pub(crate) async fn serve(
    gateway: &Gateway,
    method: &str,
    params: &Value,
    holder: Option<u64>,
) -> Option<Result<Value, Error>> {
    let id = task_id(params).ok()?;
    if gateway.inner.fleet_keys.get().is_none() || gateway.inner.tasks.get(id).is_ok() {
        return None;
    }
    let sealed = open(gateway, id)?;
    if sealed.holder != holder {
        return Some(Err(unknown_task(id)));
    }
    let hub = &gateway.inner.hub;
    let answer = match method {
        "tasks/get" => hub
            .task_detailed(&sealed.server, &sealed.task)
            .await
            .map(|detailed| shown(gateway, id, &sealed, detailed)),
        "tasks/update" => match params.get("inputResponses").and_then(Value::as_object) {
            Some(responses) => hub
                .update_task(&sealed.server, &sealed.task, responses)
                .await
                .map(|()| Value::Object(Map::new())),
            None => Err(Error::InvalidInput(
                "tasks/update: no inputResponses object".into(),
            )),
        },
        _ => hub
            .cancel_task(&sealed.server, &sealed.task)
            .await
            .map(|_| Value::Object(Map::new())),
    };
    Some(answer.map_err(|e| match e {
        // The server no longer knows it: nor does the gateway.
        Error::ServerError { code: -32602, .. } => unknown_task(id),
        other => other,
    }))
}

/// The server's `tasks/get` answer as the gateway's: under the gateway's
/// id, a completed task's result screened as a call's result is (one the
/// policy refuses fails the task, as the call would have failed).
fn shown(gateway: &Gateway, id: &str, sealed: &SealedTask, mut detailed: Value) -> Value {
    let Value::Object(task) = &mut detailed else {
        return detailed;
    };
    task.insert("taskId".into(), id.into());
    if task.get("status").and_then(Value::as_str) != Some("completed") {
        return detailed;
    }
    let Some(result) = task.remove("result") else {
        return detailed;
    };
    let screened = gateway.resolve(&sealed.tool).map_or_else(
        || {
            Err(Error::UnknownTool(format!(
                "tool '{}' is no longer offered here",
                sealed.tool
            )))
        },
        |hub_name| {
            let mut result = result;
            super::tasks::without_related_task(&mut result);
            gateway
                .inner
                .policy
                .screen_for_host(&gateway.inner.hub, &hub_name, &result)
                .map(|r| super::shown::shown_result(gateway, &hub_name, &sealed.tool, r))
        },
    );
    match screened {
        Ok(result) => {
            task.insert("result".into(), result);
        }
        Err(e) => {
            let (message, error) = super::tasks::failure(&e);
            task.insert("status".into(), "failed".into());
            task.insert("statusMessage".into(), message.into());
            task.insert("error".into(), error);
        }
    }
    detailed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sealed_part_follows_the_last_mark_and_the_prefix_has_none() {
        let prefix = task_id_prefix(Some("a"), "my~server");
        assert!(!prefix.contains(SEALED_MARK), "{prefix}");
        let id = format!("{prefix}{SEALED_MARK}AbC-_x");
        assert_eq!(id.rsplit_once(SEALED_MARK).unwrap().1, "AbC-_x");
    }
}
