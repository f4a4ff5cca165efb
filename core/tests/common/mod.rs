//! Shared helpers for the engine's integration tests: where the real peers
//! live, config builders, and process checks.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

use mcpmux_core::Config;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run `bash tests/setup.sh` first (it installs the test peers)",
        path.display()
    );
    path
}

/// The demo server binary, built once when missing.
pub fn demo_server() -> String {
    static BUILD: Once = Once::new();
    let exe = root().join("target/debug/mcpmux-demo-server");
    BUILD.call_once(|| {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "mcpmux-demo-server"])
            .current_dir(root())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building the demo server failed");
    });
    require(exe).display().to_string()
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

/// Parses a config made of entries.
pub fn config(entries: &[String]) -> Config {
    Config::parse(&entries.concat()).expect("valid test config")
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
