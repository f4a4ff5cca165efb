//! Which session files mcpmux acts on: only the ones it wrote itself,
//! proven by a per-user key.
//!
//! A session directory is data that other programs can write: a repository
//! under review may ship one, and anyone who can write the working dir can
//! edit one. Yet `session.json` names the reviewer program and the config a
//! resumed round runs with, and `round-NNN/state.json` names the runner
//! process that `end` stops. So both files carry an HMAC-SHA256 under a key
//! only this user can read, and every verb checks it before it reads
//! anything else of the session:
//!
//! - the key: `$XDG_STATE_HOME/mcpmux/session.key` (else
//!   `$HOME/.local/state/mcpmux/session.key`), 32 bytes from the OS RNG,
//!   created on first use, mode 0600 in a 0700 directory. A key file that
//!   another user owns, that group or others can read or write, that is not
//!   a regular file (a symlink) or not 32 bytes, or a key directory that
//!   another user owns or others can write, is refused: nothing is signed or
//!   verified with it.
//! - the MAC: the file's last field, `"mac": "hmac-sha256:<hex>"`, over a
//!   domain tag, the session directory's canonical path, the file's name in
//!   it and the file's bytes without that field. A file copied to another
//!   session, round or directory no longer verifies; the file and its MAC
//!   are replaced together by one rename, so a reader never sees one
//!   without the other. Verification is constant-time (`ring::hmac::verify`).
//! - which files: `session.json`, `round-NNN/state.json` and
//!   `round-NNN/result.json` (the verdict) carry the MAC. `prompt.md`, piped
//!   to a command reviewer, is plain text: its SHA-256 is in the round's
//!   signed `state.json` ([`sha256`]). The transcript `thread.json` is not
//!   signed; what it could decide is held in the signed state instead (the
//!   turn and tool-call counts, the hash of a stored final answer).
//! - rollback: a copy of the whole directory taken earlier verifies too, so
//!   each signed file also carries a `"generation"` (its field before the
//!   MAC), one more than the last handed out for that directory, and the
//!   generation store beside the key ([`super::generations`]) records the
//!   generation of each file's last write and whether `end` ended the
//!   session. A file older than its record, a signed file missing although
//!   one was written, or a `session.json` from before a recorded `end`, is
//!   `INVALID_SESSION` ("rolled back"): an ended session stays ended, and a
//!   round's budget or the round count cannot be taken back. Files written
//!   before generations were kept read as generation 0.

use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use ring::hmac;
use serde::Serialize;

use super::generations;
use super::key_dir::{check_dir, euid};
use super::store;
use mcpmux_core::error::Error;

/// Bytes of the key.
const KEY_LEN: usize = 32;
/// Prefixes the MAC input, so a MAC of a session file means nothing elsewhere.
const DOMAIN: &[u8] = b"mcpmux session file v1\0";
/// The MAC field as written: `SUFFIX_HEAD` + 64 hex digits + `SUFFIX_TAIL`
/// replace the pretty JSON's closing `\n}`.
const SUFFIX_HEAD: &str = ",\n  \"mac\": \"hmac-sha256:";
const SUFFIX_TAIL: &str = "\"\n}";
/// Hex digits of an HMAC-SHA256 tag.
const TAG_HEX: usize = 64;
/// The generation field as written, the last before the MAC; followed by
/// the generation's decimal digits.
const GENERATION_HEAD: &str = ",\n  \"generation\": ";

pub use super::key_dir::key_path;

/// Reads the key file, refusing one that is not this user's private
/// 32-byte regular file. `Ok(None)` when it does not exist.
fn read_key(path: &Path) -> Result<Option<[u8; KEY_LEN]>, String> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        // A symlink is refused: the key is a file of its own.
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
    };
    let md = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !md.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if md.uid() != euid() {
        return Err(format!(
            "{} is owned by uid {}, not by this user (uid {})",
            path.display(),
            md.uid(),
            euid()
        ));
    }
    if md.mode() & 0o077 != 0 {
        return Err(format!(
            "{} can be read or written by group or others (mode {:o}); a key others may \
             know proves nothing: remove it (sessions signed with it are then refused) or \
             run `chmod 600` on it if nobody else read it",
            path.display(),
            md.mode() & 0o777
        ));
    }
    if md.len() != KEY_LEN as u64 {
        return Err(format!(
            "{} is {} bytes, not {KEY_LEN}",
            path.display(),
            md.len()
        ));
    }
    let mut key = [0u8; KEY_LEN];
    (&file)
        .take(KEY_LEN as u64)
        .read_exact(&mut key)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(Some(key))
}

