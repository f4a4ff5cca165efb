//! Where the whole of a result the policy cut is kept, so a model (or a
//! host) can page it with `read_result` instead of losing what the cut left
//! out (`docs/policy.md`, "Big results").
//!
//! Only redacted text is ever written: the policy keeps what it rendered
//! after redaction, before the cut. Files are `<id>.txt`, mode 0600, in a
//! directory made 0700 (one that exists is left as it is); an id is 128 bits from the operating system's
//! CSPRNG in hex, so one result cannot be guessed from another. Ids come
//! back from models and gateway clients, so they are checked to be exactly
//! that (never a path), and files are opened with
//! [`open_regular`] (no symlink,
//! no FIFO). The directory is bounded in total bytes and in files; the
//! oldest results go first.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mcpmux_core::error::Error;
use mcpmux_core::internal::files::open_regular;

/// The total bytes kept in one result directory when `max_result_store_bytes`
/// is not set: 256 MiB.
pub const DEFAULT_MAX_RESULT_STORE_BYTES: u64 = 256 * 1024 * 1024;

/// The most results kept in one directory; the oldest go first.
pub const MAX_RESULTS: usize = 1024;

/// Hex digits of an id (128 bits).
const ID_HEX: usize = 32;

/// One page of a kept result ([`ResultStore::read`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ResultPage {
    /// The text, whole UTF-8 characters only.
    pub text: String,
    /// Where the page starts, in bytes of the whole result.
    pub offset: u64,
    /// Where the next page starts; `None` at the end.
    pub next_offset: Option<u64>,
    /// Bytes of the whole result.
    pub total: u64,
}

/// A directory of kept results. Shared by reference; `keep` and `read` may
/// run from several threads (a lock orders writes and evictions).
#[derive(Debug)]
pub struct ResultStore {
    dir: PathBuf,
    max_bytes: u64,
    lock: Mutex<()>,
}

