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

/// Writes `bytes` as the whole of `path`: its directory is made 0700 when
/// missing, the text goes to a 0600 temporary file beside it, synced, then
/// renamed into place (a reader sees the old file or the new one, never
/// half). The error is in words.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let cannot = |e: &dyn std::fmt::Display| format!("cannot be written: {e}");
    let dir = path
        .parent()
        .ok_or_else(|| cannot(&"it has no directory"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| cannot(&e))?;
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
