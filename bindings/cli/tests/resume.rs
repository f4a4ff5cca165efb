//! Crash-resume: the detached process running a round with the `openai`
//! reviewer (against `tests/servers/llm_mock.py`) is killed with SIGKILL
//! between two turns; a later `mcpmux review wait` from a new process
//! resumes the round from the stored transcript and completes it, and the
//! stored tool call is not run again.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;
use serde_json::{json, Value};

struct Mock {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Mock {
    fn start(steps: Value) -> Mock {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(&script, steps.to_string()).unwrap();
        let mut child = Command::new(common::python())
            .arg(common::workspace_root().join("tests/servers/llm_mock.py"))
            .arg("--script")
            .arg(&script)
            .arg("--log")
            .arg(dir.path().join("requests.jsonl"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start llm_mock.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = serde_json::from_str::<Value>(&line).unwrap()["port"]
            .as_u64()
            .unwrap() as u16;
        Mock { child, port, dir }
    }

    /// The requests the mock has logged completely. The mock appends while
    /// the test reads, so a last line without its newline is still being
    /// written and is left for the next read.
    fn requests(&self) -> Vec<Value> {
        let log =
            std::fs::read_to_string(self.dir.path().join("requests.jsonl")).unwrap_or_default();
        let complete = &log[..log.rfind('\n').map_or(0, |end| end + 1)];
        complete
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_default()).unwrap_or(Value::Null)
}

fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn kill_9_between_turns_then_wait_resumes_without_rerunning_tools() {
    let mock = Mock::start(json!([
        {"tool_calls": [{"name": "mcp_demo_add", "arguments": {"a": 40, "b": 2}}]},
        // The runner is killed while this answer hangs.
        {"hang": true, "hang_seconds": 30},
        {"tool_calls": [{"name": "submit_review", "arguments": {"verdict": "REQUEST_CHANGES", "blocks": [{"title": "t", "body": "b"}]}}]}
    ]));
    let sb = Sandbox::with_config(&format!(
        "{}\n[session]\nreviewer = \"openai\"\nbase_url = {}\napi_key_env = \"MCPMUX_RESUME_TEST_KEY\"\n",
        common::demo_entry("demo", ""),
        common::q(format!("http://127.0.0.1:{}/v1", mock.port))
    ));
    let input = sb.write("plan.md", "USER_REQUEST: x\n\n## PLAN\nsteps");
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-plan", "--input"])
        .arg(&input)
        .env("MCPMUX_RESUME_TEST_KEY", "sk-resume-secret")
        .run();
    out.ok();
    let dir = out.json()["session_dir"].as_str().unwrap().to_owned();
    let d = Path::new(&dir);

    // Wait until turn 1 (the call and its result) is stored and the second
    // request is hanging.
    eventually("turn 1 stored", Duration::from_secs(20), || {
        read_json(&d.join("thread.json"))
            .as_array()
            .is_some_and(|t| t.len() == 3)
            && mock.requests().len() == 2
    });
    let pid = read_json(&d.join("round-001/state.json"))["pid"]
        .as_u64()
        .unwrap() as i32;
    // SAFETY: kill(2) on the runner we started; the test owns it.
    assert_eq!(unsafe { libc_kill(pid, 9) }, 0);
    eventually("the runner is gone", Duration::from_secs(10), || {
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
    });
    let st = read_json(&d.join("round-001/state.json"));
    assert_eq!(st["status"], "running", "{st}");

    // A new process waits: it resumes the round (in a new detached runner).
    let end = Instant::now() + Duration::from_secs(30);
    let w = loop {
        let out = sb
            .mcpmux(&["review", "wait", &dir, "--max-wait-seconds", "3"])
            .env("MCPMUX_RESUME_TEST_KEY", "sk-resume-secret")
            .run();
        out.ok();
        let w = out.json();
        if w["status"] != "running" {
            break w;
        }
        assert!(Instant::now() < end, "not resumed: {w:#}");
    };
    assert_eq!(w["status"], "completed", "{w:#}");
    assert_eq!(w["review"]["verdict"], "REQUEST_CHANGES");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "turn 1 was not asked again");
    // The resumed request carries the same transcript as the killed one.
    assert_eq!(
        requests[1]["body"]["messages"],
        requests[2]["body"]["messages"]
    );
    // The stored tool call ran exactly once.
    let events = std::fs::read_to_string(d.join("round-001/events.jsonl")).unwrap();
    let adds = events
        .lines()
        .filter(|l| l.contains("\"tool_call\"") && l.contains("mcp_demo_add"))
        .count();
    assert_eq!(adds, 1, "{events}");
    assert!(events.contains("\"resumed\""), "{events}");
    let st = read_json(&d.join("round-001/state.json"));
    assert_eq!(st["resumes"], 1);
    assert_ne!(st["pid"].as_u64().unwrap() as i32, pid);
    // No secret on disk.
    for f in [
        "session.json",
        "thread.json",
        "round-001/state.json",
        "runner.log",
    ] {
        let text = std::fs::read_to_string(d.join(f)).unwrap_or_default();
        assert!(!text.contains("sk-resume-secret"), "{f}");
    }
}

#[test]
fn a_wait_without_config_resumes_with_the_sessions_config() {
    // The resuming `wait` runs somewhere with no config of its own: the
    // round must go on with the servers (and policy) it began with, so the
    // tool call of the resumed turn reaches the demo server.
    let mock = Mock::start(json!([
        {"tool_calls": [{"name": "mcp_demo_add", "arguments": {"a": 1, "b": 2}}]},
        {"hang": true, "hang_seconds": 30},
        {"tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "after resume"}}]},
        {"expect": "after resume", "text": "```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```"}
    ]));
    let sb = Sandbox::with_config(&format!(
        "{}\n[session]\nreviewer = \"openai\"\nbase_url = {}\napi_key_env = \"MCPMUX_RESUME_TEST_KEY\"\n",
        common::demo_entry(
            "demo",
            "allow_tools = [\"echo\", \"add\"]\nconfirm_read_only = [\"echo\"]"
        ),
        common::q(format!("http://127.0.0.1:{}/v1", mock.port))
    ));
    let input = sb.write("plan.md", "USER_REQUEST: x\n\n## PLAN\nsteps");
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-plan", "--input"])
        .arg(&input)
        .env("MCPMUX_RESUME_TEST_KEY", "sk-resume-secret")
        .run();
    out.ok();
    let dir = out.json()["session_dir"].as_str().unwrap().to_owned();
    let d = Path::new(&dir);
    eventually("turn 1 stored", Duration::from_secs(20), || {
        read_json(&d.join("thread.json"))
            .as_array()
            .is_some_and(|t| t.len() == 3)
            && mock.requests().len() == 2
    });
    let pid = read_json(&d.join("round-001/state.json"))["pid"]
        .as_u64()
        .unwrap() as i32;
    // SAFETY: kill(2) on the runner we started; the test owns it.
    assert_eq!(unsafe { libc_kill(pid, 9) }, 0);
    let elsewhere = Sandbox::new();
    let end = Instant::now() + Duration::from_secs(30);
    let w = loop {
        let out = elsewhere
            .mcpmux_bare(&["review", "wait", &dir, "--max-wait-seconds", "3"])
            .env("MCPMUX_RESUME_TEST_KEY", "sk-resume-secret")
            .run();
        out.ok();
        let w = out.json();
        if w["status"] != "running" {
            break w;
        }
        assert!(Instant::now() < end, "not resumed: {w:#}");
    };
    assert_eq!(w["status"], "completed", "{w:#}");
    assert_eq!(w["review"]["verdict"], "APPROVE", "{w:#}");
    let audit = std::fs::read_to_string(d.join("audit.jsonl")).unwrap();
    let echo: Value = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["tool"] == "echo")
        .unwrap_or_else(|| panic!("echo never ran: {audit}"));
    assert_eq!(echo["status"], "ok", "{audit}");
    assert_eq!(
        audit.lines().filter(|l| l.contains("\"add\"")).count(),
        1,
        "{audit}"
    );
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
