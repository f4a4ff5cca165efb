//! The on-disk layout of a session (`docs/sessions.md#session-storage`) and its atomic writes.
//!
//! ```text
//! <working_dir>/.mcpmux/sessions/<skill>-<YYYYMMDD>-<NNN>/
//!   session.json          the spec (no secrets), current round, thread id; signed
//!   thread.json           the transcript (Vec<Message>) across rounds
//!   runner.lock           flock'd by whoever runs a round
//!   audit.jsonl           written by the policy
//!   meta.json             written by `end` when finalized
//!   round-NNN/input.md    the host's input
//!   round-NNN/prompt.md   the rendered prompt (its SHA-256 in state.json)
//!   round-NNN/events.jsonl activities (one JSON object a line, append-only)
//!   round-NNN/state.json  status, times, progress, turns; signed
//!   round-NNN/result.json the outcome of the round; signed
//!   round-NNN/wait-cursor how many events `wait` already reported
//! ```
//!
//! Every file except the append-only `events.jsonl` is replaced with a
//! temporary file in the same directory and a rename, so a reader (or a
//! process resuming after `kill -9`) never sees half a file.
//!
//! A session directory is data that others may have written (it sits in
//! the repository under review): every file of it is opened through
//! [`open_file`] (never through a symlink, only a regular file, see
//! `mcpmux_core::internal::files`) and read through [`read_file`] (at most a cap per
//! file, `MAX_*_BYTES`); a `round-NNN` that is a symlink or not a
//! directory is refused ([`check_round_dir`]). Anything else is
//! `INVALID_SESSION` naming the file.
//!
//! `session.json` and each `state.json` carry a MAC under this user's key
//! as their last field (see [`super::trust`]); they are read and written
//! through [`super::state`], never with [`read_json`] / [`write_json`].

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use mcpmux_core::error::Error;

/// The largest `events.jsonl` read (activities: one short line each).
pub const MAX_EVENTS_BYTES: u64 = 64 * 1024 * 1024;
/// The largest `thread.json` read: the transcript of every round, tool
/// results included.
pub const MAX_THREAD_BYTES: u64 = 64 * 1024 * 1024;
/// The largest `result.json` or `meta.json` read.
pub const MAX_JSON_BYTES: u64 = 16 * 1024 * 1024;
/// The largest `prompt.md` read (the rendered prompt, which holds the
/// whole diff of a `review-impl`; the transcript holds it too).
pub const MAX_PROMPT_BYTES: u64 = MAX_THREAD_BYTES;
/// The largest `wait-cursor` read: one decimal number.
pub const MAX_CURSOR_BYTES: u64 = 64;

/// Seconds since the Unix epoch, as a float.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Today's date as `YYYYMMDD` (UTC).
pub fn today() -> String {
    let days = (now() / 86_400.0).floor() as i64;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}{m:02}{d:02}")
}

/// Creates `<working_dir>/.mcpmux/sessions/<name>-<YYYYMMDD>-<NNN>/` with
/// the first free NNN; `create_dir` makes the choice atomic between processes.
/// `working_dir` is canonical. `.mcpmux` or `sessions` being a symlink that
/// leads out of the working dir (or nowhere) is `INVALID_INPUT` naming it:
/// a repository under review must not send session files elsewhere.
pub fn create_session_dir(working_dir: &Path, name: &str) -> Result<PathBuf, Error> {
    let mut base = working_dir.to_owned();
    for part in [".mcpmux", "sessions"] {
        base.push(part);
        match std::fs::symlink_metadata(&base) {
            Ok(md) if md.file_type().is_symlink() => {
                let target = base.canonicalize().ok();
                if !target
                    .as_deref()
                    .is_some_and(|t| t.starts_with(working_dir) && t.is_dir())
                {
                    return Err(Error::InvalidInput(format!(
                        "{} is a symlink that leads outside the working dir {}{}; sessions \
                         are only written inside it",
                        base.display(),
                        working_dir.display(),
                        target
                            .map(|t| format!(" (to {})", t.display()))
                            .unwrap_or_default()
                    )));
                }
            }
            Ok(md) if md.is_dir() => {}
            Ok(_) => {
                return Err(Error::InvalidInput(format!(
                    "{} is not a directory",
                    base.display()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::create_dir(&base) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => {
                        return Err(Error::InvalidInput(format!(
                            "cannot create {}: {e}",
                            base.display()
                        )))
                    }
                }
            }
            Err(e) => {
                return Err(Error::InvalidInput(format!(
                    "cannot read {}: {e}",
                    base.display()
                )))
            }
        }
    }
    // Whatever happened in between: the sessions live inside the working dir.
    let real = base
        .canonicalize()
        .map_err(|e| Error::InvalidInput(format!("cannot resolve {}: {e}", base.display())))?;
    if !real.starts_with(working_dir) {
        return Err(Error::InvalidInput(format!(
            "{} leads outside the working dir {} (to {})",
            base.display(),
            working_dir.display(),
            real.display()
        )));
    }
    let date = today();
    for n in 1..100_000 {
        let dir = base.join(format!("{name}-{date}-{n:03}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::InvalidInput(format!(
                    "cannot create {}: {e}",
                    dir.display()
                )))
            }
        }
    }
    Err(Error::LimitExceeded(format!(
        "too many sessions named {name}-{date} under {}",
        base.display()
    )))
}

