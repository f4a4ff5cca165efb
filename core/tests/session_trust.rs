//! Session files signed with this user's key are still checked: a
//! `state.json` that mcpmux signed but that names a process which is not
//! the session's runner (a live `sleep`, pid 0, 1, 2147483648, 4294967295)
//! never gets it signalled by `end`; a round number or counter out of range
//! is `INVALID_SESSION`, never a panic or a loop over four billion rounds;
//! and the real detached runner is still stopped by `end`.

mod common;

use std::path::PathBuf;

use mcpmux_core::session::{self, state, Runner, SessionContext};
use mcpmux_core::Config;
use serde_json::json;

const PLAN: &str = "USER_REQUEST: x\n\n## PLAN\nsteps";

/// A context whose "detached runner" is `/bin/true`: the round stays
/// `running` with no runner, for the test to say who runs it.
fn ctx() -> SessionContext {
    common::private_state();
    SessionContext {
        config: Some(
            Config::parse("[session]\nreviewer = \"command\"\ncommand = \"/bin/true\"\n").unwrap(),
        ),
        host: None,
        runner: Runner::Detached {
            program: "/bin/true".into(),
            args: Vec::new(),
        },
    }
}

async fn begin(ctx: &SessionContext, wd: &tempfile::TempDir) -> PathBuf {
    let b = session::begin(
        ctx,
        &json!({"skill": "review-plan", "input": PLAN, "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    PathBuf::from(b["session_dir"].as_str().unwrap())
}

fn start_time(pid: u32) -> u64 {
    session::process::stat(pid)
        .unwrap_or_else(|| panic!("no /proc/{pid}/stat"))
        .start_time
}

#[tokio::test]
async fn end_signals_no_process_a_signed_state_names_unless_it_is_the_runner() {
    let ctx = ctx();
    let wd = tempfile::tempdir().unwrap();
    let mut victim = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let victim_start = start_time(victim.id());
    let cases: [(u32, Option<u64>); 7] = [
        // The victim by pid and its true start time: its command line is
        // not this session's runner.
        (victim.id(), Some(victim_start)),
        // ... by pid alone (a state written before start times were kept).
        (victim.id(), None),
        // ... by pid with another start time (the pid was reused).
        (victim.id(), Some(victim_start.wrapping_add(1))),
        (0, Some(victim_start)),
        (1, Some(victim_start)),
        (2_147_483_648, Some(victim_start)),
        (4_294_967_295, Some(victim_start)),
    ];
    // Each case in a session of its own, all at once (`end` waits up to 5 s
    // for a runner lock that the test holds).
    let one = |pid: u32, start: Option<u64>| {
        let ctx = ctx.clone();
        let wd = &wd;
        async move {
            let dir = begin(&ctx, wd).await;
            let mut st = state::read_state(&dir, 1).unwrap();
            st.status = "running".into();
            st.pid = Some(pid);
            st.pid_start_time = start;
            st.in_process = false;
            state::write_state(&dir, 1, &st).unwrap();
            // Someone holds the runner lock, as a live runner would.
            let lock = session::store::RunnerLock::try_acquire(&dir)
                .unwrap()
                .unwrap();
            let e = session::end(&ctx, &json!({"session_dir": dir}))
                .await
                .unwrap();
            drop(lock);
            assert_eq!(e["status"], "ended", "pid {pid}: {e:#}");
            assert_eq!(e["finalized"], true, "pid {pid}: {e:#}");
        }
    };
    futures::future::join_all(cases.map(|(pid, start)| one(pid, start))).await;
    assert!(
        victim.try_wait().unwrap().is_none(),
        "end signalled the process a state.json named"
    );
    let _ = victim.kill();
    let _ = victim.wait();
}

#[tokio::test]
async fn rounds_and_counters_out_of_range_are_invalid_session() {
    let ctx = ctx();
    let wd = tempfile::tempdir().unwrap();

    // round 4294967295 in a signed session.json: reply would overflow,
    // end would look at four billion rounds.
    let dir = begin(&ctx, &wd).await;
    let mut spec = state::read_spec(&dir).unwrap();
    spec.round = u32::MAX;
    state::write_spec(&dir, &spec).unwrap();
    let mut st = state::read_state(&dir, 1).unwrap();
    st.status = "completed".into();
    std::fs::create_dir(dir.join("round-4294967295")).unwrap();
    let far = dir.join("round-4294967295/state.json");
    // Signed as round 1's state, so only the range check can refuse it.
    state::write_state(&dir, 1, &st).unwrap();
    std::fs::copy(dir.join("round-001/state.json"), &far).unwrap();
    let d = json!(dir);
    let results = [
        (
            "reply",
            session::reply(&ctx, &json!({"session_dir": d, "input": "x"})).await,
        ),
        (
            "wait",
            session::wait(&ctx, &json!({"session_dir": d, "max_wait_seconds": 0})).await,
        ),
        ("end", session::end(&ctx, &json!({"session_dir": d})).await),
    ];
    for (verb, r) in results {
        let e = r.unwrap_err();
        assert_eq!(e.code(), "INVALID_SESSION", "{verb}: {e}");
        assert!(e.to_string().contains("round 4294967295"), "{verb}: {e}");
    }

    // The last round allowed: no round after it.
    let dir = begin(&ctx, &wd).await;
    let mut spec = state::read_spec(&dir).unwrap();
    spec.round = state::MAX_ROUND;
    state::write_spec(&dir, &spec).unwrap();
    let rd = session::store::round_dir(&dir, state::MAX_ROUND);
    std::fs::create_dir(&rd).unwrap();
    let mut st = state::read_state(&dir, 1).unwrap();
    st.status = "completed".into();
    state::write_state(&dir, state::MAX_ROUND, &st).unwrap();
    let e = session::reply(&ctx, &json!({"session_dir": dir, "input": "x"}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "LIMIT_EXCEEDED", "{e}");

    // Counters of a signed state.json.
    for field in ["thread_start", "turns", "resumes", "tool_calls"] {
        let dir = begin(&ctx, &wd).await;
        let st = state::read_state(&dir, 1).unwrap();
        let mut v = serde_json::to_value(&st).unwrap();
        v[field] = match field {
            "thread_start" | "tool_calls" => json!(u64::MAX),
            _ => json!(u32::MAX),
        };
        let st: state::RoundState = serde_json::from_value(v).unwrap();
        state::write_state(&dir, 1, &st).unwrap();
        let e = session::wait(&ctx, &json!({"session_dir": dir, "max_wait_seconds": 0}))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_SESSION", "{field}: {e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }

    // Settings that no Duration holds.
    let dir = begin(&ctx, &wd).await;
    let mut spec = state::read_spec(&dir).unwrap();
    spec.settings.timeout_seconds = 1e300;
    state::write_spec(&dir, &spec).unwrap();
    let e = session::wait(&ctx, &json!({"session_dir": dir, "max_wait_seconds": 0}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_SESSION", "{e}");
    assert!(e.to_string().contains("timeout_seconds"), "{e}");
}

#[tokio::test]
async fn a_state_file_moved_to_another_round_or_session_does_not_verify() {
    let ctx = ctx();
    let wd = tempfile::tempdir().unwrap();
    let a = begin(&ctx, &wd).await;
    let b = begin(&ctx, &wd).await;
    // b's signed state.json in a: signed for another directory.
    std::fs::copy(
        b.join("round-001/state.json"),
        a.join("round-001/state.json"),
    )
    .unwrap();
    let e = state::read_state(&a, 1).unwrap_err();
    assert_eq!(e.code(), "INVALID_SESSION");
    assert!(e.to_string().contains("the MAC does not match"), "{e}");
    // b's round-1 state as its round 2: signed for another file name.
    std::fs::create_dir(b.join("round-002")).unwrap();
    std::fs::copy(
        b.join("round-001/state.json"),
        b.join("round-002/state.json"),
    )
    .unwrap();
    let e = state::read_state(&b, 2).unwrap_err();
    assert!(e.to_string().contains("the MAC does not match"), "{e}");
    // Signed files are still plain JSON that any reader parses.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("session.json")).unwrap()).unwrap();
    assert_eq!(v["round"], 1);
    assert!(v["mac"].as_str().unwrap().starts_with("hmac-sha256:"));
}
