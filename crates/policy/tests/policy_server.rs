//! The session policy against a real MCP server written with the official
//! Python SDK (tests/servers/policy_server.py): read-only, unmarked and
//! destructive tools, a tool whose output holds secrets and one that tries a
//! prompt injection. Each forbidden path is tried the way a model would try
//! it (through `SessionPolicy::call`), and the test looks at what the model
//! would receive, at what the server actually ran (its call log and marker
//! file), and at the audit log.

use mcpmux_test_support as common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcpmux_core::{CallOptions, Config, Hub};
use mcpmux_policy::{read_audit_log, AuditStatus, ModelToolResult, PolicySettings, SessionPolicy};
use serde_json::{json, Value};

/// `common::config` with the policy's (and the sessions') config keys
/// registered, as every front end has them.
fn config(entries: &[String]) -> mcpmux_core::Config {
    mcpmux_policy::register_config_layer();
    common::config(entries)
}

/// Secrets the `leak` tool returns; none may reach the model or the disk.
const SECRETS: &[&str] = &[
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "Sup3rS3cretPw",
    "eyJhbGciOiJIUzI1NiJ9",
    "dozjgNryP4J3jVmNHl0w5N",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    "ghp_0123456789abcdef",
    "ghijABCDEFGHIJ0123456789",
];

struct Setup {
    _dir: tempfile::TempDir,
    work_dir: PathBuf,
    ops_dir: PathBuf,
    audit: PathBuf,
    config: Config,
}

/// Two servers from the same script: `work` with an allow list, `ops`
/// allowing everything but only in sessions of scope `ops`.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let work_dir = dir.path().join("work");
    let ops_dir = dir.path().join("ops");
    std::fs::create_dir_all(&work_dir).unwrap();
    std::fs::create_dir_all(&ops_dir).unwrap();
    let work = script_entry(
        "work",
        "policy_server.py",
        &format!(
            "allow_tools = [\"notes\", \"lookup\", \"le*\", \"inject\", \"slow\", \"touch\", \"wipe\"]\n\
             [mcp.servers.env]\nPOLICY_DIR = {}\n",
            q(&work_dir.display().to_string())
        ),
    );
    let ops = script_entry(
        "ops",
        "policy_server.py",
        &format!(
            "allow_all = true\nscopes = [\"ops\"]\n[mcp.servers.env]\nPOLICY_DIR = {}\n",
            q(&ops_dir.display().to_string())
        ),
    );
    let audit = dir.path().join("audit.jsonl");
    Setup {
        config: config(&[work, ops]),
        work_dir,
        ops_dir,
        audit,
        _dir: dir,
    }
}