/// The directory of round `n`.
pub fn round_dir(session_dir: &Path, n: u32) -> PathBuf {
    session_dir.join(format!("round-{n:03}"))
}

/// Creates the directory of round `n` with `create_dir` (never through a
/// symlink). One that exists already (a `reply` that failed after making
/// it) is used when it is a directory of its own; a symlink or anything
/// else is `INVALID_SESSION` naming it.
pub fn create_round_dir(session_dir: &Path, n: u32) -> Result<PathBuf, Error> {
    let rd = round_dir(session_dir, n);
    match std::fs::create_dir(&rd) {
        Ok(()) => Ok(rd),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            check_round_dir(&rd)?;
            Ok(rd)
        }
        Err(e) => Err(Error::Internal(format!(
            "cannot create {}: {e}",
            rd.display()
        ))),
    }
}

/// Refuses a round directory that is a symlink (it could lead anywhere:
/// the round's files would be read and written there) or not a directory;
/// one that does not exist passes (opening its files then fails).
pub fn check_round_dir(rd: &Path) -> Result<(), Error> {
    match std::fs::symlink_metadata(rd) {
        Ok(md) if md.file_type().is_symlink() => Err(Error::InvalidSession(format!(
            "{} is a symlink; a round directory must be a directory of its own",
            rd.display()
        ))),
        Ok(md) if md.is_dir() => Ok(()),
        Ok(_) => Err(Error::InvalidSession(format!(
            "{} is not a directory",
            rd.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::InvalidSession(format!(
            "cannot read {}: {e}",
            rd.display()
        ))),
    }
}

/// [`check_round_dir`] on the directory of `path` when it is a round's
/// (`round-` and digits): every file of a session is opened or replaced
/// through here.
fn check_parent(path: &Path) -> Result<(), Error> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    let is_round = parent
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("round-"))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    if is_round {
        check_round_dir(parent)?;
    }
    Ok(())
}

/// Opens a session file with `options` (read, append, create, ...): never
/// through a symlink, only a regular file, never blocking on a FIFO (see
/// `mcpmux_core::internal::files::open_regular`), never inside a round directory that is
/// a symlink. Anything else, a missing file included, is `INVALID_SESSION`
/// naming the file.
pub fn open_file(path: &Path, options: &OpenOptions) -> Result<File, Error> {
    open_file_opt(path, options)?.ok_or_else(|| {
        Error::InvalidSession(format!(
            "not a readable session: {}: no such file",
            path.display()
        ))
    })
}

/// [`open_file`], with `None` when the file does not exist.
fn open_file_opt(path: &Path, options: &OpenOptions) -> Result<Option<File>, Error> {
    check_parent(path)?;
    match mcpmux_core::internal::files::open_regular(path, options) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::InvalidSession(format!(
            "not a readable session: {}: {e}",
            path.display()
        ))),
    }
}

/// Reads a whole session file of at most `max` bytes (one of the
/// `MAX_*_BYTES`), opened with [`open_file`]; a larger one is
/// `INVALID_SESSION` naming it, and is not read.
pub fn read_file(path: &Path, max: u64) -> Result<Vec<u8>, Error> {
    read_file_opt(path, max)?.ok_or_else(|| {
        Error::InvalidSession(format!(
            "not a readable session: {}: no such file",
            path.display()
        ))
    })
}

/// [`read_file`], with `None` when the file does not exist.
pub fn read_file_opt(path: &Path, max: u64) -> Result<Option<Vec<u8>>, Error> {
    let Some(file) = open_file_opt(path, OpenOptions::new().read(true))? else {
        return Ok(None);
    };
    mcpmux_core::internal::files::read_capped(file, max)
        .map(Some)
        .map_err(|e| {
            Error::InvalidSession(format!("not a readable session: {}: {e}", path.display()))
        })
}