/// Whether `id` is one this store could have made: exactly 32 lowercase hex
/// digits. Anything else (a path, `..`, an empty string) is refused before
/// the file system is asked.
pub fn valid_id(id: &str) -> bool {
    id.len() == ID_HEX && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn new_id() -> String {
    let mut bytes = [0u8; ID_HEX / 2];
    if getrandom::fill(&mut bytes).is_err() {
        // Two nonces (each from the OS, or seeded from it) rather than a
        // panic; ids stay unpredictable enough and never collide in practice.
        return format!("{}{}", super::output::nonce(), super::output::nonce());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl ResultStore {
    /// Uses `dir` (made with mode 0700 when missing, with its parents) for
    /// results, keeping at most `max_bytes` in total. A directory that
    /// cannot be made is `INVALID_INPUT` naming it.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<ResultStore, Error> {
        let fail =
            |e: std::io::Error| Error::InvalidInput(format!("result_dir '{}': {e}", dir.display()));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(fail)?;
        // An existing directory is left as it is (it may be shared, like
        // /tmp): each result is its own 0600 file, made with `create_new`
        // under a random name, never through a symlink.
        let md = std::fs::metadata(dir).map_err(fail)?;
        if !md.is_dir() {
            return Err(Error::InvalidInput(format!(
                "result_dir '{}' is not a directory",
                dir.display()
            )));
        }
        Ok(ResultStore {
            dir: dir.to_owned(),
            max_bytes,
            lock: Mutex::new(()),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.txt"))
    }

    /// Keeps `text` and returns its id, evicting the oldest results until
    /// it fits. `None` when it cannot be kept (larger than the whole store,
    /// or the file system refused): the caller says the result is not kept.
    pub fn keep(&self, text: &str) -> Option<String> {
        let len = text.len() as u64;
        if len > self.max_bytes {
            return None;
        }
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.evict(len);
        let id = new_id();
        let path = self.path(&id);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).mode(0o600);
        let written = open_regular(&path, &options).and_then(|mut f| f.write_all(text.as_bytes()));
        match written {
            Ok(()) => Some(id),
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "cannot keep a result: {e}");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Whether any result is kept here (a session's earlier rounds count).
    pub fn has_results(&self) -> bool {
        std::fs::read_dir(&self.dir).is_ok_and(|mut entries| {
            entries.any(|e| {
                e.ok().is_some_and(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".txt"))
                        .is_some_and(valid_id)
                })
            })
        })
    }

    /// Removes the oldest results until `incoming` more bytes and one more
    /// file fit. Only files named like results are counted or removed.
    fn evict(&self, incoming: u64) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut kept: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".txt"))
                    .is_some_and(valid_id)
            })
            .filter_map(|e| {
                let md = e.metadata().ok()?;
                md.is_file().then(|| {
                    (
                        md.modified().unwrap_or(std::time::UNIX_EPOCH),
                        md.len(),
                        e.path(),
                    )
                })
            })
            .collect();
        kept.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2.cmp(&b.2)));
        let mut total: u64 = kept.iter().map(|k| k.1).sum();
        let mut count = kept.len();
        for (_, len, path) in kept {
            if total + incoming <= self.max_bytes && count < MAX_RESULTS {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
                count -= 1;
            }
        }
    }

    /// Reads up to `length` bytes of result `id` from `offset`, cut to
    /// whole UTF-8 characters. An id that is not one this store makes, or
    /// that is not kept (any more), is `INVALID_INPUT`; an offset past the
    /// end gives an empty page.
    pub fn read(&self, id: &str, offset: u64, length: usize) -> Result<ResultPage, Error> {
        if !valid_id(id) {
            return Err(Error::InvalidInput(
                "read_result: 'id' must be the 32 hex digits of a result id".into(),
            ));
        }
        let gone = || {
            Error::InvalidInput(format!(
                "read_result: no result '{id}' is kept (it may have been evicted)"
            ))
        };
        let mut file =
            open_regular(&self.path(id), OpenOptions::new().read(true)).map_err(|e| {
                match e.kind() {
                    std::io::ErrorKind::NotFound => gone(),
                    _ => Error::Internal(format!("read_result: {e}")),
                }
            })?;
        let total = file
            .metadata()
            .map_err(|e| Error::Internal(format!("read_result: {e}")))?
            .len();
        let start = offset.min(total);
        file.seek(SeekFrom::Start(start))
            .map_err(|e| Error::Internal(format!("read_result: {e}")))?;
        // Room for one whole character, so a page always moves on.
        let length = length.max(4);
        let mut buf = Vec::with_capacity(length.min(1 << 20));
        file.take(length as u64)
            .read_to_end(&mut buf)
            .map_err(|e| Error::Internal(format!("read_result: {e}")))?;
        // An offset inside a character skips to the next one.
        let skip = buf
            .iter()
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count()
            .min(3);
        let body = &buf[skip..];
        let (text, used) = match std::str::from_utf8(body) {
            Ok(s) => (s.to_owned(), body.len()),
            // A character cut by the length ends the page before it.
            Err(e) if e.error_len().is_none() => (
                String::from_utf8_lossy(&body[..e.valid_up_to()]).into_owned(),
                e.valid_up_to(),
            ),
            // Not text this store wrote: shown, never trusted.
            Err(_) => (String::from_utf8_lossy(body).into_owned(), body.len()),
        };
        let page_start = start + skip as u64;
        let end = page_start + used as u64;
        Ok(ResultPage {
            text,
            offset: page_start,
            next_offset: (end < total).then_some(end),
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keeps_reads_and_pages_on_characters() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::open(&dir.path().join("results"), 1000).unwrap();
        let md = std::fs::metadata(store.dir()).unwrap();
        assert_eq!(md.permissions().mode() & 0o777, 0o700);
        let id = store.keep("aé-tail").unwrap();
        assert!(valid_id(&id), "{id}");
        let md = std::fs::metadata(store.path(&id)).unwrap();
        assert_eq!(md.permissions().mode() & 0o777, 0o600);
        // "aé-tail" is 8 bytes, "é" two of them.
        let p = store.read(&id, 1, 4).unwrap();
        assert_eq!(
            (p.text.as_str(), p.next_offset, p.total),
            ("é-t", Some(5), 8)
        );
        let p = store.read(&id, 0, 2).unwrap();
        assert_eq!(
            (p.text.as_str(), p.next_offset),
            ("aé-", Some(4)),
            "at least 4 bytes"
        );
        let p = store.read(&id, 4, 4).unwrap();
        assert_eq!((p.text.as_str(), p.next_offset), ("tail", None));
        // An offset inside "é" starts at the next character.
        let p = store.read(&id, 2, 100).unwrap();
        assert_eq!(
            (p.text.as_str(), p.offset, p.next_offset),
            ("-tail", 3, None)
        );
        let p = store.read(&id, 99, 10).unwrap();
        assert_eq!((p.text.as_str(), p.next_offset), ("", None));
    }

    #[test]
    fn ids_are_never_paths() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::open(dir.path(), 1000).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "x").unwrap();
        for id in ["../secret", "secret", "", "/etc/passwd", &"A".repeat(32)] {
            let e = store.read(id, 0, 10).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT", "{id}");
        }
        let e = store.read(&"0".repeat(32), 0, 10).unwrap_err();
        assert!(e.to_string().contains("no result"), "{e}");
    }

    #[test]
    fn symlinks_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::open(&dir.path().join("r"), 1000).unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "not a result").unwrap();
        let id = "1".repeat(32);
        std::os::unix::fs::symlink(&outside, store.path(&id)).unwrap();
        assert!(store.read(&id, 0, 100).is_err());
    }

    #[test]
    fn evicts_oldest_first_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::open(dir.path(), 10).unwrap();
        let a = store.keep("aaaa").unwrap();
        // Distinct modification times without waiting on the clock.
        let old = std::fs::File::options()
            .write(true)
            .open(store.path(&a))
            .unwrap();
        old.set_modified(std::time::UNIX_EPOCH).unwrap();
        let b = store.keep("bbbb").unwrap();
        let c = store.keep("cccc").unwrap();
        assert!(store.read(&a, 0, 10).is_err(), "the oldest goes first");
        assert_eq!(store.read(&b, 0, 10).unwrap().text, "bbbb");
        assert_eq!(store.read(&c, 0, 10).unwrap().text, "cccc");
        assert!(
            store.keep(&"x".repeat(11)).is_none(),
            "larger than the store"
        );
    }
}