/// Makes a new key: 32 bytes from the OS RNG in a 0600 temporary file,
/// linked into place only if no key exists (two processes racing to make
/// the first key agree on one).
fn create_key(path: &Path) -> Result<(), String> {
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| format!("the OS random generator failed: {e}"))?;
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no directory", path.display()))?;
    let io = |e: std::io::Error| format!("cannot create {}: {e}", path.display());
    // tempfile creates the file with mode 0600.
    let mut tmp = tempfile::Builder::new()
        .prefix(".session.key.")
        .tempfile_in(dir)
        .map_err(io)?;
    tmp.write_all(&key).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(()),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e.error)),
    }
}

/// This user's key; with `create`, made (with its directory) when missing.
fn key(create: bool) -> Result<hmac::Key, String> {
    let path = key_path()?;
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no directory", path.display()))?;
    let missing = || {
        format!(
            "there is no session key at {} (mcpmux makes it when it begins a session)",
            path.display()
        )
    };
    if !dir.exists() {
        if !create {
            return Err(missing());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    check_dir(dir)?;
    let bytes = match read_key(&path)? {
        Some(k) => k,
        None if create => {
            create_key(&path)?;
            read_key(&path)?.ok_or_else(|| format!("{} vanished", path.display()))?
        }
        None => return Err(missing()),
    };
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
}

/// Makes sure this user's key exists and is usable (creating it when
/// missing), so that `begin` fails before it creates a session directory
/// it could not sign.
pub fn ensure_key() -> Result<(), Error> {
    key(true)
        .map(|_| ())
        .map_err(|why| Error::InvalidSession(format!("cannot sign session files: {why}")))
}

/// The session directory as bound into the MAC (its canonical path).
fn canonical(dir: &Path) -> Result<PathBuf, String> {
    dir.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))
}

fn message(dir: &Path, name: &str, body: &[u8]) -> Vec<u8> {
    let dir = dir.as_os_str().as_bytes();
    let mut m = Vec::with_capacity(DOMAIN.len() + dir.len() + name.len() + body.len() + 2);
    m.extend_from_slice(DOMAIN);
    // Neither a path nor a file name holds a NUL: the parts cannot shift.
    m.extend_from_slice(dir);
    m.push(0);
    m.extend_from_slice(name.as_bytes());
    m.push(0);
    m.extend_from_slice(body);
    m
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(*p.get(1)?)?))
        .collect()
}

/// The SHA-256 of `bytes` as `sha256:<hex>`: how a signed `state.json`
/// records a file mcpmux wrote that carries no MAC of its own (`prompt.md`).
pub fn sha256(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
    )
}

