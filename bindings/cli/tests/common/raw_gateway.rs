//! `mcpmux gateway` on stdio driven with raw JSON-RPC lines, for what a
//! client library hides (exact ids, floods, never answering, never
//! reading).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde_json::{json, Value};

use super::{mcpmux_bin, Sandbox};

/// How long one expected message may take: only catches hangs.
pub const HANG: Duration = Duration::from_secs(60);

/// A running `mcpmux gateway` (killed on drop) and its stdout, line by
/// line, read on a thread of its own.
pub struct Raw {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Our ends of the gateway's stdin and stdout pipes.
    stdin_fd: RawFd,
    stdout_fd: RawFd,
    next_id: u64,
    /// Messages read while waiting for something else.
    pub seen: Vec<Value>,
    /// The gateway's answer to our `initialize`.
    initialized: Value,
    /// Set to make a slow reader ([`Raw::start_slow`]) read at full speed.
    fast: Arc<AtomicBool>,
}

/// How the thread that reads the gateway's stdout reads it.
enum Reading {
    /// As fast as it can, every line queued for the test.
    Buffered,
    /// A line only once the test took the previous one.
    Unbuffered,
    /// [`SLOW_CHUNK`] bytes per [`SLOW_PAUSE`] until told to read fast.
    Slow,
}

/// What a slow client ([`Raw::start_slow`]) reads at once...
pub const SLOW_CHUNK: usize = 4096;
/// ...and how long it waits before it reads again.
pub const SLOW_PAUSE: Duration = Duration::from_millis(100);

impl Raw {
    /// Starts `mcpmux --config <sandbox>/mcpmux.toml gateway ARGS` and
    /// initializes it as a client without capabilities.
    pub fn start(sb: &Sandbox, args: &[&str]) -> Raw {
        Raw::start_with(sb, args, json!({}))
    }

    /// Like [`Raw::start`], declaring `capabilities` in `initialize`.
    pub fn start_with(sb: &Sandbox, args: &[&str], capabilities: Value) -> Raw {
        Raw::spawn(sb, args, &[], capabilities, Reading::Buffered)
    }

    /// Like [`Raw::start`], but the gateway's stdout is read only while the
    /// test waits for a message: between two waits, the test is a client
    /// that does not read (one line at most is held on our side).
    pub fn start_unbuffered(sb: &Sandbox, args: &[&str]) -> Raw {
        Raw::spawn(sb, args, &[], json!({}), Reading::Unbuffered)
    }

    /// Like [`Raw::start`], with `envs` set for the gateway, and its stdout
    /// read slowly: [`SLOW_CHUNK`] bytes every [`SLOW_PAUSE`], whatever the
    /// test waits for, until [`Raw::read_fast`].
    pub fn start_slow(sb: &Sandbox, args: &[&str], envs: &[(&str, &str)]) -> Raw {
        Raw::spawn(sb, args, envs, json!({}), Reading::Slow)
    }

    /// From now on a slow client ([`Raw::start_slow`]) reads at full speed.
    pub fn read_fast(&self) {
        self.fast.store(true, Ordering::Relaxed);
    }

