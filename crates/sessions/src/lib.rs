//! # mcpmux-sessions
//!
//! Review sessions (`docs/sessions.md#review-sessions`): `begin`,
//! `wait`, `reply` and `end`, JSON in and JSON out, durable on disk under
//! `<working_dir>/.mcpmux/sessions/<skill>-<YYYYMMDD>-<NNN>/` (see
//! `store` for the layout).
//!
//! A round runs in the background ([`Runner`]): a task of this process, or
//! a detached process that outlives it. Whoever runs a round holds an
//! exclusive `flock` on `runner.lock`; `wait` on a round that is `running`
//! with the lock free (its runner died) resumes it from the stored
//! transcript through the context's runner.
//!
//! Session files are data, not authority: every verb acts only on a
//! session whose `session.json` and current `state.json` carry a valid MAC
//! under this user's key (`trust`), and `end` signals only a runner it
//! can prove is this session's (`process`).
//!
//! Custom skills: a `skill` that is a path to a template file (it contains
//! a `/` or ends in `.md`) is a custom skill; its session directory takes
//! the file's stem as its name, and it ends on `APPROVE` like `review-plan`.

// The docs of items this crate shares with its tests (`internal`) and of
// its settings link to the private modules that own the rules; they
// resolve in `cargo doc --document-private-items`, the maintainers' view.
#![allow(rustdoc::private_intra_doc_links)]
mod agent;
mod command;
mod config_layer;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod generations;
mod input;
mod key_dir;
pub mod llm;
pub mod mcp_tools;
pub mod params;
mod process;
mod providers;
mod review;
mod reviewer;
mod runner;
mod settings;
mod state;
mod store;
mod trust;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::llm::provider::{Message, SharedProvider};
use mcpmux_core::config::Config;
use mcpmux_core::error::Error;
use state::{Paths, RoundResult, RoundState, Spec};

pub use config_layer::{register_config_layers, SESSION_KEYS};
pub use params::{BeginParams, EndParams, Next, ReplyParams, RoundStatus, WaitParams};
pub use settings::Settings;

/// What this crate's own integration tests reach into: the session files'
/// layout, caps and signing, to forge, truncate and roll back files the
/// way an attacker with write access to the directory could. Not part of
/// the API: hidden from the docs, it may change in any release.
#[doc(hidden)]
pub mod internal {
    /// Reading and writing the session's state files.
    pub mod state {
        pub use crate::state::{
            read_spec, read_state, write_result, write_spec, write_state, RoundResult, RoundState,
            MAX_ROUND,
        };
    }
    /// The session directory's layout, caps and runner lock.
    pub mod store {
        pub use crate::store::{
            append_jsonl, round_dir, RunnerLock, MAX_CURSOR_BYTES, MAX_EVENTS_BYTES,
            MAX_JSON_BYTES, MAX_THREAD_BYTES,
        };
    }
    /// Where a process's start time is read (to tell a reused pid).
    pub mod process {
        pub use crate::process::stat;
    }
    /// The per-session generation records.
    pub mod generations {
        pub use crate::generations::{dir, record_path};
    }
    /// The per-user signing key.
    pub mod trust {
        pub use crate::trust::key_path;
    }
}

/// What the verbs need from the host.
#[derive(Clone)]
pub struct SessionContext {
    /// Servers and the `[session]` table; None = no config (no tools, built-in defaults).
    pub config: Option<Config>,
    /// The `host` reviewer (reviewer = "host"); REVIEWER_NOT_FOUND when asked for and None.
    pub host: Option<SharedProvider>,
    /// How rounds run in the background.
    pub runner: Runner,
}

/// How rounds run in the background.
#[derive(Clone, Debug)]
pub enum Runner {
    /// A tokio task in this process (library default; the round dies with the process and resumes on a later wait).
    InProcess,
    /// A detached process (own process group, stdio to /dev/null and a log in the session dir): `program args... <session_dir>` runs the round to its end (the CLI and `serve` use `current_exe()` + a hidden subcommand `review run-round`). The session dir is passed as its canonical path, the last argument: `end` kills a runner only when its command line ends with it (see [`process`]).
    Detached {
        /// The program to start.
        program: PathBuf,
        /// Its arguments before the session directory.
        args: Vec<String>,
    },
}

