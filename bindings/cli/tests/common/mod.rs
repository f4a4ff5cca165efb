//! Helpers of the `mcpmux` CLI's integration tests: config files in temp
//! dirs and running the binary (killed if it hangs). What every crate's tests
//! share (peers, process checks, network fixtures, event logs) comes from
//! `tests/support` (crate `mcpmux-test-support`), re-exported here; the few
//! names below that differ from it (paths as `PathBuf`) shadow it.
//!
//! Missing peers make the test fail with a message to run
//! `bash tests/setup.sh`; nothing is skipped silently.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

pub use mcpmux_test_support::*;

pub mod http_gateway;
pub mod raw_gateway;

/// How long one `mcpmux` run may take before the test kills it and fails.
pub const RUN_LIMIT: Duration = Duration::from_secs(30);

const SETUP_HINT: &str = "run `bash tests/setup.sh` from the workspace root first";

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    root()
}

/// The `mcpmux` binary under test.
pub fn mcpmux_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcpmux"))
}

/// The demo server, next to the `mcpmux` binary (built once per test binary).
pub fn demo_server() -> PathBuf {
    PathBuf::from(mcpmux_test_support::demo_server())
}

/// The venv Python that runs the fault servers and the FastMCP peer.
pub fn python() -> PathBuf {
    PathBuf::from(mcpmux_test_support::python())
}

/// A fault server script in `tests/servers/`.
pub fn fault_server(name: &str) -> PathBuf {
    let path = workspace_root().join("tests/servers").join(name);
    assert!(
        path.is_file(),
        "test server missing at {}: {SETUP_HINT}",
        path.display()
    );
    path
}

/// The FastMCP peer script (checks that the SDK is installed in the venv).
pub fn fastmcp_server() -> PathBuf {
    let py = python();
    let out = Command::new(&py)
        .args(["-c", "import mcp.server.fastmcp"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}: {SETUP_HINT}", py.display()));
    assert!(
        out.status.success(),
        "the MCP Python SDK is not installed in the venv: {SETUP_HINT}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fault_server("fastmcp_server.py")
}

/// `server-everything`'s entry point (checks that `node` runs).
pub fn everything_server() -> PathBuf {
    let path = workspace_root()
        .join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "server-everything missing at {}: {SETUP_HINT}",
        path.display()
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "`node --version` failed ({node:?}): Node.js >= 20 is needed; {SETUP_HINT}"
    );
    path
}

/// A string as a TOML basic string (JSON escaping is valid TOML here).
pub fn q(s: impl AsRef<str>) -> String {
    serde_json::to_string(s.as_ref()).expect("a string serializes")
}

/// A path as a TOML string.
pub fn qp(p: &Path) -> String {
    q(p.to_str().expect("test paths are UTF-8"))
}

/// One `[[mcp.servers]]` stdio entry; `extra` is more `key = value` lines.
pub fn stdio_server(name: &str, command: &Path, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(q).collect();
    format!(
        "[[mcp.servers]]\nname = {}\ntype = \"stdio\"\ncommand = {}\nargs = [{}]\n{extra}\n",
        q(name),
        qp(command),
        args.join(", ")
    )
}

/// A `[[mcp.servers]]` entry for the demo server.
pub fn demo_entry(name: &str, extra: &str) -> String {
    stdio_server(name, &demo_server(), &[], extra)
}

/// A `[[mcp.servers]]` entry for `tests/servers/<script>` run by the venv Python.
pub fn python_entry(name: &str, script: &str, extra: &str) -> String {
    let script = fault_server(script);
    stdio_server(name, &python(), &[script.to_str().unwrap()], extra)
}

/// A `[[mcp.servers]]` entry that is configured but never started.
pub fn disabled_entry(name: &str) -> String {
    format!(
        "[[mcp.servers]]\nname = {}\ncommand = \"/nonexistent/never-started\"\nenabled = false\n",
        q(name)
    )
}

/// The `XDG_STATE_HOME` of every run: the session key (see docs/sessions.md,
/// "Session files and trust") lives there, never in the real home.
pub fn state_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpmux-cli-state")
}

