//! The generation store: which write of each signed session file is the
//! latest, kept outside the session directory, beside the per-user key
//! (`$XDG_STATE_HOME/mcpmux/generations/`), so that a restored older copy
//! of a session, every file of it validly signed, is refused (see
//! [`super::trust`]).
//!
//! One record per session directory, `generations/<sha256 of the
//! directory's canonical path>.json` (a fixed-length hex name, whatever the
//! path holds), mode 0600 in a 0700 directory that only this user may
//! write: the directory, the last generation handed out for it, whether
//! `end` ended it, and the generation of each signed file's last write (at
//! most two files per round, and rounds are at most
//! [`super::state::MAX_ROUND`]; a record is read up to
//! [`MAX_RECORD_BYTES`]). Records are replaced atomically (temporary file,
//! `fsync`, rename), and every signed write takes one exclusive `flock` on
//! `generations/.lock` for as long as it numbers, writes and records a file,
//! so generations only grow and the record never names a generation its
//! file does not have yet (the file is written before the record). A
//! reader reads the record before the file, so a write between the two
//! only makes the file newer than the record says, never older.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::key_dir::{check_private_dir, euid, key_path};

/// The store's directory name, beside the key.
const DIR: &str = "generations";
/// The lock every signed write holds.
const LOCK: &str = ".lock";
/// The largest record read.
pub const MAX_RECORD_BYTES: u64 = 4 * 1024 * 1024;

/// What the store knows of one session directory.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The session directory (its canonical path), for people looking at
    /// the store.
    #[serde(default)]
    pub dir: PathBuf,
    /// The last generation handed out for this directory; it never
    /// decreases, not even when a new session begins at the same path.
    #[serde(default)]
    pub generation: u64,
    /// `end` ended the session: it stays ended.
    #[serde(default)]
    pub ended: bool,
    /// The generation of each signed file's last write, by its name in
    /// the session directory (`session.json`, `round-001/state.json`).
    #[serde(default)]
    pub files: BTreeMap<String, u64>,
}

/// The store's directory; with `create`, made (0700) when missing (its
/// parent, the key's directory, exists once a key was made). `None` when
/// it does not exist and `create` is false. A directory that is not this
/// user's own, or that others can write, is refused.
pub fn dir(create: bool) -> Result<Option<PathBuf>, String> {
    let key = key_path()?;
    let base = key
        .parent()
        .ok_or_else(|| format!("{} has no directory", key.display()))?;
    let dir = base.join(DIR);
    match std::fs::symlink_metadata(&dir) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !create {
                return Ok(None);
            }
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
            }
        }
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    let md = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    check_private_dir(&dir, &md)?;
    Ok(Some(dir))
}

/// The record file of the session at canonical path `canonical`.
pub fn record_path(store: &Path, canonical: &Path) -> PathBuf {
    let digest = ring::digest::digest(&ring::digest::SHA256, canonical.as_os_str().as_bytes());
    let name: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    store.join(format!("{name}.json"))
}

/// Reads a record; `None` when there is none. A record that is not this
/// user's private regular file, is too large or is not a record is an
/// error naming it (nothing is decided from it, nor overwritten).
pub fn read(path: &Path) -> Result<Option<Record>, String> {
    let file = match mcpmux_core::internal::files::open_regular(path, OpenOptions::new().read(true))
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
    };
    let md = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if md.uid() != euid() || md.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is not this user's private file (uid {}, mode {:o})",
            path.display(),
            md.uid(),
            md.mode() & 0o777
        ));
    }
    let bytes = mcpmux_core::internal::files::read_capped(file, MAX_RECORD_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        format!(
            "{} is not a generation record ({e}); remove it to accept the session's files as \
             they are",
            path.display()
        )
    })
}

/// The record of the session at `canonical`, without the lock (a reader):
/// the default (generation 0, not ended) when there is none.
pub fn recorded(canonical: &Path) -> Result<(Record, Option<PathBuf>), String> {
    let Some(store) = dir(false)? else {
        return Ok((Record::default(), None));
    };
    let path = record_path(&store, canonical);
    Ok((read(&path)?.unwrap_or_default(), Some(path)))
}

/// The store held by one writer: the exclusive lock and the directory.
pub struct Locked {
    _lock: File,
    store: PathBuf,
}

impl Locked {
    /// Takes the store's lock (waits for another writer to finish).
    pub fn acquire() -> Result<Locked, String> {
        let store = dir(true)?.ok_or("the generation store vanished")?;
        let path = store.join(LOCK);
        let lock = mcpmux_core::internal::files::open_regular(
            &path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .mode(0o600),
        )
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        loop {
            // SAFETY: flock on a descriptor we own; no memory is involved.
            let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("cannot lock {}: {e}", path.display()));
            }
        }
        Ok(Locked { _lock: lock, store })
    }

    /// The record of `canonical` (the default when there is none) and its path.
    pub fn read(&self, canonical: &Path) -> Result<(Record, PathBuf), String> {
        let path = record_path(&self.store, canonical);
        Ok((read(&path)?.unwrap_or_default(), path))
    }

    /// Replaces the record at `path` atomically (0600).
    pub fn write(&self, path: &Path, record: &Record) -> Result<(), String> {
        let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let bytes = serde_json::to_vec_pretty(record).map_err(|e| e.to_string())?;
        // tempfile creates the file with mode 0600.
        let mut tmp = tempfile::Builder::new()
            .prefix(".record.")
            .tempfile_in(&self.store)
            .map_err(io)?;
        tmp.write_all(&bytes).map_err(io)?;
        tmp.as_file().sync_data().map_err(io)?;
        tmp.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_are_fixed_length_hex_whatever_the_path() {
        for p in ["/a", "/a/../../etc/passwd", "/x/\u{e9}\n/.."] {
            let path = record_path(Path::new("/store"), Path::new(p));
            let name = path.file_name().unwrap().to_str().unwrap();
            assert_eq!(path.parent(), Some(Path::new("/store")));
            assert_eq!(name.len(), 64 + ".json".len(), "{name}");
            assert!(name[..64].bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
        }
        assert_ne!(
            record_path(Path::new("/s"), Path::new("/a")),
            record_path(Path::new("/s"), Path::new("/b"))
        );
    }

    #[test]
    fn a_record_from_any_build_parses() {
        let r: Record = serde_json::from_str("{}").unwrap();
        assert_eq!((r.generation, r.ended, r.files.len()), (0, false, 0));
        let r: Record = serde_json::from_str(
            r#"{"dir": "/w/s", "generation": 7, "ended": true, "files": {"session.json": 7}}"#,
        )
        .unwrap();
        assert_eq!(r.files["session.json"], 7);
    }
}
