//! Runs `tests/servers/llm_mock.py` (the scripted OpenAI / Anthropic
//! wire-format endpoint; its docstring documents the script format) as a
//! process for an integration test. Use it from a test file with
//! `mod llm_mock;`:
//!
//! ```ignore
//! let mock = llm_mock::Mock::start(json!([{"text": "hello"}])).await;
//! let settings = ApiSettings { base_url: Some(mock.openai_base_url()), ..Default::default() };
//! // ... run the provider / session ...
//! assert_eq!(mock.requests()[0]["body"]["messages"][0]["role"], "system");
//! ```
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .expect("the workspace root")
        .to_owned()
}

/// The venv Python when `tests/setup.sh` made one, else `python3` (the
/// mock needs only the standard library).
fn python() -> PathBuf {
    let venv = root().join(".deps/venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// One running `llm_mock.py` with its script and request log in a
/// temporary directory; killed on drop.
pub struct Mock {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Mock {
    /// Starts a mock serving `script`. Waits for it off the async runtime,
    /// so that other futures of the same test keep going meanwhile.
    pub async fn start(script: Value) -> Mock {
        Self::start_with(script, &[]).await
    }

    /// [`Mock::start`] with more command-line arguments (e.g. `--reload`).
    pub async fn start_with(script: Value, extra: &[&str]) -> Mock {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        tokio::task::spawn_blocking(move || Self::start_blocking(script, &extra))
            .await
            .unwrap()
    }

    /// Starts a mock from a synchronous test.
    pub fn start_blocking(script: Value, extra: &[String]) -> Mock {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let mut child = Command::new(python())
            .arg(root().join("tests/servers/llm_mock.py"))
            .arg("--script")
            .arg(&script_path)
            .arg("--log")
            .arg(dir.path().join("requests.jsonl"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start llm_mock.py");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(Duration::from_secs(15)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("llm_mock.py printed no port within 15 s");
            }
        };
        let port = serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|v| v["port"].as_u64())
            .unwrap_or_else(|| panic!("llm_mock.py printed {line:?}, not {{\"port\": N}}"));
        Mock {
            child,
            port: port as u16,
            dir,
        }
    }

    /// The `base_url` for the `openai` provider (`http://127.0.0.1:P/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The `base_url` for the `anthropic` provider (`http://127.0.0.1:P`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The script file (rewrite it between rounds with `--reload`).
    pub fn script_path(&self) -> PathBuf {
        self.dir.path().join("script.json")
    }

    /// The request log (one JSON object per line).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("requests.jsonl")
    }

    /// The requests received so far, as the mock logged them.
    pub fn requests(&self) -> Vec<Value> {
        read_log(&self.log_path())
    }

    /// The requests once there are at least `n`, or after 5 s (the mock may
    /// log a moment after a client gave up on a request).
    pub async fn requests_eventually(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.requests();
            if log.len() >= n || Instant::now() > deadline {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Replaces the script (read again per request with `--reload`).
    pub fn rewrite(&self, script: Value) {
        std::fs::write(self.script_path(), script.to_string()).unwrap();
    }
}

/// The complete lines of the log. The mock appends while a test reads, so a
/// last line without its newline is still being written and is left for the
/// next read.
fn read_log(path: &Path) -> Vec<Value> {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let complete = &log[..log.rfind('\n').map_or(0, |end| end + 1)];
    complete
        .lines()
        .map(|l| serde_json::from_str(l).expect("llm_mock.py logs JSON lines"))
        .collect()
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
