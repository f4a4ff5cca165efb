//! The JSON files of a session: the spec (`session.json`), a round's state
//! (`state.json`) and result (`result.json`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::settings::Settings;
use super::store;
use crate::error::Error;

/// `session.json`: what the session is; no secrets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// Layout version.
    pub version: u32,
    /// The skill as given (`review-plan`, ..., or a template path).
    pub skill: String,
    /// The custom template file, for a custom skill.
    #[serde(default)]
    pub template: Option<PathBuf>,
    /// `working-tree` or `branch` (review-impl).
    #[serde(default)]
    pub mode: Option<String>,
    /// The directory under review.
    pub working_dir: PathBuf,
    /// Reviewer and loop settings.
    pub settings: Settings,
    /// The current (last started) round.
    pub round: u32,
    /// The reviewer's thread id (command reviewer) or the session's own id.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// When the session began (Unix seconds).
    pub created_at: f64,
    /// `end` was called.
    #[serde(default)]
    pub ended: bool,
    /// The config file the session began with (a path, never its
    /// contents): a runner started by a process that has no config of its
    /// own (a `wait` from elsewhere resuming a dead round) loads it, so the
    /// round goes on with the same servers and policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_path: Option<PathBuf>,
}

/// `round-NNN/state.json`: where a round stands.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct RoundState {
    /// `running`, `completed`, `failed`, `stalled`, `timeout`.
    pub status: String,
    /// When the round began (Unix seconds); the timeout counts from here.
    pub started_at: f64,
    /// When a runner was last started for it (begin, reply or a resume).
    pub spawned_at: f64,
    /// Pid of the process that runs it now, when known.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The runner is a task inside a host process (`Runner::InProcess`),
    /// not a process of its own: `end` from another process must not kill
    /// that pid (it is the host application).
    #[serde(default)]
    pub in_process: bool,
    /// Some progress was seen (a turn stored, a stream byte, an event).
    #[serde(default)]
    pub progress_observed: bool,
    /// Agent-loop turns stored.
    #[serde(default)]
    pub turns: u32,
    /// Tool calls made (stored) in this round.
    #[serde(default)]
    pub tool_calls: u64,
    /// Index in `thread.json` of this round's prompt message.
    #[serde(default)]
    pub thread_start: usize,
    /// How many times a runner resumed it.
    #[serde(default)]
    pub resumes: u32,
    /// When it finished.
    #[serde(default)]
    pub finished_at: Option<f64>,
}

/// `round-NNN/result.json`: how a round ended.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct RoundResult {
    /// Final status.
    pub status: String,
    /// `{verdict, blocks, summary?}`.
    #[serde(default)]
    pub review: Value,
    /// The error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `turn_failed`, `reviewer_process_exit`, `max_turns`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Why it timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_reason: Option<String>,
    /// A timeout that can be resumed by a reply.
    #[serde(default)]
    pub recoverable: bool,
    /// The reviewer's final text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Paths of a session directory.
pub struct Paths<'a>(pub &'a Path);

impl Paths<'_> {
    /// `session.json`.
    pub fn spec(&self) -> PathBuf {
        self.0.join("session.json")
    }
    /// `thread.json`.
    pub fn thread(&self) -> PathBuf {
        self.0.join("thread.json")
    }
    /// `meta.json`.
    pub fn meta(&self) -> PathBuf {
        self.0.join("meta.json")
    }
    /// `audit.jsonl`.
    pub fn audit(&self) -> PathBuf {
        self.0.join("audit.jsonl")
    }
    /// `round-NNN/<name>`.
    pub fn round(&self, n: u32, name: &str) -> PathBuf {
        store::round_dir(self.0, n).join(name)
    }
}

/// Reads `session.json`.
pub fn read_spec(dir: &Path) -> Result<Spec, Error> {
    if !dir.is_dir() {
        return Err(Error::InvalidSession(format!(
            "not a session directory: {} (cannot read {})",
            dir.display(),
            Paths(dir).spec().display()
        )));
    }
    store::read_json(&Paths(dir).spec())
}

/// Reads the state of round `n`.
pub fn read_state(dir: &Path, n: u32) -> Result<RoundState, Error> {
    store::read_json(&Paths(dir).round(n, "state.json"))
}

/// Writes the state of round `n`.
pub fn write_state(dir: &Path, n: u32, state: &RoundState) -> Result<(), Error> {
    store::write_json(&Paths(dir).round(n, "state.json"), state)
}

/// Appends an activity to round `n`'s events.
pub fn event(dir: &Path, n: u32, mut value: Value) {
    if let Value::Object(m) = &mut value {
        m.insert(
            "at".into(),
            Value::from((store::now() * 1000.0).round() / 1000.0),
        );
    }
    if let Err(e) = store::append_jsonl(&Paths(dir).round(n, "events.jsonl"), &value) {
        tracing::warn!("cannot record a session event: {e}");
    }
}
