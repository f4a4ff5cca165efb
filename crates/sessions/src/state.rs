//! The JSON files of a session: the spec (`session.json`), a round's state
//! (`state.json`) and result (`result.json`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::params::RoundStatus;
use super::settings::Settings;
use super::store;
use mcpmux_core::error::Error;

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
    /// `running`, `completed`, `failed`, `stalled`, `timeout` (a
    /// [`RoundStatus`] word: `String` compares equal to one).
    pub status: String,
    /// When the round began (Unix seconds); the timeout counts from here.
    pub started_at: f64,
    /// When a runner was last started for it (begin, reply or a resume).
    pub spawned_at: f64,
    /// Pid of the process that runs it now, when known.
    #[serde(default)]
    pub pid: Option<u32>,
    /// That process's start time (field 22 of `/proc/<pid>/stat`), recorded
    /// by the runner itself: `end` signals the pid only while a process with
    /// this start time runs this session (see [`super::process`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start_time: Option<u64>,
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
    /// The SHA-256 of `prompt.md` as mcpmux wrote it ([`super::trust::sha256`]):
    /// the command reviewer is given the file only when it still matches.
    /// Absent in a round begun by an older mcpmux (its prompt is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_sha256: Option<String>,
    /// This round's `result.json` carries a MAC: set when the round begins
    /// (and when a result is written). A round begun by an older mcpmux
    /// (false) may have an unsigned result; it is then read as no result,
    /// never as a verdict.
    #[serde(default)]
    pub signed_result: bool,
    /// The SHA-256 of the final answer the agent loop stored as the last
    /// message of `thread.json` (its JSON): a runner resuming the round
    /// takes a stored answer only when it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_sha256: Option<String>,
}

/// `round-NNN/result.json`: how a round ended.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct RoundResult {
    /// Final status.
    pub status: RoundStatus,
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
    /// `results/`: the whole of tool results cut for the model, paged
    /// with `read_result` (`mcpmux_policy::result_store`).
    pub fn results(&self) -> PathBuf {
        self.0.join("results")
    }
    /// `round-NNN/<name>`.
    pub fn round(&self, n: u32, name: &str) -> PathBuf {
        store::round_dir(self.0, n).join(name)
    }
}

/// The highest round number a session may have; a larger one read from a
/// file is `INVALID_SESSION` (no round counter can overflow).
pub const MAX_ROUND: u32 = 10_000;
/// The largest counter (turns, resumes, tool calls, a thread index) read
/// from a `state.json`.
pub const MAX_COUNT: u64 = 1_000_000_000;
/// The largest `session.json` or `state.json` read.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The name of round `n`'s state file inside the session directory.
fn state_name(n: u32) -> String {
    format!("round-{n:03}/state.json")
}

/// Reads a session file (see [`store::read_file`]) after checking its MAC
/// and generation (see [`super::trust::read_verified`]); with whether the
/// generation store recorded the session's end.
fn read_signed<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Result<(T, bool), Error> {
    let path = dir.join(name);
    let verified = super::trust::read_verified(dir, name, MAX_FILE_BYTES, true)?
        .ok_or_else(|| Error::Internal(format!("{} was not read", path.display())))?;
    let value = serde_json::from_slice(&verified.bytes).map_err(|e| {
        Error::InvalidSession(format!("not a readable session: {}: {e}", path.display()))
    })?;
    Ok((value, verified.session_ended))
}

fn out_of_range(path: &Path, what: &str) -> Error {
    Error::InvalidSession(format!("{}: {what} is out of range", path.display()))
}

/// Reads `session.json`: authenticated by this user's key, its round and
/// settings in range, the directory inside its working dir.
pub fn read_spec(dir: &Path) -> Result<Spec, Error> {
    if !dir.is_dir() {
        return Err(Error::InvalidSession(format!(
            "not a session directory: {} (cannot read {})",
            dir.display(),
            Paths(dir).spec().display()
        )));
    }
    let (spec, ended): (Spec, bool) = read_signed(dir, "session.json")?;
    let path = Paths(dir).spec();
    if ended && !spec.ended {
        return Err(Error::InvalidSession(format!(
            "session.json was rolled back: {}: the session was ended, and this copy is from \
             before its end; an ended session stays ended",
            path.display()
        )));
    }
    if spec.version != 1 {
        return Err(Error::InvalidSession(format!(
            "{}: version {} is not supported (expected 1)",
            path.display(),
            spec.version
        )));
    }
    if !(1..=MAX_ROUND).contains(&spec.round) {
        return Err(out_of_range(
            &path,
            &format!("round {} (expected 1 to {MAX_ROUND})", spec.round),
        ));
    }
    if let Err(what) = spec.settings.check_stored() {
        return Err(out_of_range(&path, &what));
    }
    // A session directory reached through a symlink that leads out of the
    // working dir is not this session's (its MAC names the canonical path
    // too; this says why).
    let inside = match (dir.canonicalize(), spec.working_dir.canonicalize()) {
        (Ok(d), Ok(w)) => d.starts_with(w),
        _ => false,
    };
    if !inside {
        return Err(Error::InvalidSession(format!(
            "{} is not inside its working dir {} (a symlink leads out of it, or it was moved)",
            dir.display(),
            spec.working_dir.display()
        )));
    }
    Ok(spec)
}

