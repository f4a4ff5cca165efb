//! Session files are data, never authority: a session directory mcpmux did
//! not write itself (copied in, edited, shipped inside a repository under
//! review) never makes `mcpmux review ...` run a program or signal a
//! process; it is `INVALID_SESSION` with the reason. Covers: a copied-in
//! session and an edited `session.json` naming a reviewer command that
//! would leave a marker file; a `state.json` naming a live process (which
//! must stay alive) and pids that do not fit a `pid_t`; a round number of
//! 4294967295; `.mcpmux/sessions` symlinked out of the working dir; and
//! the per-user key's own rules (0600, refused when others can read it,
//! another user's key proves nothing).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::Sandbox;
use serde_json::{json, Value};

fn fake_codex() -> PathBuf {
    common::workspace_root().join("tests/fixtures/fake-codex/codex")
}

fn config() -> String {
    format!(
        "[session]\nreviewer = \"command\"\ncommand = {}\n",
        common::qp(&fake_codex())
    )
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// A session that mcpmux began in `sb` and whose round 1 completed.
fn completed_session(sb: &Sandbox, state_home: Option<&Path>) -> PathBuf {
    let input = sb.write("q.md", "Is this wise?");
    let mut run = sb.mcpmux(&["review", "begin", "--skill", "review-think", "--input"]);
    run.arg(&input);
    if let Some(h) = state_home {
        run.env("XDG_STATE_HOME", h);
    }
    let out = run.run();
    out.ok();
    let dir = PathBuf::from(out.json()["session_dir"].as_str().unwrap());
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let st = read_json(&dir.join("round-001/state.json"));
        if st["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < end, "round 1 never completed: {st:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
    dir
}

/// A reviewer "command" that leaves `marker` if it is ever run.
fn marker_script(sb: &Sandbox, marker: &Path) -> PathBuf {
    let path = sb.write(
        "evil.sh",
        &format!(
            "#!/bin/sh\ntouch '{}'\ncat >/dev/null\necho '{{\"type\":\"item.completed\",\"item\":{{\"type\":\"agent_message\",\"text\":\"done\"}}}}'\n",
            marker.display()
        ),
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn assert_invalid_session(out: &common::Output, needle: &str) {
    out.expect_exit(2);
    let e = out.error();
    assert_eq!(e["code"], "INVALID_SESSION", "{out}");
    let msg = e["error"].as_str().unwrap();
    assert!(msg.contains(needle), "expected {needle:?} in: {msg}");
}

#[test]
fn a_copied_in_or_edited_session_never_runs_its_command() {
    // A session directory shipped inside a repository: written by hand
    // (here: a real session's files, copied and edited, without any MAC).
    let source = Sandbox::with_config(&config());
    let original = completed_session(&source, None);

    let repo = Sandbox::with_config(&config());
    let marker = repo.path().join("MARKER");
    let evil = marker_script(&repo, &marker);
    let dir = repo
        .path()
        .join(".mcpmux/sessions/review-think-20260101-001");
    std::fs::create_dir_all(dir.join("round-001")).unwrap();
    let mut spec = read_json(&original.join("session.json"));
    spec.as_object_mut().unwrap().remove("mac");
    spec["working_dir"] = repo
        .path()
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
        .into();
    spec["settings"]["command"] = evil.display().to_string().into();
    write_json(&dir.join("session.json"), &spec);
    // Started now, so that a resumed round would run, not time out.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    write_json(
        &dir.join("round-001/state.json"),
        &json!({"status": "running", "started_at": now, "spawned_at": 0.0, "thread_start": 0}),
    );
    std::fs::write(dir.join("round-001/prompt.md"), "x").unwrap();
    std::fs::write(
        dir.join("thread.json"),
        r#"[{"role": "user", "text": "x"}]"#,
    )
    .unwrap();
    let d = dir.to_str().unwrap();

    let out = repo
        .mcpmux(&["review", "wait", d, "--max-wait-seconds", "5"])
        .run();
    assert!(!marker.exists(), "wait ran the session's command:\n{out}");
    assert_invalid_session(&out, "session.json is not authenticated by this user's key");
    let input = repo.write("r.md", "reply");
    let out = repo
        .mcpmux(&["review", "reply", d, "--input"])
        .arg(&input)
        .run();
    assert_invalid_session(&out, "not authenticated");
    let out = repo.mcpmux(&["review", "end", d]).run();
    assert_invalid_session(&out, "not authenticated");
    // The hidden verb a detached runner executes refuses it too.
    let out = repo.mcpmux(&["review", "run-round", d]).run();
    assert_invalid_session(&out, "not authenticated");
    assert!(!marker.exists(), "a verb ran the session's command");
    assert!(
        !dir.join("meta.json").exists(),
        "end wrote into the session"
    );

    // A session mcpmux wrote, then edited: the MAC no longer matches.
    let sb = Sandbox::with_config(&config());
    let marker = sb.path().join("MARKER");
    let evil = marker_script(&sb, &marker);
    let dir = completed_session(&sb, None);
    let spec_path = dir.join("session.json");
    let text = std::fs::read_to_string(&spec_path).unwrap();
    let codex = serde_json::to_string(&fake_codex().display().to_string()).unwrap();
    assert!(text.contains(&codex), "{text}");
    std::fs::write(
        &spec_path,
        text.replace(
            &codex,
            &serde_json::to_string(&evil.display().to_string()).unwrap(),
        ),
    )
    .unwrap();
    let mut st = read_json(&dir.join("round-001/state.json"));
    st["status"] = "running".into();
    st["spawned_at"] = 0.0.into();
    write_json(&dir.join("round-001/state.json"), &st);
    let out = sb
        .mcpmux(&[
            "review",
            "wait",
            dir.to_str().unwrap(),
            "--max-wait-seconds",
            "5",
        ])
        .run();
    assert!(!marker.exists(), "wait ran the edited command:\n{out}");
    assert_invalid_session(&out, "the MAC does not match");
}

/// `flock FILE sleep 30`: a live process holding the session's runner
/// lock, as a runner would.
// The caller kills and waits for the returned child.
#[allow(clippy::zombie_processes)]
fn lock_holder(dir: &Path) -> Child {
    let mut child = Command::new("flock")
        .arg(dir.join("runner.lock"))
        .args(["sleep", "30"])
        .spawn()
        .expect("run flock(1)");
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let free = Command::new("flock")
            .args(["-n"])
            .arg(dir.join("runner.lock"))
            .arg("true")
            .status()
            .unwrap()
            .success();
        if !free {
            return child;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("flock never took the lock");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn end_with_pid(sb: &Sandbox, dir: &Path, pid: u64) -> common::Output {
    let path = dir.join("round-001/state.json");
    let mut st = read_json(&path);
    st["status"] = "running".into();
    st["pid"] = pid.into();
    st["in_process"] = false.into();
    write_json(&path, &st);
    sb.mcpmux(&["review", "end", dir.to_str().unwrap()]).run()
}

#[test]
fn end_never_signals_a_process_that_a_state_file_names() {
    let sb = Sandbox::with_config(&config());
    let dir = completed_session(&sb, None);
    let mut victim = lock_holder(&dir);
    for pid in [u64::from(victim.id()), 2_147_483_648] {
        let out = end_with_pid(&sb, &dir, pid);
        assert_invalid_session(&out, "round-001/state.json is not authenticated");
        assert!(
            victim.try_wait().unwrap().is_none(),
            "end signalled the process a state.json named (pid {pid})"
        );
    }
    let _ = victim.kill();
    let _ = victim.wait();
}

#[test]
fn pids_zero_and_minus_one_are_never_signalled() {
    // 0 would be mcpmux's own process group, 4294967295 wraps to -1 (every
    // process) in a cast to pid_t.
    let sb = Sandbox::with_config(&config());
    let dir = completed_session(&sb, None);
    let mut holder = lock_holder(&dir);
    for pid in [0, 1, 4_294_967_295] {
        let out = end_with_pid(&sb, &dir, pid);
        assert_invalid_session(&out, "not authenticated");
    }
    assert!(holder.try_wait().unwrap().is_none());
    let _ = holder.kill();
    let _ = holder.wait();
}

#[test]
fn a_round_number_out_of_range_is_invalid_session_not_a_panic() {
    let sb = Sandbox::with_config(&config());
    let dir = completed_session(&sb, None);
    let mut spec = read_json(&dir.join("session.json"));
    spec["round"] = 4_294_967_295u64.into();
    write_json(&dir.join("session.json"), &spec);
    let far = dir.join("round-4294967295");
    std::fs::create_dir(&far).unwrap();
    std::fs::copy(dir.join("round-001/state.json"), far.join("state.json")).unwrap();
    let input = sb.write("r.md", "reply");
    let d = dir.to_str().unwrap();
    let out = sb
        .mcpmux(&["review", "reply", d, "--input"])
        .arg(&input)
        .run();
    assert_invalid_session(&out, "session.json");
    for verb in ["wait", "end"] {
        let out = sb.mcpmux(&["review", verb, d]).run();
        assert_invalid_session(&out, "session.json");
    }
}

#[test]
fn sessions_symlinked_out_of_the_working_dir_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    for link in [".mcpmux/sessions", ".mcpmux"] {
        let sb = Sandbox::with_config(&config());
        let at = sb.path().join(link);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(outside.path(), &at).unwrap();
        let input = sb.write("q.md", "Is this wise?");
        let out = sb
            .mcpmux(&["review", "begin", "--skill", "review-think", "--input"])
            .arg(&input)
            .run();
        out.expect_exit(2);
        let e = out.error();
        assert_eq!(e["code"], "INVALID_INPUT", "{out}");
        let msg = e["error"].as_str().unwrap();
        assert!(msg.contains(link) && msg.contains("symlink"), "{msg}");
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            0,
            "begin wrote outside the working dir ({link})"
        );
    }
    // A session mcpmux wrote, whose sessions folder was then moved out and
    // linked back: no verb follows the link.
    let sb = Sandbox::with_config(&config());
    let dir = completed_session(&sb, None);
    let sessions = sb.path().join(".mcpmux/sessions");
    let moved = outside.path().join("sessions");
    std::fs::rename(&sessions, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &sessions).unwrap();
    let out = sb.mcpmux(&["review", "wait", dir.to_str().unwrap()]).run();
    assert_invalid_session(&out, "session.json");
}

#[test]
fn the_key_is_private_and_another_users_key_proves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let sb = Sandbox::with_config(&config());
    let dir = completed_session(&sb, Some(home.path()));
    let d = dir.to_str().unwrap();
    let key = home.path().join("mcpmux/session.key");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(key.parent().unwrap()), 0o700);
    assert_eq!(std::fs::metadata(&key).unwrap().len(), 32);
    let wait = |h: &Path| {
        sb.mcpmux(&["review", "wait", d, "--max-wait-seconds", "0"])
            .env("XDG_STATE_HOME", h)
            .run()
    };
    wait(home.path()).ok();

    // A key that group or others can read is refused, for reading and for writing.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = wait(home.path());
    assert_invalid_session(&out, "session.key");
    assert!(out.stdout.is_empty());
    assert!(out.error()["error"]
        .as_str()
        .unwrap()
        .contains("group or others"));
    let input = sb.write("q2.md", "Again?");
    let out = sb
        .mcpmux(&["review", "begin", "--skill", "review-think", "--input"])
        .arg(&input)
        .env("XDG_STATE_HOME", home.path())
        .run();
    assert_invalid_session(&out, "session.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    wait(home.path()).ok();

    // Another key (another user, another machine): nothing verifies.
    let other = tempfile::tempdir().unwrap();
    let out = wait(other.path());
    assert_invalid_session(&out, "no session key");
    std::fs::create_dir(other.path().join("mcpmux")).unwrap();
    std::fs::set_permissions(
        other.path().join("mcpmux"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::write(other.path().join("mcpmux/session.key"), [7u8; 32]).unwrap();
    std::fs::set_permissions(
        other.path().join("mcpmux/session.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let out = wait(other.path());
    assert_invalid_session(&out, "the MAC does not match");
}
