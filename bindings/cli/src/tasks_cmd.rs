//! `mcpmux task`: the task-handle API of every front end from the shell.
//! `start` a tool as a task and print its handle (the server and the
//! server's task id, plain strings), then in this or a later process `get`
//! its status, wait for its `result`, `cancel` it or `list` a server's
//! tasks. Core does the work (`Hub::call_tool_as_task`, `task`,
//! `task_result`, `cancel_task`, `list_tasks`), on either revision; what a
//! revision lacks (2026-07-28 has no `tasks/list`) is core's `UNSUPPORTED`.
//!
//! A task outlives the process that started it only where its server
//! does: a server over HTTP keeps it, a stdio server started by one
//! `mcpmux` process ends with that process.

use clap::Subcommand;
use mcpmux_core::tasks::Task;
use mcpmux_core::{CallOptions, Error, Hub};
use serde_json::Value;

#[derive(Subcommand)]
pub enum TaskCommand {
    /// Start a tool as a task and print its handle at once (--json: {"server", "task_id"}); the tool's execution.taskSupport must be "optional" or "required".
    Start {
        /// The tool's hub name, as `mcpmux tools` shows it.
        tool: String,
        /// Arguments as a JSON object; `-` reads them from stdin.
        args: Option<String>,
        /// How long the server keeps the task, in seconds (default: the server chooses).
        #[arg(long, value_name = "SECONDS")]
        task_ttl: Option<f64>,
    },
    /// Print a task's status (tasks/get).
    Get {
        /// The server, as the handle names it.
        server: String,
        /// The server's task id, as the handle names it.
        task_id: String,
    },
    /// Wait for a task to end and print its result as `call` does; exit 1 when the result is an error. Giving up (--max-total-timeout, an interrupt) does not cancel it.
    Result {
        /// The server, as the handle names it.
        server: String,
        /// The server's task id, as the handle names it.
        task_id: String,
        /// Upper bound of the wait in seconds (default: the server's max_total_timeout_seconds).
        #[arg(long, value_name = "SECONDS")]
        max_total_timeout: Option<f64>,
    },
    /// Cancel a task (tasks/cancel) and print it as the server now reports it.
    Cancel {
        /// The server, as the handle names it.
        server: String,
        /// The server's task id, as the handle names it.
        task_id: String,
    },
    /// List the tasks a server keeps for this connection (tasks/list; 2025-11-25 only).
    List {
        /// The server.
        server: String,
    },
}

impl TaskCommand {
    /// The server a command is aimed at (only it starts); `start` names a
    /// tool instead, whose prefix says the server.
    pub fn server(&self) -> Option<&str> {
        match self {
            TaskCommand::Start { .. } => None,
            TaskCommand::Get { server, .. }
            | TaskCommand::Result { server, .. }
            | TaskCommand::Cancel { server, .. }
            | TaskCommand::List { server } => Some(server),
        }
    }

    /// The tool `start` names.
    pub fn tool(&self) -> Option<&str> {
        match self {
            TaskCommand::Start { tool, .. } => Some(tool),
            _ => None,
        }
    }

    /// The arguments `start` was given, as written.
    pub fn args(&self) -> Option<&str> {
        match self {
            TaskCommand::Start { args, .. } => args.as_deref(),
            _ => None,
        }
    }
}

/// Runs one command; the exit status is 1 for a `result` that is an error.
pub async fn run(
    hub: &Hub,
    action: &TaskCommand,
    args: Option<&Value>,
    json: bool,
) -> Result<u8, Error> {
    let seconds = |flag: &str, v: Option<f64>| {
        v.map(|v| mcpmux_core::contract::seconds(flag, v))
            .transpose()
    };
    match action {
        TaskCommand::Start { tool, task_ttl, .. } => {
            let mut options = CallOptions::default();
            options.task_ttl = seconds("--task-ttl", *task_ttl)?;
            let handle = hub.call_tool_as_task(tool, args, &options).await?;
            if json {
                super::print_json(&handle)?;
            } else {
                super::print(&format!(
                    "task {} of {}\nresume with: mcpmux task result {} {}",
                    handle.task_id,
                    handle.server,
                    shell_word(&handle.server),
                    shell_word(&handle.task_id)
                ))?;
            }
        }
        TaskCommand::Get { server, task_id } => {
            show(&hub.task(server, task_id).await?, json)?;
        }
        TaskCommand::Result {
            server,
            task_id,
            max_total_timeout,
        } => {
            let mut options = CallOptions::default();
            options.max_total_timeout = seconds("--max-total-timeout", *max_total_timeout)?;
            let result = hub.task_result(server, task_id, &options).await?;
            if json {
                super::print(result.json())?;
            } else {
                super::print(&super::human::tool_result(&result.value()))?;
            }
            return Ok(if result.is_error() {
                super::EXIT_TOOL_ERROR
            } else {
                0
            });
        }
        TaskCommand::Cancel { server, task_id } => {
            show(&hub.cancel_task(server, task_id).await?, json)?;
        }
        TaskCommand::List { server } => {
            let tasks = hub.list_tasks(server).await?;
            if json {
                super::print_json(&tasks)?;
            } else if tasks.is_empty() {
                super::print(&format!("{server} keeps no tasks for this connection"))?;
            } else {
                let lines: Vec<String> = tasks.iter().map(line).collect();
                super::print(&lines.join("\n"))?;
            }
        }
    }
    Ok(0)
}

fn show(task: &Task, json: bool) -> Result<(), Error> {
    if json {
        super::print_json(task)
    } else {
        super::print(&line(task))
    }
}

/// One task in a line: id, status, the server's message.
fn line(task: &Task) -> String {
    let mut text = format!("{} {} {}", task.server, task.task_id, task.status.as_str());
    if let Some(message) = &task.message {
        text.push_str(": ");
        text.push_str(message);
    }
    text
}

/// `word` as one shell word: as it is when it needs no quoting, else in
/// single quotes (a server's task id is whatever the server chose).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/=+@%,".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_is_printed_as_one_shell_word() {
        assert_eq!(shell_word("mcpmux-a.tasks-3f"), "mcpmux-a.tasks-3f");
        assert_eq!(shell_word("it's $x"), r"'it'\''s $x'");
        assert_eq!(shell_word(""), "''");
    }
}