/// The built-in skills.
pub const SKILLS: &[&str] = &["review-plan", "review-impl", "review-think", "review-pr"];

const TPL_PLAN: &str = include_str!("templates/review-plan.md");
const TPL_IMPL: &str = include_str!("templates/review-impl.md");
const TPL_THINK: &str = include_str!("templates/review-think.md");
const TPL_PR: &str = include_str!("templates/review-pr.md");
const TPL_FOLLOWUP: &str = include_str!("templates/followup.md");
const TPL_FORMAT: &str = include_str!("templates/format.md");
const ANALYSIS_THINK: &str = include_str!("templates/analysis-think.md");
const ANALYSIS_PR: &str = include_str!("templates/analysis-pr.md");

/// Default of `max_wait_seconds` when neither the call nor
/// `MCPMUX_WAIT_DEFAULT_S` gives one.
pub const DEFAULT_WAIT_SECONDS: f64 = 50.0;

/// After a runner is started, `wait` gives it this long to take the lock
/// before it counts the round as orphaned and resumes it.
const RUNNER_GRACE_SECONDS: f64 = 2.0;

// ---------------------------------------------------------------- call

/// Runs `verb` (`begin`, `wait`, `reply` or `end`) with its JSON `params`:
/// the one dispatch every front end uses. An unknown verb is
/// `INVALID_INPUT`.
pub async fn call(ctx: &SessionContext, verb: &str, params: &Value) -> Result<Value, Error> {
    match verb {
        "begin" => begin(ctx, params).await,
        "wait" => wait(ctx, params).await,
        "reply" => reply(ctx, params).await,
        "end" => end(ctx, params).await,
        other => Err(params::unknown_verb(other)),
    }
}

// ---------------------------------------------------------------- begin

/// Starts a session and its round 1 in the background.
///
/// `params`: [`BeginParams`] → `{session_dir, round: 1, status:
/// "running", analysis_prompt?}`. The session limits `max_turns`,
/// `max_tool_calls`, `call_timeout_seconds`, `max_output_bytes` and `scope`
/// go over the config's `[session]` table.
pub async fn begin(ctx: &SessionContext, params: &Value) -> Result<Value, Error> {
    // A span; the round it starts (in-process or detached) continues its trace.
    mcpmux_core::internal::telemetry::span(
        || "review begin".to_owned(),
        false,
        Vec::new,
        begin_traced(ctx, params),
    )
    .await
}

