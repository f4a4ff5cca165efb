//! Helpers shared by the integration tests of every mcpmux crate (a
//! dev-dependency only, never published): where the real peers live, config
//! builders, process checks, network fixtures, and the event logs that tests
//! check instead of timings (no test measures time: see docs/testing.md).
//!
//! A suite's `tests/common/mod.rs` re-exports all of this
//! (`pub use mcpmux_test_support::*;`) and adds what only it needs.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

use mcpmux_core::{CallOptions, Config};

/// Points `XDG_STATE_HOME` (where the session key lives) at a directory
/// of the build, once per test binary, so session tests never touch the
/// real home. Call it before any session verb.
pub fn private_state() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var("XDG_STATE_HOME", target_dir().join("tmp/mcpmux-core-state"))
    });
}

/// The target directory of this build: three levels above the test
/// executable (`<target>/<profile>/deps/<test>`).
pub fn target_dir() -> PathBuf {
    artifact_dir()
        .parent()
        .expect("<target>/<profile>")
        .to_path_buf()
}

/// Where cargo put this build's binaries (`<target>/<profile>`).
pub fn artifact_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("<target>/<profile>/deps/<test>")
        .to_path_buf()
}

/// The workspace root (the first directory above the crate with the
/// workspace's `Cargo.lock`; these helpers serve every crate's tests).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .expect("the workspace root")
        .to_owned()
}

/// `path`, which must exist (else the test fails with the setup hint).
pub fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run `bash tests/setup.sh` first (it installs the test peers)",
        path.display()
    );
    path
}

/// The demo server binary, next to the test's own build: built (or brought
/// up to date) once per test binary.
pub fn demo_server() -> String {
    static BUILD: Once = Once::new();
    let exe = artifact_dir().join(format!(
        "mcpmux-demo-server{}",
        std::env::consts::EXE_SUFFIX
    ));
    BUILD.call_once(|| cargo_build(&["-p", "mcpmux-demo-server"]));
    require(exe).display().to_string()
}

/// `cargo build -q ARGS` into this build's target directory; the test
/// fails with cargo's output when it does.
fn cargo_build(args: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["build", "-q"])
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir())
        .current_dir(root())
        .output()
        .expect("run cargo build");
    assert!(
        out.status.success(),
        "`cargo build {}` failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The rmcp-based test server of the 2026-07-28 tasks extension
/// (`tests/servers/rmcp-tasks`, outside the workspace), built into this
/// build's target directory once per test binary (tests/setup.sh builds
/// it too).
pub fn rmcp_tasks_server() -> String {
    static BUILD: Once = Once::new();
    let exe = target_dir()
        .join("debug")
        .join(format!("rmcp-tasks-server{}", std::env::consts::EXE_SUFFIX));
    BUILD.call_once(|| {
        let manifest = root().join("tests/servers/rmcp-tasks/Cargo.toml");
        cargo_build(&[
            "--locked",
            "--manifest-path",
            &manifest.display().to_string(),
        ]);
    });
    require(exe).display().to_string()
}

/// A `[[mcp.servers]]` entry for the rmcp tasks server on the 2026-07-28
/// revision.
pub fn rmcp_tasks_entry(name: &str, extra: &str) -> String {
    stdio_entry(
        name,
        &rmcp_tasks_server(),
        &[],
        &format!("protocol_version = \"2026-07-28\"\n{extra}"),
    )
}

/// The rmcp tasks server over Streamable HTTP on a free loopback port;
/// killed when dropped.
pub struct RmcpTasksHttp {
    child: std::process::Child,
    /// Its MCP endpoint, as the server printed it.
    pub url: String,
}

impl RmcpTasksHttp {
    /// Starts the server with `env` set besides the test's own.
    pub fn start(env: &[(&str, &std::path::Path)]) -> RmcpTasksHttp {
        use std::io::BufRead;
        let mut child = std::process::Command::new(rmcp_tasks_server())
            .args(["--http", "127.0.0.1:0"])
            .envs(env.iter().copied())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("rmcp-tasks-server starts");
        let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped"));
        let mut line = String::new();
        let url = loop {
            line.clear();
            let read = stderr.read_line(&mut line).expect("its stderr reads");
            assert!(read > 0, "rmcp-tasks-server printed no address");
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_owned();
            }
        };
        RmcpTasksHttp { child, url }
    }

    /// A `[[mcp.servers]]` entry named `name` for it.
    pub fn entry(&self, name: &str) -> String {
        format!(
            "[[mcp.servers]]\nname = \"{name}\"\ntype = \"http\"\nurl = \"{}\"\n",
            self.url
        )
    }
}

impl Drop for RmcpTasksHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The venv Python with the official `mcp` SDK (from tests/setup.sh).
pub fn python() -> String {
    require(root().join(".deps/venv/bin/python"))
        .display()
        .to_string()
}

