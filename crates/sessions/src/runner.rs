//! Running one round to its end: the runner lock, the stall and timeout
//! watchdog, and the final write of `result.json` + `state.json`. The
//! reviewers it runs (`agent`, `command`) report through
//! [`super::reviewer`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::params::RoundStatus;
use super::reviewer::{Finish, Progress};
use super::state::{self, RoundResult, RoundState, Spec};
use super::store::{self, RunnerLock};
use super::{agent, command, SessionContext};
use mcpmux_core::error::Error;

/// How many times a round is resumed after its runner died before it is
/// given up as failed (`failure_reason = "runner_died"`).
const MAX_RESUMES: u32 = 5;

/// The context a round runs in: a runner without a config of its own
/// (started by a `wait` from a process that has none) uses the config the
/// session began with.
fn with_session_config(ctx: &SessionContext, spec: &Spec) -> SessionContext {
    match (&ctx.config, &spec.config_path) {
        (None, Some(path)) => match mcpmux_core::config::Config::load(path) {
            Ok(config) => SessionContext {
                config: Some(config),
                ..ctx.clone()
            },
            Err(e) => {
                tracing::warn!("cannot load the session's config: {e}");
                ctx.clone()
            }
        },
        _ => ctx.clone(),
    }
}

/// Why no runner can run this round, as an error and a failure reason:
/// its settings no longer resolve (the config changed), or runners kept
/// dying before they finished it. Fills the settings' runtime part
/// otherwise.
fn unrunnable(
    ctx: &SessionContext,
    spec: &mut Spec,
    st: &RoundState,
) -> Option<(String, &'static str)> {
    let empty = serde_json::Map::new();
    let table = ctx.config.as_ref().map_or(&empty, |c| &c.session);
    match super::settings::fill_runtime(
        &mut spec.settings,
        table,
        &mcpmux_core::config::expand_session_value,
    ) {
        Err(e) => Some((format!("{}: {e}", e.code()), "turn_failed")),
        Ok(()) if st.resumes > MAX_RESUMES => Some((
            format!(
                "the round's runner stopped {} times without finishing it",
                st.resumes
            ),
            "runner_died",
        )),
        Ok(()) => None,
    }
}

/// What a round that ran to its end, failed, stalled or timed out stored
/// as its result (`observed`: whether the reviewer showed any progress, so
/// a timed-out round can be resumed).
fn round_result(
    outcome: Result<Finish, &'static str>,
    settings: &super::Settings,
    observed: bool,
) -> RoundResult {
    match outcome {
        Ok(Finish::Completed { review, text }) => RoundResult {
            status: RoundStatus::Completed,
            review,
            text: Some(text),
            ..Default::default()
        },
        Ok(Finish::Failed { error, reason }) => RoundResult {
            status: RoundStatus::Failed,
            review: super::review::empty(),
            error: Some(error),
            failure_reason: Some(reason),
            ..Default::default()
        },
        Err("stalled") => RoundResult {
            status: RoundStatus::Stalled,
            review: super::review::empty(),
            error: Some(format!(
                "no progress from the reviewer for {} s",
                settings.stall_seconds
            )),
            ..Default::default()
        },
        Err(_) => RoundResult {
            status: RoundStatus::Timeout,
            review: super::review::empty(),
            error: Some(format!(
                "the round ran past timeout_seconds ({})",
                settings.timeout_seconds
            )),
            timeout_reason: Some("round_deadline".into()),
            recoverable: observed,
            ..Default::default()
        },
    }
}

/// Ends at the round's `deadline` (`"timeout"`) or when the reviewer has
/// shown no progress for `stall` seconds (`"stalled"`).
async fn watchdog(deadline: f64, stall: f64, progress: &Progress) -> &'static str {
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if store::now() >= deadline {
            return "timeout";
        }
        if progress.idle_seconds() >= stall {
            return "stalled";
        }
    }
}

