//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! The child runs in its own process group so that closing it reaches every
//! process it started. Four tasks serve one child: a flusher for what stdin
//! could not take at once (`PipeWriter`), a reader (splits stdout into
//! messages under the size cap, `StdoutReader`; a blocking caller waiting
//! for an answer reads it too), a stderr reader (bounded ring + `tracing`),
//! and a reaper (waits for the exit status). None of them keeps the
//! connection's owner alive.

use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::process::Command;
use tokio::sync::watch;

use super::pipe_writer::{Closed, PipeWriter};
use super::stderr_reader::StderrReader;
use super::stdout_reader::{StdoutReader, Stopped};
use super::{FrameSink, Transport};
use crate::config::StdioConfig;
use crate::error::Error;

/// How long `close` waits after closing stdin, and again after SIGTERM.
const GRACE: Duration = Duration::from_secs(2);
/// The least room for what waits to be written to the child's stdin.
const MIN_QUEUE_BYTES: usize = 1024 * 1024;

/// How many bytes may wait to be written to a child's stdin: twice the
/// largest message, so a few large calls in a row fit, but a server that
/// never reads cannot make us buffer without end.
pub(crate) fn stdin_queue_limit(max_message_bytes: usize) -> usize {
    max_message_bytes.saturating_mul(2).max(MIN_QUEUE_BYTES)
}

/// A running stdio server process. Owned by its [`Peer`](crate::jsonrpc::Peer).
///
/// Dropping it without [`close`](Transport::close) kills the process group
/// at once (SIGKILL); the exit status is still reaped in the background.
pub struct StdioTransport {
    label: String,
    stdin: Arc<PipeWriter>,
    /// Offered to a blocking caller after it sent a request, to read the
    /// answer itself while it waits (see `stdout_reader`).
    stdout: Arc<StdoutReader>,
    /// Why we ended the connection ourselves, when we did (the stdout
    /// reader reports it instead of a plain end of stream).
    aborted: Arc<Mutex<Option<String>>>,
    pgid: libc::pid_t,
    /// The child's stderr: its last lines for a status display.
    stderr: Arc<StderrReader>,
    exit: watch::Receiver<Option<ExitStatus>>,
    closing: Arc<AtomicBool>,
    finished: AtomicBool,
}

