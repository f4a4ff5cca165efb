//! Helpers of the ffi tests: where the built library and the CLI are, on
//! top of the helpers every crate's tests share (`tests/support`, crate
//! `mcpmux-test-support`: the workspace root, the demo server, the Python
//! venv). A missing peer fails the test with a hint; nothing is skipped.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

const SETUP_HINT: &str = "run `bash tests/setup.sh` from the workspace root first";

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    mcpmux_test_support::root()
}

/// The directory of this build's artifacts (target/debug), where cargo put
/// libmcpmux.so and libmcpmux.a: two levels above this test executable.
pub fn artifact_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// A binary of the workspace in `artifact_dir()`, built with cargo when missing.
pub fn workspace_binary(package: &str, binary: &str) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let path = artifact_dir().join(binary);
    let _guard = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    if !path.is_file() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "-p", package])
            .env("CARGO_TARGET_DIR", artifact_dir().parent().unwrap())
            .current_dir(workspace_root())
            .output()
            .expect("cannot run cargo");
        assert!(
            out.status.success(),
            "`cargo build -p {package}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(path.is_file(), "{} missing after the build", path.display());
    path
}

/// The demo server binary.
pub fn demo_server() -> PathBuf {
    PathBuf::from(mcpmux_test_support::demo_server())
}

/// The `mcpmux` CLI binary.
pub fn cli() -> PathBuf {
    workspace_binary("mcpmux-cli", "mcpmux")
}

/// The venv Python that runs tests/servers/*.py.
pub fn python() -> PathBuf {
    PathBuf::from(mcpmux_test_support::python())
}

/// The rmcp tasks server (tests/servers/rmcp-tasks), built once.
pub fn rmcp_tasks_server() -> PathBuf {
    PathBuf::from(mcpmux_test_support::rmcp_tasks_server())
}

/// server-everything's entry point.
pub fn everything_js() -> PathBuf {
    let path = workspace_root()
        .join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "server-everything missing at {}: {SETUP_HINT}",
        path.display()
    );
    path
}

/// `node` on PATH.
pub fn node() -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", "command -v node"])
        .output()
        .expect("sh");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        !path.is_empty(),
        "node not found on PATH (server-everything needs Node.js >= 20)"
    );
    PathBuf::from(path)
}