/// A temp dir holding config files; the working directory of runs.
pub struct Sandbox {
    pub dir: TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("cannot create a temp dir"),
        }
    }

    /// A sandbox whose `mcpmux.toml` is `config`.
    pub fn with_config(config: &str) -> Sandbox {
        let sb = Sandbox::new();
        sb.write("mcpmux.toml", config);
        sb
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `name` (relative to the sandbox) and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// `mcpmux ARGS` in this sandbox, with `--config mcpmux.toml`.
    pub fn mcpmux(&self, args: &[&str]) -> Run {
        let mut cmd = Run::new(self.path());
        cmd.arg("--config").arg(self.path().join("mcpmux.toml"));
        cmd.args(args);
        cmd
    }

    /// `mcpmux trust --yes NAME`: trusts a config of this sandbox in its
    /// own trust store, so that discovery uses it.
    pub fn trust(&self, name: &str) {
        self.mcpmux_bare(&["trust", "--yes", name]).run().ok();
    }

    /// `mcpmux ARGS` in this sandbox, without `--config` (discovery).
    pub fn mcpmux_bare(&self, args: &[&str]) -> Run {
        let mut cmd = Run::new(self.path());
        cmd.args(args);
        cmd
    }
}

/// A configured `mcpmux` invocation.
pub struct Run {
    cmd: Command,
    stdin: Option<Vec<u8>>,
    limit: Duration,
    shown: Vec<String>,
}

impl Run {
    fn new(cwd: &Path) -> Run {
        let mut cmd = Command::new(mcpmux_bin());
        cmd.current_dir(cwd)
            // Hermetic: nothing from the environment of `cargo test` leaks in.
            .env_remove("MCPMUX_CONFIG")
            .env_remove("MCPMUX_LOG")
            .env_remove("RUST_LOG")
            .env("XDG_STATE_HOME", state_home())
            // Each sandbox has its own trust store for the configs found in
            // it (`mcpmux trust`), never the real home's.
            .env("XDG_CONFIG_HOME", cwd.join(".xdg-config"));
        Run {
            cmd,
            stdin: None,
            limit: RUN_LIMIT,
            shown: vec!["mcpmux".into()],
        }
    }

    pub fn arg(&mut self, a: impl AsRef<std::ffi::OsStr>) -> &mut Run {
        self.shown.push(a.as_ref().to_string_lossy().into_owned());
        self.cmd.arg(a);
        self
    }

    pub fn args(&mut self, args: &[&str]) -> &mut Run {
        for a in args {
            self.arg(a);
        }
        self
    }

    pub fn env(&mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> &mut Run {
        self.cmd.env(k, v);
        self
    }

    pub fn stdin(&mut self, text: &str) -> &mut Run {
        self.stdin = Some(text.as_bytes().to_vec());
        self
    }

    /// Starts the process without waiting (stdout/stderr piped).
    pub fn spawn(&mut self) -> Running {
        self.cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", mcpmux_bin().display()));
        if let Some(input) = self.stdin.take() {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            thread::spawn(move || {
                let _ = pipe.write_all(&input);
            });
        }
        let out = reader(child.stdout.take().expect("stdout is piped"));
        let err = reader(child.stderr.take().expect("stderr is piped"));
        Running {
            child,
            started,
            out,
            err,
            limit: self.limit,
            shown: self.shown.join(" "),
        }
    }

    /// Runs to completion (killed and failed after [`RUN_LIMIT`]).
    pub fn run(&mut self) -> Output {
        self.spawn().wait()
    }
}

fn reader(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// A started `mcpmux` process.
pub struct Running {
    pub child: Child,
    pub started: Instant,
    out: thread::JoinHandle<String>,
    err: thread::JoinHandle<String>,
    limit: Duration,
    shown: String,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (e.g. "INT") with the `kill` command.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("cannot run kill");
        assert!(status.success(), "kill -{signal} {} failed", self.pid());
    }

    /// Waits for the exit (kills it and fails after the limit).
    pub fn wait(mut self) -> Output {
        let status = loop {
            match self.child.try_wait().expect("try_wait") {
                Some(status) => break status,
                None if self.started.elapsed() > self.limit => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    let stdout = self.out.join().unwrap_or_default();
                    let stderr = self.err.join().unwrap_or_default();
                    panic!(
                        "`{}` still running after {:?}; killed.\nstdout:\n{stdout}\nstderr:\n{stderr}",
                        self.shown, self.limit
                    );
                }
                None => thread::sleep(Duration::from_millis(5)),
            }
        };
        let elapsed = self.started.elapsed();
        Output {
            status,
            elapsed,
            stdout: self.out.join().expect("stdout reader"),
            stderr: self.err.join().expect("stderr reader"),
            shown: self.shown,
        }
    }
}