async fn begin_traced(ctx: &SessionContext, params: &Value) -> Result<Value, Error> {
    let p: BeginParams = params::decode(params)?;
    let skill = p.skill.clone();
    let mode = p.mode.clone().filter(|m| !m.is_empty());
    let input = p.input.clone();
    let working_dir = match p.working_dir.as_deref().filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => std::env::current_dir()
            .map_err(|e| Error::InvalidInput(format!("no working_dir and no current dir: {e}")))?,
    };
    let working_dir = working_dir.canonicalize().map_err(|e| {
        Error::InvalidInput(format!(
            "working_dir {} is not a directory: {e}",
            working_dir.display()
        ))
    })?;
    if !working_dir.is_dir() {
        return Err(Error::InvalidInput(format!(
            "working_dir {} is not a directory",
            working_dir.display()
        )));
    }

    let (template, name, custom) = skill_template(&skill, &working_dir)?;

    let mut provided = input::Values::new();
    if skill == "review-impl" {
        let Some(m) = mode.as_deref() else {
            return Err(Error::InvalidInput(
                "skill review-impl needs 'mode': working-tree or branch".into(),
            ));
        };
        let base = input::value(&input, "BASE");
        provided.insert(
            "DIFF".into(),
            input::diff(&working_dir, m, base.as_deref())?,
        );
        provided.insert("MODE".into(), m.to_owned());
    }
    let prompt = format!(
        "{}{}",
        input::render(&template, &input, &provided)?,
        TPL_FORMAT
    );

    // The reviewer is checked after the input, so that a bad input is
    // INVALID_INPUT whatever reviewer is (or is not) available.
    let empty = Map::new();
    let session_table = ctx.config.as_ref().map_or(&empty, |c| &c.session);
    let settings = settings::resolve(session_table, &p)?;
    if let Some(config) = &ctx.config {
        // The policy's [session] keys fail now rather than in the runner.
        mcpmux_policy::PolicySettings::from_session_table(
            &config.session,
            &agent::config_origin(config),
        )?;
    }
    check_reviewer(ctx, &settings)?;
    trust::ensure_key()?;

    let dir = store::create_session_dir(&working_dir, &name)?;
    // A new directory: forget what the generation store kept of a removed
    // session that had the same path.
    trust::new_session(&dir)?;
    // API and host reviewers run mcpmux's own thread: the session's name
    // identifies it. A command reviewer reports its own id.
    let thread_id = (settings.reviewer != "command").then(|| {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let mut stored = settings::for_storage(&settings);
    if let Some(config) = &ctx.config {
        settings::with_references(&mut stored, &config.session_raw, &config.session);
    }
    let spec = Spec {
        version: 1,
        skill: skill.clone(),
        template: custom,
        mode,
        working_dir,
        settings: stored,
        round: 1,
        thread_id,
        created_at: store::now(),
        ended: false,
        config_path: ctx
            .config
            .as_ref()
            .and_then(|c| c.source.as_deref())
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned())),
    };
    let rd = store::create_round_dir(&dir, 1)?;
    store::write_atomic(&rd.join("input.md"), input.as_bytes())?;
    store::write_atomic(&rd.join("prompt.md"), prompt.as_bytes())?;
    let prompt_sha256 = Some(trust::sha256(prompt.as_bytes()));
    store::write_json(&Paths(&dir).thread(), &vec![Message::user(prompt)])?;
    let now = store::now();
    state::write_state(
        &dir,
        1,
        &RoundState {
            status: RoundStatus::Running.into(),
            started_at: now,
            spawned_at: now,
            thread_start: 0,
            prompt_sha256,
            signed_result: true,
            ..Default::default()
        },
    )?;
    state::write_spec(&dir, &spec)?;
    state::event(&dir, 1, json!({"type": "status", "status": "running"}));
    start_runner(ctx, &dir)?;

    let mut out = json!({
        "session_dir": dir.display().to_string(),
        "round": 1,
        "status": "running",
    });
    match skill.as_str() {
        "review-think" => out["analysis_prompt"] = ANALYSIS_THINK.into(),
        "review-pr" => out["analysis_prompt"] = ANALYSIS_PR.into(),
        _ => {}
    }
    Ok(out)
}

/// A skill's template text, the name of its session directories, and the
/// template's path for a custom skill (a `skill` containing `/` or ending
/// in `.md`, relative to `working_dir`).
fn skill_template(
    skill: &str,
    working_dir: &Path,
) -> Result<(String, String, Option<PathBuf>), Error> {
    Ok(match skill {
        "review-plan" => (TPL_PLAN.into(), skill.to_owned(), None),
        "review-impl" => (TPL_IMPL.into(), skill.to_owned(), None),
        "review-think" => (TPL_THINK.into(), skill.to_owned(), None),
        "review-pr" => (TPL_PR.into(), skill.to_owned(), None),
        s if s.contains('/') || s.ends_with(".md") => {
            let path = if Path::new(s).is_absolute() {
                PathBuf::from(s)
            } else {
                working_dir.join(s)
            };
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::UnknownSkill(format!(
                    "cannot read the skill template {}: {e}",
                    path.display()
                ))
            })?;
            let stem: String = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "custom".into())
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            (text, stem, Some(path))
        }
        other => {
            return Err(Error::UnknownSkill(format!(
                "unknown skill '{other}' (expected one of: {}, or the path of a template file)",
                SKILLS.join(", ")
            )))
        }
    })
}

