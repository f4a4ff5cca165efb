//! A stdio child's stderr: logged line by line (`mcpmux::server_stderr`)
//! and kept in a small ring for the error that reports the child's end.
//!
//! That error quotes only what the server wrote since its last stdout
//! message (the call under way and the crash itself), never what it wrote
//! during an earlier, answered call. Stderr and stdout are two pipes read
//! by different tasks, so the order in which their bytes are *read* says
//! nothing of the order in which they were *written*. The stdout reader
//! therefore drains this pipe (one non-blocking `read`) after each read of
//! stdout and before it hands on the messages it got
//! ([`BeforeMessage::before_messages`]): what the server wrote to stderr
//! before it wrote them is in the pipe by then, and is stamped with the
//! messages counted before them.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::unix::pipe;
use tokio::sync::watch;

use super::stdout_reader::BeforeMessage;

/// How much of the child's stderr is kept for error messages (and the
/// longest line kept whole).
pub(super) const STDERR_KEEP_BYTES: usize = 8 * 1024;

/// The child's stderr pipe, the unfinished line read so far, and the ring.
/// Shared by its reader task and the stdout reader's drain.
pub(super) struct StderrReader {
    pipe: pipe::Receiver,
    fd: RawFd,
    partial: Mutex<Vec<u8>>,
    ring: StderrRing,
    label: String,
    /// Stdout messages handed on so far.
    messages: AtomicU64,
}

