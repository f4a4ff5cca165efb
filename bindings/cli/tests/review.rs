//! `mcpmux review ...` end to end: begin returns at once while the round
//! runs on in a detached process (also after the CLI exited), wait polls
//! it, reply starts round 2 on the same thread, end finalizes. The reviewer
//! is a fake `codex` (codex-style `exec --json` events) found on PATH, with
//! the demo server configured as the session's tools.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Sandbox;
use serde_json::Value;

fn fake_codex_dir() -> PathBuf {
    common::workspace_root().join("tests/fixtures/fake-codex")
}

fn path_with_fake_codex() -> String {
    format!(
        "{}:{}",
        fake_codex_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn config() -> String {
    format!(
        "{}\n[session]\nreviewer = \"command\"\nmax_rounds = 3\n",
        common::demo_entry("demo", "")
    )
}

fn wait_until_done(sb: &Sandbox, dir: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let out = sb
            .mcpmux(&["review", "wait", dir, "--max-wait-seconds", "2"])
            .env("PATH", path_with_fake_codex())
            .run();
        out.ok();
        let v = out.json();
        if v["status"] != "running" {
            return v;
        }
        assert!(Instant::now() < end, "round never finished: {v:#}");
    }
}

#[test]
fn begin_wait_reply_end_cycle() {
    let sb = Sandbox::with_config(&config());
    let input = sb.write(
        "plan.md",
        "---\nUSER_REQUEST: add a flag\n---\n## PLAN\n1. parse it\n2. test it\n",
    );
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-plan", "--input"])
        .arg(&input)
        .env("PATH", path_with_fake_codex())
        .env("FAKE_CODEX_DELAY", "1.5")
        .run();
    out.ok();
    // begin returns while the round runs: the reviewer is still at work.
    let begun = out.json();
    assert_eq!(begun["status"], "running", "{out}");
    assert_eq!(begun["round"], 1);
    let dir = begun["session_dir"].as_str().unwrap().to_owned();
    assert!(
        Path::new(&dir).starts_with(sb.path().canonicalize().unwrap().join(".mcpmux/sessions")),
        "{dir}"
    );
    // The CLI has exited; the detached runner finishes the round.
    let deadline = Instant::now() + Duration::from_secs(20);
    let state = Path::new(&dir).join("round-001/state.json");
    loop {
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        if s["status"] == "completed" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the detached round did not complete: {s:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let w = wait_until_done(&sb, &dir);
    assert_eq!(w["status"], "completed", "{w:#}");
    assert_eq!(w["review"]["verdict"], "REQUEST_CHANGES");
    assert_eq!(w["next"], "respond");
    assert_eq!(w["next_reason"], "open_issues");
    let thread_id = w["thread_id"].as_str().unwrap().to_owned();
    assert!(w["activities"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["type"] == "command"));

    // Reply from a file, then from stdin is refused while round 2 runs.
    let response = sb.write("response.md", "Added the test. APPROVE_ME");
    let out = sb
        .mcpmux(&["review", "reply", &dir, "--input"])
        .arg(&response)
        .env("PATH", path_with_fake_codex())
        .env("FAKE_CODEX_DELAY", "1")
        .run();
    out.ok();
    let r = out.json();
    assert_eq!(r["status"], "started");
    assert_eq!(r["round"], 2);
    assert_eq!(r["thread_id"], thread_id.as_str());
    let again = sb
        .mcpmux(&["review", "reply", &dir, "--input", "-"])
        .stdin("more")
        .env("PATH", path_with_fake_codex())
        .run();
    again.expect_exit(2);
    assert_eq!(again.error()["code"], "ROUND_STILL_RUNNING");
    let w = wait_until_done(&sb, &dir);
    assert_eq!(w["review"]["verdict"], "APPROVE", "{w:#}");
    assert_eq!(
        (w["next"].as_str(), w["next_reason"].as_str()),
        (Some("done"), Some("approved"))
    );
    // Round 2 resumed the reviewer's thread.
    let runs = std::fs::read_to_string(sb.path().join("codex-runs.jsonl")).unwrap();
    let last: Value = serde_json::from_str(runs.lines().last().unwrap()).unwrap();
    assert!(
        last["argv"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "resume"),
        "{last}"
    );
    assert!(
        last["argv"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == thread_id.as_str()),
        "{last}"
    );

    let out = sb.mcpmux(&["review", "end", &dir]).run();
    out.ok();
    let e = out.json();
    assert_eq!(e["status"], "ended");
    assert_eq!(e["finalized"], true);
    assert_eq!(e["verdict"], "APPROVE");
    assert!(Path::new(&dir).join("meta.json").is_file());
}

#[test]
fn errors_are_json_on_stderr() {
    let sb = Sandbox::with_config(&config());
    let input = sb.write("in.md", "x");
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-nope", "--input"])
        .arg(&input)
        .run();
    out.expect_exit(2);
    assert_eq!(out.error()["code"], "UNKNOWN_SKILL");
    // codex is not on this PATH.
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-think", "--input"])
        .arg(&input)
        .env("PATH", "/usr/bin:/bin")
        .run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "REVIEWER_NOT_FOUND");
    assert!(e["error"].as_str().unwrap().contains("codex"), "{e}");
    // A bad input is INVALID_INPUT even where the reviewer is missing too:
    // the input is checked first.
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-impl", "--input"])
        .arg(&input)
        .env("PATH", "/usr/bin:/bin")
        .run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "INVALID_INPUT", "{e}");
    assert!(e["error"].as_str().unwrap().contains("mode"), "{e}");
    let no_plan = sb.write("no-plan.md", "---\nUSER_REQUEST: add a flag\n---\n");
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-plan", "--input"])
        .arg(&no_plan)
        .env("PATH", "/usr/bin:/bin")
        .run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "INVALID_INPUT", "{e}");
    assert!(e["error"].as_str().unwrap().contains("PLAN"), "{e}");
    let out = sb
        .mcpmux(&["review", "wait", sb.path().to_str().unwrap()])
        .run();
    out.expect_exit(2);
    assert_eq!(out.error()["code"], "INVALID_SESSION");
    // A directory that does not exist: the error names the file it needs.
    let missing = sb.path().join("no-such-session");
    let out = sb
        .mcpmux(&["review", "wait", missing.to_str().unwrap()])
        .run();
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "INVALID_SESSION", "{e}");
    assert!(e["error"].as_str().unwrap().contains("session.json"), "{e}");
    let out = sb
        .mcpmux(&[
            "review",
            "begin",
            "--skill",
            "review-plan",
            "--input",
            "missing.md",
        ])
        .run();
    out.expect_exit(2);
    assert_eq!(out.error()["code"], "INVALID_INPUT");
    // Without any config file, sessions still work (no tools).
    let bare = Sandbox::new();
    let input = bare.write("q.md", "Is this wise?");
    let out = bare
        .mcpmux_bare(&["review", "begin", "--skill", "review-think", "--input"])
        .arg(&input)
        .env("PATH", path_with_fake_codex())
        .run();
    out.ok();
    let dir = out.json()["session_dir"].as_str().unwrap().to_owned();
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let out = bare
            .mcpmux_bare(&["review", "wait", &dir, "--max-wait-seconds", "2"])
            .env("PATH", path_with_fake_codex())
            .run();
        out.ok();
        let v = out.json();
        if v["status"] != "running" {
            assert_eq!(v["next"], "cross_check", "{v:#}");
            break;
        }
        assert!(Instant::now() < end, "{v:#}");
    }
}

