//! `mcpmux-bench-floor`: the raw-pipe floors of sequential latency, as a
//! process that the Python and Node benchmarks drive block by block, so
//! that they interleave the floor with their own calls (the Rust stdio
//! bench measures the same loops in-process, `core/benches/stdio`).
//!
//! ```text
//! mcpmux-bench-floor SERVER [ARGS...]
//! ```
//!
//! spawns SERVER, does the `initialize` handshake by hand (ended by a
//! `ping`, so that whatever the server says unprompted is read), then reads
//! commands on stdin, one per line, and answers each with one line:
//!
//! - `blocking SECONDS` — one request line written, one response line read
//!   (a blocking `read`) per call, for about SECONDS;
//! - `spin SECONDS` — the same, but the pipe is non-blocking and the
//!   client busy-polls it (`read` until it returns data) instead of
//!   sleeping: what a call costs when no thread ever has to be woken.
//!
//! The answer: `<calls> <nanoseconds>` (the wall time of the block). It
//! exits when stdin closes. Linux only (the non-blocking flag is set with
//! `fcntl`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const ECHO_TEXT: &str = "hello from the mcpmux benchmark";

extern "C" {
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
}
const F_GETFL: i32 = 3;
const F_SETFL: i32 = 4;
const O_NONBLOCK: i32 = 0o4000;

struct Pipe {
    stdin: ChildStdin,
    stdout: ChildStdout,
    buf: Vec<u8>,
    /// Bytes of `buf` not yet consumed start here.
    start: usize,
    next_id: u64,
}

impl Pipe {
    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        let fd = self.stdout.as_raw_fd();
        // SAFETY: F_GETFL/F_SETFL on a file descriptor this process owns.
        unsafe {
            let flags = fcntl(fd, F_GETFL);
            if flags < 0 {
                return Err(io::Error::last_os_error());
            }
            let flags = if on {
                flags | O_NONBLOCK
            } else {
                flags & !O_NONBLOCK
            };
            if fcntl(fd, F_SETFL, flags) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Reads one line (spinning on `WouldBlock` when the pipe is
    /// non-blocking); returns its bytes.
    fn read_line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(pos) = self.buf[self.start..].iter().position(|&b| b == b'\n') {
                let line = self.buf[self.start..self.start + pos].to_vec();
                self.start += pos + 1;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                }
                return Ok(line);
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stdout.read(&mut chunk) {
                Ok(0) => return Err(io::Error::other("the server closed its stdout")),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Sequential echo calls for about `seconds`: `(calls, wall time)`.
    fn calls(&mut self, seconds: f64) -> io::Result<(u64, Duration)> {
        let block = Duration::from_secs_f64(seconds);
        let mut out = Vec::with_capacity(512);
        let mut calls = 0;
        let start = Instant::now();
        let mut last;
        loop {
            let id = self.next_id;
            self.next_id += 1;
            out.clear();
            let _ = writeln!(
                out,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}},"_meta":{{"progressToken":{id}}}}}}}"#
            );
            self.stdin.write_all(&out)?;
            last = self.read_line()?;
            calls += 1;
            if calls % 16 == 0 && start.elapsed() >= block {
                break;
            }
        }
        let elapsed = start.elapsed();
        if !String::from_utf8_lossy(&last).contains(ECHO_TEXT) {
            return Err(io::Error::other(format!(
                "unexpected echo answer: {}",
                String::from_utf8_lossy(&last)
            )));
        }
        Ok((calls, elapsed))
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("mcpmux-bench-floor: {e}");
        std::process::exit(1);
    }
}

fn run() -> io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let program = args
        .next()
        .ok_or_else(|| io::Error::other("usage: mcpmux-bench-floor SERVER [ARGS...]"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut pipe = Pipe {
        stdin: child.stdin.take().expect("piped"),
        stdout: child.stdout.take().expect("piped"),
        buf: Vec::with_capacity(64 * 1024),
        start: 0,
        next_id: 2,
    };
    pipe.stdin.write_all(
        b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw-pipe\",\"version\":\"0\"}}}\n",
    )?;
    let line = pipe.read_line()?;
    if !String::from_utf8_lossy(&line).contains("\"result\"") {
        return Err(io::Error::other("unexpected answer to initialize"));
    }
    pipe.stdin.write_all(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
    )?;
    loop {
        let line = String::from_utf8_lossy(&pipe.read_line()?).into_owned();
        if line.contains("\"id\":1") && line.contains("\"result\"") {
            break;
        }
    }
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    for command in BufReader::new(stdin.lock()).lines() {
        let command = command?;
        let mut words = command.split_whitespace();
        let (mode, seconds) = (
            words.next(),
            words.next().and_then(|s| s.parse::<f64>().ok()),
        );
        let (spin, seconds) = match (mode, seconds) {
            (Some("blocking"), Some(s)) => (false, s),
            (Some("spin"), Some(s)) => (true, s),
            (None, _) => continue,
            _ => return Err(io::Error::other(format!("unknown command: {command}"))),
        };
        pipe.set_nonblocking(spin)?;
        let result = pipe.calls(seconds);
        pipe.set_nonblocking(false)?;
        let (calls, elapsed) = result?;
        writeln!(out, "{calls} {}", elapsed.as_nanos())?;
        out.flush()?;
    }
    drop(pipe);
    child.wait()?;
    Ok(())
}