/// Checks at begin that the reviewer can run: the command is on PATH, the
/// host gave a callback, the API key variable is set.
fn check_reviewer(ctx: &SessionContext, settings: &Settings) -> Result<(), Error> {
    match settings.reviewer.as_str() {
        "command" => command::which(&settings.command)
            .map(|_| ())
            .ok_or_else(|| {
                Error::ReviewerNotFound(format!(
                    "reviewer command '{}' was not found on PATH",
                    settings.command
                ))
            }),
        "host" if ctx.host.is_none() => Err(Error::ReviewerNotFound(
            "reviewer 'host' needs a host callback, and none was given".into(),
        )),
        "openai" | "anthropic" => providers::api_key(settings).map(|_| ()),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------- runners

type Tasks = Mutex<HashMap<PathBuf, tokio::task::AbortHandle>>;

fn tasks() -> &'static Tasks {
    static TASKS: OnceLock<Tasks> = OnceLock::new();
    TASKS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Starts a runner for the session's current round.
fn start_runner(ctx: &SessionContext, dir: &Path) -> Result<(), Error> {
    match &ctx.runner {
        Runner::InProcess => {
            let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
                Error::Internal(
                    "Runner::InProcess needs a tokio runtime: call the session verbs from one"
                        .into(),
                )
            })?;
            let ctx = ctx.clone();
            let owned = dir.to_owned();
            // The round continues the trace of the verb that started it.
            let parent = mcpmux_core::telemetry::current_traceparent();
            let handle = runtime.spawn(async move {
                let round = run_round(&ctx, &owned);
                let round = mcpmux_core::telemetry::in_context(parent.as_deref(), None, round);
                if let Err(e) = round.await {
                    tracing::warn!(dir = %owned.display(), "session round failed to run: {e}");
                }
            });
            if let Ok(mut t) = tasks().lock() {
                t.insert(dir.to_owned(), handle.abort_handle());
            }
            Ok(())
        }
        Runner::Detached { program, args } => {
            use std::os::unix::process::CommandExt;
            let log = store::open_file(
                &dir.join("runner.log"),
                std::fs::OpenOptions::new().create(true).append(true),
            )?;
            // The canonical path: `end` recognizes its runner by this last
            // argument (see `process`).
            let dir = dir.canonicalize().map_err(|e| {
                Error::InvalidSession(format!("cannot resolve {}: {e}", dir.display()))
            })?;
            let mut command = std::process::Command::new(program);
            // The detached runner continues the trace of the verb that
            // started it (`TRACEPARENT`, which the CLI reads).
            if let Some(parent) = mcpmux_core::telemetry::current_traceparent() {
                command.env("TRACEPARENT", parent).env_remove("TRACESTATE");
            }
            let mut child = command
                .args(args)
                .arg(&dir)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(log)
                .process_group(0)
                .spawn()
                .map_err(|e| {
                    Error::Internal(format!(
                        "cannot start the round runner {}: {e}",
                        program.display()
                    ))
                })?;
            // Reap it when it ends, if we are still around then.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            Ok(())
        }
    }
}

/// Runs the current round of the session at `session_dir` to its end
/// (what the detached runner calls). Returns at once when another runner
/// holds the round or the round is not running.
pub async fn run_round(ctx: &SessionContext, session_dir: &Path) -> Result<(), Error> {
    runner::run_round(ctx, session_dir).await
}

// ---------------------------------------------------------------- wait

