//! [`SessionPolicy`] on a hub without servers: limits, refusals and the
//! audit trail (the paths where the server is never asked). Calls that reach
//! a real server are in `core/tests/policy_*.rs`.

use super::*;
use serde_json::json;

async fn empty_hub() -> Hub {
    let config = Config::default();
    Hub::connect(config).await.unwrap()
}

#[tokio::test]
async fn every_call_counts_and_the_limit_holds() {
    let hub = empty_hub().await;
    let settings = PolicySettings {
        max_tool_calls: Some(2),
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let policy = SessionPolicy::new(&Config::default(), settings, Some(path.clone())).unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    policy.on_audit(move |e| sink.lock().unwrap().push(e.status));
    let args = json!({"password": "hunter2-do-not-log"});
    let r1 = policy.call(&hub, "mcp_x_y", &args).await;
    assert!(
        r1.is_error && r1.content.starts_with("TOOL_NOT_ALLOWED"),
        "{r1:?}"
    );
    let r2 = policy.call(&hub, "mcp_x_y", &args).await;
    assert!(r2.content.starts_with("TOOL_NOT_ALLOWED"), "{r2:?}");
    let r3 = policy.call(&hub, "mcp_x_y", &args).await;
    assert!(
        r3.is_error && r3.content.starts_with("LIMIT_EXCEEDED"),
        "{r3:?}"
    );
    assert_eq!(policy.calls_made(), 3);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            AuditStatus::NotAllowed,
            AuditStatus::NotAllowed,
            AuditStatus::LimitExceeded
        ]
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains("hunter2"), "{text}");
    let events = read_audit_log(&path).unwrap();
    assert_eq!(events[2].status, AuditStatus::LimitExceeded);
    assert_eq!(events[0].server, None);
    assert_eq!(events[0].tool, "mcp_x_y");
    assert_eq!(events, policy.audit_events());

    // A resumed round starts from the calls already made.
    let again = SessionPolicy::new(
        &Config::default(),
        PolicySettings {
            max_tool_calls: Some(2),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    again.set_calls_made(2);
    let r = again.call(&hub, "mcp_x_y", &json!({})).await;
    assert!(r.content.starts_with("LIMIT_EXCEEDED"), "{r:?}");
}

#[tokio::test]
async fn host_calls_get_errors_with_codes() {
    let hub = empty_hub().await;
    let policy = Arc::new(
        SessionPolicy::new(
            &Config::default(),
            PolicySettings {
                max_tool_calls: Some(1),
                ..Default::default()
            },
            None,
        )
        .unwrap(),
    );
    let opts = CallOptions::default().with_policy(policy.clone());
    let e = hub.call_tool("mcp_x_y", None, &opts).await.unwrap_err();
    assert_eq!(e.code(), "TOOL_NOT_ALLOWED");
    let e = hub.call_tool("mcp_x_y", None, &opts).await.unwrap_err();
    assert_eq!(e.code(), "LIMIT_EXCEEDED");
    assert_eq!(policy.audit_events().len(), 2);
}

#[test]
fn bad_server_keys_fail_the_policy_and_the_config() {
    crate::register_config_layer();
    let e =
        Config::parse("[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nallow_tools = \"read\"\n")
            .unwrap_err();
    assert_eq!(e.code(), "CONFIG_INVALID");
    assert!(e.to_string().contains("'allow_tools'"), "{e}");
}

#[test]
fn host_results_are_capped_across_text_blocks() {
    let mut v = json!({"content": [
        {"type": "text", "text": "12345"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "67890"},
        {"type": "text", "text": "abc"}
    ]});
    // 13 bytes in all: head 5 ("12345"), tail 2 ("bc").
    cap_text_blocks(&mut v, 7);
    let first = v["content"][0]["text"].as_str().unwrap();
    assert!(
        first.starts_with("12345\n[output truncated by mcpmux: 6 of 13"),
        "{first}"
    );
    assert_eq!(v["content"][2]["text"], "");
    assert_eq!(v["content"][3]["text"], "bc");
    assert_eq!(v["content"][1]["data"], "AAAA");
}

#[test]
fn read_result_for_a_model_counts_toward_max_tool_calls() {
    let dir = tempfile::tempdir().unwrap();
    let settings = PolicySettings {
        max_tool_calls: Some(1),
        result_dir: Some(dir.path().join("results")),
        ..Default::default()
    };
    let policy = SessionPolicy::new(&Config::default(), settings, None).unwrap();
    let id = policy.result_store().unwrap().keep("the whole").unwrap();
    let first = policy.read_result_for_model(&json!({"id": id}));
    assert!(
        !first.is_error && first.content.contains("the whole"),
        "{first:?}"
    );
    assert!(first
        .content
        .starts_with("Bytes 0..9 of 9 of the kept result; this is the end."));
    let second = policy.read_result_for_model(&json!({"id": id}));
    assert!(
        second.is_error && second.content.starts_with("LIMIT_EXCEEDED"),
        "{second:?}"
    );
    assert_eq!(policy.calls_made(), 2);
    // Hosts and the gateway page without counting.
    assert_eq!(policy.read_result(&id, 4, None).unwrap().text, "whole");
    let none = SessionPolicy::new(&Config::default(), PolicySettings::default(), None).unwrap();
    let e = none.read_result(&id, 0, None).unwrap_err();
    assert!(e.to_string().contains("no result_dir"), "{e}");
}
