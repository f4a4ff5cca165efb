//! Opening files that live in a directory someone else may have written
//! to: a review session's directory (`session/store.rs`) and the audit log
//! (`policy/audit.rs`).
//!
//! A session directory sits inside the repository under review, so its
//! contents are data that anyone who can write the repository may have
//! replaced. A plain `open` would follow a symlink put in place of a file
//! (`round-001/events.jsonl` -> `~/.bashrc` and mcpmux appends to that
//! file), and would block for ever on a FIFO put in place of one
//! (`runner.lock`: `wait` and `end` would never return). [`open_regular`]
//! opens with `O_NOFOLLOW | O_NONBLOCK`, so neither can happen, then
//! checks on the open descriptor (`fstat`, no race with a rename) that it
//! is a regular file. [`read_capped`] reads such a file up to a size cap,
//! so a huge (or sparse) file never becomes a huge allocation.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens `path` with `options`, never through a symlink (its last
/// component; the caller vouches for its directory) and only when it is a
/// regular file.
///
/// A symlink fails with `ELOOP`, reported as "is a symlink"; a FIFO,
/// socket, device or directory as "is not a regular file". `O_NONBLOCK`
/// makes opening a FIFO return at once (a FIFO that nobody writes would
/// block a reader, one that nobody reads a writer); it is cleared again
/// once the file is known to be regular (where it means nothing anyway),
/// so the descriptor is an ordinary one, e.g. for a child's stderr.
pub fn open_regular(path: &Path, options: &OpenOptions) -> io::Result<File> {
    let mut options = options.clone();
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = options.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            io::Error::new(e.kind(), "is a symlink, which is never followed")
        } else {
            e
        }
    })?;
    let md = file.metadata()?;
    if !md.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is not a regular file ({})", kind(&md.file_type())),
        ));
    }
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; no memory is involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags == -1 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// What a file that is not regular is, for messages.
fn kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a file"
    }
}

/// Reads all of `file` when it holds at most `max` bytes, else fails with
/// "larger than `max` bytes" without reading it (its `fstat` size), or
/// after reading `max + 1` bytes (a file that grows meanwhile).
pub fn read_capped(file: File, max: u64) -> io::Result<Vec<u8>> {
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        )
    };
    let len = file.metadata()?.len();
    if len > max {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_symlinks_fifos_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut append = OpenOptions::new();
        append.create(true).append(true);
        let e = open_regular(&link, &append).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");

        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut read = OpenOptions::new();
        read.read(true);
        let e = open_regular(&fifo, &read).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = open_regular(dir.path(), &read).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");

        let f = open_regular(&target, &read).unwrap();
        assert_eq!(read_capped(f, 4).unwrap(), b"keep");
        let f = open_regular(&target, &read).unwrap();
        let e = read_capped(f, 3).unwrap_err();
        assert!(e.to_string().contains("larger than 3 bytes"), "{e}");
    }
}