/// Writes `value` as file `name` (e.g. `session.json`,
/// `round-001/state.json`) of session `dir`: pretty JSON whose last fields
/// are the write's `generation` (one more than the last the generation
/// store handed out for this directory) and the MAC; then records that
/// generation for the file. `ended` is the `ended` flag of a file that has
/// one (`session.json`): `Some(true)` records that the session ended, and
/// `Some(false)` once it is recorded is refused (`INVALID_SESSION`: an
/// ended session stays ended, even for a writer that read it before its
/// end). The file is replaced atomically ([`store::write_atomic`]) before
/// the record, both under the store's lock.
pub fn write_signed<T: Serialize + ?Sized>(
    dir: &Path,
    name: &str,
    value: &T,
    ended: Option<bool>,
) -> Result<(), Error> {
    let fail = |why: String| {
        Error::InvalidSession(format!("cannot sign {}: {why}", dir.join(name).display()))
    };
    let body = serde_json::to_vec_pretty(value).map_err(|e| fail(e.to_string()))?;
    let Some(open) = body.strip_suffix(b"\n}") else {
        return Err(fail("not a non-empty JSON object".into()));
    };
    // A top-level key of the pretty JSON starts a line with two spaces (a
    // string holds no raw newline): the value must not have the two fields
    // this adds.
    for field in ["generation", "mac"] {
        let top_level = format!("\n  \"{field}\": ");
        if memchr::memmem::find(open, top_level.as_bytes()).is_some() {
            return Err(fail(format!("it has a field '{field}' of its own")));
        }
    }
    let key = key(true).map_err(fail)?;
    let canonical = canonical(dir).map_err(fail)?;
    let store = generations::Locked::acquire().map_err(fail)?;
    let (mut record, record_path) = store.read(&canonical).map_err(fail)?;
    if record.ended && ended == Some(false) {
        return Err(Error::InvalidSession(format!(
            "session {} has ended; {name} is not written again as if it had not",
            dir.display()
        )));
    }
    let generation = record
        .generation
        .checked_add(1)
        .ok_or_else(|| fail("no generation is left".into()))?;
    let mut body = open.to_vec();
    body.extend_from_slice(format!("{GENERATION_HEAD}{generation}\n}}").as_bytes());
    let open = &body[..body.len() - 2];
    let tag = hmac::sign(&key, &message(&canonical, name, &body));
    let mut out = Vec::with_capacity(body.len() + SUFFIX_HEAD.len() + TAG_HEX + 3);
    out.extend_from_slice(open);
    out.extend_from_slice(SUFFIX_HEAD.as_bytes());
    out.extend_from_slice(hex(tag.as_ref()).as_bytes());
    out.extend_from_slice(SUFFIX_TAIL.as_bytes());
    store::write_atomic(&dir.join(name), &out)?;
    record.dir = canonical;
    record.generation = generation;
    record.files.insert(name.to_owned(), generation);
    record.ended |= ended == Some(true);
    store.write(&record_path, &record).map_err(fail)
}

/// A new session begins at `dir` (just created): what the generation store
/// recorded for an earlier session at the same path (one removed since) is
/// forgotten, except its last generation, which the new session's writes
/// go on from, so no file of the old one is newer than the new one's.
pub fn new_session(dir: &Path) -> Result<(), Error> {
    let fail = |why: String| {
        Error::InvalidSession(format!(
            "cannot record the new session {}: {why}",
            dir.display()
        ))
    };
    let canonical = canonical(dir).map_err(fail)?;
    let store = generations::Locked::acquire().map_err(fail)?;
    let (record, path) = store.read(&canonical).map_err(fail)?;
    if record.files.is_empty() && !record.ended {
        return Ok(());
    }
    let fresh = generations::Record {
        dir: canonical,
        generation: record.generation,
        ..generations::Record::default()
    };
    store.write(&path, &fresh).map_err(fail)
}

