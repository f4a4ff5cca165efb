//! What every figure of the stdio benchmark shares: the run's setup, the
//! runtime, the demo server and its config entries, the raw-pipe reference
//! server, latency statistics, and CPU and memory readings.

use std::error::Error as StdError;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use mcpmux_core::{Config, Hub};
use serde_json::Value;

pub(crate) type BoxError = Box<dyn StdError + Send + Sync>;

pub(crate) type Res<T> = Result<T, BoxError>;

/// Text echoed by every call.
pub(crate) const ECHO_TEXT: &str = "hello from the mcpmux benchmark";

/// Interleaved rounds of the latency and throughput figures: each round
/// measures the reference(s) and mcpmux back to back in short blocks, in
/// rotating order, so that a machine whose speed moves affects both alike;
/// the report shows the median of the per-round ratios and their range.
/// `MCPMUX_BENCH_ROUNDS` overrides (default 10, quick 3).
pub(crate) fn rounds(quick: bool) -> usize {
    std::env::var("MCPMUX_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(if quick { 3 } else { 10 })
}

/// The length of one side's block in a round: about 1 s (quick 0.25 s).
pub(crate) fn block(quick: bool) -> Duration {
    Duration::from_millis(if quick { 250 } else { 1000 })
}

/// The label of the server in the report's rows (`$MCPMUX_BENCH_LABEL`,
/// else the server's file name).
pub(crate) fn server_label(server: &Path) -> String {
    std::env::var("MCPMUX_BENCH_LABEL").unwrap_or_else(|_| {
        server
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    })
}

/// Calls of a side that fill about one block, from a rate in calls/s.
pub(crate) fn calls_per_block(rate: f64, block: Duration) -> usize {
    ((rate * block.as_secs_f64()) as usize).max(64)
}

/// What this run measures and how.
pub(crate) struct Setup {
    pub(crate) demo: PathBuf,
    pub(crate) quick: bool,
    pub(crate) runtime: String,
    pub(crate) only: Option<Vec<String>>,
}

impl Setup {
    pub(crate) fn scale(&self, n: usize) -> usize {
        if self.quick {
            n / 10
        } else {
            n
        }
    }

    pub(crate) fn rounds(&self) -> usize {
        rounds(self.quick)
    }

    pub(crate) fn block(&self) -> Duration {
        block(self.quick)
    }

    pub(crate) fn wants(&self, section: &str) -> bool {
        match &self.only {
            Some(only) => only.iter().any(|s| s == section),
            None => true,
        }
    }

    pub(crate) fn demo_config(&self, names: impl IntoIterator<Item = String>) -> Res<Config> {
        let mut toml = String::new();
        for name in names {
            server_entry(&mut toml, &name, &self.demo, &[], &[]);
        }
        Ok(Config::parse(&toml)?)
    }
}

pub(crate) fn build_runtime(kind: &str) -> Res<(tokio::runtime::Runtime, String)> {
    let (mut builder, label) = match kind {
        "current" => (
            tokio::runtime::Builder::new_current_thread(),
            "current-thread".to_owned(),
        ),
        "multi" => (
            tokio::runtime::Builder::new_multi_thread(),
            "multi-thread (default workers)".to_owned(),
        ),
        other => {
            let n: usize = other
                .strip_prefix("multi:")
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    format!("MCPMUX_BENCH_RUNTIME={other:?}: expected multi, multi:N or current")
                })?;
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            (b, format!("multi-thread ({n} workers)"))
        }
    };
    Ok((builder.enable_all().build()?, label))
}

/// Finds the demo server, building it when it is missing.
pub(crate) fn demo_server(workspace: &Path) -> Res<PathBuf> {
    if let Some(path) = std::env::var_os("MCPMUX_DEMO_SERVER") {
        let path = PathBuf::from(path);
        if !path.exists() {
            return Err(format!("MCPMUX_DEMO_SERVER={} does not exist", path.display()).into());
        }
        return Ok(path);
    }
    let path = workspace.join("target/release/mcpmux-demo-server");
    if !path.exists() {
        eprintln!("[stdio bench] building the demo server (cargo build --release -p mcpmux-demo-server) ...");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "-p", "mcpmux-demo-server"])
            .current_dir(workspace)
            .status()?;
        if !status.success() || !path.exists() {
            return Err(format!("building the demo server failed ({status})").into());
        }
    }
    Ok(path)
}

/// Appends one `[[mcp.servers]]` stdio entry.
pub(crate) fn server_entry(
    toml: &mut String,
    name: &str,
    command: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) {
    // A JSON string is a valid TOML basic string.
    let s = |v: &str| serde_json::to_string(v).expect("strings serialize");
    let args: Vec<String> = args.iter().map(|a| s(a)).collect();
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {}", s(v))).collect();
    let _ = writeln!(
        toml,
        "[[mcp.servers]]\nname = {}\ntype = \"stdio\"\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n",
        s(name),
        s(&command.to_string_lossy()),
        args.join(", "),
        env.join(", "),
    );
}

pub(crate) fn ensure_connected(hub: &Hub) -> Res<()> {
    for s in hub.servers() {
        if s.state != "connected" {
            return Err(format!(
                "server '{}' is {}: {}",
                s.name,
                s.state,
                s.error.unwrap_or_default()
            )
            .into());
        }
    }
    Ok(())
}

