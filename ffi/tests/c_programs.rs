//! Compiles the C tests in `tests/c/` and the C example in `examples/c/`
//! against `include/mcpmux.h` and the freshly built `libmcpmux.so`, and runs
//! them against the demo server, server-everything and the fault servers.
//! Each C program checks its own results and ends with "N passed, M failed".

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Longest a C program may run (each also has its own watchdog).
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// Compiles `sources` into `out` with the plain `cc` line of ffi/README.md.
fn compile(sources: &[PathBuf], out: &Path, extra: &[&str]) {
    let root = workspace_root();
    let lib_dir = artifact_dir();
    assert!(
        lib_dir.join("libmcpmux.so").is_file(),
        "libmcpmux.so missing in {}",
        lib_dir.display()
    );
    let mut cmd = Command::new("cc");
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-g"])
        .arg("-I")
        .arg(root.join("include"))
        .args(sources)
        .args(extra)
        .arg("-o")
        .arg(out)
        .arg(format!("-L{}", lib_dir.display()))
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .args(["-lmcpmux", "-lpthread"]);
    let output = cmd.output().expect("cannot run cc");
    assert!(
        output.status.success(),
        "compiling {sources:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs a compiled test program with the peers in its environment and
/// returns its output; fails the test unless it exits 0.
fn run(program: &Path, args: &[&str], tmp: &Path) -> String {
    let root = workspace_root();
    let mut child = Command::new(program)
        .args(args)
        .env("MCPMUX_DEMO_SERVER", demo_server())
        .env("MCPMUX_PYTHON", python())
        .env("MCPMUX_SERVERS_DIR", root.join("tests/servers"))
        .env("MCPMUX_EVERYTHING", everything_js())
        .env("MCPMUX_NODE", node())
        .env("MCPMUX_RMCP_TASKS", rmcp_tasks_server())
        .env("MCPMUX_TEST_TMP", tmp)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out_reader.join().unwrap();
    let err = err_reader.join().unwrap();
    let name = program.file_name().unwrap().to_string_lossy();
    match status {
        None => panic!("{name} did not finish within {RUN_LIMIT:?}\n{out}\n{err}"),
        Some(s) if !s.success() => panic!("{name} failed ({s}):\n{out}\n--- stderr\n{err}"),
        Some(_) => {}
    }
    out
}

/// Compiles and runs `tests/c/<name>.c`, expecting its summary line.
fn c_test(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join(name);
    let source = workspace_root().join("tests/c").join(format!("{name}.c"));
    compile(&[source], &exe, &[]);
    let out = run(&exe, &[], dir.path());
    let summary = out
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")) && l.ends_with(" 0 failed"))
        .unwrap_or_else(|| panic!("{name}: no '0 failed' summary line:\n{out}"));
    let passed: usize = summary
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 10, "{name} ran only {passed} checks:\n{out}");
    print!("{out}");
}

#[test]
fn c_basic_demo_server() {
    c_test("test_basic");
}

#[test]
fn c_call_options_contract() {
    c_test("test_contract");
}

#[test]
fn c_async_callbacks_and_cancel() {
    c_test("test_async");
}

#[test]
fn c_error_paths() {
    c_test("test_errors");
}

#[test]
fn c_server_crash_mid_call() {
    c_test("test_crash");
}

#[test]
fn c_review_session_with_host_reviewer() {
    c_test("test_session");
}

#[test]
fn c_policy_for_host_calls() {
    c_test("test_policy");
}

#[test]
fn c_pinned_tool_definitions() {
    c_test("test_pins");
}

#[test]
fn c_server_everything() {
    c_test("test_everything");
}

#[test]
fn c_hub_events_and_client_surface() {
    c_test("test_events");
}

#[test]
fn c_tasks_against_server_everything() {
    c_test("test_tasks");
}

#[test]
fn c_server_requests_and_roots() {
    c_test("test_requests");
}

#[test]
fn c_tasks_extension_against_rmcp() {
    c_test("test_tasks_ext");
}

#[test]
fn c_events_extension() {
    c_test("test_events_ext");
}

#[test]
fn c_mcp_apps() {
    c_test("test_apps");
}

#[test]
fn c_hub_reload() {
    c_test("test_reload");
}

#[test]
fn c_network_policy() {
    c_test("test_network");
}

#[test]
fn c_example_builds_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("hello");
    compile(&[workspace_root().join("examples/c/hello.c")], &exe, &[]);
    let config = dir.path().join("demo.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp.servers]]\nname = \"demo\"\ncommand = \"{}\"\n",
            demo_server().display()
        ),
    )
    .unwrap();
    let out = run(&exe, &[config.to_str().unwrap()], dir.path());
    assert!(
        out.contains("mcp_demo_echo"),
        "the example lists the tools:\n{out}"
    );
    assert!(
        out.contains("hello from C"),
        "the example calls echo:\n{out}"
    );
}

#[test]
fn c_session_example_builds_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("session");
    compile(&[workspace_root().join("examples/c/session.c")], &exe, &[]);
    let demo = demo_server();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = run(
        &exe,
        &[demo.to_str().unwrap(), work.to_str().unwrap()],
        dir.path(),
    );
    assert!(
        out.contains("\"verdict\":\"APPROVE\""),
        "the example's reviewer approves:\n{out}"
    );
    assert!(
        out.contains("\"finalized\":true"),
        "the example ends the session:\n{out}"
    );
    assert!(
        work.join(".mcpmux/sessions").is_dir(),
        "the session is on disk"
    );
}

#[test]
fn c_example_links_statically() {
    let lib_dir = artifact_dir();
    let archive = lib_dir.join("libmcpmux.a");
    assert!(
        archive.is_file(),
        "libmcpmux.a missing in {}",
        lib_dir.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("hello-static");
    let root = workspace_root();
    let output = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Werror"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("examples/c/hello.c"))
        .arg(&archive)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("cc");
    assert!(
        output.status.success(),
        "static link failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ldd = Command::new("ldd").arg(&exe).output().expect("ldd");
    assert!(
        !String::from_utf8_lossy(&ldd.stdout).contains("libmcpmux"),
        "the static program does not need libmcpmux.so"
    );
    let out = run(&exe, &["examples/mcpmux.toml"], dir.path());
    assert!(out.contains("hello from C"), "static example runs:\n{out}");
}