impl StdioTransport {
    /// Starts `config.command` and its tasks on the current tokio runtime.
    ///
    /// `label` names the server in errors and logs; messages larger than
    /// `max_message_bytes` are discarded and reported to `sink`.
    pub fn spawn(
        label: &str,
        config: &StdioConfig,
        max_message_bytes: usize,
        sink: Weak<dyn FrameSink>,
    ) -> Result<Arc<StdioTransport>, Error> {
        let mut cmd = Command::new(&config.command);
        cmd.args(&config.args)
            .envs(&config.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        if let Some(cwd) = &config.cwd {
            cmd.current_dir(cwd);
        }
        // SAFETY: setsid and prctl are async-signal-safe and touch no memory
        // of the parent.
        unsafe {
            cmd.pre_exec(|| {
                // A session of its own, as the official SDKs start servers:
                // its own process group (signalled as one on close), no
                // controlling terminal, and, where the kernel groups
                // sessions for scheduling (autogroup), a share of the CPU
                // of its own rather than one taken from the host's.
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // If the host dies without closing us, the server dies too.
                #[cfg(target_os = "linux")]
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| {
            let what = match e.kind() {
                std::io::ErrorKind::NotFound => "command not found".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                _ => e.to_string(),
            };
            let cwd = match &config.cwd {
                Some(dir) if e.kind() == std::io::ErrorKind::NotFound => {
                    format!(" (or working directory '{}' missing)", dir.display())
                }
                _ => String::new(),
            };
            Error::ConnectFailed(format!(
                "{label}: cannot start '{}': {what}{cwd}",
                config.command
            ))
        })?;
        let pgid = child.id().unwrap_or(0) as libc::pid_t;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let (exit_tx, exit_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            let _ = exit_tx.send(status);
        });

        let stderr = match stderr
            .into_owned_fd()
            .and_then(|fd| StderrReader::new(fd, label))
        {
            Ok(reader) => reader,
            Err(e) => {
                if pgid > 0 {
                    // SAFETY: plain syscall on the process group we created.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                }
                return Err(Error::ConnectFailed(format!(
                    "{label}: cannot read stderr: {e}"
                )));
            }
        };
        let (stderr_done_tx, stderr_done_rx) = watch::channel(false);
        tokio::spawn(stderr.clone().run(stderr_done_tx));

        let stdin = PipeWriter::start(stdin, stdin_queue_limit(max_message_bytes));

        let closing = Arc::new(AtomicBool::new(false));
        let aborted = Arc::new(Mutex::new(None));
        let ending = Ending {
            label: label.to_owned(),
            aborted: aborted.clone(),
            exit: exit_rx.clone(),
            stderr_done: stderr_done_rx,
            stderr: stderr.clone(),
            closing: closing.clone(),
        };
        let stdout = match stdout
            .into_owned_fd()
            .and_then(|fd| StdoutReader::new(fd, max_message_bytes, sink.clone(), stderr.clone()))
        {
            Ok(reader) => reader,
            Err(e) => {
                // Nothing will own the child: end it here.
                stdin.close();
                if pgid > 0 {
                    // SAFETY: plain syscall on the process group we created.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                }
                return Err(Error::ConnectFailed(format!(
                    "{label}: cannot read stdout: {e}"
                )));
            }
        };
        tokio::spawn(read_stdout(stdout.clone(), sink, ending));

        Ok(Arc::new(StdioTransport {
            label: label.to_owned(),
            stdin,
            stdout,
            aborted,
            pgid,
            stderr,
            exit: exit_rx,
            closing,
            finished: AtomicBool::new(false),
        }))
    }

    fn group_alive(&self) -> bool {
        // SAFETY: kill with signal 0 only checks for existence.
        let exists = self.pgid > 0 && unsafe { libc::kill(-self.pgid, 0) } == 0;
        // Zombies count for kill(); where init is slow to reap orphans they
        // would make a finished group look alive, so look closer on Linux.
        exists && (!cfg!(target_os = "linux") || group_has_live_member(self.pgid))
    }

    fn signal_group(&self, signal: libc::c_int) {
        if self.pgid > 0 {
            // SAFETY: plain syscall on a process group we created.
            unsafe { libc::kill(-self.pgid, signal) };
        }
    }

    /// Waits until the leader has exited and the group is empty, up to `limit`.
    async fn wait_gone(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let mut exit = self.exit.clone();
        let _ = tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await;
        while self.group_alive() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let done = exit.borrow().is_some();
        done
    }
}

impl Transport for StdioTransport {
    fn send(&self, message: Vec<u8>) -> Result<(), Error> {
        match self.stdin.send(&message) {
            Ok(()) => {
                crate::runtime::offer_reader(|| {
                    Arc::downgrade(&self.stdout) as std::sync::Weak<dyn crate::runtime::ReadNow>
                });
                Ok(())
            }
            Err(Closed::Gone) => {
                let why = self.aborted.lock().unwrap().clone();
                let why = why.unwrap_or_else(|| "connection closed".into());
                Err(Error::TransportClosed(format!("{}: {why}", self.label)))
            }
            Err(Closed::Full { queued, limit }) => {
                let why = format!(
                    "server does not read its stdin: {queued} bytes wait to be written \
                     (limit {limit} bytes, 2 × max_message_bytes); connection ended"
                );
                tracing::warn!(server = %self.label, "{why}");
                self.aborted.lock().unwrap().get_or_insert(why.clone());
                // The stdout reader sees the end and fails the connection
                // with the reason above.
                self.signal_group(libc::SIGKILL);
                Err(Error::TransportClosed(format!("{}: {why}", self.label)))
            }
        }
    }

    fn can_read_now(&self) -> bool {
        true
    }

    fn reports_its_end(&self) -> bool {
        true
    }

    fn recent_stderr(&self, lines: usize) -> Vec<String> {
        self.stderr.last_lines(lines)
    }

    fn read_now(&self) {
        crate::runtime::ReadNow::read_now(&*self.stdout);
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.closing.store(true, Ordering::SeqCst);
            self.stdin.close();
            if !self.wait_gone(GRACE).await {
                tracing::debug!(server = %self.label, "still running after stdin closed; SIGTERM");
                self.signal_group(libc::SIGTERM);
                if !self.wait_gone(GRACE).await {
                    tracing::warn!(server = %self.label, "still running after SIGTERM; SIGKILL");
                    self.signal_group(libc::SIGKILL);
                    self.wait_gone(GRACE).await;
                }
            }
            self.finished.store(true, Ordering::SeqCst);
        })
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if !self.finished.load(Ordering::SeqCst) {
            self.closing.store(true, Ordering::SeqCst);
            self.stdin.close();
            self.signal_group(libc::SIGKILL);
        }
    }
}

/// Whether a process of group `pgid` is alive and not a zombie (Linux /proc).
fn group_has_live_member(pgid: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // Fields after the parenthesized command: state ppid pgrp ...
        let mut fields = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|p| p.parse::<libc::pid_t>().ok());
        pgrp == Some(pgid) && state != Some("Z") && state != Some("X")
    })
}

/// Everything the stdout reader needs to explain why the connection ended.
struct Ending {
    label: String,
    aborted: Arc<Mutex<Option<String>>>,
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr_done: watch::Receiver<bool>,
    stderr: Arc<StderrReader>,
    closing: Arc<AtomicBool>,
}

impl Ending {
    async fn error(mut self, cause: &str) -> Error {
        if let Some(why) = self.aborted.lock().unwrap().clone() {
            return Error::TransportClosed(format!("{}: {why}", self.label));
        }
        if self.closing.load(Ordering::SeqCst) {
            return Error::TransportClosed(format!("{}: connection closed", self.label));
        }
        // Give the process a moment to exit and its stderr to drain, so the
        // error can say why it went away.
        let limit = Duration::from_millis(500);
        let _ = tokio::time::timeout(limit, self.exit.wait_for(Option::is_some)).await;
        let _ = tokio::time::timeout(
            Duration::from_millis(200),
            self.stderr_done.wait_for(|d| *d),
        )
        .await;
        let status = match *self.exit.borrow() {
            Some(status) => format!("server process exited ({status})"),
            None => format!("server {cause}"),
        };
        let stderr = self.stderr.since_last_message();
        let stderr = if stderr.is_empty() {
            String::new()
        } else {
            format!("; stderr: {stderr}")
        };
        Error::TransportClosed(format!("{}: {status}{stderr}", self.label))
    }
}

/// Runs the stdout reader until it stops, then reports why the stream ended.
async fn read_stdout(reader: Arc<StdoutReader>, sink: Weak<dyn FrameSink>, ending: Ending) {
    let cause = match reader.run().await {
        Stopped::Eof => "closed its stdout",
        Stopped::Failed => "stdout failed",
        Stopped::SinkGone => return,
    };
    let error = ending.error(cause).await;
    if let Some(sink) = sink.upgrade() {
        sink.on_closed(error);
    }
}
