//! `mcpmux review begin|wait|reply|end` (and the hidden `run-round` that a
//! detached runner executes): thin wrappers over `mcpmux_sessions`,
//! printing each verb's JSON result on stdout.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use mcpmux_core::{Config, Error};
use mcpmux_sessions::{self as session, Runner, SessionContext};
use serde_json::{Map, Value};

/// The review verbs.
#[derive(Subcommand)]
pub enum ReviewCommand {
    /// Start a review session; prints {session_dir, round, status}. The round runs on in the background.
    Begin {
        /// review-plan, review-impl, review-think, review-pr, or a template file.
        #[arg(long)]
        skill: String,
        /// For review-impl: working-tree or branch.
        #[arg(long)]
        mode: Option<String>,
        /// The input Markdown file; `-` reads stdin.
        #[arg(long, value_name = "FILE")]
        input: String,
        /// The directory under review (default: the current directory).
        #[arg(long, value_name = "DIR")]
        working_dir: Option<PathBuf>,
        /// openai, anthropic or command (default from [session], else command).
        #[arg(long)]
        reviewer: Option<String>,
        /// The reviewer's model.
        #[arg(long)]
        model: Option<String>,
        /// Reasoning effort.
        #[arg(long)]
        effort: Option<String>,
        /// Seconds the round may run (default 18000).
        #[arg(long, value_name = "N")]
        timeout_seconds: Option<f64>,
        /// Agent-loop turns per round (default from [session], else 10).
        #[arg(long, value_name = "N")]
        max_turns: Option<u32>,
        /// Most tool calls per round; 0 allows none (default from [session]: no limit).
        #[arg(long, value_name = "N")]
        max_tool_calls: Option<u64>,
        /// Seconds allowed per tool call (default from [session]).
        #[arg(long, value_name = "N")]
        call_timeout_seconds: Option<f64>,
        /// Largest tool output shown to the reviewer, in bytes (default from [session]).
        #[arg(long, value_name = "N")]
        max_output_bytes: Option<u64>,
        /// The session's scope, matched against a server's `scopes` (default from [session]).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Wait for the current round; prints its status, review, activities and `next`.
    Wait {
        /// The session directory.
        session_dir: PathBuf,
        /// Longest wait (default $MCPMUX_WAIT_DEFAULT_S, else 50).
        #[arg(long, value_name = "N")]
        max_wait_seconds: Option<f64>,
    },
    /// Answer the review and start the next round.
    Reply {
        /// The session directory.
        session_dir: PathBuf,
        /// The response Markdown file; `-` reads stdin.
        #[arg(long, value_name = "FILE")]
        input: String,
        /// The reviewer's model from now on.
        #[arg(long)]
        model: Option<String>,
        /// Reasoning effort from now on.
        #[arg(long)]
        effort: Option<String>,
    },
    /// End the session (stops a running round; writes meta.json when finalized).
    End {
        /// The session directory.
        session_dir: PathBuf,
        /// consensus or stalemate.
        #[arg(long)]
        outcome: Option<String>,
    },
    /// Run the session's current round to its end (used by the detached runner).
    #[command(hide = true)]
    RunRound {
        /// The session directory.
        session_dir: PathBuf,
    },
}

/// Finds the config for sessions like the other commands do, but no config
/// at all is fine (sessions then run without tools). Returns it with the
/// absolute path it came from.
pub fn optional_config(flag: Option<&Path>) -> Result<Option<(Config, PathBuf)>, Error> {
    // A config found in the current directory is used only when trusted
    // (its `[session]` may name a reviewer command).
    let Some((config, located)) = crate::trust_cmd::load(flag)? else {
        return Ok(None);
    };
    let abs = std::path::absolute(&located.path).unwrap_or(located.path);
    Ok(Some((config, abs)))
}

/// The context of the CLI and `serve`: rounds run in a detached
/// `mcpmux [--config ABS] [network flags] review run-round DIR`. The
/// network flags (`network`) add to the config's `[network]`, here and in
/// the round's process; without a config there is nothing they apply to.
pub fn context(
    config: Option<(Config, PathBuf)>,
    network: &mcpmux_core::NetworkPolicy,
) -> Result<SessionContext, Error> {
    let program = std::env::current_exe()
        .map_err(|e| Error::Internal(format!("cannot find the mcpmux executable: {e}")))?;
    let mut args = Vec::new();
    let config = config.map(|(mut c, path)| {
        args.push("--config".to_owned());
        args.push(path.display().to_string());
        c.network = c.network.merged(network);
        c
    });
    if network.deny_private {
        args.push("--deny-private".to_owned());
    }
    if network.require_https {
        args.push("--require-https".to_owned());
    }
    for allowed in &network.allow_networks {
        args.push(format!("--allow-networks={allowed}"));
    }
    args.extend(["review".to_owned(), "run-round".to_owned()]);
    Ok(SessionContext {
        config,
        host: None,
        runner: Runner::Detached { program, args },
    })
}

fn read_input(spec: &str) -> Result<String, Error> {
    if spec == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .map_err(|e| Error::InvalidInput(format!("cannot read the input from stdin: {e}")))?;
        return Ok(buf);
    }
    std::fs::read_to_string(spec)
        .map_err(|e| Error::InvalidInput(format!("cannot read the input file {spec}: {e}")))
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.to_owned(), v);
    }
}

