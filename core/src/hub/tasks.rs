//! Tasks through the hub: the handle API (`call_tool_as_task`, `task`,
//! `task_result`, `cancel_task`, `list_tasks`). The calls themselves, and
//! [`Hub::call_tool`]'s automatic use of tasks, live in the client
//! (`client::task_calls`); here a hub tool name or a server name picks the
//! client.

use serde_json::Value;

use super::Hub;
use crate::client::{CallOptions, ToolResult};
use crate::error::Error;
use crate::tasks::{Task, TaskHandle};

impl Hub {
    /// Starts tool `name` (a hub name) as a task and returns its handle at
    /// once, without waiting for it. The tool's `execution.taskSupport` must
    /// be `optional` or `required` and its server must accept task calls
    /// (else `INVALID_INPUT`). A host keeps the handle (plain strings) to
    /// poll with [`Hub::task`], wait with [`Hub::task_result`] or stop with
    /// [`Hub::cancel_task`], also after its own restart while the server
    /// keeps the task. A session policy ([`CallOptions::policy`]) cannot
    /// be applied to a task handle: such a call is `INVALID_INPUT` (use
    /// [`Hub::call_tool`], which runs tasks under the policy).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<TaskHandle, Error> {
        if opts.policy.is_some() {
            return Err(Error::InvalidInput(format!(
                "tool '{name}': a call with a session policy cannot return a task handle (use call_tool)"
            )));
        }
        let (client, tool) = self.route(name, opts).await?;
        let task = client
            .create_task(&tool, arguments, opts)
            .await
            .map_err(|e| e.context(format!("tool '{name}'")))?;
        Ok(task.handle())
    }

    /// The status of task `task_id` of `server` (`tasks/get`). This and
    /// the other handle calls start a lazy server that has not started yet
    /// (a host resuming a task after its restart).
    pub async fn task(&self, server: &str, task_id: &str) -> Result<Task, Error> {
        self.started_client(server).await?.get_task(task_id).await
    }

    /// Waits for task `task_id` of `server` to end and returns its result as
    /// [`Hub::call_tool`] would (polling, answering `input_required` through
    /// the host's handlers), within `opts.max_total_timeout` (else the
    /// server's `max_total_timeout_seconds`); giving up does not cancel it.
    pub async fn task_result(
        &self,
        server: &str,
        task_id: &str,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        self.started_client(server)
            .await?
            .task_result(task_id, opts)
            .await
    }

    /// Cancels task `task_id` of `server` (`tasks/cancel`) and returns it
    /// as the server now reports it.
    pub async fn cancel_task(&self, server: &str, task_id: &str) -> Result<Task, Error> {
        self.started_client(server)
            .await?
            .cancel_task(task_id)
            .await
    }

    /// One look at 2026-07-28 task `task_id` of `server`: the server's
    /// whole `tasks/get` answer ([`crate::client::Client::task_detailed`]).
    pub async fn task_detailed(&self, server: &str, task_id: &str) -> Result<Value, Error> {
        self.started_client(server)
            .await?
            .task_detailed(task_id)
            .await
    }

    /// Passes answers to the inputs 2026-07-28 task `task_id` of `server`
    /// asked for (`tasks/update`, [`crate::client::Client::update_task`]).
    pub async fn update_task(
        &self,
        server: &str,
        task_id: &str,
        responses: &serde_json::Map<String, Value>,
    ) -> Result<(), Error> {
        self.started_client(server)
            .await?
            .update_task(task_id, responses)
            .await
    }

    /// Whether the tasks of `server` can be reached from any connection
    /// to it, so that another process with this config can serve them:
    /// a server over HTTP on the 2026-07-28 revision (no session binds its
    /// tasks). A stdio server's live only in its process.
    pub fn tasks_outlive_connection(&self, server: &str) -> bool {
        let over_network = self
            .slot(server)
            .is_ok_and(|s| s.config.transport.kind() != crate::config::TransportKind::Stdio);
        over_network && self.client(server).is_ok_and(|c| c.is_stateless())
    }

    /// Checks `result`, a `tools/call` result of tool `name` (a hub name)
    /// that came by another way than a call (a task's, read with
    /// [`Hub::task_detailed`]), against the tool's `outputSchema` as a call
    /// with [`crate::ValidateOutput::Error`] would: `OUTPUT_INVALID` when
    /// it does not satisfy it; an error result, or a tool without a
    /// schema, passes.
    pub fn check_tool_output(&self, name: &str, result: &Value) -> Result<(), Error> {
        let Some(tool) = self.tool(name) else {
            return Err(Error::UnknownTool(format!("tool '{name}' is not known")));
        };
        self.client(&tool.server)?
            .check_result_output(&tool.tool, result)
    }

    /// The tasks `server` keeps for this hub's connection (`tasks/list`).
    pub async fn list_tasks(&self, server: &str) -> Result<Vec<Task>, Error> {
        self.started_client(server).await?.list_tasks().await
    }
}
