//! No server process outlives `mcpmux`: after a call, after a server that
//! ignores SIGTERM, and after Ctrl-C or SIGTERM during a call or a connect.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

/// A server entry that runs `exec PROGRAM ARGS` under `sh`, after writing the
/// server's pid to `pid_file` (and, with `child_pid_file`, after starting a
/// `sleep 300` in the same process group and writing its pid there).
fn wrapped(
    name: &str,
    pid_file: &Path,
    child_pid_file: Option<&Path>,
    program: &[&Path],
) -> String {
    let quote = |p: &Path| format!("'{}'", p.display());
    let mut script = format!("echo $$ > {}; ", quote(pid_file));
    if let Some(child) = child_pid_file {
        script.push_str(&format!(
            "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}; ",
            quote(child)
        ));
    }
    let program: Vec<String> = program.iter().map(|p| quote(p)).collect();
    script.push_str(&format!("exec {}", program.join(" ")));
    stdio_server(name, Path::new("sh"), &["-c", &script], "")
}

#[track_caller]
fn assert_gone(pid: u32, what: &str, limit: Duration, out: &Output) {
    assert!(
        wait_gone(pid, limit),
        "{what} (pid {pid}) still alive {limit:?} after mcpmux exited\n{out}"
    );
}

#[test]
fn server_is_gone_after_a_call() {
    let sb = Sandbox::new();
    let pid_file = sb.path().join("server.pid");
    // Not `exec`: the shell outlives the server and notes how it ended.
    let status_file = sb.path().join("server.status");
    let script = format!(
        "echo $$ > '{}'; '{}'; echo \"exit $?\" > '{}'",
        pid_file.display(),
        demo_server().display(),
        status_file.display()
    );
    sb.write(
        "mcpmux.toml",
        &stdio_server("demo", Path::new("sh"), &["-c", &script], ""),
    );
    let out = sb
        .mcpmux(&["call", "mcp_demo_echo", r#"{"text":"bye"}"#])
        .run();
    out.ok();
    assert_eq!(out.stdout, "bye\n", "{out}");
    let pid = read_pid(&pid_file, Duration::ZERO);
    // mcpmux waits for its servers before it exits.
    assert_gone(pid, "demo server", Duration::from_millis(500), &out);
    // A server that exits on stdin EOF needs no signals: it ended with
    // status 0 (a SIGTERM or SIGKILL would show as 143 or 137).
    let status = std::fs::read_to_string(&status_file).unwrap_or_default();
    assert_eq!(status.trim(), "exit 0", "{out}");
}

#[test]
fn server_ignoring_sigterm_and_its_child_are_killed() {
    let sb = Sandbox::new();
    let pid_file = sb.path().join("server.pid");
    let child_file = sb.path().join("child.pid");
    let script = fault_server("ignore_sigterm.py");
    let events = sb.path().join("events.log");
    sb.write(
        "mcpmux.toml",
        &format!(
            "{}[mcp.servers.env]\nCHILD_PID_FILE = {}\nEVENT_LOG = {}\n",
            wrapped("stubborn", &pid_file, None, &[&python(), &script]),
            qp(&child_file),
            qp(&events)
        ),
    );
    // Exits (within the run's hang guard) although the server never does.
    let out = sb.mcpmux(&["call", "mcp_stubborn_noop"]).run();
    out.ok();
    assert_eq!(out.stdout, "ok\n", "{out}");
    // stdin EOF, then SIGTERM (ignored), then SIGKILL of the group: the
    // server saw the first two, in that order.
    let seen = std::fs::read_to_string(&events).unwrap_or_default();
    assert_eq!(seen, "stdin eof\nSIGTERM\n", "{out}");
    let server = read_pid(&pid_file, Duration::ZERO);
    let child = read_pid(&child_file, Duration::ZERO);
    assert_gone(server, "ignore_sigterm.py", Duration::from_secs(6), &out);
    assert_gone(child, "its `sleep 300` child", Duration::from_secs(6), &out);
}

#[test]
fn ctrl_c_during_a_call_cancels_and_closes_the_server() {
    let sb = Sandbox::new();
    let pid_file = sb.path().join("server.pid");
    sb.write(
        "mcpmux.toml",
        &wrapped("demo", &pid_file, None, &[&demo_server()]),
    );
    let running = sb
        .mcpmux(&["call", "mcp_demo_slow", r#"{"seconds": 20}"#])
        .spawn();
    let pid = read_pid(&pid_file, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    running.signal("INT");
    let out = running.wait();
    // CANCELLED, not the answer the server gives after 20 s.
    let msg = out.fails_with("CANCELLED");
    assert_mentions(&msg, &["interrupted"], &out);
    assert_gone(pid, "demo server", Duration::from_secs(1), &out);
}

#[test]
fn sigterm_during_a_call_cancels_and_closes_the_server() {
    let sb = Sandbox::new();
    let pid_file = sb.path().join("server.pid");
    sb.write(
        "mcpmux.toml",
        &wrapped("demo", &pid_file, None, &[&demo_server()]),
    );
    let running = sb
        .mcpmux(&["call", "mcp_demo_slow", r#"{"seconds": 20}"#])
        .spawn();
    let pid = read_pid(&pid_file, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    running.signal("TERM");
    let out = running.wait();
    // CANCELLED, not the answer the server gives after 20 s.
    out.fails_with("CANCELLED");
    assert_gone(pid, "demo server", Duration::from_secs(1), &out);
}

#[test]
fn ctrl_c_while_connecting_leaves_no_process_behind() {
    let sb = Sandbox::new();
    let pid_file = sb.path().join("server.pid");
    let child_file = sb.path().join("child.pid");
    let script = fault_server("hang_in_init.py");
    sb.write(
        "mcpmux.toml",
        &wrapped("hang", &pid_file, Some(&child_file), &[&python(), &script]),
    );
    let running = sb.mcpmux(&["servers"]).spawn();
    let server = read_pid(&pid_file, Duration::from_secs(10));
    let child = read_pid(&child_file, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    running.signal("INT");
    let out = running.wait();
    let msg = out.fails_with("CANCELLED");
    assert_mentions(&msg, &["interrupted"], &out);
    assert_gone(server, "hang_in_init.py", Duration::from_secs(6), &out);
    assert_gone(
        child,
        "the server's `sleep 300` child",
        Duration::from_secs(6),
        &out,
    );
}