/// A number flag as a JSON number. NaN and infinities have no JSON form
/// (they would become `null`, read as "not given"), so they are refused
/// here; the range is the session layer's to check.
fn number(flag: &str, value: Option<f64>) -> Result<Option<Value>, Error> {
    match value {
        None => Ok(None),
        Some(x) if x.is_finite() => Ok(Some(Value::from(x))),
        Some(x) => Err(Error::InvalidInput(format!(
            "{flag} must be a finite number, not {x}"
        ))),
    }
}

/// Runs one review command through [`session::call`] and returns its JSON
/// result (`None` for `run-round`, which prints nothing).
pub async fn execute(
    ctx: &SessionContext,
    command: &ReviewCommand,
) -> Result<Option<Value>, Error> {
    let dir = |p: &Path| -> Value {
        Value::String(
            std::path::absolute(p)
                .unwrap_or(p.to_owned())
                .display()
                .to_string(),
        )
    };
    let mut p = Map::new();
    let verb = match command {
        ReviewCommand::Begin {
            skill,
            mode,
            input,
            working_dir,
            reviewer,
            model,
            effort,
            timeout_seconds,
            max_turns,
            max_tool_calls,
            call_timeout_seconds,
            max_output_bytes,
            scope,
        } => {
            p.insert("skill".into(), skill.clone().into());
            p.insert("input".into(), read_input(input)?.into());
            let wd = match working_dir {
                Some(d) => d.clone(),
                None => std::env::current_dir().map_err(|e| {
                    Error::InvalidInput(format!("no --working-dir and no current directory: {e}"))
                })?,
            };
            p.insert("working_dir".into(), dir(&wd));
            put(&mut p, "mode", mode.clone().map(Value::from));
            put(&mut p, "reviewer", reviewer.clone().map(Value::from));
            put(&mut p, "model", model.clone().map(Value::from));
            put(&mut p, "effort", effort.clone().map(Value::from));
            put(
                &mut p,
                "timeout_seconds",
                number("--timeout-seconds", *timeout_seconds)?,
            );
            put(&mut p, "max_turns", max_turns.map(Value::from));
            put(&mut p, "max_tool_calls", max_tool_calls.map(Value::from));
            put(
                &mut p,
                "call_timeout_seconds",
                number("--call-timeout-seconds", *call_timeout_seconds)?,
            );
            put(
                &mut p,
                "max_output_bytes",
                max_output_bytes.map(Value::from),
            );
            put(&mut p, "scope", scope.clone().map(Value::from));
            "begin"
        }
        ReviewCommand::Wait {
            session_dir,
            max_wait_seconds,
        } => {
            p.insert("session_dir".into(), dir(session_dir));
            put(
                &mut p,
                "max_wait_seconds",
                number("--max-wait-seconds", *max_wait_seconds)?,
            );
            "wait"
        }
        ReviewCommand::Reply {
            session_dir,
            input,
            model,
            effort,
        } => {
            p.insert("session_dir".into(), dir(session_dir));
            p.insert("input".into(), read_input(input)?.into());
            put(&mut p, "model", model.clone().map(Value::from));
            put(&mut p, "effort", effort.clone().map(Value::from));
            "reply"
        }
        ReviewCommand::End {
            session_dir,
            outcome,
        } => {
            p.insert("session_dir".into(), dir(session_dir));
            put(&mut p, "outcome", outcome.clone().map(Value::from));
            "end"
        }
        ReviewCommand::RunRound { session_dir } => {
            return session::run_round(ctx, session_dir).await.map(|()| None);
        }
    };
    session::call(ctx, verb, &Value::Object(p)).await.map(Some)
}