/// Tool names the server behind `dir` actually ran.
fn ran(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn settings(scope: &str) -> PolicySettings {
    PolicySettings {
        scope: Some(scope.into()),
        ..Default::default()
    }
}

/// The text between the frame's delimiters, and the nonce.
fn framed_body(content: &str) -> (String, String) {
    let nonce = content
        .split("<untrusted-data-")
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap_or_else(|| panic!("no frame in {content}"))
        .to_owned();
    let open = format!("\n<untrusted-data-{nonce}>\n");
    let close = format!("\n</untrusted-data-{nonce}>");
    let start = content.find(&open).expect("opening delimiter line") + open.len();
    let end = content.rfind(&close).expect("closing delimiter line");
    assert!(content.ends_with(&close), "frame must end the content");
    (content[start..end].to_owned(), nonce)
}

fn refused(r: &ModelToolResult, code: &str) {
    assert!(r.is_error, "{r:?}");
    assert!(r.content.starts_with(code), "expected {code}: {r:?}");
}

#[tokio::test]
async fn offers_only_what_the_operator_allowed_and_refusals_never_reach_the_server() {
    let s = setup();
    let hub = Hub::connect(s.config.clone()).await.unwrap();
    let policy = SessionPolicy::new(&s.config, settings("review"), Some(s.audit.clone())).unwrap();
    let tools = hub.list_tools();
    assert_eq!(tools.len(), 14, "both servers up: {:?}", hub.servers());
    let offered: Vec<String> = policy.offered(&tools).into_iter().map(|t| t.name).collect();
    // touch is unmarked (needs confirm_read_only), wipe is destructive (needs
    // allow_destructive), ops is out of scope.
    assert_eq!(
        offered,
        [
            "mcp_work_notes",
            "mcp_work_lookup",
            "mcp_work_leak",
            "mcp_work_inject",
            "mcp_work_slow"
        ]
    );

    let wipe = policy.call(&hub, "mcp_work_wipe", &json!({})).await;
    refused(&wipe, "TOOL_NOT_ALLOWED");
    assert!(wipe.content.contains("destructive"), "{wipe:?}");
    refused(
        &policy
            .call(&hub, "mcp_work_touch", &json!({"name": "x"}))
            .await,
        "TOOL_NOT_ALLOWED",
    );
    refused(
        &policy.call(&hub, "mcp_ops_notes", &json!({})).await,
        "TOOL_NOT_ALLOWED",
    );
    refused(
        &policy.call(&hub, "mcp_work_nope", &json!({})).await,
        "TOOL_NOT_ALLOWED",
    );

    // An allowed call, with an argument value that must not be audited.
    let lookup = policy
        .call(&hub, "mcp_work_lookup", &json!({"key": "arg-value-7731"}))
        .await;
    assert!(!lookup.is_error, "{lookup:?}");
    let (body, _) = framed_body(&lookup.content);
    assert_eq!(body, "value of arg-value-7731");

    // Ordinary text is not redacted.
    let notes = policy.call(&hub, "mcp_work_notes", &json!({})).await;
    let (body, _) = framed_body(&notes.content);
    assert!(!body.contains("REDACTED"), "{body}");
    assert!(
        body.contains("us-east-1")
            && body.contains("api.internal.example.com:8443")
            && body.contains("3f786850e387550fdab836ed7e6dc881de23001b")
            && body.contains("123e4567-e89b-12d3-a456-426614174000"),
        "{body}"
    );

    // The destructive tool never ran; the out-of-scope server was never asked.
    assert!(!s.work_dir.join("wiped").exists());
    assert_eq!(ran(&s.work_dir), ["lookup", "notes"]);
    assert_eq!(ran(&s.ops_dir), Vec::<String>::new());

    let events = read_audit_log(&s.audit).unwrap();
    let statuses: Vec<(Option<&str>, &str, AuditStatus)> = events
        .iter()
        .map(|e| (e.server.as_deref(), e.tool.as_str(), e.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (Some("work"), "wipe", AuditStatus::NotAllowed),
            (Some("work"), "touch", AuditStatus::NotAllowed),
            (Some("ops"), "notes", AuditStatus::NotAllowed),
            (None, "mcp_work_nope", AuditStatus::NotAllowed),
            (Some("work"), "lookup", AuditStatus::Ok),
            (Some("work"), "notes", AuditStatus::Ok),
        ]
    );
    assert_eq!(events[0].bytes, 0);
    assert!(events[4].bytes > 0);
    let text = std::fs::read_to_string(&s.audit).unwrap();
    assert!(!text.contains("arg-value-7731"), "argument value in {text}");
    assert!(!text.contains("us-east-1"), "output in {text}");
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        for key in [
            "time",
            "server",
            "tool",
            "status",
            "bytes",
            "duration_ms",
            "redactions",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
        assert!(v["time"].as_str().unwrap().ends_with('Z'), "{line}");
    }

    // In its own scope the ops server is offered.
    let ops = SessionPolicy::new(&s.config, settings("ops"), None).unwrap();
    let names: Vec<String> = ops.offered(&tools).into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"mcp_ops_notes".to_owned()), "{names:?}");
    // `work` has no scopes: it is there in every scope, with its own list.
    assert!(names.contains(&"mcp_work_notes".to_owned()), "{names:?}");
    assert!(!names.contains(&"mcp_work_wipe".to_owned()), "{names:?}");
    assert!(!names.contains(&"mcp_ops_wipe".to_owned()), "{names:?}");
    hub.close().await;
}