    fn spawn(
        sb: &Sandbox,
        args: &[&str],
        envs: &[(&str, &str)],
        capabilities: Value,
        reading: Reading,
    ) -> Raw {
        let mut child = Command::new(mcpmux_bin())
            .arg("--config")
            .arg(sb.path().join("mcpmux.toml"))
            .arg("gateway")
            .args(args)
            // The sandbox's own per-user stores, as `Sandbox::mcpmux` has
            // them: the gateway pins tool definitions there.
            .env("XDG_STATE_HOME", super::state_home())
            .env("XDG_CONFIG_HOME", sb.path().join(".xdg-config"))
            .envs(envs.iter().copied())
            .current_dir(sb.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (stdin_fd, stdout_fd) = (stdin.as_raw_fd(), stdout.as_raw_fd());
        let fast = Arc::new(AtomicBool::new(false));
        let lines = match reading {
            Reading::Unbuffered => {
                // A line is read only once the previous one was taken (and
                // the BufReader's own buffer is kept small).
                let (tx, lines) = mpsc::sync_channel(0);
                std::thread::spawn(move || {
                    let reader = BufReader::with_capacity(512, stdout);
                    for line in reader.lines().map_while(Result::ok) {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                });
                lines
            }
            Reading::Buffered => {
                let (tx, lines) = mpsc::channel();
                std::thread::spawn(move || {
                    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                });
                lines
            }
            Reading::Slow => {
                let (tx, lines) = mpsc::channel();
                let fast = fast.clone();
                std::thread::spawn(move || read_slowly(stdout, &fast, &tx));
                lines
            }
        };
        let mut raw = Raw {
            child,
            stdin: Some(stdin),
            lines,
            stdin_fd,
            stdout_fd,
            next_id: 0,
            seen: Vec::new(),
            initialized: Value::Null,
            fast,
        };
        raw.initialized = raw.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "0"}}),
        );
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    /// The gateway's answer to the `initialize` [`Raw::start`] sent.
    pub fn initialize_answer(&self) -> &Value {
        &self.initialized
    }

    /// The gateway's stdin (until [`Raw::close_stdin`]).
    pub fn stdin(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().expect("stdin was closed")
    }

    /// Closes the gateway's stdin: the client leaves.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits up to `limit` for the gateway to exit; its status.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes `data` to the gateway's stdin on a thread of its own (which
    /// may block while the gateway does not read); [`Raw::join_writer`]
    /// gives stdin back.
    pub fn write_in_background(&mut self, data: Vec<u8>) -> std::thread::JoinHandle<ChildStdin> {
        let mut stdin = self.stdin.take().expect("stdin was closed");
        std::thread::spawn(move || {
            stdin.write_all(&data).unwrap();
            stdin.flush().unwrap();
            stdin
        })
    }

    /// Waits for a [`Raw::write_in_background`] writer and takes stdin back.
    pub fn join_writer(&mut self, writer: std::thread::JoinHandle<ChildStdin>) {
        self.stdin = Some(writer.join().expect("the writer thread panicked"));
    }

    /// Whether the pipe into the gateway is full: it stopped reading.
    pub fn stdin_pipe_full(&self) -> bool {
        pipe_fill(self.stdin_fd).is_some_and(|(queued, size)| queued + 4096 >= size)
    }

    /// Whether the pipe out of the gateway is full but for less than one
    /// message: it cannot write. Only for answers larger than a page: the
    /// kernel packs small lines into pages and leaves each page's tail
    /// unused, so a pipe full of small lines holds KiBs less than its size
    /// (see [`Raw::stalled`]).
    pub fn stdout_pipe_full(&self) -> bool {
        pipe_fill(self.stdout_fd).is_some_and(|(queued, size)| queued + 4096 >= size)
    }

    /// Whether the gateway has stopped both reading from us and writing to
    /// us: the pipe into it is full, the pipe out of it holds more than
    /// half its size, and neither changed over a quarter of a second. The
    /// bytes queued in both pipes, for a failure message.
    pub fn stalled(&self) -> (bool, String) {
        let before = (pipe_fill(self.stdin_fd), pipe_fill(self.stdout_fd));
        std::thread::sleep(Duration::from_millis(250));
        let after = (pipe_fill(self.stdin_fd), pipe_fill(self.stdout_fd));
        let half_full = after.1.is_some_and(|(queued, size)| 2 * queued > size);
        let stalled = before == after && self.stdin_pipe_full() && half_full;
        (
            stalled,
            format!(
                "(bytes queued, pipe size): in {:?}, out {:?}",
                after.0, after.1
            ),
        )
    }

    /// Writes one message as a line.
    pub fn send(&mut self, msg: Value) {
        writeln!(self.stdin(), "{msg}").unwrap();
    }

    /// The next message from the gateway, in order; `None` after `limit`.
    pub fn next_message(&mut self, limit: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(limit).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
    }

    /// The next message `pick` accepts (others are skipped), within 20 s
    /// and with no more than 5 s of silence; panics naming `what` else.
    pub fn next_such(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            match self.next_message(Duration::from_secs(5)) {
                Some(msg) if pick(&msg) => return msg,
                Some(_) => {}
                None => break,
            }
        }
        panic!("no {what} came");
    }

    /// Sends a request and returns its answer (notifications are skipped).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self
                .next_message(HANG)
                .unwrap_or_else(|| panic!("no answer to {method} within {HANG:?}"));
            if msg["id"] == id && msg.get("method").is_none() {
                return msg;
            }
            self.seen.push(msg);
        }
    }

    /// The first notification `method` (already seen, or the next one).
    pub fn notification(&mut self, method: &str) -> Value {
        if let Some(i) = self.seen.iter().position(|m| m["method"] == method) {
            return self.seen.remove(i);
        }
        loop {
            let msg = self
                .next_message(HANG)
                .unwrap_or_else(|| panic!("no {method} within {HANG:?}"));
            if msg["method"] == method {
                return msg;
            }
            self.seen.push(msg);
        }
    }

    /// The gateway's peak resident memory so far (`VmHWM`), in MiB.
    pub fn peak_rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read the gateway's /proc status");
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc status");
        kib / 1024
    }
}

/// Reads `stdout` [`SLOW_CHUNK`] bytes per [`SLOW_PAUSE`] (all it can once
/// `fast` is set), sending each line on `tx` once it is whole.
fn read_slowly(mut stdout: ChildStdout, fast: &AtomicBool, tx: &mpsc::Sender<String>) {
    let mut line = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let fast_now = fast.load(Ordering::Relaxed);
        let want = if fast_now { chunk.len() } else { SLOW_CHUNK };
        let n = match stdout.read(&mut chunk[..want]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for piece in chunk[..n].split_inclusive(|b| *b == b'\n') {
            line.extend_from_slice(piece);
            if line.last() == Some(&b'\n') {
                line.pop();
                let text = String::from_utf8_lossy(&line).into_owned();
                line.clear();
                if tx.send(text).is_err() {
                    return;
                }
            }
        }
        if !fast_now {
            std::thread::sleep(SLOW_PAUSE);
        }
    }
}

/// The bytes queued in the pipe behind `fd` and the pipe's size; `None`
/// once the pipe is closed.
fn pipe_fill(fd: RawFd) -> Option<(usize, usize)> {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through a valid pointer; fd is a
    // pipe end this Raw keeps open (or has just closed: then -1).
    let read = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut queued) };
    // SAFETY: F_GETPIPE_SZ takes no pointer.
    let size = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    (read == 0 && size > 0).then(|| (queued.max(0) as usize, size as usize))
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