/// A script under tests/servers/.
pub fn server_script(name: &str) -> String {
    require(root().join("tests/servers").join(name))
        .display()
        .to_string()
}

/// The entry point of `@modelcontextprotocol/server-everything`.
pub fn everything_entry() -> String {
    require(
        root()
            .join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
    .display()
    .to_string()
}

/// A TOML string literal.
pub fn q(s: &str) -> String {
    toml_string(s)
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A `[[mcp.servers]]` entry for a stdio server.
pub fn stdio_entry(name: &str, command: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
    format!(
        "[[mcp.servers]]\nname = {}\ntype = \"stdio\"\ncommand = {}\nargs = [{}]\n{extra}\n",
        toml_string(name),
        toml_string(command),
        args.join(", ")
    )
}

/// The demo server entry named `name`.
pub fn demo_entry(name: &str, extra: &str) -> String {
    stdio_entry(name, &demo_server(), &[], extra)
}

/// A Python fault/test server entry.
pub fn script_entry(name: &str, script: &str, extra: &str) -> String {
    stdio_entry(name, &python(), &[&server_script(script)], extra)
}

/// Call options with a 20 s timeout whose progress callback counts the
/// notifications into the returned counter.
pub fn counting_progress() -> (std::sync::Arc<std::sync::atomic::AtomicUsize>, CallOptions) {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let opts = CallOptions::default()
        .with_timeout(Duration::from_secs(20))
        .with_progress(std::sync::Arc::new(move |_| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
    (seen, opts)
}

/// Parses a config made of entries.
pub fn config(entries: &[String]) -> Config {
    Config::parse(&entries.concat()).expect("valid test config")
}

/// The `[mcp]` table of [`config_without_restarts`].
pub const NO_RESTARTS: &str = "[mcp]\nrestart = \"never\"\n";

/// Parses a config made of entries, with `[mcp] restart = "never"`: for
/// tests of how a failure is detected and reported, where a failed server
/// must stay failed (restarts have their own tests in `supervision.rs`).
pub fn config_without_restarts(entries: &[String]) -> Config {
    Config::parse(&format!("{NO_RESTARTS}{}", entries.concat())).expect("valid test config")
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesized command name.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// Waits until `pid` is gone, up to `limit`.
pub fn wait_gone(pid: u32, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

/// The `env` line of a server entry that marks its processes with `tag`.
pub fn marker_env(tag: &str) -> String {
    format!("env = {{ MCPMUX_TEST_MARKER = {} }}", q(tag))
}

/// Pids of live processes whose environment carries marker `tag`.
pub fn pids_with(tag: &str) -> Vec<u32> {
    let needle = format!("MCPMUX_TEST_MARKER={tag}");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let found = env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes());
        if found && alive(pid) {
            out.push(pid);
        }
    }
    out
}

/// Reads a pid written to a file by a test server, waiting for it to appear.
pub fn read_pid(path: &Path) -> u32 {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(Instant::now() < end, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A unique marker to find our own server processes by command line.
pub fn marker(tag: &str) -> String {
    format!(
        "mcpmux-test-{tag}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    )
}

// ------------------------------------------------------------ network fixtures

/// A network test server (a child process listening on a local port).
/// Killed and reaped on drop, so no test leaves one behind, even on panic.
pub struct NetServer {
    child: std::process::Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    output: std::sync::Arc<std::sync::Mutex<String>>,
}

impl NetServer {
    /// `http://127.0.0.1:<port><path>`.
    pub fn http(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// `ws://127.0.0.1:<port><path>`.
    pub fn ws(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port)
    }

    /// What the server printed so far (stdout and stderr, interleaved).
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` until the output contains `needle` (async: the
    /// test's runtime goes on running the engine meanwhile).
    pub async fn wait_output(&self, needle: &str, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if self.output().contains(needle) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.output().contains(needle)
    }

    /// Kills the server now (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NetServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `cmd` with piped output and waits (up to 30 s) until `ready`
/// finds the listening port in one of its output lines. `None` when the
/// process exited first (e.g. the port was taken); panics on a timeout.
fn spawn_net(mut cmd: std::process::Command, ready: fn(&str) -> Option<u16>) -> Option<NetServer> {
    use std::io::BufRead;
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};

    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let output = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = mpsc::channel::<u16>();
    let out: Box<dyn std::io::Read + Send> = Box::new(child.stdout.take().unwrap());
    let err: Box<dyn std::io::Read + Send> = Box::new(child.stderr.take().unwrap());
    for pipe in [out, err] {
        let output = output.clone();
        let tx = tx.clone();
        // Drains the pipe for the whole life of the process (a full pipe
        // would block the server), noting each line.
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = ready(&line) {
                    let _ = tx.send(port);
                }
                let mut all = output.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
    }
    drop(tx);
    let mut server = NetServer {
        child,
        port: 0,
        output,
    };
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(port) => {
            server.port = port;
            Some(server)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = server.child.wait();
            eprintln!("{cmd:?} exited before listening:\n{}", server.output());
            None
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let out = server.output();
            drop(server);
            panic!("{cmd:?} did not start listening within 30 s:\n{out}")
        }
    }
}

fn ready_line(line: &str) -> Option<u16> {
    line.strip_prefix("READY ")?.trim().parse().ok()
}

/// Starts a Python fixture under tests/servers/net/ (it binds a free port
/// itself and prints `READY <port>`).
pub fn net_fixture(script: &str, args: &[&str]) -> NetServer {
    let mut cmd = std::process::Command::new(python());
    cmd.arg(require(root().join("tests/servers/net").join(script)))
        .args(args);
    spawn_net(cmd, ready_line).unwrap_or_else(|| panic!("{script} {args:?} failed to start"))
}

/// The official Python SDK server (tests/servers/net/sdk_server.py) over
/// `transport`: sse, streamable-http, stateless, json or websocket.
pub fn sdk_server(transport: &str, extra: &[&str]) -> NetServer {
    let mut args = vec!["--transport", transport];
    args.extend_from_slice(extra);
    net_fixture("sdk_server.py", &args)
}

/// A fault server (tests/servers/net/faults.py) with `--fault fault --on on`.
pub fn fault_server(fault: &str, on: &str) -> NetServer {
    net_fixture("faults.py", &["--fault", fault, "--on", on])
}

/// A TCP port that was free a moment ago (nothing listens on it now).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `server-everything` over `sse` (GET /sse, POST /message) or
/// `streamableHttp` (/mcp), on a free port. Ready when it logs the port.
pub fn everything_net(transport: &str) -> NetServer {
    fn ready(line: &str) -> Option<u16> {
        // "Server is running on port N" (sse),
        // "MCP Streamable HTTP Server listening on port N" (streamableHttp).
        let (_, port) = line.rsplit_once(" on port ")?;
        port.trim().parse().ok()
    }
    for _ in 0..5 {
        let port = free_port();
        let mut cmd = std::process::Command::new("node");
        cmd.arg(everything_entry())
            .arg(transport)
            .env("PORT", port.to_string());
        // Another process may take the port first: then it exits; try again.
        if let Some(server) = spawn_net(cmd, ready) {
            assert_eq!(server.port, port, "{}", server.output());
            return server;
        }
    }
    panic!("server-everything {transport} did not start (5 tries)")
}

/// A `[[mcp.servers]]` entry for a network server; `extra` holds more
/// `key = value` lines (a `[mcp.servers.headers]` table must come last).
pub fn net_entry(name: &str, kind: &str, url: &str, extra: &str) -> String {
    format!(
        "[[mcp.servers]]\nname = {}\ntype = {}\nurl = {}\n{extra}\n",
        toml_string(name),
        toml_string(kind),
        toml_string(url)
    )
}

/// A `[mcp.servers.headers]` table (put it at the end of an entry).
pub fn headers_table(headers: &[(&str, &str)]) -> String {
    let mut out = String::from("[mcp.servers.headers]\n");
    for (name, value) in headers {
        out.push_str(&format!("{} = {}\n", toml_string(name), toml_string(value)));
    }
    out
}

// ------------------------------------------------------------- event logs

/// How long a test waits for an event before it fails as hung: a guard
/// against a hang, never a measure of speed.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// A file test servers append events to, one per line: the demo server's
/// `DEMO_EVENT_LOG` (`slow <id>`, `cancelled <id>`, `barrier met by <n>`).
/// Tests assert on these events (a call started, a cancellation arrived)
/// instead of on how long something took. Removed on drop.
pub struct EventLog {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog::new()
    }
}

impl EventLog {
    /// A new, empty (not yet created) log in a temp dir.
    pub fn new() -> EventLog {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("events.log");
        EventLog { _dir: dir, path }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `env` line of a demo server entry that logs here.
    pub fn demo_env(&self) -> String {
        format!(
            "env = {{ DEMO_EVENT_LOG = {} }}",
            q(&self.path.display().to_string())
        )
    }

    /// The lines so far.
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// How many lines start with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }

    /// Waits (async) until `n` lines start with `prefix`; fails as hung
    /// after [`HANG_GUARD`].
    pub async fn wait_count(&self, prefix: &str, n: usize) {
        let end = Instant::now() + HANG_GUARD;
        while self.count(prefix) < n {
            assert!(
                Instant::now() < end,
                "hung: waiting for {n} events {prefix:?}, have {:?}",
                self.lines()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