/// Waits up to `max_wait_seconds` for the current round and reports it.
///
/// `params`: [`WaitParams`] → `{status, round,
/// elapsed_seconds, thread_id, review, activities, next, next_reason}` plus
/// `error`, `failure_reason`, `timeout_reason`, `recoverable`,
/// `progress_observed` when they apply.
pub async fn wait(ctx: &SessionContext, params: &Value) -> Result<Value, Error> {
    let p: WaitParams = params::decode(params)?;
    let dir = PathBuf::from(&p.session_dir);
    let max_wait = match p.max_wait_seconds {
        Some(s) if s >= 0.0 && s.is_finite() => s,
        Some(_) => {
            return Err(Error::InvalidInput(
                "'max_wait_seconds' must be a non-negative number of seconds".into(),
            ))
        }
        None => std::env::var("MCPMUX_WAIT_DEFAULT_S")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| *v >= 0.0 && v.is_finite())
            .unwrap_or(DEFAULT_WAIT_SECONDS),
    };
    let spec = state::read_spec(&dir)?;
    let n = spec.round;
    let until = store::now() + max_wait;
    let mut st = state::read_state(&dir, n)?;
    loop {
        if st.status != RoundStatus::Running {
            break;
        }
        if !spec.ended && store::now() - st.spawned_at > RUNNER_GRACE_SECONDS {
            if let Some(lock) = store::RunnerLock::try_acquire(&dir)? {
                // No runner holds the round. Read its state again while
                // holding the lock: a runner writes its final state before
                // it lets go, so a round that just finished is not taken
                // for a dead one (and its state not overwritten).
                st = state::read_state(&dir, n)?;
                if st.status == RoundStatus::Running {
                    // The round's runner is gone: resume it from the stored turns.
                    st.spawned_at = store::now();
                    state::write_state(&dir, n, &st)?;
                    state::event(&dir, n, json!({"type": "status", "status": "resuming"}));
                    drop(lock);
                    start_runner(ctx, &dir)?;
                }
            }
        }
        if st.status != RoundStatus::Running {
            break;
        }
        if store::now() >= until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        st = state::read_state(&dir, n)?;
    }
    report(&dir, &state::read_spec(&dir)?, &st)
}

fn report(dir: &Path, spec: &Spec, st: &RoundState) -> Result<Value, Error> {
    let n = spec.round;
    let result = if st.status == RoundStatus::Running {
        None
    } else {
        state::read_result(dir, n, st)?
    };
    let review = result
        .as_ref()
        .map(|r| r.review.clone())
        .filter(|r| r.is_object())
        .unwrap_or_else(review::empty);
    let (next, reason) = review::next(&review::Outcome {
        status: st.status.as_str(),
        review: Some(&review),
        failure_reason: result.as_ref().and_then(|r| r.failure_reason.as_deref()),
        recoverable: result.as_ref().is_some_and(|r| r.recoverable),
        skill: &spec.skill,
        round: n,
        max_rounds: spec.settings.max_rounds,
    });
    let end = st.finished_at.unwrap_or_else(store::now);
    let mut out = json!({
        "status": st.status,
        "round": n,
        "elapsed_seconds": ((end - st.started_at).max(0.0) * 10.0).round() / 10.0,
        "thread_id": spec.thread_id,
        "review": review,
        "activities": activities(dir, n)?,
        "next": next,
        "next_reason": reason,
    });
    if let Some(r) = &result {
        if let Some(e) = &r.error {
            out["error"] = e.clone().into();
        }
        if let Some(f) = &r.failure_reason {
            out["failure_reason"] = f.clone().into();
        }
        if let Some(t) = &r.timeout_reason {
            out["timeout_reason"] = t.clone().into();
        }
        if r.status == RoundStatus::Timeout || r.status == RoundStatus::Stalled {
            out["recoverable"] = r.recoverable.into();
            out["progress_observed"] = st.progress_observed.into();
        }
    }
    Ok(out)
}

/// The events of round `n` after the wait cursor, advancing the cursor.
fn activities(dir: &Path, n: u32) -> Result<Vec<Value>, Error> {
    let cursor_path = Paths(dir).round(n, "wait-cursor");
    let seen: usize = store::read_file_opt(&cursor_path, store::MAX_CURSOR_BYTES)?
        .and_then(|b| std::str::from_utf8(&b).ok()?.trim().parse().ok())
        .unwrap_or(0);
    let all = store::read_jsonl(&Paths(dir).round(n, "events.jsonl"))?;
    let new: Vec<Value> = all.iter().skip(seen).cloned().collect();
    if all.len() != seen {
        store::write_atomic(&cursor_path, all.len().to_string().as_bytes())?;
    }
    Ok(new)
}

// ---------------------------------------------------------------- reply

/// Starts the next round on the same thread.
///
/// `params`: [`ReplyParams`] → `{status:
/// "started", session_dir, round, thread_id}`.
pub async fn reply(ctx: &SessionContext, params: &Value) -> Result<Value, Error> {
    // A span; the round it starts (in-process or detached) continues its trace.
    mcpmux_core::internal::telemetry::span(
        || "review reply".to_owned(),
        false,
        Vec::new,
        reply_traced(ctx, params),
    )
    .await
}