/// The generation a verified file's body carries (its `"generation"` field,
/// the last before the MAC); 0 for a file written before generations.
fn generation_of(open: &[u8]) -> u64 {
    let head = GENERATION_HEAD.as_bytes();
    let digits = open
        .len()
        .checked_sub(head.len() + 20)
        .map_or(open, |from| &open[from..]);
    let Some(at) = digits.windows(head.len()).rposition(|w| w == head) else {
        return 0;
    };
    let digits = &digits[at + head.len()..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// A signed session file as read and verified.
pub struct Verified {
    /// The file's bytes (plain JSON, with its `generation` and `mac`).
    pub bytes: Vec<u8>,
    /// The generation store says `end` ended the session (a `session.json`
    /// that says otherwise was rolled back).
    pub session_ended: bool,
}

/// Reads file `name` of session `dir` (up to `max` bytes) and checks it:
/// its MAC ([`verify`]), and that it is not older than the generation store
/// says its last write was (else `INVALID_SESSION`, "rolled back"). The
/// store's record is read before the file, so a concurrent write is never
/// taken for a rollback. `Ok(None)` when the file does not exist and none
/// was recorded; a required file's absence is `INVALID_SESSION`.
pub fn read_verified(
    dir: &Path,
    name: &str,
    max: u64,
    required: bool,
) -> Result<Option<Verified>, Error> {
    let path = dir.join(name);
    let canonical = canonical(dir).map_err(|why| {
        Error::InvalidSession(format!("not a readable session: {}: {why}", path.display()))
    })?;
    let (record, record_path) = generations::recorded(&canonical).map_err(|why| {
        Error::InvalidSession(format!(
            "cannot check {} against the generation store: {why}",
            path.display()
        ))
    })?;
    let floor = record.files.get(name).copied().unwrap_or(0);
    let rolled_back = |why: String| {
        Error::InvalidSession(format!(
            "{name} was rolled back: {}: {why} (recorded in {}); mcpmux does not act on an \
             older copy of a session",
            path.display(),
            record_path
                .as_deref()
                .map_or_else(String::new, |p| p.display().to_string())
        ))
    };
    let bytes = if required {
        store::read_file(&path, max)?
    } else {
        match store::read_file_opt(&path, max)? {
            Some(b) => b,
            None if floor > 0 => {
                return Err(rolled_back(format!(
                    "it is missing, but mcpmux wrote generation {floor} of it"
                )))
            }
            None => return Ok(None),
        }
    };
    let generation = verify(dir, name, &bytes)?;
    if generation < floor {
        return Err(rolled_back(format!(
            "it is generation {generation}, older than generation {floor} that mcpmux last wrote"
        )));
    }
    Ok(Some(Verified {
        bytes,
        session_ended: record.ended,
    }))
}

/// Checks that `bytes`, read from file `name` of session `dir`, carry a
/// valid MAC under this user's key, and returns their generation (0 for a
/// file written before generations were kept). The error is
/// `INVALID_SESSION` with the reason. It does not consult the generation
/// store: [`read_verified`] does.
pub fn verify(dir: &Path, name: &str, bytes: &[u8]) -> Result<u64, Error> {
    let path = dir.join(name);
    let fail = |why: String| {
        Error::InvalidSession(format!(
            "{name} is not authenticated by this user's key: {}: {why}; mcpmux acts only on \
             session files it wrote itself",
            path.display()
        ))
    };
    let suffix = SUFFIX_HEAD.len() + TAG_HEX + SUFFIX_TAIL.len();
    let split = bytes.len().checked_sub(suffix);
    let (open, mac) = match split {
        Some(at)
            if bytes[at..].starts_with(SUFFIX_HEAD.as_bytes())
                && bytes.ends_with(SUFFIX_TAIL.as_bytes()) =>
        {
            (
                &bytes[..at],
                &bytes[at + SUFFIX_HEAD.len()..bytes.len() - SUFFIX_TAIL.len()],
            )
        }
        _ => {
            return Err(fail(
                "it has no MAC (written by an older mcpmux, by hand, or by another program)".into(),
            ))
        }
    };
    let tag = unhex(mac).ok_or_else(|| fail("its MAC is not hexadecimal".into()))?;
    let key = key(false).map_err(&fail)?;
    let dir = canonical(dir).map_err(&fail)?;
    let mut body = open.to_vec();
    body.extend_from_slice(b"\n}");
    hmac::verify(&key, &message(&dir, name, &body), &tag).map_err(|_| {
        fail(
            "the MAC does not match (the file was edited, copied from another session or \
             directory, or signed with another key)"
                .into(),
        )
    })?;
    Ok(generation_of(open))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_junk() {
        assert_eq!(
            unhex(hex(&[0, 1, 0xab, 0xff]).as_bytes()),
            Some(vec![0, 1, 0xab, 0xff])
        );
        assert_eq!(unhex(b"zz"), None);
        assert_eq!(unhex(b"abc"), None);
    }

    #[test]
    fn the_generation_is_the_last_field_before_the_mac() {
        assert_eq!(generation_of(b"{\n  \"a\": 1,\n  \"generation\": 42"), 42);
        assert_eq!(generation_of(b"{\n  \"a\": 1"), 0);
        assert_eq!(generation_of(b"{\n  \"generation\": 1"), 0);
        assert_eq!(
            generation_of(b"{\n  \"a\": 1,\n  \"generation\": 18446744073709551615"),
            u64::MAX
        );
        // Not the last field, or not digits: none.
        assert_eq!(
            generation_of(b"{\n  \"a\": 1,\n  \"generation\": 4,\n  \"b\": 2"),
            0
        );
        assert_eq!(generation_of(b"{\n  \"a\": 1,\n  \"generation\": \"4\""), 0);
        assert_eq!(
            generation_of(b"{\n  \"a\": 1,\n  \"generation\": 99999999999999999999999"),
            0
        );
    }

    #[test]
    fn message_parts_are_separated() {
        assert_ne!(
            message(Path::new("/a"), "b", b"c"),
            message(Path::new("/a\0b"), "", b"c")
        );
    }
}
