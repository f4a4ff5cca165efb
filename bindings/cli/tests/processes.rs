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
    sb.write(
        "mcpmux.toml",
        &wrapped("demo", &pid_file, None, &[&demo_server()]),
    );
    let out = sb
        .mcpmux(&["call", "mcp_demo_echo", r#"{"text":"bye"}"#])
        .run();
    out.ok();
    assert_eq!(out.stdout, "bye\n", "{out}");
    let pid = read_pid(&pid_file, Duration::ZERO);
    // mcpmux waits for its servers before it exits.
    assert_gone(pid, "demo server", Duration::from_millis(500), &out);
    assert!(
        out.elapsed < Duration::from_secs(2),
        "a server that exits on stdin EOF needs no signals\n{out}"
    );
}

#[test]
fn server_ignoring_sigterm_and_its_child_are_killed() {
    let sb = Sandbox::new();
    let pid_file = sb.path().join("server.pid");
    let child_file = sb.path().join("child.pid");
    let script = fault_server("ignore_sigterm.py");
    sb.write(
        "mcpmux.toml",
        &format!(
            "{}[mcp.servers.env]\nCHILD_PID_FILE = {}\n",
            wrapped("stubborn", &pid_file, None, &[&python(), &script]),
            qp(&child_file)
        ),
    );
    let out = sb.mcpmux(&["call", "mcp_stubborn_noop"]).run();
    out.ok();
    assert_eq!(out.stdout, "ok\n", "{out}");
    // stdin EOF (2 s), SIGTERM (2 s), then SIGKILL of the group.
    assert!(
        out.elapsed < Duration::from_secs(12),
        "closing must not wait forever\n{out}"
    );
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
    let msg = out.fails_with("CANCELLED");
    assert_mentions(&msg, &["interrupted"], &out);
    assert!(out.elapsed < Duration::from_secs(10), "{out}");
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
    out.fails_with("CANCELLED");
    assert!(out.elapsed < Duration::from_secs(10), "{out}");
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