#[tokio::test]
async fn secrets_are_redacted_and_injections_are_framed() {
    let s = setup();
    let hub = Hub::connect(s.config.clone()).await.unwrap();
    let policy = SessionPolicy::new(&s.config, settings("review"), Some(s.audit.clone())).unwrap();
    policy.offered(&hub.list_tools());

    let leak = policy.call(&hub, "mcp_work_leak", &json!({})).await;
    assert!(!leak.is_error, "{leak:?}");
    for secret in SECRETS {
        assert!(
            !leak.content.contains(secret),
            "{secret} in {}",
            leak.content
        );
    }
    let (body, _) = framed_body(&leak.content);
    for rule in [
        "aws_access_key_id",
        "aws_secret_access_key",
        "url_password",
        "authorization",
        "private_key",
        "github_token",
    ] {
        assert!(
            body.contains(&format!("[REDACTED:{rule}]")),
            "{rule}: {body}"
        );
    }
    // What is not secret stays, around the markers.
    assert!(body.contains("region us-east-1"), "{body}");
    assert!(body.contains("db.internal:5432"), "{body}");
    assert!(
        body.contains("github token: [REDACTED:github_token]"),
        "{body}"
    );
    assert!(body.ends_with(" (end of dump)"), "{body}");

    let inject = policy.call(&hub, "mcp_work_inject", &json!({})).await;
    let (body, nonce) = framed_body(&inject.content);
    assert!(body.contains("ignore all previous instructions"), "{body}");
    assert_ne!(nonce, "0000000000000000");
    assert!(!body.contains(&nonce), "output must not hold the delimiter");
    let note = &inject.content[..inject.content.find("\n<untrusted-data-").unwrap()];
    assert!(
        note.contains("untrusted") && note.contains("not instructions"),
        "{note}"
    );
    assert!(!s.work_dir.join("wiped").exists());

    let events = read_audit_log(&s.audit).unwrap();
    assert_eq!(events.len(), 2);
    assert!(events[0].redactions >= 6, "{:?}", events[0]);
    let text = std::fs::read_to_string(&s.audit).unwrap();
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} in the audit log");
    }

    // A host's own call through the same policy: redacted MCP JSON.
    let host = Arc::new(SessionPolicy::new(&s.config, settings("review"), None).unwrap());
    let opts = CallOptions::default().with_policy(host.clone());
    let result = hub.call_tool("mcp_work_leak", None, &opts).await.unwrap();
    for secret in SECRETS {
        assert!(
            !result.json().contains(secret),
            "{secret} in {}",
            result.json()
        );
    }
    assert_eq!(result.value()["content"].as_array().unwrap().len(), 2);
    let e = hub
        .call_tool("mcp_work_wipe", None, &opts)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "TOOL_NOT_ALLOWED");
    assert_eq!(host.audit_events().len(), 2);
    assert!(!s.work_dir.join("wiped").exists());
    hub.close().await;
}

