//! The `command` reviewer: an external agent CLI (by default
//! `codex exec --json -`, later rounds `codex exec --json resume
//! <thread_id> -`) run with the prompt on stdin and `working_dir` as its
//! cwd. Its JSONL events on stdout (`thread.started`, `item.*`,
//! `turn.completed`, `turn.failed`, `error`) become activities, the thread
//! id and the final text, from which the review is read.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::review;
use super::reviewer::{set_thread_id, Finish, Progress};
use super::settings::Settings;
use super::state::{self, Spec};
use mcpmux_core::error::Error;

/// Finds `program` the way a shell would (a path, or a name on `PATH`).
pub fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The argument list for this round: resume arguments when a thread id is
/// known, else the first-round ones; codex gets `-m` / reasoning effort.
pub fn arguments(settings: &Settings, thread_id: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = match thread_id {
        Some(id) => settings
            .resume_args
            .iter()
            .map(|a| a.replace("<thread_id>", id))
            .collect(),
        None => settings.args.clone(),
    };
    let is_codex = Path::new(&settings.command)
        .file_name()
        .is_some_and(|n| n == "codex");
    if is_codex && args.first().map(String::as_str) == Some("exec") {
        let mut extra = Vec::new();
        if let Some(m) = &settings.model {
            extra.extend(["-m".to_owned(), m.clone()]);
        }
        if let Some(e) = &settings.effort {
            extra.extend(["-c".to_owned(), format!("model_reasoning_effort=\"{e}\"")]);
        }
        args.splice(1..1, extra);
    }
    args
}

/// Runs the reviewer for the current round.
pub async fn run(dir: &Path, spec: &Spec, progress: &Progress) -> Result<Finish, Error> {
    let n = spec.round;
    let settings = &spec.settings;
    let Some(program) = which(&settings.command) else {
        return Err(Error::ReviewerNotFound(format!(
            "reviewer command '{}' was not found on PATH",
            settings.command
        )));
    };
    // Only the prompt mcpmux wrote: its hash is in the signed state.
    let prompt = state::read_prompt(dir, n, &state::read_state(dir, n)?)?;
    // Round 1 restarts from scratch; later rounds resume the thread.
    let thread_id = if n > 1 {
        spec.thread_id.as_deref()
    } else {
        None
    };
    let args = arguments(settings, thread_id);
    let mut child = Command::new(&program)
        .args(&args)
        .current_dir(&spec.working_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            Error::ReviewerNotFound(format!("cannot start '{}': {e}", settings.command))
        })?;
    state::event(
        dir,
        n,
        json!({"type": "status", "status": "reviewer_started", "command": settings.command, "pid": child.id()}),
    );
    let mut stdin = child.stdin.take().expect("piped stdin");
    let feed = async move {
        let _ = stdin.write_all(prompt.as_bytes()).await;
        let _ = stdin.shutdown().await;
    };
    let mut stderr = child.stderr.take().expect("piped stderr");
    let err_reader = async move {
        let mut buf = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut buf).await;
        // Drain the rest so the child never blocks on a full pipe.
        let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
        String::from_utf8_lossy(&buf).into_owned()
    };
    let stdout = child.stdout.take().expect("piped stdout");
    let read = async {
        let mut lines = BufReader::new(stdout).lines();
        let mut last_text: Option<String> = None;
        let mut failure: Option<String> = None;
        let mut turn_done = false;
        while let Ok(Some(line)) = lines.next_line().await {
            progress.tick();
            let Ok(ev) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            match ev["type"].as_str().unwrap_or("") {
                // `session.created` / `session_id`: older codex releases.
                "thread.started" | "session.created" => {
                    if let Some(id) = ev["thread_id"].as_str().or(ev["session_id"].as_str()) {
                        set_thread_id(dir, id)?;
                        state::event(dir, n, json!({"type": "thread", "thread_id": id}));
                    }
                }
                "item.completed" => {
                    let item = &ev["item"];
                    // Older codex releases name the field `item_type` and
                    // the answer `assistant_message`.
                    let kind = item["type"].as_str().or(item["item_type"].as_str());
                    match kind.unwrap_or("") {
                        "agent_message" | "assistant_message" => {
                            let text = item["text"].as_str().unwrap_or("").to_owned();
                            let snippet: String = text.chars().take(300).collect();
                            state::event(dir, n, json!({"type": "text", "text": snippet}));
                            last_text = Some(text);
                        }
                        "mcp_tool_call" => state::event(
                            dir,
                            n,
                            json!({"type": "tool_call", "server": item["server"], "tool": item["tool"], "status": item["status"]}),
                        ),
                        "command_execution" => state::event(
                            dir,
                            n,
                            json!({"type": "command", "command": item["command"], "exit_code": item["exit_code"], "status": item["status"]}),
                        ),
                        other if !other.is_empty() => {
                            state::event(dir, n, json!({"type": "item", "item_type": other}))
                        }
                        _ => {}
                    }
                }
                "turn.completed" => turn_done = true,
                "turn.failed" => {
                    failure = Some(
                        ev["error"]["message"]
                            .as_str()
                            .unwrap_or("turn failed")
                            .to_owned(),
                    )
                }
                "error" => failure = Some(ev["message"].as_str().unwrap_or("error").to_owned()),
                _ => {}
            }
        }
        Ok::<_, Error>((last_text, failure, turn_done))
    };
    let (read, _, stderr_text) = tokio::join!(read, feed, err_reader);
    let (last_text, failure, _turn_done) = read?;
    let status = child
        .wait()
        .await
        .map_err(|e| Error::Internal(format!("cannot wait for the reviewer: {e}")))?;
    if let Some(message) = failure {
        return Ok(Finish::Failed {
            error: format!("{}: {message}", settings.command),
            reason: "turn_failed".into(),
        });
    }
    let tail = |s: &str| -> String {
        let s = s.trim();
        let start = s.len().saturating_sub(500);
        let start = (start..s.len())
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(s.len());
        s[start..].to_owned()
    };
    if !status.success() {
        return Ok(Finish::Failed {
            error: format!(
                "{} exited with {status}: {}",
                settings.command,
                tail(&stderr_text)
            ),
            reason: "reviewer_process_exit".into(),
        });
    }
    let Some(text) = last_text else {
        return Ok(Finish::Failed {
            error: format!("{} exited without a final message", settings.command),
            reason: "reviewer_process_exit".into(),
        });
    };
    Ok(Finish::Completed {
        review: review::from_text(&text).unwrap_or_else(review::empty),
        text,
    })
}
