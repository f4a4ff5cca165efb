//! Review sessions driven by the `host` reviewer (a scripted Rust closure
//! answering the real `CompletionRequest` JSON) with the demo server as the
//! review's tools: the whole begin / wait / reply / end cycle, the layout
//! on disk, input errors and the `next` advice.

use mcpmux_test_support as common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mcpmux_core::Config;
use mcpmux_sessions::{self as session, HostCallback, Runner, SessionContext};
use serde_json::{json, Value};

/// `Config::parse` with the policy's and the sessions' config keys
/// registered, as every front end has them.
fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse(text)
}

/// A host reviewer that answers from a script, one answer per request, and
/// keeps every request it saw.
fn scripted(answers: Vec<Value>) -> (HostCallback, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let script = Arc::new(Mutex::new(answers.into_iter()));
    let log = seen.clone();
    let cb: HostCallback = Arc::new(move |req: Value| {
        log.lock().unwrap().push(req);
        let next = script.lock().unwrap().next();
        Box::pin(async move {
            next.ok_or_else(|| mcpmux_core::Error::ProviderError("script exhausted".into()))
        })
    });
    (cb, seen)
}

fn ctx(config: Option<Config>, cb: Option<HostCallback>) -> SessionContext {
    common::private_state();
    SessionContext {
        config,
        host: cb.map(session::host_provider),
        runner: Runner::InProcess,
    }
}

fn demo_config(extra_session: &str) -> Config {
    let text = format!(
        "{}\n[session]\nreviewer = \"host\"\n{extra_session}\n",
        common::demo_entry("demo", "allow_tools = [\"echo\", \"add\", \"fail\"]")
    );
    parse(&text).unwrap()
}

async fn wait_done(ctx: &SessionContext, dir: &str) -> Value {
    for _ in 0..100 {
        let w = session::wait(ctx, &json!({"session_dir": dir, "max_wait_seconds": 5}))
            .await
            .unwrap();
        if w["status"] != "running" {
            return w;
        }
    }
    panic!("round did not finish");
}