impl StderrReader {
    /// Takes the child's stderr (a pipe). Must be called inside the runtime.
    pub(super) fn new(stderr: OwnedFd, label: &str) -> std::io::Result<Arc<StderrReader>> {
        let fd = stderr.as_raw_fd();
        Ok(Arc::new(StderrReader {
            pipe: pipe::Receiver::from_owned_fd(stderr)?,
            fd,
            partial: Mutex::new(Vec::new()),
            ring: StderrRing::default(),
            label: label.to_owned(),
            messages: AtomicU64::new(0),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.partial.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reader task's loop: reads whenever the pipe is readable until
    /// the child closes it, then says so on `done`.
    pub(super) async fn run(self: Arc<Self>, done: watch::Sender<bool>) {
        let mut chunk = [0u8; 4096];
        'read: loop {
            if self.pipe.readable().await.is_err() {
                break;
            }
            let mut partial = self.lock();
            loop {
                match self.pipe.try_read(&mut chunk) {
                    Ok(0) => break 'read,
                    Ok(n) => self.take(&mut partial, &chunk[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break 'read,
                }
            }
        }
        let mut partial = self.lock();
        if !partial.is_empty() {
            let rest = std::mem::take(&mut *partial);
            self.keep(&rest);
        }
        drop(partial);
        let _ = done.send(true);
    }

    /// Reads what the pipe holds now, without waiting. Skipped when the
    /// task (or another drain) is reading: it takes those bytes.
    fn drain_now(&self) {
        let Ok(mut partial) = self.partial.try_lock() else {
            return;
        };
        let mut chunk = [0u8; 4096];
        loop {
            // SAFETY: `fd` belongs to `self.pipe`, open for as long as
            // `self`; the read writes at most `chunk.len()` bytes.
            let n = unsafe { libc::read(self.fd, chunk.as_mut_ptr().cast(), chunk.len()) };
            match usize::try_from(n) {
                Ok(n @ 1..) => self.take(&mut partial, &chunk[..n]),
                // The end, nothing yet or an error: the task sees to it.
                _ => return,
            }
        }
    }

    /// Adds `bytes` to the unfinished line and keeps every line they end.
    fn take(&self, partial: &mut Vec<u8>, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            partial.extend_from_slice(&rest[..i]);
            let line = std::mem::take(partial);
            self.keep(&line);
            rest = &rest[i + 1..];
        }
        partial.extend_from_slice(rest);
        // Lines are capped so a server cannot grow our memory through stderr.
        if partial.len() >= STDERR_KEEP_BYTES {
            let line = std::mem::take(partial);
            self.keep(&line);
        }
    }

    /// Logs one line and keeps it, stamped with the messages counted so far.
    fn keep(&self, line: &[u8]) {
        let text = String::from_utf8_lossy(line).trim_end().to_owned();
        // Known secrets go before the line is logged or kept for an error:
        // a server may print its env at start-up.
        let text = crate::secrets::redact(&text).into_owned();
        if !text.is_empty() {
            tracing::info!(target: "mcpmux::server_stderr", server = %self.label, "{text}");
            self.ring.push(self.messages.load(Ordering::Relaxed), text);
        }
    }

    /// The last `n` lines the server wrote (redacted as they were kept),
    /// oldest first.
    pub(super) fn last_lines(&self, n: usize) -> Vec<String> {
        self.ring.last(n)
    }

    /// What the server wrote since its last stdout message, cut to the last
    /// [`STDERR_KEEP_BYTES`].
    pub(super) fn since_last_message(&self) -> String {
        self.ring.since(self.messages.load(Ordering::Relaxed))
    }
}

impl BeforeMessage for StderrReader {
    fn before_messages(&self) {
        self.drain_now();
    }

    fn message(&self) {
        self.messages.fetch_add(1, Ordering::Relaxed);
    }
}

/// The last few KiB of a child's stderr, each line with its stamp.
#[derive(Default)]
struct StderrRing {
    lines: Mutex<(VecDeque<(u64, String)>, usize)>,
}

impl StderrRing {
    fn push(&self, stamp: u64, line: String) {
        let mut guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let (lines, bytes) = &mut *guard;
        *bytes += line.len();
        lines.push_back((stamp, line));
        while *bytes > STDERR_KEEP_BYTES && lines.len() > 1 {
            *bytes -= lines.pop_front().map_or(0, |(_, l)| l.len());
        }
    }

    /// The last `n` lines kept (oldest first), whatever their stamp.
    fn last(&self, n: usize) -> Vec<String> {
        let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let lines = &guard.0;
        lines
            .iter()
            .skip(lines.len().saturating_sub(n))
            .map(|(_, line)| line.clone())
            .collect()
    }

    /// The lines stamped `stamp`, joined, cut to the last
    /// [`STDERR_KEEP_BYTES`].
    fn since(&self, stamp: u64) -> String {
        let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let joined = guard
            .0
            .iter()
            .filter(|(s, _)| *s == stamp)
            .map(|(_, line)| line.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if joined.len() > STDERR_KEEP_BYTES {
            let mut cut = joined.len() - STDERR_KEEP_BYTES;
            while !joined.is_char_boundary(cut) {
                cut += 1;
            }
            return joined[cut..].to_owned();
        }
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_tail() {
        let ring = StderrRing::default();
        for i in 0..2000 {
            ring.push(0, format!("line {i}"));
        }
        let tail = ring.since(0);
        assert!(tail.len() <= STDERR_KEEP_BYTES);
        assert!(tail.ends_with("line 1999"));
        assert_eq!(ring.last(2), ["line 1998", "line 1999"]);
        assert!(StderrRing::default().last(5).is_empty());
    }

    #[tokio::test]
    async fn what_was_written_before_a_message_is_not_quoted_after_it() {
        use std::io::Write;
        use std::os::fd::FromRawFd;
        // A pipe: its write end is the "child's" stderr.
        let mut fds = [0; 2];
        // SAFETY: a two-int array for pipe2.
        let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        assert_eq!(made, 0);
        // SAFETY: fresh descriptors we own, each wrapped once.
        let (read_end, mut write_end) = unsafe {
            (
                OwnedFd::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        let stderr = StderrReader::new(read_end, "t").unwrap();
        writeln!(write_end, "warning during the first call").unwrap();
        // Its answer comes: the warning is drained and stamped before it,
        // though the reader task never ran.
        stderr.before_messages();
        stderr.message();
        assert_eq!(stderr.since_last_message(), "");
        writeln!(write_end, "panicked: out of cheese").unwrap();
        drop(write_end);
        let (done, mut finished) = watch::channel(false);
        tokio::spawn(stderr.clone().run(done));
        finished.wait_for(|d| *d).await.unwrap();
        assert_eq!(stderr.since_last_message(), "panicked: out of cheese");
    }
}