/// Writes `bytes` to `path` atomically (temporary file + rename). The
/// rename replaces a symlink or FIFO at `path` itself, never what it
/// leads to; the directory is checked with [`check_round_dir`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    check_parent(path)?;
    let dir = path
        .parent()
        .ok_or_else(|| Error::Internal(format!("{} has no directory", path.display())))?;
    let io = |e: std::io::Error| Error::Internal(format!("cannot write {}: {e}", path.display()));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    tmp.write_all(bytes).map_err(io)?;
    tmp.as_file().sync_data().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Writes `value` as pretty JSON atomically, with known config secrets
/// replaced (see `redacted`).
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), Error> {
    let encode =
        |e: serde_json::Error| Error::Internal(format!("cannot encode {}: {e}", path.display()));
    let value = redacted(path, serde_json::to_value(value).map_err(encode)?);
    let text = serde_json::to_vec_pretty(&value).map_err(encode)?;
    write_atomic(path, &text)
}

/// `value` as the JSON [`write_json`] would store at `path` (known config
/// secrets replaced), for a writer that signs it first.
pub fn stored_value<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<Value, Error> {
    let value = serde_json::to_value(value)
        .map_err(|e| Error::Internal(format!("cannot encode {}: {e}", path.display())))?;
    Ok(redacted(path, value))
}

/// `value` with the known config secrets ([`mcpmux_core::internal::secrets`]) replaced,
/// for every session file but `session.json`: the transcript, events and
/// results quote servers and providers, which may echo a secret back.
/// `session.json` holds settings, never a secret value (an API key by
/// its variable's name, a base URL with credentials not at all), and a
/// setting that happens to equal one must come back unchanged.
fn redacted(path: &Path, mut value: Value) -> Value {
    if path.file_name().and_then(|n| n.to_str()) != Some("session.json") {
        mcpmux_core::internal::secrets::redact_value(&mut value);
    }
    value
}

/// Reads JSON of at most `max` bytes (see [`read_file`]); a missing or
/// unreadable file is [`Error::InvalidSession`] naming it.
pub fn read_json<T: DeserializeOwned>(path: &Path, max: u64) -> Result<T, Error> {
    parse_json(path, &read_file(path, max)?)
}

/// Reads JSON when the file exists (see [`read_json`]).
pub fn read_json_opt<T: DeserializeOwned>(path: &Path, max: u64) -> Result<Option<T>, Error> {
    read_file_opt(path, max)?
        .map(|bytes| parse_json(path, &bytes))
        .transpose()
}

fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| {
        Error::InvalidSession(format!("not a readable session: {}: {e}", path.display()))
    })
}

/// Appends one JSON line to an append-only log (one `write` call, so lines
/// from concurrent writers do not interleave); the log is opened with
/// [`open_file`].
pub fn append_jsonl(path: &Path, value: &Value) -> Result<(), Error> {
    let value = redacted(path, value.clone());
    let mut line = serde_json::to_vec(&value).map_err(|e| Error::Internal(e.to_string()))?;
    line.push(b'\n');
    let mut f = open_file(path, OpenOptions::new().create(true).append(true))?;
    f.write_all(&line)
        .map_err(|e| Error::Internal(format!("cannot write {}: {e}", path.display())))
}

/// Reads the complete lines of a JSON-lines file of at most
/// [`MAX_EVENTS_BYTES`] (a torn last line and lines that are not JSON are
/// skipped); none when it does not exist.
pub fn read_jsonl(path: &Path) -> Result<Vec<Value>, Error> {
    let Some(bytes) = read_file_opt(path, MAX_EVENTS_BYTES)? else {
        return Ok(Vec::new());
    };
    Ok(bytes
        .split_inclusive(|b| *b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect())
}

/// An exclusive `flock` on `<session_dir>/runner.lock`, held by whoever
/// runs a round; the kernel releases it when the holder dies, even on
/// `kill -9`.
pub struct RunnerLock {
    _file: File,
}

impl RunnerLock {
    /// Takes the lock without waiting; `None` when another runner holds it.
    pub fn try_acquire(session_dir: &Path) -> Result<Option<RunnerLock>, Error> {
        let path = session_dir.join("runner.lock");
        let file = open_file(
            &path,
            OpenOptions::new().create(true).truncate(false).write(true),
        )?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            Ok(Some(RunnerLock { _file: file }))
        } else {
            Ok(None)
        }
    }

    /// Whether some runner holds the lock now (a lock file that cannot be
    /// opened counts as held).
    pub fn is_held(session_dir: &Path) -> bool {
        !matches!(Self::try_acquire(session_dir), Ok(Some(_)))
    }
}
