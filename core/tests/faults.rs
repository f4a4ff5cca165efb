//! Servers that misbehave: each failure ends in a clear error, nothing
//! hangs, the other servers of the hub keep working, and no process is
//! left behind.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::{CallOptions, Hub};
use serde_json::json;

/// Failure tests: a failed server stays failed (restarts are tested in
/// `supervision.rs`).
fn config(entries: &[String]) -> mcpmux_core::Config {
    config_without_restarts(entries)
}

/// A hub with the demo server (marked `tag`) and `fault`.
async fn hub_with(tag: &str, fault: String) -> Hub {
    Hub::connect(config(&[demo_entry("demo", &marker_env(tag)), fault]))
        .await
        .unwrap()
}

async fn assert_demo_works(hub: &Hub) {
    let r = hub
        .call_tool(
            "mcp_demo_echo",
            Some(&json!({"text": "still here"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.value()["content"][0]["text"], "still here");
}

/// Closes the hub and checks every marked process is gone.
async fn close_and_check(hub: Hub, tag: &str) {
    let pids = pids_with(tag);
    assert!(!pids.is_empty(), "no marked process found");
    hub.close().await;
    for pid in pids {
        assert!(
            wait_gone(pid, Duration::from_secs(1)),
            "process {pid} left behind"
        );
    }
}

fn fault(name: &str, script: &str, tag: &str) -> String {
    script_entry(name, script, &marker_env(tag))
}

#[tokio::test]
async fn server_exiting_during_initialize_is_marked_failed_with_its_stderr() {
    let tag = marker("exit-init");
    let hub = hub_with(&tag, fault("broken", "exit_during_init.py", &tag)).await;
    let broken = hub
        .servers()
        .into_iter()
        .find(|s| s.name == "broken")
        .unwrap();
    assert_eq!(broken.state, "failed");
    assert_eq!(broken.error_code, Some("CONNECT_FAILED"));
    let msg = broken.error.unwrap();
    assert!(
        msg.contains("fatal: database at /nonexistent is unavailable"),
        "{msg}"
    );
    assert!(msg.contains("17"), "exit status missing: {msg}");
    let e = hub
        .call_tool("mcp_broken_anything", None, &CallOptions::default())
        .await
        .unwrap_err();
    // The server's own error (and its stderr), not UNKNOWN_TOOL.
    assert_eq!(e.code(), "CONNECT_FAILED", "{e}");
    assert!(e.to_string().contains("database at /nonexistent"), "{e}");
    assert!(e.to_string().contains("broken"), "{e}");
    assert_demo_works(&hub).await;
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn crash_mid_call_fails_fast() {
    let tag = marker("crash");
    let hub = hub_with(&tag, fault("crashy", "crash_mid_call.py", &tag)).await;
    let defaults = CallOptions::default();
    let args = json!({"seconds": 0.5, "steps": 0});
    let slow = hub.call_tool("mcp_demo_slow", Some(&args), &defaults);
    let crash = hub.call_tool("mcp_crashy_work", None, &defaults);
    let (slow, crash) = tokio::join!(slow, crash);
    let e = crash.unwrap_err();
    // TRANSPORT_CLOSED, not the TIMEOUT that waiting for an answer gives.
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    assert!(e.to_string().contains("crashy"), "{e}");
    assert!(slow.is_ok());
    let state = hub
        .servers()
        .into_iter()
        .find(|s| s.name == "crashy")
        .unwrap();
    assert_eq!(state.state, "failed");
    // Later calls fail at once instead of waiting.
    let again = tokio::time::timeout(
        Duration::from_secs(1),
        hub.call_tool("mcp_crashy_work", None, &CallOptions::default()),
    )
    .await
    .expect("no hang");
    assert_eq!(again.unwrap_err().code(), "TRANSPORT_CLOSED");
    assert_demo_works(&hub).await;
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn a_crash_quotes_only_the_stderr_of_the_call_under_way() {
    let tag = marker("crash-stderr");
    let hub = hub_with(&tag, fault("crashy", "crash_mid_call.py", &tag)).await;
    let defaults = CallOptions::default();
    let answered = hub.call_tool("mcp_crashy_chatty", None, &defaults).await;
    assert!(answered.is_ok(), "{answered:?}");
    let e = hub
        .call_tool("mcp_crashy_work", None, &defaults)
        .await
        .unwrap_err();
    let message = e.to_string();
    assert!(message.contains("simulated crash"), "{message}");
    assert!(!message.contains("earlier call"), "{message}");
    close_and_check(hub, &tag).await;
}

/// A server that stops reading its stdin before it exits: the next call's
/// write fails at once (a broken pipe), and its error is the reader's
/// account of the end (the exit status and the stderr), not a bare
/// "connection closed".
#[tokio::test]
async fn a_write_to_a_server_that_stopped_reading_fails_with_why_it_ended() {
    let tag = marker("closes-stdin");
    let hub = hub_with(&tag, fault("quitter", "closes_stdin.py", &tag)).await;
    let defaults = CallOptions::default();
    let answered = hub.call_tool("mcp_quitter_quit", None, &defaults).await;
    assert!(answered.is_ok(), "{answered:?}");
    // Its stdin is closed by now; it exits 0.3 s after that.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e = tokio::time::timeout(
        Duration::from_secs(5),
        hub.call_tool("mcp_quitter_quit", None, &defaults),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    let message = e.to_string();
    assert!(message.contains("stopped reading"), "{message}");
    assert!(message.contains("exit status: 3"), "{message}");
    assert_demo_works(&hub).await;
    hub.close().await;
}

#[tokio::test]
async fn demo_crash_fails_every_call_in_flight() {
    let tag = marker("inflight");
    let hub = Hub::connect(config(&[demo_entry("demo", &marker_env(&tag))]))
        .await
        .unwrap();
    let defaults = CallOptions::default();
    let args = json!({"seconds": 30, "steps": 0});
    let slow_calls = (0..5).map(|_| hub.call_tool("mcp_demo_slow", Some(&args), &defaults));
    // The slow calls would answer "done" after 30 s: failing with
    // TRANSPORT_CLOSED shows they ended with the server, not on their own.
    let (slow, crash) = tokio::join!(futures::future::join_all(slow_calls), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        hub.call_tool("mcp_demo_crash", None, &CallOptions::default())
            .await
    });
    assert_eq!(crash.unwrap_err().code(), "TRANSPORT_CLOSED");
    for r in slow {
        assert_eq!(r.unwrap_err().code(), "TRANSPORT_CLOSED");
    }
    hub.close().await;
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let tag = marker("hang");
    let hub = hub_with(&tag, fault("hang", "hang.py", &tag)).await;
    let opts = CallOptions::default().with_timeout(Duration::from_millis(300));
    let e = hub
        .call_tool("mcp_hang_wait_forever", None, &opts)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT");
    assert!(e.to_string().contains("hang"), "{e}");
    assert_demo_works(&hub).await;
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn server_hanging_in_initialize_is_marked_failed() {
    let tag = marker("hang-init");
    let hub = hub_with(
        &tag,
        script_entry(
            "stuck",
            "hang_in_init.py",
            &format!("{}\ntimeout_seconds = 0.5", marker_env(&tag)),
        ),
    )
    .await;
    let stuck = hub
        .servers()
        .into_iter()
        .find(|s| s.name == "stuck")
        .unwrap();
    assert_eq!(stuck.state, "failed");
    assert_eq!(stuck.error_code, Some("CONNECT_FAILED"));
    assert!(stuck.error.unwrap().contains("initialize"));
    assert_demo_works(&hub).await;
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn non_json_output_fails_the_calls_in_flight() {
    let tag = marker("garbage");
    let hub = hub_with(&tag, fault("garbage", "garbage_stdout.py", &tag)).await;
    let e = tokio::time::timeout(
        Duration::from_secs(5),
        hub.call_tool("mcp_garbage_garble", None, &CallOptions::default()),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(e.code(), "PROTOCOL_ERROR");
    assert!(e.to_string().contains("not JSON-RPC"), "{e}");
    assert_demo_works(&hub).await;
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn oversized_message_is_a_protocol_error() {
    let tag = marker("huge");
    let hub = hub_with(&tag, fault("huge", "huge_line.py", &tag)).await;
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        hub.call_tool("mcp_huge_flood", None, &CallOptions::default()),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(e.code(), "PROTOCOL_ERROR");
    assert!(e.to_string().contains("exceeds the limit"), "{e}");
    assert_demo_works(&hub).await;
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn message_cap_is_configurable() {
    let hub = Hub::connect(config(&[demo_entry("demo", "max_message_bytes = 100000")]))
        .await
        .unwrap();
    let ok = hub
        .call_tool(
            "mcp_demo_big",
            Some(&json!({"bytes": 50_000})),
            &CallOptions::default(),
        )
        .await;
    assert!(ok.is_ok());
    let e = hub
        .call_tool(
            "mcp_demo_big",
            Some(&json!({"bytes": 200_000})),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "PROTOCOL_ERROR");
    // The stream resynchronizes after the discarded line.
    assert_demo_works(&hub).await;
    hub.close().await;
}

#[tokio::test]
async fn missing_command_is_connect_failed_naming_it() {
    let tag = marker("missing");
    let hub = hub_with(
        &tag,
        stdio_entry("ghost", "/nonexistent/mcp-server-ghost", &[], ""),
    )
    .await;
    let ghost = hub
        .servers()
        .into_iter()
        .find(|s| s.name == "ghost")
        .unwrap();
    assert_eq!(ghost.state, "failed");
    assert_eq!(ghost.error_code, Some("CONNECT_FAILED"));
    assert!(ghost
        .error
        .unwrap()
        .contains("/nonexistent/mcp-server-ghost"));
    assert_demo_works(&hub).await;
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn close_escalates_to_sigkill_for_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let events = dir.path().join("events.log");
    let entry = script_entry(
        "stubborn",
        "ignore_sigterm.py",
        &format!(
            "env = {{ CHILD_PID_FILE = {}, EVENT_LOG = {} }}",
            q(&pid_file.display().to_string()),
            q(&events.display().to_string())
        ),
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let r = hub
        .call_tool("mcp_stubborn_noop", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(r.json().contains("ok"));
    let child = read_pid(&pid_file);
    assert!(alive(child));
    hub.close().await;
    assert!(
        wait_gone(child, Duration::from_secs(1)),
        "grandchild {child} survived close"
    );
    // stdin closed, then SIGTERM (ignored), then SIGKILL: the server saw
    // the first two steps in that order, and only the last one ended it.
    let seen = std::fs::read_to_string(&events).unwrap_or_default();
    let seen: Vec<&str> = seen.lines().collect();
    assert_eq!(seen, ["stdin eof", "SIGTERM"], "steps the server saw");
}

/// A hub with one server that ignores SIGTERM and starts a child, and
/// that child's pid (the directory holds its pid file).
async fn stubborn_server() -> (tempfile::TempDir, Hub, u32) {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let entry = script_entry(
        "stubborn",
        "ignore_sigterm.py",
        &format!(
            "env = {{ CHILD_PID_FILE = {} }}",
            q(&pid_file.display().to_string())
        ),
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let child = read_pid(&pid_file);
    (dir, hub, child)
}

/// A stdio server runs in a session of its own, as the official SDKs start
/// them: no controlling terminal shared with the host, one process group to
/// signal, and its own scheduling group where the kernel has autogroups.
#[tokio::test]
async fn a_stdio_server_runs_in_a_session_of_its_own() {
    let (_dir, hub, child) = stubborn_server().await;
    // SAFETY: getsid only reads the session id of a pid.
    let (ours, theirs) = unsafe { (libc::getsid(0), libc::getsid(child as libc::pid_t)) };
    // SAFETY: as above.
    let server = unsafe { libc::getpgid(child as libc::pid_t) };
    assert!(theirs > 0, "getsid of the server's child failed");
    assert_ne!(theirs, ours, "the server shares the host's session");
    assert_eq!(theirs, server, "the session is the server's process group");
    hub.close().await;
}

#[tokio::test]
async fn dropped_hub_kills_the_whole_group() {
    let (_dir, hub, child) = stubborn_server().await;
    drop(hub);
    assert!(
        wait_gone(child, Duration::from_secs(3)),
        "grandchild {child} survived the dropped hub"
    );
}
