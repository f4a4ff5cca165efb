//! One slow server never holds up the others: the listing commands list
//! what is up within the startup bound and name what is still starting,
//! and the gateway answers `initialize` while a server never answers its
//! own.

mod common;

use common::raw_gateway::Raw;
use common::*;
use serde_json::json;

/// The demo server and one that never answers `initialize`.
fn with_a_hung_server() -> Sandbox {
    Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("demo", "allow_all = true"),
        // Longer than any wait of the harness: only a bounded startup
        // answers in time.
        python_entry("stuck", "hang_in_init.py", "timeout_seconds = 600")
    ))
}

#[test]
fn listings_show_what_is_up_and_name_the_server_still_starting() {
    let sb = with_a_hung_server();
    let out = sb
        .mcpmux(&["--json", "--startup-timeout", "1", "servers"])
        .run();
    out.ok();
    let servers = out.json();
    let state = |name: &str| {
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["state"].clone())
    };
    assert_eq!(state("demo"), Some(json!("connected")), "{out}");
    assert_eq!(state("stuck"), Some(json!("starting")), "{out}");

    let out = sb
        .mcpmux(&["--json", "--startup-timeout", "1", "tools"])
        .run();
    out.expect_exit(0);
    let names: Vec<String> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"mcp_demo_echo".to_owned()), "{out}");
    assert!(
        out.stderr.contains("still starting") && out.stderr.contains("stuck"),
        "{out}"
    );
    let out = sb
        .mcpmux(&["--json", "--startup-timeout", "1", "prompts"])
        .run();
    out.expect_exit(0);
    assert!(out.stderr.contains("stuck"), "{out}");
}

#[test]
fn a_bad_startup_timeout_is_invalid_input() {
    let sb = with_a_hung_server();
    let out = sb.mcpmux(&["--startup-timeout", "nan", "servers"]).run();
    let msg = out.fails_with("INVALID_INPUT");
    assert_mentions(&msg, &["--startup-timeout"], &out);
}

#[test]
fn the_gateway_answers_initialize_while_a_server_hangs_in_its_own() {
    let sb = with_a_hung_server();
    // Raw::start sends initialize and waits for its answer (the harness
    // fails the test if it never comes).
    let mut gw = Raw::start(&sb, &[]);
    let tools = gw.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp_demo_echo"), "{tools}");
}

#[test]
fn a_server_that_comes_up_after_initialize_is_announced_with_list_changed() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        demo_entry("demo", "allow_all = true"),
        python_entry(
            "late",
            "slow_init.py",
            "allow_tools = [\"noop\"]\nconfirm_read_only = [\"noop\"]\nenv = { INIT_DELAY_MS = \"6000\" }"
        )
    ));
    let mut gw = Raw::start(&sb, &[]);
    let first = gw.request("tools/list", json!({}));
    let names = |answer: &serde_json::Value| -> Vec<String> {
        answer["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(
        names(&first).contains(&"mcp_demo_echo".to_owned()),
        "{first}"
    );
    assert!(
        !names(&first).contains(&"mcp_late_noop".to_owned()),
        "{first}"
    );
    gw.notification("notifications/tools/list_changed");
    let later = gw.request("tools/list", json!({}));
    assert!(
        names(&later).contains(&"mcp_late_noop".to_owned()),
        "{later}"
    );
}
