//! `mcpmux watch` (the hub's events until interrupted) and `mcpmux complete`
//! against real servers: the demo server and server-everything.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// Only catches hangs.
const HANG: Duration = Duration::from_secs(60);

fn two_servers() -> Sandbox {
    let js = everything_server();
    Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("demo", ""),
        stdio_server(
            "everything",
            std::path::Path::new("node"),
            &[js.to_str().unwrap(), "stdio"],
            "",
        )
    ))
}

/// Starts `mcpmux ARGS watch` in `sb`, reads lines until `done` says the
/// lines so far are enough, then interrupts it; returns the lines and the
/// exit status.
fn watch_until(
    sb: &Sandbox,
    args: &[&str],
    done: impl Fn(&[String]) -> bool,
) -> (Vec<String>, std::process::ExitStatus) {
    let mut child = Command::new(mcpmux_bin())
        .arg("--config")
        .arg(sb.path().join("mcpmux.toml"))
        .args(args)
        .current_dir(sb.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut lines = Vec::new();
    let start = Instant::now();
    while !done(&lines) {
        let left = HANG.saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("watch: not enough within {HANG:?}: {lines:#?}");
            }
        }
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let end = Instant::now() + HANG;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < end, "watch did not end after SIGINT");
        std::thread::sleep(Duration::from_millis(10));
    };
    (lines, status)
}

#[test]
fn watch_json_prints_each_server_starting_and_ends_cleanly_on_ctrl_c() {
    let sb = two_servers();
    let connected = |lines: &[String], server: &str| {
        lines.iter().any(|l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| {
                v["type"] == "server_state" && v["server"] == server && v["state"] == "connected"
            })
        })
    };
    let (lines, status) = watch_until(&sb, &["--json", "watch"], |lines| {
        connected(lines, "demo") && connected(lines, "everything")
    });
    assert!(status.success(), "{status:?}");
    for line in &lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(v["type"].is_string(), "{line}");
    }
}

#[test]
fn watch_prints_a_line_per_event_for_people() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    let (lines, status) = watch_until(&sb, &["watch"], |lines| {
        lines.iter().any(|l| l == "demo: connected")
    });
    assert!(status.success(), "{status:?} {lines:?}");
}

#[test]
fn watch_refuses_a_bad_log_level() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    let out = sb.mcpmux(&["watch", "--log-level", "loud"]).run();
    let message = out.fails_with("INVALID_INPUT");
    assert!(message.contains("loud"), "{message}");
}

#[test]
fn complete_a_prompt_argument_and_a_template_variable() {
    let sb = two_servers();
    let out = sb
        .mcpmux(&[
            "--json",
            "complete",
            "--prompt",
            "completable-prompt",
            "department",
            "E",
        ])
        .run();
    out.ok();
    assert_eq!(out.json()["values"], json!(["Engineering"]), "{out}");

    let out = sb
        .mcpmux(&[
            "complete",
            "--prompt",
            "completable-prompt",
            "--context",
            r#"{"department": "Support"}"#,
            "name",
        ])
        .run();
    out.ok();
    assert_eq!(out.stdout.trim(), "John\nKim\nLee", "{out}");

    let out = sb
        .mcpmux(&[
            "--json",
            "complete",
            "--resource",
            "demo://resource/dynamic/text/{resourceId}",
            "resourceId",
            "42",
        ])
        .run();
    out.ok();
    assert_eq!(out.json()["values"], json!(["42"]), "{out}");
}

#[test]
fn complete_needs_one_reference() {
    let sb = Sandbox::with_config(&demo_entry("demo", ""));
    let message = sb
        .mcpmux(&["complete", "department", "E"])
        .run()
        .fails_with("INVALID_INPUT");
    assert!(message.contains("--prompt"), "{message}");
}

/// A server killed with SIGKILL while `mcpmux watch` runs: watch shows it
/// restarting (default `restart = "on-failure"`) and connected again.
#[test]
fn watch_shows_a_killed_server_restarting_and_back() {
    let sb = Sandbox::new();
    let pid_file = sb.path().join("demo.pid");
    // The shell writes its pid, then becomes the demo server.
    let script = format!(
        "echo $$ > '{}'; exec '{}'",
        pid_file.display(),
        demo_server().display()
    );
    sb.write(
        "mcpmux.toml",
        &stdio_server("demo", std::path::Path::new("sh"), &["-c", &script], ""),
    );
    let states = |lines: &[String]| -> Vec<Value> {
        lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "server_state" && v["server"] == "demo")
            .collect()
    };
    let killed = std::cell::Cell::new(None::<u32>);
    let (lines, status) = watch_until(&sb, &["--json", "watch"], |lines| {
        let seen = states(lines);
        if killed.get().is_none() && seen.iter().any(|v| v["state"] == "connected") {
            let pid = read_pid(&pid_file, HANG);
            let kill = Command::new("kill").args(["-9", &pid.to_string()]).status();
            assert!(kill.unwrap().success());
            killed.set(Some(pid));
        }
        killed.get().is_some()
            && seen
                .iter()
                .skip_while(|v| v["state"] != "restarting")
                .any(|v| v["state"] == "connected")
    });
    assert!(status.success(), "{status:?}");
    let seen = states(&lines);
    let restarting = seen
        .iter()
        .find(|v| v["state"] == "restarting")
        .unwrap_or_else(|| panic!("no restarting event: {lines:#?}"));
    assert_eq!(restarting["attempt"], 1, "{restarting}");
    assert_eq!(restarting["code"], "TRANSPORT_CLOSED", "{restarting}");
    let back = seen.last().unwrap();
    assert_eq!(back["state"], "connected", "{back}");
    assert_eq!(back["attempt"], 1, "{back}");
    // A new process: the killed one is gone for good.
    assert!(!process_alive(killed.get().unwrap()), "{lines:#?}");
}
