//! The per-user files mcpmux keeps beside each other in
//! `$XDG_CONFIG_HOME/mcpmux/` (else `$HOME/.config/mcpmux/`): the trust
//! store of config files and the policy's pin store of tool definitions.
//! One way to find the directory, read a file with a size cap, and write
//! one privately (0600 in a 0700 directory, whole, by atomic rename), so
//! both stores keep the same guarantees.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The user's mcpmux directory: `$XDG_CONFIG_HOME/mcpmux`, else
/// `$HOME/.config/mcpmux` (a relative `XDG_CONFIG_HOME` is ignored, as the
/// XDG rule says); `None` when neither is an absolute path.
pub fn user_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    std::env::var_os("XDG_CONFIG_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".config"))
        })
        .map(|d| d.join("mcpmux"))
}

/// Reads `path` whole, at most `max` bytes: `Ok(None)` when it does not
/// exist; an error in words when it is not a regular file (links are not
/// followed), cannot be read or is larger than `max`.
pub fn read_capped(path: &Path, max: u64) -> Result<Option<Vec<u8>>, String> {
    let file = match crate::files::open_regular(path, std::fs::OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("is larger than {max} bytes"));
    }
    Ok(Some(bytes))
}

/// The directory of `path`, made 0700 when missing.
fn private_dir(path: &Path) -> Result<&Path, String> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = path.parent().ok_or("it has no directory")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Writes `bytes` as the whole of `path`: its directory is made 0700 when
/// missing, the text goes to a 0600 temporary file beside it, synced, then
/// renamed into place (a reader sees the old file or the new one, never
/// half). The error is in words.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let cannot = |e: &dyn std::fmt::Display| format!("cannot be written: {e}");
    let dir = private_dir(path).map_err(|e| cannot(&e))?;
    // NamedTempFile is created 0600; set it anyway, the mode is the point.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| cannot(&e))?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| cannot(&e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| cannot(&e))?;
    tmp.persist(path).map_err(|e| cannot(&e.error))?;
    Ok(())
}

/// Longest wait for [`lock`]: another process holds the lock only while it
/// reads, edits and writes one small file.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// An exclusive advisory lock (`flock`) on `<path>.lock`, held until
/// dropped: what a read-edit-write of `path` takes, so that two processes
/// editing the same store (two gateways, a gateway and `mcpmux policy
/// approve`) do not lose each other's edits. The lock file is made 0600 in
/// the 0700 directory, never through a symlink. Waits at most 5 s (never
/// blocks for ever); the error is in words.
pub fn lock(path: &Path) -> Result<StoreLock, String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: &dyn std::fmt::Display| format!("cannot be locked: {e}");
    private_dir(path).map_err(|e| cannot(&e))?;
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).mode(0o600);
    let file = crate::files::open_regular(Path::new(&name), &options).map_err(|e| cannot(&e))?;
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(StoreLock(file));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::WouldBlock {
            return Err(cannot(&e));
        }
        if std::time::Instant::now() >= deadline {
            return Err(cannot(&format!(
                "another process has held it for {} s",
                LOCK_WAIT.as_secs()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The lock [`lock`] took; released when dropped (the descriptor closes).
pub struct StoreLock(#[allow(dead_code)] std::fs::File);

#[cfg(test)]
mod lock_tests {
    use super::*;

    #[test]
    fn a_second_lock_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        let first = lock(&path).unwrap();
        let started = std::time::Instant::now();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || lock(&path).map(|_| started.elapsed()))
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(first);
        let waited = waiter.join().unwrap().unwrap();
        assert!(
            waited >= std::time::Duration::from_millis(150),
            "{waited:?}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("store.json.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