pub(crate) fn echo_args() -> Value {
    serde_json::json!({ "text": ECHO_TEXT })
}

/// `calls` echo calls to `tool` through `hub` by `in_flight` tokio tasks
/// calling in a loop; the wall time. A tool error fails the run.
pub(crate) async fn pipelined_calls(
    hub: &Hub,
    tool: &'static str,
    calls: usize,
    in_flight: usize,
) -> Res<Duration> {
    pipelined_calls_with(hub, tool, &echo_args(), calls, in_flight).await
}

/// [`pipelined_calls`] with the tool's `args` (servers name the echoed
/// text differently).
pub(crate) async fn pipelined_calls_with(
    hub: &Hub,
    tool: &'static str,
    args: &Value,
    calls: usize,
    in_flight: usize,
) -> Res<Duration> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let next = Arc::new(AtomicUsize::new(0));
    let args = Arc::new(args.clone());
    let start = std::time::Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let (hub, next, args) = (hub.clone(), next.clone(), args.clone());
            tokio::spawn(async move {
                let opts = mcpmux_core::CallOptions::default();
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let result = hub.call_tool(tool, Some(&args), &opts).await?;
                    if result.is_error() {
                        return Err(format!("{tool}: {}", result.json()).into());
                    }
                }
                Ok::<_, BoxError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(start.elapsed())
}

/// Per-call latencies.
#[derive(Default)]
pub(crate) struct Latencies {
    pub(crate) samples: Vec<Duration>,
}

impl Latencies {
    pub(crate) fn sort(&mut self) {
        self.samples.sort_unstable();
    }

    pub(crate) fn mean_us(&self) -> f64 {
        let sum: Duration = self.samples.iter().sum();
        sum.as_secs_f64() * 1e6 / self.samples.len().max(1) as f64
    }

    /// Percentile `p` (nearest rank) of the sorted samples.
    pub(crate) fn pct_us(&self, p: f64) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.samples.len() as f64).ceil() as usize;
        self.samples[rank.clamp(1, self.samples.len()) - 1].as_secs_f64() * 1e6
    }
}

/// A server process driven by hand over its pipes.
pub(crate) struct RawServer {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: BufReader<ChildStdout>,
    pub(crate) next_id: u64,
}

impl RawServer {
    /// Spawns `program` and runs the `initialize` handshake.
    pub(crate) fn start(program: &Path) -> Res<RawServer> {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("piped"));
        let mut server = RawServer {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
        };
        server.send(
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-pipe","version":"0"}}}
"#,
        )?;
        let mut line = String::new();
        server.stdout.read_line(&mut line)?;
        if !line.contains(r#""result""#) {
            return Err(format!("raw handshake: unexpected initialize answer: {line}").into());
        }
        // A ping ends the handshake: whatever the server sends unprompted
        // after `initialized` (the demo server announces itself with a log
        // notification, the echo server says nothing) comes before its
        // answer, so the calls that follow read only their own answers.
        server.send(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
              {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
        )?;
        server.next_id = 2;
        loop {
            line.clear();
            if server.stdout.read_line(&mut line)? == 0 {
                return Err("raw handshake: the server closed its stdout".into());
            }
            let message: Value = serde_json::from_str(&line)?;
            match message.get("id") {
                None => continue, // a notification
                Some(id) if id == 1 && message.get("result").is_some() => break,
                Some(_) => {
                    return Err(format!("raw handshake: unexpected answer to ping: {line}").into())
                }
            }
        }
        Ok(server)
    }

    /// Makes the server's stdout non-blocking (`on`) or blocking again: the
    /// spinning floor busy-polls it.
    pub(crate) fn set_nonblocking(&self, on: bool) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let fd = self.stdout.get_ref().as_raw_fd();
        // SAFETY: F_GETFL/F_SETFL on a descriptor this process owns.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let flags = if on {
                flags | libc::O_NONBLOCK
            } else {
                flags & !libc::O_NONBLOCK
            };
            if libc::fcntl(fd, libc::F_SETFL, flags) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    pub(crate) fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stdin.as_mut().expect("stdin open").write_all(bytes)
    }

    /// Ids for the next `n` requests.
    pub(crate) fn take_ids(&mut self, n: usize) -> std::ops::Range<u64> {
        let first = self.next_id;
        self.next_id += n as u64;
        first..self.next_id
    }

    pub(crate) fn finish(mut self) -> Res<()> {
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if !status.success() {
            return Err(format!("raw server exited with {status}").into());
        }
        Ok(())
    }
}

/// Writes the `tools/call` line the engine would send for request `id`.
pub(crate) fn request_line(buf: &mut Vec<u8>, id: u64) {
    let _ = writeln!(
        buf,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}},"_meta":{{"progressToken":{id}}}}}}}"#
    );
}

/// Hands freed heap memory back to the OS (glibc only).
pub(crate) fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory malloc no longer uses.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// CPU time (user + system) used so far by all threads of this process.
pub(crate) fn cpu_time() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

pub(crate) fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU time (user + system) used by the children waited for so far.
pub(crate) fn children_cpu_time() -> Duration {
    rusage(libc::RUSAGE_CHILDREN)
}

/// Resident set size of this process.
pub(crate) fn rss_bytes() -> Res<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .ok_or("/proc/self/statm: no resident field")?
        .parse()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * page.max(1) as u64)
}
