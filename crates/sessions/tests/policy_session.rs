//! The policy end to end: a review session whose reviewer is the scripted
//! OpenAI endpoint (`tests/servers/llm_mock.py`, real wire format, streamed)
//! and whose tools come from the Python SDK policy server. The script tries
//! every forbidden path a model could take — a destructive tool, an
//! unmarked one, an out-of-scope server, an unknown tool, calls past the
//! limit — and reads a tool whose output holds secrets and one that tries a
//! prompt injection. The test checks what the model endpoint actually
//! received, what the server actually ran, the audit log and the session
//! directory.

use mcpmux_test_support as common;
mod llm_mock;

use std::path::{Path, PathBuf};

use common::*;
use mcpmux_core::Config;
use mcpmux_policy::{read_audit_log, AuditStatus};
use mcpmux_sessions::{self as session, Runner, SessionContext};
use serde_json::{json, Value};

/// `Config::parse` with the policy's and the sessions' config keys
/// registered, as every front end has them.
fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse(text)
}

const KEY_VAR: &str = "MCPMUX_TEST_POLICY_LLM_KEY";

/// What `leak` returns that must never reach the model or the disk.
const SECRETS: &[&str] = &[
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "Sup3rS3cretPw",
    "eyJhbGciOiJIUzI1NiJ9",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    "ghp_0123456789abcdef",
    "ghijABCDEFGHIJ0123456789",
];

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

fn ran(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The tool results the model endpoint received in request `body`
/// (OpenAI `role: tool` messages), in order, without the `Error: ` the
/// OpenAI tool-result format puts before an error result.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.strip_prefix("Error: ").unwrap_or(s).to_owned(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_model_cannot_do_more_see_secrets_or_be_steered() {
    std::env::set_var(KEY_VAR, "sk-test-policy-0123456789");
    let steps = json!([
        {"tool_calls": [
            {"name": "mcp_work_wipe", "arguments": {}},
            {"name": "mcp_work_touch", "arguments": {"name": "x"}},
            {"name": "mcp_ops_notes", "arguments": {}},
            {"name": "mcp_work_nope", "arguments": {}}
        ]},
        {"tool_calls": [
            {"name": "mcp_work_leak", "arguments": {}},
            {"name": "mcp_work_inject", "arguments": {}}
        ]},
        {"tool_calls": [
            {"name": "mcp_work_notes", "arguments": {}},
            {"name": "mcp_work_notes", "arguments": {}}
        ]},
        {"tool_calls": [{"name": "submit_review", "arguments": {"verdict": "APPROVE", "blocks": [], "summary": "fine"}}]}
    ]);
    let mock = llm_mock::Mock::start(steps).await;
    let tmp = tempfile::tempdir().unwrap();
    let work_dir = tmp.path().join("work");
    let ops_dir = tmp.path().join("ops");
    let wd = tmp.path().join("wd");
    for d in [&work_dir, &ops_dir, &wd] {
        std::fs::create_dir_all(d).unwrap();
    }
    let text = format!(
        "{}{}\n[session]\nreviewer = \"openai\"\nbase_url = {}\napi_key_env = {}\nmodel = \"mock-model\"\nstream = true\n\
         scope = \"review\"\nmax_tool_calls = 7\nmax_output_bytes = 4096\n",
        script_entry(
            "work",
            "policy_server.py",
            &format!(
                "allow_tools = [\"notes\", \"leak\", \"inject\", \"wipe\", \"touch\"]\n[mcp.servers.env]\nPOLICY_DIR = {}\n",
                q(&work_dir.display().to_string())
            )
        ),
        script_entry(
            "ops",
            "policy_server.py",
            &format!(
                "allow_all = true\nscopes = [\"ops\"]\n[mcp.servers.env]\nPOLICY_DIR = {}\n",
                q(&ops_dir.display().to_string())
            )
        ),
        q(&mock.openai_base_url()),
        q(KEY_VAR),
    );
    common::private_state();
    let ctx = SessionContext {
        config: Some(parse(&text).unwrap()),
        host: None,
        runner: Runner::InProcess,
    };
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-plan", "input": "---\nUSER_REQUEST: x\n---\n## PLAN\n1. do it\n", "working_dir": wd}),
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
    assert_eq!(wait["review"]["verdict"], "APPROVE");

    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let bodies: Vec<&Value> = requests.iter().map(|r| &r["body"]).collect();

    // Offered: only the allowed, read-only tools of the in-scope server.
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "mcp_work_notes",
            "mcp_work_leak",
            "mcp_work_inject",
            "submit_review"
        ]
    );

    // Every forbidden call came back refused.
    let first = tool_results(bodies[1]);
    assert_eq!(first.len(), 4, "{first:#?}");
    for r in &first {
        assert!(r.starts_with("TOOL_NOT_ALLOWED"), "{r}");
    }
    assert!(first[0].contains("destructive"), "{}", first[0]);

    // The secret-holding output reached the model redacted and framed; the
    // injection sits inside the untrusted frame.
    let second = tool_results(bodies[2]);
    assert_eq!(second.len(), 6, "{second:#?}");
    let (leak, inject) = (&second[4], &second[5]);
    for secret in SECRETS {
        assert!(
            !bodies[2].to_string().contains(secret),
            "{secret} reached the model"
        );
    }
    assert!(leak.contains("[REDACTED:github_token]"), "{leak}");
    assert!(leak.contains("region us-east-1"), "{leak}");
    let nonce = inject
        .split("<untrusted-data-")
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap()
        .to_owned();
    assert_eq!(nonce.len(), 16);
    let open = inject
        .find(&format!("\n<untrusted-data-{nonce}>\n"))
        .unwrap();
    let close = inject
        .rfind(&format!("\n</untrusted-data-{nonce}>"))
        .unwrap();
    let attack = inject.find("ignore all previous instructions").unwrap();
    assert!(open < attack && attack < close, "{inject}");
    assert!(inject.contains("not instructions"), "{inject}");

    // The 8th call is past max_tool_calls = 7.
    let third = tool_results(bodies[3]);
    assert!(!third[6].starts_with("LIMIT_EXCEEDED"), "{}", third[6]);
    assert!(third[7].starts_with("LIMIT_EXCEEDED"), "{}", third[7]);

    // What the servers actually ran.
    assert!(!work_dir.join("wiped").exists(), "the destructive tool ran");
    assert_eq!(ran(&work_dir), ["leak", "inject", "notes"]);
    assert!(
        ran(&ops_dir).is_empty(),
        "the out-of-scope server was asked"
    );

    // The audit log, one line per call the model asked for.
    let events = read_audit_log(dir.join("audit.jsonl")).unwrap();
    let mut statuses: Vec<AuditStatus> = events.iter().map(|e| e.status).collect();
    // The loop runs one turn's calls at once: the refused 8th call can be
    // written before the 7th finishes.
    statuses[6..].sort_by_key(|s| s.as_str());
    use AuditStatus::*;
    assert_eq!(
        statuses,
        [
            NotAllowed,
            NotAllowed,
            NotAllowed,
            NotAllowed,
            Ok,
            Ok,
            LimitExceeded,
            Ok
        ]
    );
    let leak = events.iter().find(|e| e.tool == "leak").unwrap();
    assert!(leak.redactions >= 6, "{leak:?}");
    assert!(events
        .iter()
        .all(|e| e.server.as_deref() != Some("ops") || e.status == NotAllowed));

    // Nothing stored in the session holds a secret.
    for file in walk(&dir) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for secret in SECRETS {
            assert!(!text.contains(secret), "{secret} in {}", file.display());
        }
    }
}