/// Writes `session.json` with its generation and MAC; an ended spec
/// records the end in the generation store (see [`super::trust::write_signed`]).
pub fn write_spec(dir: &Path, spec: &Spec) -> Result<(), Error> {
    super::trust::write_signed(dir, "session.json", spec, Some(spec.ended))
}

/// Reads the state of round `n`: authenticated by this user's key, its
/// counters in range.
pub fn read_state(dir: &Path, n: u32) -> Result<RoundState, Error> {
    if !(1..=MAX_ROUND).contains(&n) {
        return Err(out_of_range(
            dir,
            &format!("round {n} (expected 1 to {MAX_ROUND})"),
        ));
    }
    let (st, _): (RoundState, bool) = read_signed(dir, &state_name(n))?;
    let path = Paths(dir).round(n, "state.json");
    let counters = [
        ("turns", u64::from(st.turns)),
        ("tool_calls", st.tool_calls),
        ("thread_start", st.thread_start as u64),
        ("resumes", u64::from(st.resumes)),
    ];
    if let Some((name, v)) = counters.iter().find(|(_, v)| *v > MAX_COUNT) {
        return Err(out_of_range(&path, &format!("{name} {v}")));
    }
    let times = [Some(st.started_at), Some(st.spawned_at), st.finished_at];
    if times.iter().flatten().any(|t| !t.is_finite() || *t < 0.0) {
        return Err(out_of_range(&path, "a time"));
    }
    Ok(st)
}

/// Writes the state of round `n` with its generation and MAC.
pub fn write_state(dir: &Path, n: u32, state: &RoundState) -> Result<(), Error> {
    super::trust::write_signed(dir, &state_name(n), state, None)
}

/// The name of round `n`'s result file inside the session directory.
fn result_name(n: u32) -> String {
    format!("round-{n:03}/result.json")
}

/// Reads the result of round `n`, `None` when there is none yet. A result
/// is authenticated by this user's key like `state.json`: one that is not
/// (edited, written by another program, too large, not a regular file) is
/// `INVALID_SESSION` naming it, never a verdict. In a round begun by an
/// older mcpmux (`signed_result` false), which wrote results without a
/// MAC, such a result reads as none, with a warning naming it.
pub fn read_result(dir: &Path, n: u32, st: &RoundState) -> Result<Option<RoundResult>, Error> {
    let name = result_name(n);
    let path = dir.join(&name);
    let read = || -> Result<Option<RoundResult>, Error> {
        let Some(verified) = super::trust::read_verified(dir, &name, MAX_FILE_BYTES, false)? else {
            return Ok(None);
        };
        serde_json::from_slice(&verified.bytes)
            .map(Some)
            .map_err(|e| {
                Error::InvalidSession(format!("not a readable session: {}: {e}", path.display()))
            })
    };
    match read() {
        Err(e) if !st.signed_result => {
            tracing::warn!(
                path = %path.display(),
                "the result of a round begun by an older mcpmux is not used: {e}"
            );
            Ok(None)
        }
        r => r,
    }
}

/// Writes the result of round `n` with its MAC (known config secrets
/// replaced first, as in every session file but `session.json`).
pub fn write_result(dir: &Path, n: u32, result: &RoundResult) -> Result<(), Error> {
    let name = result_name(n);
    let path = dir.join(&name);
    let value = store::stored_value(&path, result)?;
    super::trust::write_signed(dir, &name, &value, None)
}

/// Reads round `n`'s `prompt.md` for the reviewer, checked against the
/// SHA-256 its signed state recorded when mcpmux wrote it: a prompt that
/// was edited, or that no hash vouches for (a round begun by an older
/// mcpmux), is `INVALID_SESSION` naming it.
pub fn read_prompt(dir: &Path, n: u32, st: &RoundState) -> Result<String, Error> {
    let path = Paths(dir).round(n, "prompt.md");
    let bytes = store::read_file(&path, store::MAX_PROMPT_BYTES)?;
    let fail = |why: &str| {
        Error::InvalidSession(format!(
            "prompt.md is not the prompt mcpmux wrote: {}: {why}; mcpmux gives the reviewer \
             only a prompt it wrote itself",
            path.display()
        ))
    };
    match &st.prompt_sha256 {
        None => {
            return Err(fail(
                "its round records no SHA-256 of it (begun by an older mcpmux: reply to start \
                 a new round)",
            ))
        }
        Some(want) if *want != super::trust::sha256(&bytes) => {
            return Err(fail(
                "its SHA-256 does not match the one recorded in the round's state.json (the \
                 file was edited)",
            ))
        }
        Some(_) => {}
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::InvalidSession(format!("not a readable session: {}: {e}", path.display()))
    })
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
