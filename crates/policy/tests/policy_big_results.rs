//! Big results against a hostile server (the demo server's `big` tool: 50
//! MB of filler, then the line that matters, with a secret in it): the
//! model and the host see the head and the tail with one marker between
//! them, the whole redacted result is kept (0600, in the `result_dir`) and
//! pages back with `read_result`, and nothing is kept when a result fits.

use mcpmux_test_support as common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use mcpmux_core::{CallOptions, Config, Hub};
use mcpmux_policy::{PolicySettings, SessionPolicy};
use serde_json::{json, Value};

const FILLER: u64 = 50 * 1000 * 1000;
const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ0123456789";

fn big_args() -> Value {
    json!({"bytes": FILLER, "tail": format!("\nERROR: disk full (token {TOKEN})")})
}

fn setup() -> Config {
    mcpmux_policy::register_config_layer();
    common::config(&[demo_entry(
        "demo",
        "max_message_bytes = 67108864\nallow_tools = [\"big\", \"echo\"]\n",
    )])
}

fn policy(config: &Config, dir: Option<&std::path::Path>) -> SessionPolicy {
    let settings = PolicySettings {
        max_output_bytes: Some(3000),
        result_dir: dir.map(|d| d.join("results")),
        ..Default::default()
    };
    SessionPolicy::new(config, settings, None).unwrap()
}

/// The id the marker names.
fn marker_id(text: &str) -> String {
    let at = text.find("read_result id=").expect(text) + "read_result id=".len();
    text[at..at + 32].to_owned()
}

fn kept_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("results"))
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_sees_head_and_tail_and_pages_the_whole() {
    let config = setup();
    let hub = Hub::connect(config.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&config, Some(dir.path()));
    policy.offered(&hub.list_tools());

    let r = policy.call(&hub, "mcp_demo_big", &big_args()).await;
    assert!(!r.is_error, "{}", &r.content[..200.min(r.content.len())]);
    assert!(r.content.len() < 4000, "{} bytes shown", r.content.len());
    assert!(
        r.content
            .contains("ERROR: disk full (token [REDACTED:github_token])"),
        "the tail is shown: {}",
        r.content
    );
    assert!(
        r.content.contains("[output truncated by mcpmux: "),
        "{}",
        r.content
    );
    assert!(!r.content.contains(TOKEN));
    let id = marker_id(&r.content);
    // Also said outside the untrusted frame, where a server cannot write.
    assert!(
        r.content.starts_with(&format!(
            "The output was cut at max_output_bytes; the whole ({} bytes) is kept: read_result with id {id}.\n",
            FILLER + 49
        )),
        "{}",
        &r.content[..300]
    );

    // Kept whole, redacted, private.
    let files = kept_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let md = std::fs::metadata(&files[0]).unwrap();
    assert_eq!(md.permissions().mode() & 0o777, 0o600);
    let total = md.len();
    assert!(total > FILLER, "{total}");
    let mode = std::fs::metadata(dir.path().join("results")).unwrap();
    assert_eq!(mode.permissions().mode() & 0o777, 0o700);

    // The last page, as the model asks for it.
    let page = policy
        .read_result_args(&json!({"id": id, "offset": total - 100}))
        .unwrap();
    assert!(page.text.ends_with("[REDACTED:github_token])"), "{page:?}");
    assert_eq!(page.next_offset, None);
    let shown = policy.read_result_for_model(&json!({"id": id, "offset": 0, "length": 1_000_000}));
    assert!(!shown.is_error, "{shown:?}");
    assert!(
        shown.content.contains("next: read_result with offset 3000"),
        "{}",
        &shown.content[..300]
    );
    // Nothing outside the store, whatever the id says.
    let bad = policy.read_result_for_model(&json!({"id": "../../etc/passwd"}));
    assert!(
        bad.is_error && bad.content.starts_with("INVALID_INPUT"),
        "{bad:?}"
    );

    // A result that fits is not kept.
    let small = policy
        .call(&hub, "mcp_demo_echo", &json!({"text": "hi"}))
        .await;
    assert!(!small.content.contains("output truncated"), "{small:?}");
    assert_eq!(kept_files(dir.path()).len(), 1);
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hosts_get_head_and_tail_and_nothing_kept_without_a_result_dir() {
    let config = setup();
    let hub = Hub::connect(config.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let without = policy(&config, None);
    let r = without
        .call_for_host(
            &hub,
            "mcp_demo_big",
            Some(&big_args()),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let text = r.value()["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.len() < 3500, "{}", text.len());
    assert!(
        text.ends_with("ERROR: disk full (token [REDACTED:github_token])"),
        "{text}"
    );
    assert!(text.contains("the whole result is not kept]"), "{text}");
    assert!(kept_files(dir.path()).is_empty());

    let with = policy(&config, Some(dir.path()));
    let r = with
        .call_for_host(
            &hub,
            "mcp_demo_big",
            Some(&big_args()),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let text = r.value()["content"][0]["text"].as_str().unwrap().to_owned();
    let id = marker_id(&text);
    let page = with.read_result(&id, FILLER - 2, Some(20)).unwrap();
    assert_eq!(page.text, "xx\nERROR: disk full ");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_content_over_the_cap_comes_as_its_cut_json_text() {
    let config = setup();
    let hub = Hub::connect(config.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&config, Some(dir.path()));
    let args = json!({"bytes": 5_000_000, "tail": "\"end\\", "structured": true});
    let r = policy
        .call_for_host(&hub, "mcp_demo_big", Some(&args), &CallOptions::default())
        .await
        .unwrap()
        .value();
    assert!(
        r.get("structuredContent").is_none(),
        "{}",
        &r.to_string()[..300]
    );
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 3500, "{}", text.len());
    assert!(
        text.starts_with("[structuredContent, as JSON text, cut by mcpmux]\n{\"log\":\"xxx"),
        "{text}"
    );
    // The tail of the JSON text, escapes and all.
    assert!(text.ends_with("xx\\\"end\\\\\"}"), "{text}");
    let id = marker_id(text);
    let whole = with_whole(&policy, &id);
    let v: Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(v["log"].as_str().unwrap().len(), 5_000_000 + 5);
    // The model sees the same JSON text, cut the same way.
    policy.offered(&hub.list_tools());
    let m = policy.call(&hub, "mcp_demo_big", &args).await;
    assert!(
        m.content.contains("{\"log\":\"xxx") && m.content.contains("[output truncated by mcpmux: "),
        "{}",
        &m.content[..400]
    );
    hub.close().await;
}

/// The whole kept result `id`, page by page.
fn with_whole(policy: &SessionPolicy, id: &str) -> String {
    let mut whole = String::new();
    let mut offset = 0;
    loop {
        let page = policy.read_result(id, offset, None).unwrap();
        whole.push_str(&page.text);
        match page.next_offset {
            Some(n) => offset = n,
            None => return whole,
        }
    }
}
