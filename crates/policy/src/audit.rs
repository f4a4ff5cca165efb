//! The audit trail: one [`AuditEvent`] per tool call a model (or a host
//! through call options) asked for, appended as a JSON line to
//! `<session_dir>/audit.jsonl` and handed to the host's listeners. An event
//! never holds the tool's output or argument values.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use mcpmux_core::error::Error;

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditStatus {
    /// The server answered and the tool did not report an error.
    Ok,
    /// The tool reported an error, or the call failed on the way.
    Error,
    /// The policy refused the tool; the server was never asked.
    NotAllowed,
    /// A session limit refused the call; the server was never asked.
    LimitExceeded,
    /// The call ran past its time limit.
    Timeout,
}

impl AuditStatus {
    /// The status as written in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStatus::Ok => "ok",
            AuditStatus::Error => "error",
            AuditStatus::NotAllowed => "not_allowed",
            AuditStatus::LimitExceeded => "limit_exceeded",
            AuditStatus::Timeout => "timeout",
        }
    }
}

/// One line of `audit.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// When the call was asked for, RFC 3339 in UTC with milliseconds.
    pub time: String,
    /// The configured server name; `null` when the name matched no tool.
    pub server: Option<String>,
    /// The server's own tool name, or the name the caller used when unknown.
    pub tool: String,
    /// How the call ended.
    pub status: AuditStatus,
    /// Size of the result the server sent, in bytes (0 when it was not asked).
    pub bytes: u64,
    /// Time from the request to the decision or the answer.
    pub duration_ms: u64,
    /// Secrets replaced in the output.
    pub redactions: u64,
    /// The output was cut at `max_output_bytes`.
    #[serde(default)]
    pub truncated: bool,
    /// The error code for refusals and failures (`TOOL_NOT_ALLOWED`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// A host's audit listener; runs on the task that made the call.
pub type AuditListener = Arc<dyn Fn(&AuditEvent) + Send + Sync>;

/// How many events `AuditLog::events` keeps in memory.
pub const MEMORY_EVENTS: usize = 10_000;

/// How many events a front end keeps queued for one host audit listener
/// that has not taken them yet (a C callback that blocks, a JavaScript
/// thread that is busy). Past it, newer events are dropped for that
/// listener only: `audit.jsonl` and [`MEMORY_EVENTS`] keep them.
pub const LISTENER_QUEUE: usize = 10_000;

/// Where events go: the file, the listeners, and a bounded memory log.
pub(crate) struct AuditLog {
    file: Option<(PathBuf, Mutex<File>)>,
    listeners: RwLock<Vec<AuditListener>>,
    recent: Mutex<VecDeque<AuditEvent>>,
}

impl AuditLog {
    /// Opens (creating or appending to) `path`: a regular file, never
    /// through a symlink and never blocking on a FIFO (see
    /// [`mcpmux_core::internal::files::open_regular`]): it may be `<session_dir>/audit.jsonl`
    /// in a repository someone else wrote.
    pub(crate) fn open(path: Option<PathBuf>) -> Result<AuditLog, Error> {
        let file = match path {
            None => None,
            Some(path) => {
                let file = mcpmux_core::internal::files::open_regular(
                    &path,
                    OpenOptions::new().create(true).append(true),
                )
                .map_err(|e| {
                    Error::InvalidInput(format!(
                        "cannot open the audit log {}: {e}",
                        path.display()
                    ))
                })?;
                Some((path, Mutex::new(file)))
            }
        };
        Ok(AuditLog {
            file,
            listeners: RwLock::new(Vec::new()),
            recent: Mutex::new(VecDeque::new()),
        })
    }

    pub(crate) fn add_listener(&self, listener: AuditListener) {
        self.listeners
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(listener);
    }

    pub(crate) fn events(&self) -> Vec<AuditEvent> {
        self.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Records one event. A failing write is logged, not returned: the
    /// call has already happened and its result must reach the caller.
    pub(crate) fn record(&self, event: AuditEvent) {
        if let Some((path, file)) = &self.file {
            match serde_json::to_string(&event) {
                Ok(mut line) => {
                    line.push('\n');
                    // One write per line: with O_APPEND, lines from several
                    // processes do not interleave.
                    let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                    if let Err(e) = file.write_all(line.as_bytes()) {
                        tracing::warn!(path = %path.display(), error = %e, "cannot write the audit log");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot encode an audit event"),
            }
        }
        let listeners = self
            .listeners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for listener in listeners {
            // A panicking listener must not take the call down with it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(&event)));
        }
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == MEMORY_EVENTS {
            recent.pop_front();
        }
        recent.push_back(event);
    }
}

/// Reads every event of an `audit.jsonl` file; a line that is not an event
/// (a torn last line after a crash) is skipped.
pub fn read_audit_log(path: impl AsRef<Path>) -> Result<Vec<AuditEvent>, Error> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::InvalidInput(format!("cannot read the audit log {}: {e}", path.display()))
    })?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// `t` as RFC 3339 in UTC with milliseconds, e.g. `2026-11-30T00:15:02.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = d.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_998_896_789);
        assert_eq!(rfc3339(t), "2026-11-30T00:34:56.789Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn line_format_and_listeners() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(Some(path.clone())).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        log.add_listener(Arc::new(move |e: &AuditEvent| {
            sink.lock().unwrap().push(e.status)
        }));
        log.add_listener(Arc::new(|_: &AuditEvent| panic!("a bad listener")));
        log.record(AuditEvent {
            time: rfc3339(UNIX_EPOCH),
            server: Some("s".into()),
            tool: "t".into(),
            status: AuditStatus::LimitExceeded,
            bytes: 0,
            duration_ms: 1,
            redactions: 0,
            truncated: false,
            code: Some("LIMIT_EXCEEDED".into()),
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\"time\":\"1970-01-01T00:00:00.000Z\",\"server\":\"s\",\"tool\":\"t\",\
\"status\":\"limit_exceeded\",\"bytes\":0,\"duration_ms\":1,\"redactions\":0,\
\"truncated\":false,\"code\":\"LIMIT_EXCEEDED\"}\n"
        );
        assert_eq!(*seen.lock().unwrap(), vec![AuditStatus::LimitExceeded]);
        assert_eq!(read_audit_log(&path).unwrap(), log.events());
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep\n").unwrap();
        let path = dir.path().join("audit.jsonl");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let e = AuditLog::open(Some(path)).err().unwrap();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
    }
}