async fn reply_traced(ctx: &SessionContext, params: &Value) -> Result<Value, Error> {
    let p: ReplyParams = params::decode(params)?;
    let dir = PathBuf::from(&p.session_dir);
    let input = p.input;
    let mut spec = state::read_spec(&dir)?;
    if spec.ended {
        return Err(Error::InvalidSession(format!(
            "session {} has ended",
            dir.display()
        )));
    }
    let prev = state::read_state(&dir, spec.round)?;
    if prev.status == RoundStatus::Running {
        return Err(Error::RoundStillRunning(format!(
            "round {} of {} is still running; wait for it first",
            spec.round,
            dir.display()
        )));
    }
    if let Some(m) = p.model {
        spec.settings.model = Some(m);
    }
    if let Some(e) = p.effort {
        spec.settings.effort = Some(e);
    }
    let mut provided = input::Values::new();
    provided.insert("ROUND".into(), spec.round.to_string());
    let prompt = format!(
        "{}{}",
        input::render(TPL_FOLLOWUP, &input, &provided)?,
        TPL_FORMAT
    );
    // Stored settings keep `${VAR}` references: check what the runner will run.
    let mut runnable = spec.settings.clone();
    let empty = Map::new();
    let table = ctx.config.as_ref().map_or(&empty, |c| &c.session);
    settings::fill_runtime(
        &mut runnable,
        table,
        &mcpmux_core::config::expand_session_value,
    )?;
    check_reviewer(ctx, &runnable)?;
    let n = spec
        .round
        .checked_add(1)
        .filter(|n| *n <= state::MAX_ROUND)
        .ok_or_else(|| {
            Error::LimitExceeded(format!(
                "session {} has had {} rounds, the most a session may have",
                dir.display(),
                spec.round
            ))
        })?;
    let rd = store::create_round_dir(&dir, n)?;
    store::write_atomic(&rd.join("input.md"), input.as_bytes())?;
    store::write_atomic(&rd.join("prompt.md"), prompt.as_bytes())?;
    let prompt_sha256 = Some(trust::sha256(prompt.as_bytes()));
    let mut thread: Vec<Message> =
        store::read_json(&Paths(&dir).thread(), store::MAX_THREAD_BYTES)?;
    // Keep user/assistant alternation: a round that stopped after tool
    // results (or before any answer) gets the new text in that message.
    let thread_start = match thread.last_mut() {
        Some(last) if last.role == Some(crate::llm::provider::Role::User) => {
            if !last.text.is_empty() {
                last.text.push_str("\n\n");
            }
            last.text.push_str(&prompt);
            thread.len() - 1
        }
        _ => {
            thread.push(Message::user(prompt));
            thread.len() - 1
        }
    };
    store::write_json(&Paths(&dir).thread(), &thread)?;
    let now = store::now();
    state::write_state(
        &dir,
        n,
        &RoundState {
            status: RoundStatus::Running.into(),
            started_at: now,
            spawned_at: now,
            thread_start,
            prompt_sha256,
            signed_result: true,
            ..Default::default()
        },
    )?;
    spec.round = n;
    state::write_spec(&dir, &spec)?;
    state::event(&dir, n, json!({"type": "status", "status": "running"}));
    start_runner(ctx, &dir)?;
    Ok(json!({
        "status": "started",
        "session_dir": dir.display().to_string(),
        "round": n,
        "thread_id": spec.thread_id,
    }))
}

// ---------------------------------------------------------------- end

