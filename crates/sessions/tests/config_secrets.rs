//! Config secrets that come back: a server that echoes its `Authorization`
//! header in an HTTP 400 body, prints an env value on stderr while it starts,
//! logs it or returns it from a tool must not get it into mcpmux's errors,
//! logs, session files or a session model's input. Each value is replaced by
//! `[REDACTED:config]` (`mcpmux_core::secrets`).
//!
//! The secrets here are lower-case words and dashes, which no pattern rule
//! of the policy's redactor catches: only the literal pass finds them.

use mcpmux_test_support as common;
mod llm_mock;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use mcpmux_core::{CallOptions, Config, Hub};
use mcpmux_sessions::{self as session, Runner, SessionContext};
use serde_json::{json, Value};

/// `Config::parse` with the policy's and the sessions' config keys
/// registered, as every front end has them.
fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse(text)
}

/// `Config::parse_with_vars` with the layers registered (see [`parse`]).
fn parse_with_vars(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse_with_vars(text, lookup)
}

const MARKER: &str = "[REDACTED:config]";

fn vars(name: &str) -> Option<String> {
    match name {
        "LEAK_A" => Some("correct-horse-battery-staple-alpha".into()),
        "LEAK_C" => Some("correct-horse-battery-staple-gamma".into()),
        "LEAK_MODEL" => Some("mock-model-from-a-variable".into()),
        _ => None,
    }
}

fn leaky(name: &str, args: &[&str], secret_ref: &str) -> String {
    let mut all = vec![server_script("leaky.py")];
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    stdio_entry(
        name,
        &python(),
        &all,
        &format!("[mcp.servers.env]\nLEAKY_SECRET = {}\n", q(secret_ref)),
    )
}

/// Everything logged through `tracing` in this test binary.
fn captured() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || Writer(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        log
    })
    .clone()
}

struct Writer(Arc<Mutex<Vec<u8>>>);

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_text() -> String {
    String::from_utf8_lossy(&captured().lock().unwrap()).into_owned()
}

#[tokio::test]
async fn stderr_of_a_server_dying_at_start_up_is_redacted_in_its_error() {
    let secret = "correct-horse-battery-staple-alpha";
    let text = leaky("dies", &["--die-at-init"], "${LEAK_A}");
    let hub = Hub::connect(parse_with_vars(&text, &vars).unwrap())
        .await
        .unwrap();
    let status = hub.servers().into_iter().next().unwrap();
    assert_eq!(status.error_code, Some("CONNECT_FAILED"));
    let error = status.error.unwrap();
    assert!(error.contains("status: 3"), "{error}");
    assert!(
        error.contains(&format!("fatal: token {MARKER} was refused")),
        "{error}"
    );
    assert!(!error.contains(secret), "{error}");
    hub.close().await;
}

#[tokio::test]
async fn an_http_400_body_echoing_authorization_is_redacted() {
    let server = net_fixture("echo_auth.py", &[]);
    let token = "correct-horse-http-token-beta";
    for path in ["/mcp", "/pad"] {
        let text = net_entry(
            "echo",
            "http",
            &server.http(path),
            &headers_table(&[("Authorization", &format!("Bearer {token}"))]),
        );
        let hub = Hub::connect(parse(&text).unwrap()).await.unwrap();
        let status = hub.servers().into_iter().next().unwrap();
        let error = status.error.unwrap();
        assert!(error.contains("400"), "{error}");
        assert!(error.contains("Authorization: [REDACTED:con"), "{error}");
        // Not the token, nor the part of it before the 300-byte cut.
        assert!(!error.contains("correct-horse"), "{error}");
        hub.close().await;
    }
}