fn plan_input() -> &'static str {
    "---\nUSER_REQUEST: add a --verbose flag\n---\n## PLAN\n1. parse the flag\n2. log more\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_reviewer_full_cycle_with_demo_tools() {
    let wd = tempfile::tempdir().unwrap();
    let (cb, seen) = scripted(vec![
        // Turn 1: two tools at once.
        json!({"text": "Let me check.", "tool_calls": [
            {"id": "c1", "name": "mcp_demo_echo", "arguments": {"text": "hello"}},
            {"id": "c2", "name": "mcp_demo_add", "arguments": "{\"a\": 2, \"b\": 3}"}
        ]}),
        // Turn 2: an unknown tool and a failing tool.
        json!({"tool_calls": [
            {"id": "c3", "name": "mcp_demo_nope", "arguments": {}},
            {"id": "c4", "name": "mcp_demo_fail", "arguments": {"message": "boom"}}
        ]}),
        // Turn 3: the review.
        json!({"text": "Done.", "tool_calls": [
            {"id": "c5", "name": "submit_review", "arguments": {
                "verdict": "request_changes",
                "blocks": [{"title": "No tests", "severity": "high", "body": "Add a test for --verbose."}]
            }}
        ]}),
        // Round 2: approve in a fenced block.
        json!("Looks good now.\n```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```"),
    ]);
    let ctx = ctx(Some(demo_config("")), Some(cb));
    let begun = session::begin(
        &ctx,
        &json!({"skill": "review-plan", "input": plan_input(), "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    assert_eq!(begun["round"], 1);
    assert_eq!(begun["status"], "running");
    assert!(begun.get("analysis_prompt").is_none());
    let dir = begun["session_dir"].as_str().unwrap().to_owned();
    let name = Path::new(&dir)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("review-plan-") && name.ends_with("-001"),
        "{name}"
    );
    assert!(dir.starts_with(
        &wd.path()
            .canonicalize()
            .unwrap()
            .join(".mcpmux/sessions")
            .display()
            .to_string()
    ));

    let w = wait_done(&ctx, &dir).await;
    assert_eq!(w["status"], "completed", "{w:#}");
    assert_eq!(w["review"]["verdict"], "REQUEST_CHANGES");
    assert_eq!(w["review"]["blocks"][0]["title"], "No tests");
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("respond"), Some("open_issues"))
    );
    let acts = w["activities"].as_array().unwrap();
    let calls: Vec<&Value> = acts.iter().filter(|a| a["type"] == "tool_call").collect();
    assert_eq!(calls.len(), 4, "{acts:#?}");
    assert!(calls
        .iter()
        .any(|c| c["server"] == "demo" && c["tool"] == "echo" && c["status"] == "ok"));
    assert!(calls
        .iter()
        .any(|c| c["name"] == "mcp_demo_fail" && c["status"] == "error"));
    assert!(calls
        .iter()
        .any(|c| c["name"] == "mcp_demo_nope" && c["status"] == "error"));
    // Activities are reported once.
    let again = session::wait(&ctx, &json!({"session_dir": dir, "max_wait_seconds": 0}))
        .await
        .unwrap();
    assert_eq!(again["activities"], json!([]));

    // The model saw the hub's tools and submit_review, and the results.
    {
        let seen = seen.lock().unwrap();
        let names: Vec<&str> = seen[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        // The policy offers only the allowed tools.
        assert!(!names.contains(&"mcp_demo_crash"), "{names:?}");
        assert!(
            names.contains(&"mcp_demo_echo") && names.contains(&"submit_review"),
            "{names:?}"
        );
        assert!(seen[0]["messages"][0]["text"]
            .as_str()
            .unwrap()
            .contains("1. parse the flag"));
        let results = &seen[1]["messages"][2]["tool_results"];
        assert!(
            results[0]["content"].as_str().unwrap().contains("hello"),
            "{results}"
        );
        assert!(
            results[1]["content"].as_str().unwrap().contains('5'),
            "{results}"
        );
        let results = &seen[2]["messages"][4]["tool_results"];
        assert_eq!(results[0]["is_error"], true);
        assert!(
            results[0]["content"]
                .as_str()
                .unwrap()
                .contains("TOOL_NOT_ALLOWED: tool 'mcp_demo_nope'"),
            "{results}"
        );
        assert_eq!(results[1]["is_error"], true);
        assert!(
            results[1]["content"].as_str().unwrap().contains("boom"),
            "{results}"
        );
    }

    // Layout on disk.
    let d = PathBuf::from(&dir);
    for f in [
        "session.json",
        "thread.json",
        "round-001/input.md",
        "round-001/prompt.md",
        "round-001/events.jsonl",
        "round-001/state.json",
        "round-001/result.json",
    ] {
        assert!(d.join(f).is_file(), "missing {f}");
    }
    let thread: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(d.join("thread.json")).unwrap()).unwrap();
    assert_eq!(thread.len(), 7, "prompt + 3 × (assistant, results)");
    // Every tool call was audited by the policy.
    let audit = std::fs::read_to_string(d.join("audit.jsonl")).unwrap();
    assert!(audit.lines().count() >= 4, "{audit}");
    // No temporary files left behind.
    for entry in std::fs::read_dir(&d)
        .unwrap()
        .chain(std::fs::read_dir(d.join("round-001")).unwrap())
    {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(".tmp"), "left-over temporary file {name}");
    }

    // Reply while nothing runs: round 2 approves.
    let r = session::reply(
        &ctx,
        &json!({"session_dir": dir, "input": "Added a test.", "model": "m2"}),
    )
    .await
    .unwrap();
    assert_eq!(r["status"], "started");
    assert_eq!(r["round"], 2);
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(w["review"]["verdict"], "APPROVE", "{w:#}");
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("done"), Some("approved"))
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen[3]["model"], "m2", "model kept for the round");
        let last = seen[3]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert!(
            last["text"].as_str().unwrap().contains("Added a test."),
            "{last}"
        );
    }
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("session.json")).unwrap()).unwrap();
    assert_eq!(spec["settings"]["model"], "m2");

    let e = session::end(&ctx, &json!({"session_dir": dir}))
        .await
        .unwrap();
    assert_eq!(e["status"], "ended");
    assert_eq!(e["finalized"], true);
    assert_eq!(e["verdict"], "APPROVE");
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["rounds"], 2);
    let err = session::reply(&ctx, &json!({"session_dir": dir, "input": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_SESSION");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_what_is_wrong() {
    let wd = tempfile::tempdir().unwrap();
    let (cb, _) = scripted(vec![]);
    let ctx = ctx(None, Some(cb));
    let begin = |p: Value| {
        let ctx = ctx.clone();
        async move { session::begin(&ctx, &p).await.unwrap_err() }
    };
    let wdp = wd.path().to_str().unwrap();
    let e = begin(
        json!({"skill": "review-nope", "input": "x", "working_dir": wdp, "reviewer": "host"}),
    )
    .await;
    assert_eq!(e.code(), "UNKNOWN_SKILL");
    let e = begin(json!({"skill": "review-plan", "input": "## PLAN\nx\n## NOTES\ny", "working_dir": wdp, "reviewer": "host"})).await;
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("USER_REQUEST"), "{e}");
    let e = begin(
        json!({"skill": "review-impl", "input": "x", "working_dir": wdp, "reviewer": "host"}),
    )
    .await;
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("mode"), "{e}");
    let e = begin(json!({"skill": "review-impl", "mode": "working-tree", "input": "x", "working_dir": wdp, "reviewer": "host"})).await;
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("not a git repository"), "{e}");
    let e = begin(json!({"skill": "review-plan", "input": "x", "working_dir": wdp, "reviewer": "host", "colour": 1})).await;
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("colour"), "{e}");
    let e =
        begin(json!({"skill": "review-plan", "input": 3, "working_dir": wdp, "reviewer": "host"}))
            .await;
    assert!(e.to_string().contains("input"), "{e}");
    let e = begin(json!({"skill": "review-think", "input": "x", "working_dir": wdp, "reviewer": "carrier-pigeon"})).await;
    assert_eq!(e.code(), "REVIEWER_NOT_FOUND");
    common::private_state();
    let no_host = SessionContext {
        config: None,
        host: None,
        runner: Runner::InProcess,
    };
    let e = session::begin(
        &no_host,
        &json!({"skill": "review-think", "input": "x", "working_dir": wdp, "reviewer": "host"}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), "REVIEWER_NOT_FOUND");
    let e = session::begin(
        &no_host,
        &json!({"skill": "review-think", "input": "x", "working_dir": wdp, "reviewer": "openai"}),
    )
    .await;
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        let e = e.unwrap_err();
        assert_eq!(e.code(), "REVIEWER_NOT_FOUND");
        assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
    }
    let e = session::wait(&ctx, &json!({"session_dir": wdp}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_SESSION");
    assert!(e.to_string().contains("session.json"), "{e}");
    // No session directory was left behind by the failed begins.
    let sessions = wd.path().join(".mcpmux/sessions");
    let n = std::fs::read_dir(&sessions).map(|d| d.count()).unwrap_or(0);
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_skill_missing_verdict_and_round_still_running() {
    let wd = tempfile::tempdir().unwrap();
    // A host that answers after a pause, so reply can meet a running round.
    let cb: HostCallback = Arc::new(|req: Value| {
        Box::pin(async move {
            let text = req["messages"].as_array().unwrap().last().unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned();
            tokio::time::sleep(std::time::Duration::from_millis(600)).await;
            if text.contains("SLOWQ") {
                Ok(json!("I think it depends; no verdict from me."))
            } else {
                Ok(json!(
                    "```json\n{\"verdict\": \"agree\", \"blocks\": []}\n```"
                ))
            }
        })
    });
    let ctx = ctx(None, Some(cb));
    let b = session::begin(&ctx, &json!({"skill": "review-think", "input": "Is SLOWQ wise?", "working_dir": wd.path(), "reviewer": "host"})).await.unwrap();
    assert!(b["analysis_prompt"]
        .as_str()
        .unwrap()
        .contains("cross_check"));
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    let e = session::reply(&ctx, &json!({"session_dir": dir, "input": "more"}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "ROUND_STILL_RUNNING");
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("cross_check"), Some("peer_verdict_is_advisory"))
    );
    let e = session::end(&ctx, &json!({"session_dir": dir, "outcome": "consensus"}))
        .await
        .unwrap();
    assert_eq!(e["finalized"], true);

    // A plan review without verdict or findings asks the user.
    let b = session::begin(&ctx, &json!({"skill": "review-plan", "input": "---\nUSER_REQUEST: SLOWQ\nPLAN: do it\n---\n", "working_dir": wd.path(), "reviewer": "host"})).await.unwrap();
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("ask_user"), Some("missing_verdict")),
        "{w:#}"
    );
    // Ending while a round runs stops it and finalizes with an error.
    session::reply(
        &ctx,
        &json!({"session_dir": dir, "input": "please answer SLOWQ"}),
    )
    .await
    .unwrap();
    let e = session::end(&ctx, &json!({"session_dir": dir}))
        .await
        .unwrap();
    assert_eq!(e["finalized"], true);
    assert!(e["error"].as_str().unwrap().contains("running"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_turns_and_stall_and_custom_template() {
    let wd = tempfile::tempdir().unwrap();
    std::fs::write(wd.path().join("my-skill.md"), "Check {{THING}} please.").unwrap();
    // Always calls a tool: past max_turns the round fails.
    let cb: HostCallback = Arc::new(|req: Value| {
        Box::pin(async move {
            let tools = req["tools"].as_array().unwrap().len();
            Ok(
                json!({"tool_calls": [{"id": format!("t{tools}"), "name": "mcp_demo_echo", "arguments": {"text": "x"}}]}),
            )
        })
    });
    let ctx1 = ctx(Some(demo_config("max_turns = 2")), Some(cb));
    let b = session::begin(
        &ctx1,
        &json!({"skill": "my-skill.md", "input": "## THING\nthe widget", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    assert!(dir.contains("/my-skill-"), "{dir}");
    let prompt = std::fs::read_to_string(Path::new(&dir).join("round-001/prompt.md")).unwrap();
    assert!(prompt.starts_with("Check the widget please."), "{prompt}");
    let w = wait_done(&ctx1, &dir).await;
    assert_eq!(w["status"], "failed", "{w:#}");
    assert_eq!(w["failure_reason"], "max_turns");
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("stopped"), Some("max_turns"))
    );

    // A host that never answers: stalled after stall_seconds.
    let hang: HostCallback = Arc::new(|_req: Value| Box::pin(std::future::pending()));
    let ctx2 = ctx(
        Some(parse("[session]\nreviewer = \"host\"\nstall_seconds = 1\n").unwrap()),
        Some(hang),
    );
    let b = session::begin(
        &ctx2,
        &json!({"skill": "review-think", "input": "q", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let w = wait_done(&ctx2, b["session_dir"].as_str().unwrap()).await;
    assert_eq!(w["status"], "stalled", "{w:#}");
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("stopped"), Some("stalled"))
    );

    // ... and a deadline: timeout.
    let hang: HostCallback = Arc::new(|_req: Value| Box::pin(std::future::pending()));
    let ctx3 = ctx(
        Some(parse("[session]\nreviewer = \"host\"\n").unwrap()),
        Some(hang),
    );
    let b = session::begin(&ctx3, &json!({"skill": "review-think", "input": "q", "working_dir": wd.path(), "timeout_seconds": 1})).await.unwrap();
    let w = wait_done(&ctx3, b["session_dir"].as_str().unwrap()).await;
    assert_eq!(w["status"], "timeout", "{w:#}");
    assert_eq!(w["next"], "stopped");
    assert_eq!(w["timeout_reason"], "round_deadline");
}

/// A tool result too big for the model is cut to head and tail; the whole
/// is kept in the session directory, and `read_result` (offered once a
/// result was kept, answered without a server) pages its end back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_result_is_kept_in_the_session_and_paged_with_read_result() {
    let wd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    let log = seen.clone();
    let cb: HostCallback = Arc::new(move |req: Value| {
        let mut log = log.lock().unwrap();
        log.push(req.clone());
        let turn = log.len();
        let answer = match turn {
            1 => json!({"tool_calls": [{"id": "b1", "name": "mcp_demo_big", "arguments": {
                "bytes": 5_000_000, "tail": "\nERROR: the last line"}}]}),
            2 => {
                // The id and size the marker gave, as a model reads them.
                let text = req.to_string();
                let at = text.find("read_result id=").map(|i| i + 15);
                let id = at.map(|i| text[i..i + 32].to_owned()).unwrap_or_default();
                json!({"tool_calls": [
                    {"id": "r1", "name": "read_result", "arguments": {"id": id, "offset": 5_000_000 - 10}},
                    {"id": "r2", "name": "read_result", "arguments": {"id": "../../session.json"}}
                ]})
            }
            _ => json!({"tool_calls": [{"id": "s", "name": "submit_review",
                "arguments": {"verdict": "APPROVE", "blocks": []}}]}),
        };
        Box::pin(async move { Ok(answer) })
    });
    let text = format!(
        "{}\n[session]\nreviewer = \"host\"\nmax_output_bytes = 3000\n",
        common::demo_entry("demo", "allow_tools = [\"big\"]")
    );
    let ctx = ctx(Some(parse(&text).unwrap()), Some(cb));
    let begun = session::begin(
        &ctx,
        &json!({"skill": "review-plan", "input": plan_input(), "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = begun["session_dir"].as_str().unwrap().to_owned();
    let w = wait_done(&ctx, &dir).await;
    assert_eq!(w["status"], "completed", "{w:#}");

    let seen = seen.lock().unwrap();
    let tools = |i: usize| -> Vec<String> {
        seen[i]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(tools(0), ["mcp_demo_big", "submit_review"]);
    assert_eq!(tools(1), ["mcp_demo_big", "read_result", "submit_review"]);
    let cut = seen[1]["messages"][2]["tool_results"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(cut.len() < 4000, "{} bytes shown", cut.len());
    assert!(cut.contains("[output truncated by mcpmux: "), "{cut}");
    assert!(
        cut.contains("ERROR: the last line"),
        "the tail is shown: {cut}"
    );
    let results = &seen[2]["messages"][4]["tool_results"];
    let page = results[0]["content"].as_str().unwrap();
    assert!(page.contains("xxxxxxxxxx\nERROR: the last line"), "{page}");
    assert!(page.contains("this is the end"), "{page}");
    let bad = results[1]["content"].as_str().unwrap();
    assert!(bad.contains("INVALID_INPUT"), "{bad}");
    // The whole result, private, in the session directory.
    let kept: Vec<PathBuf> = std::fs::read_dir(Path::new(&dir).join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    use std::os::unix::fs::PermissionsExt;
    let md = std::fs::metadata(&kept[0]).unwrap();
    assert_eq!(md.permissions().mode() & 0o777, 0o600);
    assert_eq!(md.len(), 5_000_000 + "\nERROR: the last line".len() as u64);
}