/// Ends the session: stops a running round, writes `meta.json` when
/// finalized.
///
/// `params`: [`EndParams`] (`outcome`: `consensus` or `stalemate`) →
/// `{status: "ended", session_dir, finalized, verdict?, error?}`.
pub async fn end(_ctx: &SessionContext, params: &Value) -> Result<Value, Error> {
    let p: EndParams = params::decode(params)?;
    let dir = PathBuf::from(&p.session_dir);
    let outcome = p.outcome.map(params::Outcome::as_str);
    let mut spec = state::read_spec(&dir)?;
    if spec.ended {
        if let Some(meta) =
            store::read_json_opt::<Value>(&Paths(&dir).meta(), store::MAX_JSON_BYTES)?
        {
            let mut out = json!({"status": "ended", "session_dir": dir.display().to_string(), "finalized": true});
            for k in ["verdict", "error"] {
                if let Some(v) = meta.get(k).filter(|v| !v.is_null()) {
                    out[k] = v.clone();
                }
            }
            return Ok(out);
        }
        return Ok(
            json!({"status": "ended", "session_dir": dir.display().to_string(), "finalized": false}),
        );
    }
    let n = spec.round;
    let mut st = state::read_state(&dir, n)?;
    let mut error: Option<String> = None;
    if st.status == RoundStatus::Running {
        stop_runner(&dir, &st).await;
        st = state::read_state(&dir, n).unwrap_or(st);
        if st.status == RoundStatus::Running {
            let msg = format!("the session was ended while round {n} was running");
            let result = RoundResult {
                status: RoundStatus::Failed,
                review: review::empty(),
                error: Some(msg.clone()),
                failure_reason: Some("ended".into()),
                ..Default::default()
            };
            let observed = st.progress_observed;
            runner::finish(&dir, n, &mut st, &result, observed)?;
            error = Some(msg);
        }
    }
    let result = state::read_result(&dir, n, &st)?;
    // The last verdict any round gave; every result is authenticated (a
    // tampered one is INVALID_SESSION, never a verdict).
    let mut verdict = None;
    for r in (1..=n).rev() {
        let res = if r == n {
            result.clone()
        } else {
            state::read_result(&dir, r, &state::read_state(&dir, r)?)?
        };
        verdict = res.and_then(|res| {
            res.review
                .get("verdict")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        if verdict.is_some() {
            break;
        }
    }
    let completed = result
        .as_ref()
        .is_some_and(|r| r.status == RoundStatus::Completed);
    if error.is_none() && !completed {
        error = result.as_ref().and_then(|r| r.error.clone());
    }
    let finalized = completed || outcome.is_some() || error.is_some();
    spec.ended = true;
    state::write_spec(&dir, &spec)?;
    let mut out = json!({
        "status": "ended",
        "session_dir": dir.display().to_string(),
        "finalized": finalized,
    });
    if let Some(v) = &verdict {
        out["verdict"] = v.clone().into();
    }
    if let Some(e) = &error {
        out["error"] = e.clone().into();
    }
    if finalized {
        store::write_json(
            &Paths(&dir).meta(),
            &json!({
                "skill": spec.skill,
                "rounds": n,
                "verdict": verdict,
                "outcome": outcome,
                "error": error,
                "thread_id": spec.thread_id,
                "reviewer": spec.settings.reviewer,
                "created_at": spec.created_at,
                "ended_at": store::now(),
            }),
        )?;
    }
    Ok(out)
}

/// Stops the runner of a running round: aborts the task in this process,
/// or kills the detached runner (and the process group it leads) when it
/// is provably this session's runner (see [`process`]); waits for its lock
/// to free.
async fn stop_runner(dir: &Path, st: &RoundState) {
    if let Some(handle) = tasks().lock().ok().and_then(|mut t| t.remove(dir)) {
        handle.abort();
    }
    // Only a detached runner is killed; an in-process runner of another
    // process is that host application.
    if let Some(pid) = st.pid.filter(|_| !st.in_process) {
        if store::RunnerLock::is_held(dir) {
            if let Err(why) = process::kill_runner(dir, pid, st.pid_start_time) {
                tracing::debug!(dir = %dir.display(), "the round's runner is not signalled: {why}");
            }
        }
    }
    for _ in 0..50 {
        if !store::RunnerLock::is_held(dir) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Re-exported for hosts that build a `host` reviewer.
pub use crate::llm::host::{HostCallback, HostProvider};

/// A shared [`HostProvider`] from a callback, ready for [`SessionContext::host`].
pub fn host_provider(callback: HostCallback) -> SharedProvider {
    Arc::new(HostProvider::new(callback))
}
