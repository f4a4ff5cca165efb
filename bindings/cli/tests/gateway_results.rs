//! `mcpmux gateway` with a hostile server's 50 MB result: the client gets
//! its head and tail with one marker (the config's `max_output_bytes`),
//! and pages the whole, redacted, with the gateway's `read_result` tool and
//! the `mcpmux://results/<id>` resource; no server is asked for them.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::raw_gateway::Raw;
use common::*;
use serde_json::{json, Value};

const FILLER: u64 = 50 * 1000 * 1000;
const TAIL: &str = "\nERROR: disk full (token ghp_0123456789abcdefghijABCDEFGHIJ0123456789)";
const REDACTED_TAIL: &str = "\nERROR: disk full (token [REDACTED:github_token])";

fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "{}",
                answer.to_string().chars().take(400).collect::<String>()
            )
        })
        .to_owned()
}

#[test]
fn a_50_mb_result_is_cut_to_head_and_tail_and_paged_back() {
    let sb = Sandbox::new();
    let results = sb.path().join("kept");
    sb.write(
        "mcpmux.toml",
        &format!(
            "[session]\nmax_output_bytes = 3000\n\n{}",
            demo_entry(
                "demo",
                "allow_tools = [\"big\", \"echo\"]\nmax_message_bytes = 67108864"
            )
        ),
    );
    let mut gw = Raw::start(&sb, &["--result-dir", results.to_str().unwrap()]);
    let tools = gw.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_result"), "{names:?}");

    let small = gw.request(
        "tools/call",
        json!({"name": "mcp_demo_echo", "arguments": {"text": "hi"}}),
    );
    assert!(!text_of(&small).contains("output truncated"));
    assert!(
        std::fs::read_dir(&results).unwrap().next().is_none(),
        "a result that fits is not kept"
    );

    let big = gw.request(
        "tools/call",
        json!({"name": "mcp_demo_big", "arguments": {"bytes": FILLER, "tail": TAIL}}),
    );
    let text = text_of(&big);
    assert!(text.len() < 3500, "{} bytes", text.len());
    assert!(text.ends_with(REDACTED_TAIL), "the tail is shown: {text}");
    assert!(text.contains("[output truncated by mcpmux: "), "{text}");
    let at = text.find("read_result id=").expect(&text) + "read_result id=".len();
    let id = &text[at..at + 32];
    let total = FILLER + REDACTED_TAIL.len() as u64;

    let kept: Vec<_> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1);
    let md = std::fs::metadata(&kept[0]).unwrap();
    assert_eq!((md.permissions().mode() & 0o777, md.len()), (0o600, total));

    let page = gw.request(
        "tools/call",
        json!({"name": "read_result", "arguments": {"id": id, "offset": FILLER - 3}}),
    );
    assert_eq!(text_of(&page), format!("xxx{REDACTED_TAIL}"));
    assert_eq!(page["result"]["structuredContent"]["total"], total);
    assert_eq!(
        page["result"]["structuredContent"]["next_offset"],
        Value::Null
    );
    let first = gw.request(
        "tools/call",
        json!({"name": "read_result", "arguments": {"id": id, "length": 100000}}),
    );
    assert_eq!(
        text_of(&first).len(),
        3000,
        "pages are at most max_output_bytes"
    );
    assert_eq!(first["result"]["structuredContent"]["next_offset"], 3000);
    let bad = gw.request(
        "tools/call",
        json!({"name": "read_result", "arguments": {"id": "../mcpmux.toml"}}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(text_of(&bad).starts_with("INVALID_INPUT"), "{bad}");

    let uri = format!("mcpmux://results/{id}?offset={}", FILLER - 3);
    let res = gw.request("resources/read", json!({"uri": uri}));
    assert_eq!(
        res["result"]["contents"][0]["text"],
        format!("xxx{REDACTED_TAIL}"),
        "{res}"
    );
    let res = gw.request(
        "resources/read",
        json!({"uri": format!("mcpmux://results/{id}")}),
    );
    assert_eq!(
        res["result"]["contents"][0]["text"].as_str().unwrap().len(),
        1 << 20
    );
    assert_eq!(
        res["result"]["contents"][0]["_meta"]["next_offset"],
        1 << 20
    );
    let res = gw.request("resources/read", json!({"uri": "mcpmux://results/../../x"}));
    assert!(res["error"].is_object(), "{res}");
}

#[test]
fn without_max_output_bytes_nothing_is_cut_or_offered() {
    let sb = Sandbox::new();
    sb.write(
        "mcpmux.toml",
        &demo_entry("demo", "allow_tools = [\"big\"]"),
    );
    let mut gw = Raw::start(&sb, &[]);
    let tools = gw.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mcp_demo_big"]);
}

#[test]
fn without_result_dir_results_go_to_a_temporary_directory() {
    let sb = Sandbox::new();
    sb.write(
        "mcpmux.toml",
        &format!(
            "[session]\nmax_output_bytes = 100\n\n{}",
            demo_entry("demo", "allow_tools = [\"big\"]")
        ),
    );
    let mut gw = Raw::start(&sb, &["--frame-output"]);
    let big = gw.request(
        "tools/call",
        json!({"name": "mcp_demo_big", "arguments": {"bytes": 1000, "tail": "\nLAST"}}),
    );
    let text = text_of(&big);
    assert!(text.contains("\nLAST\n</untrusted-data-"), "{text}");
    let at = text.find("read_result id=").expect(&text) + "read_result id=".len();
    let id = &text[at..at + 32];
    let page = gw.request(
        "tools/call",
        json!({"name": "read_result", "arguments": {"id": id, "offset": 998}}),
    );
    let page = text_of(&page);
    assert!(
        page.contains("<untrusted-data-") && page.contains("\nxx\nLAST\n"),
        "{page}"
    );
}
