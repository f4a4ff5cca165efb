//! [`PipeWriter`]: writes messages to a non-blocking pipe with as few hops as
//! possible.
//!
//! A message sent while nothing is queued is written at once, on the
//! caller's thread, with one `write(2)`: no task switch on the latency path.
//! The write happens outside the lock, so other callers are not held up by
//! the system call: they queue their messages, and the writing caller
//! writes those too when its own write is done (a few rounds at most; then
//! the flusher takes over). Whatever the pipe does not take right away (it
//! is full) is flushed by a background task in large batches. So many calls
//! in flight become few system calls.
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

/// Rounds of writing what other callers queued meanwhile that one caller
/// does before it leaves the rest to the flusher.
const WRITE_ROUNDS: usize = 4;

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
    /// A caller is writing outside the lock: others queue, the flusher
    /// waits, and the pipe stays open until it is done.
    writing: bool,
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
        if state.flushing || state.writing || !state.queue.is_empty() {
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
        state.writing = true;
        drop(state);
        let mut pending = Vec::new();
        let mut bytes = message;
        let mut round = 0;
        loop {
            round += 1;
            // SAFETY: `fd` stays open while `writing` is set: the flusher
            // drops the pipe only once `closed` is set and no caller writes.
            let written = unsafe { libc::write(self.fd, bytes.as_ptr().cast(), bytes.len()) };
            let done = match usize::try_from(written) {
                Ok(n) => n,
                Err(_) => match std::io::Error::last_os_error().kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => 0,
                    // The child is gone; the stdout reader reports why.
                    _ => {
                        let mut state = self.state.lock().unwrap();
                        state.writing = false;
                        state.closed = true;
                        drop(state);
                        self.wake.notify_one();
                        return Err(Closed::Gone);
                    }
                },
            };
            let mut state = self.state.lock().unwrap();
            if done < bytes.len() {
                // The pipe is full: the rest goes first, then what others
                // queued meanwhile, all by the flusher.
                state.queue.splice(0..0, bytes[done..].iter().copied());
                state.writing = false;
                state.flushing = true;
                drop(state);
                self.wake.notify_one();
                return Ok(());
            }
            if state.queue.is_empty() || state.closed {
                state.writing = false;
                let closed = state.closed;
                drop(state);
                if closed {
                    self.wake.notify_one();
                }
                return Ok(());
            }
            if round == WRITE_ROUNDS {
                // Enough for one caller: the flusher writes the rest.
                state.writing = false;
                state.flushing = true;
                drop(state);
                self.wake.notify_one();
                return Ok(());
            }
            // Others queued while this caller wrote: it writes theirs too.
            pending.clear();
            std::mem::swap(&mut pending, &mut state.queue);
            bytes = &pending;
        }
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
        let caller_writes = {
            let mut state = writer.state.lock().unwrap();
            if state.writing {
                // A caller writes; it hands over (or wakes us) when done.
                true
            } else if state.queue.is_empty() {
                state.flushing = false;
                if state.closed {
                    break;
                }
                false
            } else {
                state.flushing = true;
                std::mem::swap(&mut batch, &mut state.queue);
                false
            }
        };
        if caller_writes || batch.is_empty() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    const SENDERS: usize = 8;
    const MESSAGES: usize = 20_000;

    /// Many threads sending at once into a pipe that fills up (`cat` reads
    /// it only as fast as its output is read): every message arrives whole,
    /// once, and each sender's in the order it sent them. This checks the
    /// hand-over between a caller that writes, the callers that queue
    /// meanwhile, and the flusher.
    #[test]
    fn concurrent_senders_lose_nothing_and_keep_their_order() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut child = {
            let _enter = rt.enter();
            tokio::process::Command::new("cat")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("cat runs")
        };
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let writer = {
            let _enter = rt.enter();
            PipeWriter::start(stdin, 256 << 20)
        };
        let reader = rt.spawn(async move {
            let mut out = Vec::new();
            stdout.read_to_end(&mut out).await.unwrap();
            out
        });
        let pad = "x".repeat(150);
        std::thread::scope(|scope| {
            for sender in 0..SENDERS {
                let (writer, pad) = (writer.clone(), &pad);
                scope.spawn(move || {
                    for i in 0..MESSAGES {
                        let line = format!("{sender} {i} {pad}\n");
                        writer.send(line.as_bytes()).expect("the pipe takes it");
                    }
                });
            }
        });
        writer.close();
        let out = rt
            .block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(60), reader).await
            })
            .expect("cat's output ends once the pipe is closed")
            .unwrap();
        let mut next = [0usize; SENDERS];
        for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let line = std::str::from_utf8(line).unwrap();
            let mut parts = line.split(' ');
            let sender: usize = parts.next().unwrap().parse().unwrap();
            let i: usize = parts.next().unwrap().parse().unwrap();
            assert_eq!(parts.next(), Some(pad.as_str()), "a whole line: {line:.40}");
            assert_eq!(i, next[sender], "sender {sender}'s messages in order");
            next[sender] += 1;
        }
        assert_eq!(next, [MESSAGES; SENDERS], "every message arrived");
    }
}
