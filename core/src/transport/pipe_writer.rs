//! [`PipeWriter`]: writes messages to a non-blocking pipe with as few hops as
//! possible.
//!
//! A message sent while nothing is queued is written at once, on the
//! caller's thread, with one `write(2)`: no task switch on the latency path.
//! Whatever the pipe does not take right away (it is full, or a write is
//! already under way) is queued and flushed by a background task in large
//! batches, so many calls in flight become few system calls.
//!
//! The queue is bounded: a server that stops reading its stdin while it
//! keeps us busy (a flood of pings, each answered) would otherwise grow it
//! without end. Past the bound, [`PipeWriter::send`] refuses the message and
//! the writer closes; the transport then ends the connection.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::Notify;

/// The sending side of a child's stdin. Shared by the transport (callers)
/// and its flusher task; the flusher owns the pipe and closes it.
pub(crate) struct PipeWriter {
    state: Mutex<State>,
    wake: Notify,
    fd: RawFd,
    /// Most bytes queued at once (one message is always taken when the
    /// queue is empty, however large).
    limit: usize,
}

#[derive(Default)]
struct State {
    /// Bytes waiting for the flusher, in order.
    queue: Vec<u8>,
    /// The flusher owns the pipe: callers must queue, not write.
    flushing: bool,
    /// No more writes: the pipe is closed or closing.
    closed: bool,
}

/// Why a message could not be sent.
#[derive(Debug)]
pub(crate) enum Closed {
    /// The pipe is closed (the child is gone or we are closing it).
    Gone,
    /// The child does not read its input: `queued` bytes wait already, and
    /// the message would pass the limit. The writer is closed from now on.
    Full {
        /// Bytes waiting in the queue.
        queued: usize,
        /// The limit they would pass.
        limit: usize,
    },
}

impl PipeWriter {
    /// Takes ownership of `stdin` and starts its flusher on the current
    /// runtime. At most `limit` bytes wait in the queue.
    pub(crate) fn start(stdin: ChildStdin, limit: usize) -> Arc<PipeWriter> {
        let writer = Arc::new(PipeWriter {
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            fd: stdin.as_raw_fd(),
            limit,
        });
        tokio::spawn(flush(writer.clone(), stdin));
        writer
    }

    /// Writes or queues one message. Never blocks on the pipe.
    pub(crate) fn send(&self, message: &[u8]) -> Result<(), Closed> {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return Err(Closed::Gone);
        }
        if state.flushing || !state.queue.is_empty() {
            let queued = state.queue.len();
            if queued > 0 && queued.saturating_add(message.len()) > self.limit {
                // Stop here: nothing more is queued, what is queued is dropped.
                state.closed = true;
                state.queue = Vec::new();
                drop(state);
                self.wake.notify_one();
                return Err(Closed::Full {
                    queued,
                    limit: self.limit,
                });
            }
            state.queue.extend_from_slice(message);
            return Ok(());
        }
        // SAFETY: `fd` stays open while `closed` is false: the flusher sets
        // `closed` under this lock before it drops the pipe.
        let written = unsafe { libc::write(self.fd, message.as_ptr().cast(), message.len()) };
        let done = match usize::try_from(written) {
            Ok(n) => n,
            Err(_) => match std::io::Error::last_os_error().kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => 0,
                // The child is gone; the stdout reader reports why.
                _ => {
                    state.closed = true;
                    drop(state);
                    self.wake.notify_one();
                    return Err(Closed::Gone);
                }
            },
        };
        if done < message.len() {
            state.queue.extend_from_slice(&message[done..]);
            state.flushing = true;
            drop(state);
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Stops taking messages; the flusher writes what is queued, then closes
    /// the pipe (the child sees end of input).
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.wake.notify_one();
    }
}

/// Owns the pipe: writes queued bytes in batches until closed.
async fn flush(writer: Arc<PipeWriter>, mut stdin: ChildStdin) {
    let mut batch = Vec::new();
    loop {
        {
            let mut state = writer.state.lock().unwrap();
            if state.queue.is_empty() {
                state.flushing = false;
                if state.closed {
                    break;
                }
            } else {
                state.flushing = true;
                std::mem::swap(&mut batch, &mut state.queue);
            }
        }
        if batch.is_empty() {
            writer.wake.notified().await;
            continue;
        }
        if stdin.write_all(&batch).await.is_err() {
            writer.state.lock().unwrap().closed = true;
            break;
        }
        batch.clear();
        if batch.capacity() > 1 << 20 {
            batch = Vec::new();
        }
    }
    // `closed` is set: no caller writes to `fd` any more, so it may close.
    drop(stdin);
}