#[test]
fn end_while_running_kills_the_detached_runner() {
    let sb = Sandbox::with_config(&config());
    let input = sb.write("q.md", "A slow question");
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-think", "--input"])
        .arg(&input)
        .env("PATH", path_with_fake_codex())
        .env("FAKE_CODEX_DELAY", "30")
        .run();
    out.ok();
    let dir = out.json()["session_dir"].as_str().unwrap().to_owned();
    let state = Path::new(&dir).join("round-001/state.json");
    let end = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        if let Some(pid) = s["pid"].as_u64() {
            break pid;
        }
        assert!(Instant::now() < end, "runner never started: {s}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // MCPMUX_WAIT_DEFAULT_S sets how long a wait without --max-wait-seconds waits.
    let w = sb
        .mcpmux(&["review", "wait", &dir])
        .env("MCPMUX_WAIT_DEFAULT_S", "0.5")
        .run();
    w.ok();
    assert_eq!(w.json()["status"], "running");
    assert_eq!(w.json()["next"], "running");
    assert_eq!(w.json()["next_reason"], "reviewer_running");
    // (Without the variable the wait would take the default 50 s, past
    // the run's hang guard, while the reviewer sleeps 30 s.)
    let out = sb.mcpmux(&["review", "end", &dir]).run();
    out.ok();
    let e = out.json();
    assert_eq!(e["finalized"], true, "{e}");
    assert!(e["error"].as_str().unwrap().contains("running"), "{e}");
    assert!(Path::new(&dir).join("meta.json").is_file());
    let gone = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    {
        assert!(Instant::now() < gone, "runner {pid} still alive after end");
        std::thread::sleep(Duration::from_millis(50));
    }
    let w = sb
        .mcpmux(&["review", "wait", &dir, "--max-wait-seconds", "0"])
        .run();
    w.ok();
    assert_eq!(w.json()["status"], "failed");
    let r = sb
        .mcpmux(&["review", "reply", &dir, "--input", "-"])
        .stdin("x")
        .run();
    r.expect_exit(2);
    assert_eq!(r.error()["code"], "INVALID_SESSION");
}
