//! The `command` reviewer against a fake `codex` (a script printing
//! codex-style `exec --json` events): begin, reply resuming the thread by
//! its id, failures, and a missing command.

use mcpmux_test_support as common;

use std::path::PathBuf;

use mcpmux_core::Config;
use mcpmux_sessions::{self as session, Runner, SessionContext};
use serde_json::{json, Value};

/// `Config::parse` with the policy's and the sessions' config keys
/// registered, as every front end has them.
fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse(text)
}

/// `Config::parse_with_vars` with the layers registered (see [`parse`]).
fn parse_with_vars(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse_with_vars(text, lookup)
}

fn fake_codex() -> PathBuf {
    common::root()
        .join("tests/fixtures/fake-codex/codex")
        .canonicalize()
        .unwrap()
}

fn ctx(session_toml: &str) -> SessionContext {
    common::private_state();
    SessionContext {
        config: Some(parse(&format!("[session]\n{session_toml}\n")).unwrap()),
        host: None,
        runner: Runner::InProcess,
    }
}

async fn wait_done(ctx: &SessionContext, dir: &str) -> Value {
    for _ in 0..60 {
        let w = session::wait(ctx, &json!({"session_dir": dir, "max_wait_seconds": 5}))
            .await
            .unwrap();
        if w["status"] != "running" {
            return w;
        }
    }
    panic!("round did not finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_codex_begin_reply_resume() {
    let wd = tempfile::tempdir().unwrap();
    // The fake logs its runs in its cwd (the working_dir).
    let log = wd.path().join("codex-runs.jsonl");
    let ctx = ctx(&format!(
        "reviewer = \"command\"\ncommand = {}\nmodel = \"gpt-test\"\n",
        common::q(&fake_codex().display().to_string())
    ));
    let b = session::begin(&ctx, &json!({"skill": "review-pr", "input": "## PR\nPR #7: add a flag", "working_dir": wd.path()})).await.unwrap();
    assert!(b["analysis_prompt"].is_string());
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(w["status"], "completed", "{w:#}");
    assert_eq!(w["review"]["verdict"], "REQUEST_CHANGES");
    assert_eq!(w["review"]["blocks"][0]["file"], "src/lib.rs");
    assert_eq!(w["next"], "cross_check");
    let thread_id = w["thread_id"].as_str().unwrap().to_owned();
    assert!(thread_id.starts_with("th_fake_"), "{w:#}");
    let acts = w["activities"].as_array().unwrap();
    assert!(
        acts.iter()
            .any(|a| a["type"] == "command" && a["command"] == "git status"),
        "{acts:#?}"
    );
    assert!(acts.iter().any(|a| a["type"] == "text"), "{acts:#?}");

    let r = session::reply(
        &ctx,
        &json!({"session_dir": dir, "input": "Fixed it. APPROVE_ME"}),
    )
    .await
    .unwrap();
    assert_eq!(r["round"], 2);
    assert_eq!(r["thread_id"], thread_id);
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(w["review"]["verdict"], "APPROVE", "{w:#}");
    assert_eq!(w["thread_id"], thread_id);

    let runs: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 2);
    let argv0: Vec<&str> = runs[0]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv0, ["exec", "-m", "gpt-test", "--json", "-"]);
    let argv1: Vec<&str> = runs[1]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        argv1,
        [
            "exec",
            "-m",
            "gpt-test",
            "--json",
            "resume",
            thread_id.as_str(),
            "-"
        ]
    );
    assert_eq!(
        runs[0]["cwd"],
        wd.path().canonicalize().unwrap().display().to_string()
    );
    assert!(runs[0]["prompt"]
        .as_str()
        .unwrap()
        .contains("PR #7: add a flag"));
    assert!(runs[1]["prompt"].as_str().unwrap().contains("Fixed it."));

    let e = session::end(&ctx, &json!({"session_dir": dir, "outcome": "consensus"}))
        .await
        .unwrap();
    assert_eq!(e["verdict"], "APPROVE");
    assert_eq!(e["finalized"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_codex_failures_and_missing_command() {
    let wd = tempfile::tempdir().unwrap();
    let ctx1 = ctx(&format!(
        "command = {}\n",
        common::q(&fake_codex().display().to_string())
    ));
    let b = session::begin(
        &ctx1,
        &json!({"skill": "review-think", "input": "EXIT_BADLY", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let w = wait_done(&ctx1, b["session_dir"].as_str().unwrap()).await;
    assert_eq!(w["status"], "failed", "{w:#}");
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("stopped"), Some("reviewer_process_exit"))
    );
    assert!(w["error"].as_str().unwrap().contains("giving up"), "{w:#}");

    let b = session::begin(
        &ctx1,
        &json!({"skill": "review-think", "input": "TURN_FAILS", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let w = wait_done(&ctx1, b["session_dir"].as_str().unwrap()).await;
    assert_eq!(w["failure_reason"], "turn_failed", "{w:#}");
    assert!(
        w["error"].as_str().unwrap().contains("model overloaded"),
        "{w:#}"
    );

    let missing = ctx("command = \"mcpmux-no-such-reviewer\"\n");
    let e = session::begin(
        &missing,
        &json!({"skill": "review-think", "input": "q", "working_dir": wd.path()}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), "REVIEWER_NOT_FOUND");
    assert!(e.to_string().contains("mcpmux-no-such-reviewer"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_codex_event_names_are_read_too() {
    // Older codex releases print `session.created` (`session_id`) and
    // items with `item_type: "assistant_message"`.
    let wd = tempfile::tempdir().unwrap();
    let script = wd.path().join("old-codex");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > /dev/null\n\
         printf '%s\\n' '{\"type\":\"session.created\",\"session_id\":\"old-thread-1\"}'\n\
         printf '%s\\n' '{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"item_type\":\"assistant_message\",\"text\":\"```json\\n{\\\"verdict\\\": \\\"APPROVE\\\", \\\"blocks\\\": []}\\n```\"}}'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ctx = ctx(&format!(
        "command = {}\n",
        common::q(&script.display().to_string())
    ));
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-think", "input": "Is it wise?", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let w = wait_done(&ctx, b["session_dir"].as_str().unwrap()).await;
    assert_eq!(w["status"], "completed", "{w:#}");
    assert_eq!(w["review"]["verdict"], "APPROVE", "{w:#}");
    assert_eq!(w["thread_id"], "old-thread-1", "{w:#}");
}

/// A `command` given as `${VAR}` is stored as the reference: the program's
/// path (or a wrapper's arguments) never lands in `session.json`, and later
/// rounds expand it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_from_a_variable_is_stored_as_the_reference() {
    common::private_state();
    let wd = tempfile::tempdir().unwrap();
    let program = fake_codex().display().to_string();
    let lookup = {
        let program = program.clone();
        move |name: &str| (name == "MCPMUX_TEST_FAKE_CODEX").then(|| program.clone())
    };
    let config = parse_with_vars(
        "[session]\nreviewer = \"command\"\ncommand = \"${MCPMUX_TEST_FAKE_CODEX}\"\n",
        &lookup,
    )
    .unwrap();
    let ctx = SessionContext {
        config: Some(config),
        host: None,
        runner: Runner::InProcess,
    };
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-pr", "input": "## PR\nPR #8", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    let spec = std::fs::read_to_string(PathBuf::from(&dir).join("session.json")).unwrap();
    assert!(
        spec.contains("\"command\": \"${MCPMUX_TEST_FAKE_CODEX}\""),
        "{spec}"
    );
    assert!(!spec.contains(&program), "{spec}");
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(w["status"], "completed", "{w:#}");
    session::reply(&ctx, &json!({"session_dir": dir, "input": "APPROVE_ME"}))
        .await
        .unwrap();
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(w["review"]["verdict"], "APPROVE", "{w:#}");
    let spec = std::fs::read_to_string(PathBuf::from(&dir).join("session.json")).unwrap();
    assert!(!spec.contains(&program), "{spec}");
}