/// Runs the current round of the session at `dir` to its end, unless
/// another runner holds the lock or the round is not running.
pub async fn run_round(ctx: &SessionContext, dir: &Path) -> Result<(), Error> {
    let Some(_lock) = RunnerLock::try_acquire(dir)? else {
        return Ok(());
    };
    let mut spec = state::read_spec(dir)?;
    let ctx = &with_session_config(ctx, &spec);
    let n = spec.round;
    let mut st = state::read_state(dir, n)?;
    if st.status != RoundStatus::Running {
        return Ok(());
    }
    let resumed = st.pid.is_some();
    st.pid = Some(std::process::id());
    st.pid_start_time = super::process::own_start_time();
    st.in_process = matches!(ctx.runner, super::Runner::InProcess);
    if resumed {
        st.resumes = st.resumes.saturating_add(1);
    }
    state::write_state(dir, n, &st)?;
    // A round no runner can run ends as failed, rather than staying
    // `running` for every later wait to start another runner that fails
    // the same way: a config that no longer reads, or runners that keep
    // dying before they finish it.
    if let Some((error, reason)) = unrunnable(ctx, &mut spec, &st) {
        let result = RoundResult {
            status: RoundStatus::Failed,
            review: super::review::empty(),
            error: Some(error),
            failure_reason: Some(reason.into()),
            ..Default::default()
        };
        let observed = st.progress_observed;
        return finish(dir, n, &mut st, &result, observed);
    }
    if resumed {
        state::event(
            dir,
            n,
            json!({"type": "status", "status": "resumed", "turns": st.turns}),
        );
    }

    let progress = Arc::new(Progress::default());
    progress.tick();
    progress.set_observed(st.progress_observed);
    let deadline = st.started_at + spec.settings.timeout_seconds;
    let stall = spec.settings.stall_seconds;

    let work = async {
        if store::now() >= deadline {
            return Ok(None);
        }
        // A round is a span; the model's turns and tool calls are under it.
        mcpmux_core::internal::telemetry::span(
            || "review round".to_owned(),
            false,
            || {
                vec![
                    ("mcpmux.session.round", spec.round.to_string()),
                    ("mcpmux.session.reviewer", spec.settings.reviewer.clone()),
                ]
            },
            async {
                match spec.settings.reviewer.as_str() {
                    "command" => command::run(dir, &spec, &progress).await.map(Some),
                    _ => agent::run(ctx, dir, &spec, &progress).await.map(Some),
                }
            },
        )
        .await
    };
    let outcome = tokio::select! {
        r = work => match r {
            Ok(Some(f)) => Ok(f),
            Ok(None) => Err("timeout"),
            Err(e) => Ok(Finish::Failed { error: format!("{}: {e}", e.code()), reason: "turn_failed".into() }),
        },
        why = watchdog(deadline, stall, &progress) => Err(why),
    };
    // Re-read: the loop updated turns and progress on disk.
    let mut st = state::read_state(dir, n).unwrap_or(st);
    let observed = st.progress_observed || progress.observed() || st.turns > 0;
    let result = round_result(outcome, &spec.settings, observed);
    finish(dir, n, &mut st, &result, observed)
}

/// Writes the result (signed, see [`state::write_result`]), then the final
/// state (the state is what `wait` polls).
pub fn finish(
    dir: &Path,
    n: u32,
    st: &mut RoundState,
    result: &RoundResult,
    observed: bool,
) -> Result<(), Error> {
    state::write_result(dir, n, result)?;
    st.signed_result = true;
    st.status = result.status.into();
    st.progress_observed = observed;
    st.finished_at = Some(store::now());
    state::write_state(dir, n, st)?;
    let mut ev = json!({"type": "status", "status": result.status});
    if let Some(v) = result.review.get("verdict").filter(|v| !v.is_null()) {
        ev["verdict"] = v.clone();
    }
    if let Some(e) = &result.error {
        ev["error"] = Value::String(e.clone());
    }
    state::event(dir, n, ev);
    Ok(())
}