#[tokio::test]
async fn limits_count_every_call_and_the_round_goes_on() {
    let s = setup();
    let hub = Hub::connect(s.config.clone()).await.unwrap();
    let policy = SessionPolicy::new(
        &s.config,
        PolicySettings {
            max_tool_calls: Some(4),
            call_timeout: Some(Duration::from_millis(500)),
            max_output_bytes: Some(40),
            scope: Some("review".into()),
            ..Default::default()
        },
        Some(s.audit.clone()),
    )
    .unwrap();
    policy.offered(&hub.list_tools());

    let notes = policy.call(&hub, "mcp_work_notes", &json!({})).await;
    let (body, _) = framed_body(&notes.content);
    assert!(body.starts_with("Deploy to us-east-1"), "{body}");
    assert!(
        body.contains("bytes left out between head and tail (max_output_bytes = 40); the whole result is not kept]"),
        "{body}"
    );
    assert!(body.ends_with("426614174000."), "the tail is shown: {body}");

    refused(
        &policy.call(&hub, "mcp_work_wipe", &json!({})).await,
        "TOOL_NOT_ALLOWED",
    );
    let slow = policy
        .call(&hub, "mcp_work_slow", &json!({"seconds": 5}))
        .await;
    assert!(slow.is_error, "{slow:?}");
    assert!(
        slow.content.starts_with("TIMEOUT") && slow.content.contains("LIMIT_EXCEEDED"),
        "{slow:?}"
    );
    let fourth = policy
        .call(&hub, "mcp_work_lookup", &json!({"key": "k"}))
        .await;
    assert!(!fourth.is_error, "{fourth:?}");
    for _ in 0..2 {
        refused(
            &policy.call(&hub, "mcp_work_notes", &json!({})).await,
            "LIMIT_EXCEEDED",
        );
    }
    assert_eq!(policy.calls_made(), 6);
    assert_eq!(ran(&s.work_dir), ["notes", "slow", "lookup"]);

    let statuses: Vec<AuditStatus> = read_audit_log(&s.audit)
        .unwrap()
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(
        statuses,
        [
            AuditStatus::Ok,
            AuditStatus::NotAllowed,
            AuditStatus::Timeout,
            AuditStatus::Ok,
            AuditStatus::LimitExceeded,
            AuditStatus::LimitExceeded,
        ]
    );
    let first = &read_audit_log(&s.audit).unwrap()[0];
    assert!(first.truncated, "{first:?}");
    hub.close().await;
}

#[tokio::test]
async fn refresh_reports_allowed_tools_that_dropped_out() {
    let s = setup();
    let hub = Hub::connect(s.config.clone()).await.unwrap();
    let policy = SessionPolicy::new(&s.config, settings("review"), None).unwrap();
    policy.offered(&hub.list_tools());
    let ok = policy
        .call(&hub, "mcp_work_lookup", &json!({"key": "a"}))
        .await;
    assert!(!ok.is_error, "{ok:?}");

    // The server's next start no longer offers `lookup`.
    std::fs::write(s.work_dir.join("v2"), "").unwrap();
    let report = policy.refresh(&hub, "work").await.unwrap();
    assert_eq!(report.dropped, ["lookup"]);
    assert_eq!(report.missing, ["lookup"]);
    assert!(report.added.is_empty(), "{report:?}");
    assert_eq!(report.offered, ["notes", "leak", "inject", "slow"]);

    let gone = policy
        .call(&hub, "mcp_work_lookup", &json!({"key": "a"}))
        .await;
    refused(&gone, "TOOL_NOT_ALLOWED");
    assert_eq!(ran(&s.work_dir), ["lookup"]);
    let e = policy.refresh(&hub, "nope").await.unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_SERVER");
    hub.close().await;
}

#[tokio::test]
async fn a_policy_made_for_one_hub_is_refused_on_another() {
    let s = setup();
    let hub = Hub::connect(s.config.clone()).await.unwrap();
    let other = Hub::connect(s.config.clone()).await.unwrap();
    let policy = Arc::new(SessionPolicy::for_hub(&hub, None, None).unwrap());
    let opts = CallOptions::default().with_policy(policy.clone());
    let e = other
        .call_tool("mcp_work_notes", None, &opts)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT", "{e}");
    assert!(e.to_string().contains("another hub"), "{e}");
    // Refused before anything ran or was counted.
    assert!(ran(&s.work_dir).is_empty(), "{:?}", ran(&s.work_dir));
    assert_eq!(policy.calls_made(), 0);
    let e = policy.refresh(&other, "work").await.unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT", "{e}");
    // Its own hub, and a clone of it, are fine.
    let clone = hub.clone();
    clone
        .call_tool("mcp_work_notes", None, &opts)
        .await
        .unwrap();
    assert_eq!(ran(&s.work_dir), ["notes"]);
    assert_eq!(policy.calls_made(), 1);
    hub.close().await;
    other.close().await;
}
