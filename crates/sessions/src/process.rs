//! Which process `end` may signal: only the session's own detached runner,
//! proven alive and the same process as the one recorded, never by a pid
//! alone.
//!
//! A runner records its pid and its start time (field 22 of
//! `/proc/<pid>/stat`, clock ticks since boot) in the round's `state.json`
//! (which carries a MAC, see [`super::trust`]). Before a signal, the pid
//! is pinned with a pidfd and checked again: same start time (so not a
//! later process that reuses the pid), and a command line whose last
//! argument is this session's directory (the `Runner::Detached` contract:
//! `program args... <session_dir>`). Its process group is signalled only
//! when the runner leads it (the group `start_runner` created with
//! `process_group(0)`) and it is not the caller's own group. A pid of 0 or
//! 1, or one that does not fit a `pid_t`, is never signalled.
//!
//! Elsewhere than Linux there is no `/proc` to prove anything with, so no
//! process is signalled: `end` then waits for the runner's lock and ends
//! the round on disk.

use std::path::Path;

/// What `/proc/<pid>/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// The process group (field 5).
    pub pgrp: i32,
    /// Clock ticks after boot when it started (field 22).
    pub start_time: u64,
}

/// Parses the text of `/proc/<pid>/stat`. The command name (field 2) may
/// hold spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name: field 3 (state) is at index 0.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcStat {
        pgrp: fields.get(5 - 3)?.parse().ok()?,
        start_time: fields.get(22 - 3)?.parse().ok()?,
    })
}

/// `/proc/<pid>/stat` of a live process (a zombie has exited: `None`).
#[cfg(target_os = "linux")]
pub fn stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = text.rsplit(')').next()?.trim_start().chars().next()?;
    if state == 'Z' || state == 'X' {
        return None;
    }
    parse_stat(&text)
}

/// Not Linux: nothing is known about other processes.
#[cfg(not(target_os = "linux"))]
pub fn stat(_pid: u32) -> Option<ProcStat> {
    None
}

/// This process's start time, for a runner to record about itself.
pub fn own_start_time() -> Option<u64> {
    stat(std::process::id()).map(|s| s.start_time)
}

/// A pid that may ever be signalled: it fits a `pid_t` and is above 1
/// (0 would mean the caller's own group, 1 is init, negative values are
/// groups or every process). No cast can wrap: the conversion is checked.
pub fn signallable(pid: u32) -> Option<i32> {
    i32::try_from(pid).ok().filter(|p| *p > 1)
}

/// Whether the process's command line ends with `session_dir` (compared
/// canonically; a runner gets the canonical path).
#[cfg(target_os = "linux")]
fn runs_session(pid: i32, session_dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let Some(last) = cmdline
        .strip_suffix(b"\0")
        .unwrap_or(&cmdline)
        .split(|b| *b == 0)
        .next_back()
    else {
        return false;
    };
    let arg = Path::new(std::ffi::OsStr::from_bytes(last));
    match (arg.canonicalize(), session_dir.canonicalize()) {
        (Ok(a), Ok(b)) => arg.is_absolute() && a == b,
        _ => false,
    }
}

/// Kills the session's detached runner `pid` (and the group it leads) with
/// SIGKILL if it is provably the runner recorded with `start_time`;
/// otherwise signals nothing and says why.
#[cfg(target_os = "linux")]
pub fn kill_runner(session_dir: &Path, pid: u32, start_time: Option<u64>) -> Result<(), String> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let Some(start_time) = start_time else {
        return Err(format!("no start time is recorded for pid {pid}"));
    };
    let Some(p) = signallable(pid) else {
        return Err(format!("pid {pid} is not a process mcpmux may signal"));
    };
    if pid == std::process::id() {
        return Err("the pid is this process".into());
    }
    // Pin the process first: a pidfd keeps naming it even if its pid is
    // reused after the checks below.
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, p, 0) };
    let pidfd = (raw >= 0).then(|| {
        // SAFETY: a descriptor pidfd_open just returned, owned by nobody else.
        unsafe { OwnedFd::from_raw_fd(raw as i32) }
    });
    let Some(now) = stat(pid) else {
        return Err(format!("pid {pid} is not running"));
    };
    if now.start_time != start_time {
        return Err(format!(
            "pid {pid} is another process now (it started at {}, the runner at {start_time})",
            now.start_time
        ));
    }
    if !runs_session(p, session_dir) {
        return Err(format!(
            "pid {pid} is not running this session ({})",
            session_dir.display()
        ));
    }
    // SAFETY: getpgrp has no preconditions.
    let own_group = unsafe { libc::getpgrp() };
    if now.pgrp == p && own_group != p {
        // The group the runner leads: it and the reviewer it started.
        // SAFETY: kill(2) on a verified positive group id.
        unsafe { libc::kill(-p, libc::SIGKILL) };
    }
    match &pidfd {
        // SAFETY: pidfd_send_signal on a descriptor we own; no siginfo.
        Some(fd) => unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        },
        // SAFETY: kill(2) on a verified pid > 1 (a kernel without pidfds).
        None => unsafe {
            libc::kill(p, libc::SIGKILL);
        },
    }
    Ok(())
}

/// Not Linux: the runner cannot be proven, so nothing is signalled.
#[cfg(not(target_os = "linux"))]
pub fn kill_runner(_session_dir: &Path, pid: u32, _start_time: Option<u64>) -> Result<(), String> {
    Err(format!(
        "pid {pid} cannot be proven to be the session's runner on this system"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let text =
            "1234 (a) b (c) R 1 777 777 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(
            parse_stat(text),
            Some(ProcStat {
                pgrp: 777,
                start_time: 98765
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) R 1"), None);
    }

    #[test]
    fn pids_that_are_never_signalled() {
        for pid in [0u32, 1, 2_147_483_648, 4_294_967_295] {
            assert_eq!(signallable(pid), None, "{pid}");
        }
        assert_eq!(signallable(2), Some(2));
        assert_eq!(signallable(2_147_483_647), Some(2_147_483_647));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_live_process_that_is_not_the_runner_is_left_alone() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = stat(pid).unwrap().start_time;
        let dir = tempfile::tempdir().unwrap();
        // Right pid and start time, but its command line is not this session's runner.
        let e = kill_runner(dir.path(), pid, Some(start)).unwrap_err();
        assert!(e.contains("not running this session"), "{e}");
        // A wrong start time: a reused pid.
        let e = kill_runner(dir.path(), pid, Some(start + 1)).unwrap_err();
        assert!(e.contains("another process"), "{e}");
        assert!(child.try_wait().unwrap().is_none(), "sleep was signalled");
        for pid in [0u32, 1, 2_147_483_648, 4_294_967_295] {
            assert!(kill_runner(dir.path(), pid, Some(start)).is_err());
        }
        // The runner itself: a group leader whose last argument is the
        // session dir (`; :` keeps sh from exec'ing sleep in its place).
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let mut runner = std::process::Command::new("sh")
            .args(["-c", "sleep 30; :", "sh"])
            .arg(dir.path().canonicalize().unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        // Under load the child may not show its new command line at once:
        // wait (bounded) until it names the session dir.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !runs_session(runner.id() as i32, dir.path()) {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", runner.id()));
            assert!(
                std::time::Instant::now() < deadline,
                "the runner never showed the session dir: {cmdline:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let start = stat(runner.id()).unwrap().start_time;
        kill_runner(dir.path(), runner.id(), Some(start)).unwrap();
        assert_eq!(runner.wait().unwrap().signal(), Some(libc::SIGKILL));
        let _ = child.kill();
        let _ = child.wait();
    }
}