#[tokio::test]
async fn server_errors_and_logs_are_redacted_but_a_hosts_own_call_is_not() {
    let secret = "correct-horse-battery-staple-gamma";
    let log = captured();
    let text = leaky("chatty", &[], "${LEAK_C}");
    let hub = Hub::connect(parse_with_vars(&text, &vars).unwrap())
        .await
        .unwrap();
    let opts = CallOptions::default();
    let e = hub
        .call_tool("mcp_chatty_fail", None, &opts)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "SERVER_ERROR");
    let shown = format!("{e} {}", e.to_json());
    assert!(shown.contains(MARKER), "{shown}");
    assert!(!shown.contains(secret), "{shown}");
    if let mcpmux_core::Error::ServerError { data, .. } = &e {
        assert_eq!(data.as_ref().unwrap()["token"], MARKER);
    }
    hub.call_tool("mcp_chatty_log", None, &opts).await.unwrap();
    // The host's own call: the host owns the config, its result is as sent.
    let r = hub.call_tool("mcp_chatty_env", None, &opts).await.unwrap();
    assert!(r.json().contains(secret), "{}", r.json());
    // The stderr line and the log notification reach `tracing` redacted
    // (they are logged by engine tasks: wait for both, bounded).
    let end = Instant::now() + Duration::from_secs(20);
    let wanted = [
        format!("starting with token {MARKER}"),
        format!("log line with {MARKER}"),
    ];
    while Instant::now() < end && !wanted.iter().all(|w| log_text().contains(w)) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = log_text();
    for w in &wanted {
        assert!(text.contains(w), "{w} not logged:\n{text}");
    }
    assert!(!text.contains(secret), "{text}");
    drop(log);
    hub.close().await;
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_model_and_session_files_never_see_a_config_secret() {
    let secret = "correct-horse-battery-staple-alpha";
    std::env::set_var("MCPMUX_TEST_SECRETS_LLM_KEY", "sk-test-secrets-0123456789");
    let steps = json!([
        {"tool_calls": [
            {"name": "mcp_leaky_env", "arguments": {}},
            {"name": "mcp_leaky_split", "arguments": {}},
            {"name": "mcp_leaky_fail", "arguments": {}}
        ]},
        // The model itself (a provider) quotes the secret: stored redacted.
        {"tool_calls": [{"name": "submit_review", "arguments": {"verdict": "APPROVE", "blocks": [],
            "summary": format!("fine; the token was {secret}")}}]}
    ]);
    let mock = llm_mock::Mock::start(steps).await;
    let wd = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n[session]\nreviewer = \"openai\"\nbase_url = {}\n\
         api_key_env = \"MCPMUX_TEST_SECRETS_LLM_KEY\"\nmodel = \"${{LEAK_MODEL}}\"\nstream = true\n",
        // allow_tools is a key of the entry: it goes before its env table.
        leaky("leaky", &[], "${LEAK_A}").replacen(
            "[mcp.servers.env]",
            "allow_tools = [\"env\", \"split\", \"fail\"]\n[mcp.servers.env]",
            1
        ),
        q(&mock.openai_base_url()),
    );
    let config = parse_with_vars(&text, &vars).unwrap();
    let ctx = SessionContext {
        config: Some(config),
        host: None,
        runner: Runner::InProcess,
    };
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-plan", "input": "---\nUSER_REQUEST: x\n---\n## PLAN\n1. do it\n", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = PathBuf::from(b["session_dir"].as_str().unwrap());
    let mut wait = Value::Null;
    for _ in 0..60 {
        wait = session::wait(&ctx, &json!({"session_dir": dir, "max_wait_seconds": 5}))
            .await
            .unwrap();
        if wait["status"] != "running" {
            break;
        }
    }
    assert_eq!(wait["status"], "completed", "{wait:#}");

    // The model got the tool results with the secret replaced, the split
    // one too, and the tool's JSON-RPC error.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0]["body"]["model"], "mock-model-from-a-variable");
    let second = requests[1]["body"].to_string();
    assert!(!second.contains(secret), "{second}");
    assert!(!second.contains("battery-staple"), "{second}");
    assert_eq!(second.matches(MARKER).count(), 3, "{second}");

    // No session file holds the secret; the ones that quote the server
    // hold the marker; session.json keeps the reference, not the model.
    let mut marked = Vec::new();
    for file in walk(&dir) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains(secret), "secret in {}", file.display());
        if text.contains(MARKER) {
            marked.push(file.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    for name in ["thread.json", "result.json"] {
        assert!(marked.contains(&name.to_owned()), "{name}: {marked:?}");
    }
    let summary = wait["review"]["summary"].as_str().unwrap_or_default();
    assert_eq!(summary, format!("fine; the token was {MARKER}"), "{wait:#}");
    let spec = std::fs::read_to_string(dir.join("session.json")).unwrap();
    assert!(spec.contains("\"model\": \"${LEAK_MODEL}\""), "{spec}");
    assert!(!spec.contains("mock-model-from-a-variable"), "{spec}");
}
