//! `review-impl` reads the changes with git (`working-tree`: `git diff HEAD`
//! plus untracked files; `branch`: the diff from the merge base), and a
//! review whose tools come from `@modelcontextprotocol/server-everything`.

use mcpmux_test_support as common;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use mcpmux_core::Config;
use mcpmux_sessions::{self as session, HostCallback, Runner, SessionContext};
use serde_json::{json, Value};

/// `Config::parse` with the policy's and the sessions' config keys
/// registered, as every front end has them.
fn parse(text: &str) -> Result<Config, mcpmux_core::Error> {
    mcpmux_sessions::register_config_layers();
    Config::parse(text)
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn host(answer: Value) -> SessionContext {
    let cb: HostCallback = Arc::new(move |_req: Value| {
        let a = answer.clone();
        Box::pin(async move { Ok(a) })
    });
    common::private_state();
    SessionContext {
        config: Some(parse("[session]\nreviewer = \"host\"\n").unwrap()),
        host: Some(session::host_provider(cb)),
        runner: Runner::InProcess,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impl_reviews_read_git_changes() {
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    git(r, &["init", "-q"]);
    std::fs::write(r.join("lib.rs"), "fn a() {}\n").unwrap();
    git(r, &["add", "."]);
    git(r, &["commit", "-qm", "base"]);
    git(r, &["checkout", "-qb", "feature"]);
    std::fs::write(r.join("lib.rs"), "fn a() {}\nfn committed_on_branch() {}\n").unwrap();
    git(r, &["commit", "-qam", "feature work"]);
    std::fs::write(
        r.join("lib.rs"),
        "fn a() {}\nfn committed_on_branch() {}\nfn uncommitted() {}\n",
    )
    .unwrap();
    std::fs::write(r.join("new_file.rs"), "x").unwrap();

    let ctx = host(json!(
        "```json\n{\"verdict\": \"APPROVE\", \"blocks\": []}\n```"
    ));
    let b = session::begin(&ctx, &json!({"skill": "review-impl", "mode": "working-tree", "input": "USER_REQUEST: add fns", "working_dir": r})).await.unwrap();
    let dir = b["session_dir"].as_str().unwrap();
    let prompt = std::fs::read_to_string(Path::new(dir).join("round-001/prompt.md")).unwrap();
    assert!(prompt.contains("+fn uncommitted() {}"), "{prompt}");
    assert!(!prompt.contains("+fn committed_on_branch"), "{prompt}");
    assert!(prompt.contains("- new_file.rs"), "{prompt}");
    assert!(prompt.contains("add fns"));
    assert!(!prompt.contains(".mcpmux"), "{prompt}");

    let b = session::begin(&ctx, &json!({"skill": "review-impl", "mode": "branch", "input": "USER_REQUEST: add fns", "working_dir": r})).await.unwrap();
    let prompt = std::fs::read_to_string(
        Path::new(b["session_dir"].as_str().unwrap()).join("round-001/prompt.md"),
    )
    .unwrap();
    assert!(prompt.contains("+fn committed_on_branch() {}"), "{prompt}");
    assert!(prompt.contains("Base: main"), "{prompt}");
    // An explicit BASE that does not exist is named.
    let e = session::begin(&ctx, &json!({"skill": "review-impl", "mode": "branch", "input": "---\nBASE: nope\nUSER_REQUEST: x\n---\n", "working_dir": r})).await.unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("nope"), "{e}");
    let e = session::begin(&ctx, &json!({"skill": "review-impl", "mode": "sideways", "input": "USER_REQUEST: x", "working_dir": r})).await.unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("sideways"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_as_review_tools() {
    let wd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    let log = seen.clone();
    let cb: HostCallback = Arc::new(move |req: Value| {
        let turn = {
            let mut l = log.lock().unwrap();
            l.push(req);
            l.len()
        };
        Box::pin(async move {
            Ok(match turn {
                1 => json!({"tool_calls": [
                    {"id": "e1", "name": "mcp_everything_echo", "arguments": {"message": "from-the-reviewer"}},
                    {"id": "e2", "name": "mcp_everything_get-sum", "arguments": {"a": 1, "b": 2}}
                ]}),
                _ => {
                    json!({"tool_calls": [{"id": "s", "name": "submit_review", "arguments": {"verdict": "APPROVE", "blocks": []}}]})
                }
            })
        })
    });
    let text = format!(
        "{}\n[session]\nreviewer = \"host\"\n",
        common::stdio_entry(
            "everything",
            "node",
            &[&common::everything_entry(), "stdio"],
            "allow_tools = [\"echo\", \"get-sum\"]\nconfirm_read_only = [\"echo\", \"get-sum\"]"
        )
    );
    common::private_state();
    let ctx = SessionContext {
        config: Some(parse(&text).unwrap()),
        host: Some(session::host_provider(cb)),
        runner: Runner::InProcess,
    };
    let b = session::begin(
        &ctx,
        &json!({"skill": "review-think", "input": "Is 1+2 three?", "working_dir": wd.path()}),
    )
    .await
    .unwrap();
    let dir = b["session_dir"].as_str().unwrap().to_owned();
    let mut w = Value::Null;
    for _ in 0..30 {
        w = session::wait(&ctx, &json!({"session_dir": dir, "max_wait_seconds": 5}))
            .await
            .unwrap();
        if w["status"] != "running" {
            break;
        }
    }
    assert_eq!(w["status"], "completed", "{w:#}");
    let seen = seen.lock().unwrap();
    let names: Vec<String> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "mcp_everything_echo"),
        "{names:?}"
    );
    let results = &seen[1]["messages"][2]["tool_results"];
    assert_eq!(results[0]["is_error"], false, "{results}");
    assert_eq!(results[1]["is_error"], false, "{results}");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("from-the-reviewer"),
        "{results}"
    );
    assert!(
        results[1]["content"].as_str().unwrap().contains('3'),
        "{results}"
    );
}
