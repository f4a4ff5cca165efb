//! API reviewers (`openai`, `anthropic`) in review sessions against
//! `tests/servers/llm_mock.py`, which speaks the real wire formats
//! (streamed and not), with the demo server as the review's tools: tool
//! calls over several turns, an unknown and a failing tool, past
//! `max_turns`, approve, request changes, no verdict, a hang past the
//! deadline, 429 then OK, and 500s.

use mcpmux_test_support as common;
mod llm_mock;

use mcpmux_core::Config;
use mcpmux_sessions::{self as session, Runner, SessionContext};
use serde_json::{json, Value};

/// `Config::parse` with the policy's and the sessions' config keys
/// registered, as every front end has them.
fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse(text)
}

const KEY_VAR: &str = "MCPMUX_TEST_SESSION_LLM_KEY";
const KEY: &str = "sk-test-session-secret-0123456789";

struct Case {
    wait: Value,
    requests: Vec<Value>,
    dir: String,
    /// The session's audit.jsonl (read before the directory goes).
    audit: String,
}

async fn run_case(kind: &str, stream: bool, steps: Value, extra: &str, input: &str) -> Case {
    std::env::set_var(KEY_VAR, KEY);
    let mock = llm_mock::Mock::start(steps).await;
    let wd = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n[session]\nreviewer = {}\nbase_url = {}\napi_key_env = {}\nmodel = \"mock-model\"\nstream = {stream}\n{extra}\n",
        common::demo_entry("demo", "allow_tools = [\"echo\", \"add\", \"fail\"]"),
        common::q(kind),
        common::q(&if kind == "openai" {
            mock.openai_base_url()
        } else {
            mock.anthropic_base_url()
        }),
        common::q(KEY_VAR),
    );
    common::private_state();
    let ctx = SessionContext {
        config: Some(parse(&text).unwrap()),
        host: None,
        runner: Runner::InProcess,
    };
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-plan", "input": input, "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    let mut wait = Value::Null;
    for _ in 0..60 {
        wait = session::wait(&ctx, &json!({"session_dir": dir, "max_wait_seconds": 5}))
            .await
            .unwrap();
        if wait["status"] != "running" {
            break;
        }
    }
    assert_ne!(wait["status"], "running", "round never finished");
    // Secrets never reach the session directory.
    for entry in walk(std::path::Path::new(&dir)) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains(KEY),
            "API key written to {}",
            entry.display()
        );
    }
    let requests = mock.requests();
    let audit =
        std::fs::read_to_string(std::path::Path::new(&dir).join("audit.jsonl")).unwrap_or_default();
    drop(wd);
    Case {
        wait,
        requests,
        dir,
        audit,
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

const PLAN: &str = "---\nUSER_REQUEST: add a flag\n---\n## PLAN\n1. do it\n";

fn next(w: &Value) -> (String, String) {
    (
        w["next"].as_str().unwrap_or("").to_owned(),
        w["next_reason"].as_str().unwrap_or("").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_over_several_turns_then_approve() {
    for (kind, stream) in [("openai", true), ("anthropic", false), ("anthropic", true)] {
        let steps = json!([
            {"tool_calls": [
                {"name": "mcp_demo_echo", "arguments": {"text": "ping-42"}},
                {"name": "mcp_demo_add", "arguments": {"a": 20, "b": 22}}
            ]},
            {"text": "Checking more.", "tool_calls": [
                {"name": "mcp_demo_nonexistent", "arguments": {}},
                {"name": "mcp_demo_fail", "arguments": {"message": "kaboom"}}
            ]},
            {"tool_calls": [{"name": "submit_review", "arguments": {"verdict": "APPROVE", "blocks": [], "summary": "fine"}}]}
        ]);
        let c = run_case(kind, stream, steps, "", PLAN).await;
        assert_eq!(c.wait["status"], "completed", "{kind}: {:#}", c.wait);
        assert_eq!(c.wait["review"]["verdict"], "APPROVE");
        assert_eq!(c.wait["review"]["summary"], "fine");
        assert_eq!(next(&c.wait), ("done".into(), "approved".into()));
        assert_eq!(c.requests.len(), 3, "{kind}");
        let body = |i: usize| c.requests[i]["body"].to_string();
        assert!(body(0).contains("mcp_demo_echo") && body(0).contains("submit_review"));
        assert!(
            body(1).contains("ping-42") && body(1).contains("42"),
            "{kind}: {}",
            body(1)
        );
        assert!(
            body(2).contains("TOOL_NOT_ALLOWED: tool 'mcp_demo_nonexistent'")
                && body(2).contains("kaboom"),
            "{kind}: {}",
            body(2)
        );
        assert_eq!(c.requests[0]["model"], "mock-model");
        assert_eq!(c.requests[0]["stream"], stream);
        let acts = c.wait["activities"].as_array().unwrap();
        assert_eq!(
            acts.iter().filter(|a| a["type"] == "tool_call").count(),
            4,
            "{acts:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_in_text() {
    for kind in ["openai", "anthropic"] {
        let rc = json!([{"text": "Problems.\n```json\n{\"verdict\": \"REQUEST_CHANGES\", \"blocks\": [{\"title\": \"Untested\", \"body\": \"add tests\"},]}\n```"}]);
        let c = run_case(kind, true, rc, "", PLAN).await;
        assert_eq!(
            c.wait["review"]["verdict"], "REQUEST_CHANGES",
            "{:#}",
            c.wait
        );
        assert_eq!(next(&c.wait), ("respond".into(), "open_issues".into()));
        let none = json!([{"text": "I have no opinion."}]);
        let c = run_case(kind, false, none, "", PLAN).await;
        assert_eq!(c.wait["status"], "completed");
        assert_eq!(next(&c.wait), ("ask_user".into(), "missing_verdict".into()));
        let other = json!([{"text": "{\"verdict\": \"needs-discussion\", \"blocks\": []}"}]);
        let c = run_case(kind, true, other, "", PLAN).await;
        assert_eq!(
            next(&c.wait),
            ("respond".into(), "verdict_needs_discussion".into())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_turns_fails() {
    let call = json!({"tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "again"}}]});
    let c = run_case(
        "openai",
        true,
        json!([call, call, call, call]),
        "max_turns = 2",
        PLAN,
    )
    .await;
    assert_eq!(c.wait["status"], "failed", "{:#}", c.wait);
    assert_eq!(next(&c.wait), ("stopped".into(), "max_turns".into()));
    // Two turns with tools, then one with only submit_review offered.
    assert_eq!(c.requests.len(), 3);
    let tools = c.requests[2]["body"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert!(c.requests[2]["body"].to_string().contains("tool budget"));
    // Every call the model asked for has its audit line, the refused one
    // past the budget included.
    let statuses: Vec<String> = c
        .audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["status"].to_string())
        .collect();
    assert_eq!(
        statuses,
        ["\"ok\"", "\"ok\"", "\"limit_exceeded\""],
        "{}",
        c.audit
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_broken_arguments_is_audited() {
    let steps = json!([
        {"raw_arguments": "{not json", "tool_name": "mcp_demo_echo"},
        {"expect": "INVALID_INPUT", "text": "```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```"}
    ]);
    let c = run_case("openai", false, steps, "", PLAN).await;
    assert_eq!(c.wait["status"], "completed", "{:#}", c.wait);
    let line: Value = serde_json::from_str(c.audit.lines().next().unwrap_or("null")).unwrap();
    assert_eq!(line["tool"], "echo", "{}", c.audit);
    assert_eq!(line["status"], "error", "{}", c.audit);
    assert_eq!(line["code"], "INVALID_INPUT", "{}", c.audit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hang_past_the_deadline_times_out() {
    let c = run_case(
        "anthropic",
        true,
        json!([{"hang": true, "hang_seconds": 20}]),
        "timeout_seconds = 1",
        PLAN,
    )
    .await;
    assert_eq!(c.wait["status"], "timeout", "{:#}", c.wait);
    assert_eq!(c.wait["recoverable"], false);
    assert_eq!(next(&c.wait), ("stopped".into(), "timeout".into()));
    // After a stored turn, the same deadline is recoverable.
    let c = run_case(
        "openai",
        false,
        json!([{"tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "x"}}]}, {"hang": true, "hang_seconds": 20}]),
        "timeout_seconds = 1.5",
        PLAN,
    )
    .await;
    assert_eq!(c.wait["status"], "timeout", "{:#}", c.wait);
    assert_eq!(c.wait["recoverable"], true);
    assert_eq!(c.wait["progress_observed"], true);
    assert_eq!(
        next(&c.wait),
        ("stopped".into(), "recoverable_timeout".into())
    );
    let _ = c.dir;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_then_ok_and_server_errors() {
    for kind in ["openai", "anthropic"] {
        let steps = json!([
            {"status": 429, "retry_after": 0},
            {"text": "```json\n{\"verdict\": \"approve\", \"blocks\": []}\n```"}
        ]);
        let c = run_case(kind, true, steps, "", PLAN).await;
        assert_eq!(c.wait["status"], "completed", "{kind}: {:#}", c.wait);
        assert_eq!(c.wait["review"]["verdict"], "APPROVE");
        assert_eq!(c.requests.len(), 2);
        let steps = json!([{"status": 500}, {"status": 500}, {"status": 500}, {"status": 500}]);
        let c = run_case(kind, false, steps, "", PLAN).await;
        assert_eq!(c.wait["status"], "failed", "{kind}: {:#}", c.wait);
        assert_eq!(next(&c.wait), ("stopped".into(), "turn_failed".into()));
        let err = c.wait["error"].as_str().unwrap();
        assert!(
            err.contains("500") && err.contains("PROVIDER_ERROR"),
            "{err}"
        );
        assert!(!err.contains(KEY));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_stream_is_stalled_not_failed() {
    // The reviewer sends a few bytes, then nothing: after `stall_seconds`
    // the round is `stalled` (the watchdog's verdict), not a failed turn
    // from the HTTP client giving up at the same moment.
    for kind in ["openai", "anthropic"] {
        let c = run_case(
            kind,
            true,
            json!([{"text": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "stall_after_chunks": 2, "hang_seconds": 20}]),
            "stall_seconds = 1",
            PLAN,
        )
        .await;
        assert_eq!(c.wait["status"], "stalled", "{kind}: {:#}", c.wait);
        assert_eq!(next(&c.wait), ("stopped".into(), "stalled".into()));
        assert_eq!(c.wait["progress_observed"], true, "{:#}", c.wait);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tool_calls_zero_refuses_every_call() {
    // `max_tool_calls = 0` is a valid limit (no tool calls at all), not a
    // config error; the refused call still gets a final answer.
    let steps = json!([
        {"tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "x"}}]},
        {"expect": "LIMIT_EXCEEDED", "text": "```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```"}
    ]);
    let c = run_case("openai", false, steps, "max_tool_calls = 0", PLAN).await;
    assert_eq!(c.wait["status"], "completed", "{:#}", c.wait);
    assert_eq!(c.wait["review"]["verdict"], "APPROVE");
    // The model was told, and the demo server never ran echo (no result text).
    assert_eq!(c.requests.len(), 2);
    let body = c.requests[1]["body"].to_string();
    assert!(body.contains("LIMIT_EXCEEDED"), "{body}");
    assert!(!body.contains("untrusted-data"), "the tool ran: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_invalid_input_whatever_the_reviewer() {
    // The reviewer's program does not exist, yet a bad input is reported
    // as such (INVALID_INPUT naming what is missing), and nothing is created.
    let wd = tempfile::tempdir().unwrap();
    common::private_state();
    let ctx = SessionContext {
        config: Some(
            parse("[session]\nreviewer = \"command\"\ncommand = \"/nonexistent/codex\"\n").unwrap(),
        ),
        host: None,
        runner: Runner::InProcess,
    };
    let begin = |params: Value| {
        let ctx = ctx.clone();
        async move { session::begin(&ctx, &params).await }
    };
    let e = begin(json!({"skill": "review-impl", "input": PLAN, "working_dir": wd.path()}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT", "{e}");
    assert!(e.to_string().contains("mode"), "{e}");
    let e = begin(json!({"skill": "review-plan", "input": "---\nUSER_REQUEST: x\n---\n", "working_dir": wd.path()}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT", "{e}");
    assert!(e.to_string().contains("PLAN"), "{e}");
    let e = begin(json!({"skill": "review-plan", "input": PLAN, "working_dir": wd.path()}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "REVIEWER_NOT_FOUND", "{e}");
    let sessions = wd.path().join(".mcpmux/sessions");
    assert!(
        !sessions.exists() || std::fs::read_dir(&sessions).unwrap().next().is_none(),
        "a failed begin left a session behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_servers_a_tool_call_is_refused_and_audited() {
    // No [[mcp.servers]] at all: a call the model asks for is still a
    // policy refusal (TOOL_NOT_ALLOWED) with its audit line.
    std::env::set_var(KEY_VAR, KEY);
    let mock = llm_mock::Mock::start(json!([
        {"tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "x"}}]},
        {"expect": "TOOL_NOT_ALLOWED", "text": "```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```"}
    ]))
    .await;
    let wd = tempfile::tempdir().unwrap();
    let text = format!(
        "[session]\nreviewer = \"openai\"\nbase_url = {}\napi_key_env = {}\n",
        common::q(&mock.openai_base_url()),
        common::q(KEY_VAR),
    );
    common::private_state();
    let ctx = SessionContext {
        config: Some(parse(&text).unwrap()),
        host: None,
        runner: Runner::InProcess,
    };
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-plan", "input": PLAN, "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    let w = session::wait(&ctx, &json!({"session_dir": dir, "max_wait_seconds": 20}))
        .await
        .unwrap();
    assert_eq!(w["status"], "completed", "{w:#}");
    assert_eq!(w["review"]["verdict"], "APPROVE", "{w:#}");
    let audit = std::fs::read_to_string(std::path::Path::new(&dir).join("audit.jsonl")).unwrap();
    let line: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(line["status"], "not_allowed", "{audit}");
    assert_eq!(audit.lines().count(), 1, "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_no_runner_can_run_fails_instead_of_running_forever() {
    // The round's first runner does nothing (it exits at once); the
    // resuming wait's config no longer reads (`args` is not a list): the
    // round ends as failed naming the field, instead of staying `running`.
    let wd = tempfile::tempdir().unwrap();
    common::private_state();
    let begin_ctx = SessionContext {
        config: Some(
            parse("[session]\nreviewer = \"command\"\ncommand = \"/bin/true\"\n").unwrap(),
        ),
        host: None,
        runner: Runner::Detached {
            program: "/bin/true".into(),
            args: Vec::new(),
        },
    };
    let b = session::begin(
        &begin_ctx,
        &json!({"skill": "review-plan", "input": PLAN, "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    common::private_state();
    // Such a file fails to load now (`[session]` is checked at load), so
    // the table is made bad after loading, as a host could hand it over.
    let mut bad = parse("[session]\nreviewer = \"command\"\ncommand = \"/bin/true\"\n").unwrap();
    bad.session.insert("args".into(), json!(5));
    assert_eq!(
        parse("[session]\nargs = 5\n").unwrap_err().code(),
        "CONFIG_INVALID"
    );
    let wait_ctx = SessionContext {
        config: Some(bad),
        host: None,
        runner: Runner::InProcess,
    };
    let w = session::wait(
        &wait_ctx,
        &json!({"session_dir": dir, "max_wait_seconds": 8}),
    )
    .await
    .unwrap();
    assert_eq!(w["status"], "failed", "{w:#}");
    assert_eq!(w["next"], "stopped", "{w:#}");
    let err = w["error"].as_str().unwrap();
    assert!(
        err.contains("CONFIG_INVALID") && err.contains("args"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_never_kills_a_host_process_running_the_round_in_process() {
    // Another process (a host application, here `sleep`) runs the round as
    // an in-process task and holds its lock; `end` from this process ends
    // the session without killing that process.
    let wd = tempfile::tempdir().unwrap();
    common::private_state();
    let ctx = SessionContext {
        config: Some(
            parse("[session]\nreviewer = \"command\"\ncommand = \"/bin/true\"\n").unwrap(),
        ),
        host: None,
        runner: Runner::Detached {
            program: "/bin/true".into(),
            args: Vec::new(),
        },
    };
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-plan", "input": PLAN, "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = std::path::PathBuf::from(b["session_dir"].as_str().unwrap());
    let mut host = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    // Written as mcpmux writes it (with its MAC): the runner of another process.
    let mut st = session::internal::state::read_state(&dir, 1).unwrap();
    st.pid = Some(host.id());
    st.in_process = true;
    session::internal::state::write_state(&dir, 1, &st).unwrap();
    let lock = session::internal::store::RunnerLock::try_acquire(&dir)
        .unwrap()
        .unwrap();
    let e = session::end(&ctx, &json!({"session_dir": dir}))
        .await
        .unwrap();
    assert_eq!(e["status"], "ended", "{e:#}");
    assert!(
        host.try_wait().unwrap().is_none(),
        "end killed the host process"
    );
    drop(lock);
    let _ = host.kill();
    let _ = host.wait();
}
