//! This user's state directory, which holds the session key ([`super::trust`])
//! and the generation store beside it ([`super::generations`]): where it is,
//! and the checks that refuse a directory another user owns or others can
//! write (they could swap the key or the records). Both modules use it; it
//! uses neither.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The key's file name in the state directory.
const KEY_FILE: &str = "session.key";

/// Where this user's session key lives: `$XDG_STATE_HOME/mcpmux/session.key`,
/// else `$HOME/.local/state/mcpmux/session.key`. A relative
/// `XDG_STATE_HOME` is ignored (the XDG rule).
pub fn key_path() -> Result<PathBuf, String> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local").join("state"))
        })
        .ok_or_else(|| {
            "neither XDG_STATE_HOME nor HOME is set (an absolute path), so there is no \
             per-user session key"
                .to_owned()
        })?;
    Ok(base.join("mcpmux").join(KEY_FILE))
}

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuses a key directory that another user owns or that others can write
/// (they could swap the key). Follows a symlink to the directory.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    let md = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    check_private_dir(dir, &md)
}

/// Refuses `dir`, as `md` describes it, unless it is a directory this user
/// owns that neither group nor others can write.
pub fn check_private_dir(dir: &Path, md: &Metadata) -> Result<(), String> {
    if !md.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if md.uid() != euid() {
        return Err(format!(
            "{} is owned by uid {}, not by this user (uid {})",
            dir.display(),
            md.uid(),
            euid()
        ));
    }
    if md.mode() & 0o022 != 0 {
        return Err(format!(
            "{} can be written by group or others (mode {:o}); run `chmod 700` on it",
            dir.display(),
            md.mode() & 0o777
        ));
    }
    Ok(())
}
