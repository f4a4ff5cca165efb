//! [`StdoutReader`]: a stdio server's stdout, read by whichever thread gets
//! there first (leader/follower).
//!
//! Normally the transport's reader task reads it: it waits for the pipe to
//! become readable, then reads and hands out messages. But a blocking caller
//! ([`crate::runtime::block_on`]: Python's `Hub`, the C ABI), an event
//! loop (Python's `AsyncHub`, Node), or a task whose call is alone in
//! flight and that chose to stay awake (`jsonrpc::peer::awake`), having
//! just written a request, is awake anyway; while it waits, it reads the
//! pipe itself ([`StdoutReader::read_now`]), so the
//! answer reaches it without first waking an engine thread (on a small VM,
//! that wake-up costs about as much as the round trip to a fast server).
//!
//! Both read under one lock, which also holds what was read of the next
//! message, so messages are handed out whole and in order whoever reads.
//! The caller never waits for the lock and only reads what is there (a
//! non-blocking `read`); the end of the stream and read errors are left to
//! the task, which reports them.

use std::io::ErrorKind;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::net::unix::pipe;

use super::line_reader::{Lines, Splitter};
use super::FrameSink;
use crate::runtime::ReadNow;

/// The child's stdout and what was read of its next message. Shared by the
/// transport's reader task and the callers of [`read_now`](Self::read_now).
pub(crate) struct StdoutReader {
    pipe: pipe::Receiver,
    fd: RawFd,
    state: Mutex<Splitter>,
    sink: Weak<dyn FrameSink>,
    max: usize,
    /// Told of each read and each message (the stderr reader's drain and
    /// count, see `stderr_reader`).
    before: Arc<dyn BeforeMessage>,
}

/// What the stdout reader tells before it hands on messages.
pub(crate) trait BeforeMessage: Send + Sync {
    /// Once per read of stdout, before its messages are handed on.
    fn before_messages(&self);
    /// Once per message, just before it is handed on.
    fn message(&self);
}

/// Why [`StdoutReader::run`] stopped reading.
pub(crate) enum Stopped {
    /// The child closed its stdout.
    Eof,
    /// Reading failed.
    Failed,
    /// The sink is gone (the connection's owner dropped it).
    SinkGone,
}

impl StdoutReader {
    /// Takes the child's stdout (a pipe) for messages of at most `max` bytes
    /// going to `sink`. Must be called inside the runtime.
    pub(crate) fn new(
        stdout: OwnedFd,
        max: usize,
        sink: Weak<dyn FrameSink>,
        before: Arc<dyn BeforeMessage>,
    ) -> std::io::Result<Arc<StdoutReader>> {
        let fd = stdout.as_raw_fd();
        Ok(Arc::new(StdoutReader {
            pipe: pipe::Receiver::from_owned_fd(stdout)?,
            fd,
            state: Mutex::new(Splitter::new(max)),
            sink,
            max,
            before,
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Splitter> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reader task's loop: reads whenever the pipe is readable, until
    /// the stream ends, a read fails or the sink is gone.
    pub(crate) async fn run(&self) -> Stopped {
        loop {
            // What was handed on is being handled past a bound: the
            // server's writes wait in the pipe meanwhile.
            super::held_off(&self.sink).await;
            if self.pipe.readable().await.is_err() {
                return Stopped::Failed;
            }
            let mut splitter = self.lock();
            let mut out = ToSink {
                sink: &self.sink,
                max: self.max,
                before: &*self.before,
            };
            loop {
                // (`try_read_buf` clears the pipe's readiness when it sees
                // `WouldBlock`, also when a caller took the bytes first.)
                match self.pipe.try_read_buf(splitter.buffer()) {
                    Ok(0) => return Stopped::Eof,
                    Ok(_) => {
                        self.before.before_messages();
                        if !splitter.split(&mut out) {
                            return Stopped::SinkGone;
                        }
                        if self.held_off() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => return Stopped::Failed,
                }
            }
        }
    }
}

impl StdoutReader {
    /// Whether the sink holds the reader off ([`FrameSink::is_held_off`]).
    fn held_off(&self) -> bool {
        self.sink.upgrade().is_some_and(|sink| sink.is_held_off())
    }
}

impl ReadNow for StdoutReader {
    fn read_now(&self) {
        if self.held_off() {
            // The reader task reads on once the sink takes more.
            return;
        }
        let Ok(mut splitter) = self.state.try_lock() else {
            // The task (or another caller) is reading: it hands out the answer.
            return;
        };
        let buf = splitter.buffer();
        let len = buf.len();
        let spare = buf.spare_capacity_mut();
        // SAFETY: `fd` belongs to `self.pipe`, open for as long as `self`;
        // the read writes at most `spare.len()` bytes into `spare`.
        let n = unsafe { libc::read(self.fd, spare.as_mut_ptr().cast(), spare.len()) };
        let Ok(n @ 1..) = usize::try_from(n) else {
            // Nothing yet, the end of the stream or an error: the task
            // sees the last two and reports them.
            return;
        };
        // SAFETY: the kernel initialized `n` bytes after `len`.
        unsafe { buf.set_len(len + n) };
        self.before.before_messages();
        let mut out = ToSink {
            sink: &self.sink,
            max: self.max,
            before: &*self.before,
        };
        splitter.split(&mut out);
    }
}

/// Hands the child's stdout messages to the sink, while it is alive.
struct ToSink<'a> {
    sink: &'a Weak<dyn FrameSink>,
    max: usize,
    before: &'a dyn BeforeMessage,
}

impl Lines for ToSink<'_> {
    fn line(&mut self, line: &[u8]) -> bool {
        let Some(sink) = self.sink.upgrade() else {
            return false;
        };
        self.before.message();
        sink.on_frame(line);
        true
    }

    fn oversized(&mut self, id: Option<u64>, size: usize) -> bool {
        let Some(sink) = self.sink.upgrade() else {
            return false;
        };
        sink.on_oversized(id, size, self.max);
        true
    }
}