/// What one run printed, and how it ended.
pub struct Output {
    pub status: ExitStatus,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
    pub shown: String,
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` -> {} after {:.2?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.shown, self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

impl Output {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Asserts the exit status.
    pub fn expect_exit(&self, code: i32) -> &Output {
        assert_eq!(self.code(), Some(code), "unexpected exit status:\n{self}");
        self
    }

    /// Asserts exit 0 with an empty stderr.
    pub fn ok(&self) -> &Output {
        self.expect_exit(0);
        assert!(self.stderr.is_empty(), "stderr should be empty:\n{self}");
        self
    }

    /// stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self}"))
    }

    /// The `{"error", "code"}` object on stderr: exactly one JSON line with
    /// a non-empty string `error` and a string `code`.
    pub fn error(&self) -> Value {
        let text = self.stderr.strip_suffix('\n').unwrap_or(&self.stderr);
        assert!(
            !text.is_empty() && !text.contains('\n'),
            "stderr should be exactly one JSON line:\n{self}"
        );
        let v: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("stderr is not JSON ({e}):\n{self}"));
        assert!(
            v["error"].as_str().is_some_and(|s| !s.is_empty()),
            "stderr JSON lacks a non-empty string 'error':\n{self}"
        );
        assert!(
            v["code"].is_string(),
            "stderr JSON lacks a string 'code':\n{self}"
        );
        v
    }

    /// Asserts a failure: exit 2, nothing on stdout, the error JSON with
    /// `code` on stderr. Returns the error message.
    pub fn fails_with(&self, code: &str) -> String {
        self.expect_exit(2);
        let e = self.error();
        assert_eq!(e["code"], code, "unexpected error code:\n{self}");
        assert!(
            self.stdout.is_empty(),
            "stdout should be empty on failure:\n{self}"
        );
        e["error"].as_str().unwrap().to_owned()
    }

    /// Asserts that stdout contains every one of `needles`.
    pub fn stdout_has(&self, needles: &[&str]) -> &Output {
        for n in needles {
            assert!(
                self.stdout.contains(n),
                "stdout should contain {n:?}:\n{self}"
            );
        }
        self
    }
}

/// Asserts that `message` contains every one of `needles`.
#[track_caller]
pub fn assert_mentions(message: &str, needles: &[&str], out: &Output) {
    for n in needles {
        assert!(
            message.contains(n),
            "error message should mention {n:?}, got {message:?}\n{out}"
        );
    }
}

/// Whether process `pid` still exists (a zombie counts as gone).
pub fn process_alive(pid: u32) -> bool {
    alive(pid)
}

/// Reads a pid file, waiting up to `limit` for it to appear.
pub fn read_pid(path: &Path, limit: Duration) -> u32 {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "pid file {} did not appear within {limit:?}",
            path.display()
        );
        thread::sleep(Duration::from_millis(10));
    }
}
