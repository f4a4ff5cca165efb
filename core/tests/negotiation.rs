//! Protocol-version negotiation with servers that support only 2024-11-05.

mod common;

use common::*;
use mcpmux_core::{CallOptions, Hub};

/// Failure tests: a failed server stays failed (restarts are tested in
/// `supervision.rs`).
fn config(entries: &[String]) -> mcpmux_core::Config {
    config_without_restarts(entries)
}

async fn connect(mode: &str, extra: &str) -> Hub {
    let entry = script_entry(
        "old",
        "old_version.py",
        &format!("env = {{ VERSION_MODE = {} }}\n{extra}", q(mode)),
    );
    Hub::connect(config(&[entry])).await.unwrap()
}

#[tokio::test]
async fn accepts_an_older_version_the_server_answers_with() {
    let hub = connect("counter", "").await;
    let s = &hub.servers()[0];
    assert_eq!(s.state, "connected", "{s:?}");
    assert_eq!(s.protocol_version.as_deref(), Some("2024-11-05"));
    let r = hub
        .call_tool("mcp_old_version", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(r.json().contains("2024-11-05"));
    hub.close().await;
}

#[tokio::test]
async fn offers_older_versions_when_the_server_refuses() {
    let hub = connect("refuse", "").await;
    let s = &hub.servers()[0];
    assert_eq!(s.state, "connected", "{s:?}");
    assert_eq!(s.protocol_version.as_deref(), Some("2024-11-05"));
    hub.close().await;
}

#[tokio::test]
async fn a_pinned_version_is_not_negotiated_down() {
    let hub = connect("refuse", "protocol_version = \"2025-06-18\"").await;
    let s = &hub.servers()[0];
    assert_eq!(s.state, "failed");
    assert!(
        s.error
            .as_deref()
            .unwrap()
            .contains("Unsupported protocol version"),
        "{s:?}"
    );
    hub.close().await;
}

#[tokio::test]
async fn an_unknown_answered_version_fails_the_connection() {
    let hub = connect("bogus", "").await;
    let s = &hub.servers()[0];
    assert_eq!(s.state, "failed");
    assert_eq!(s.error_code, Some("CONNECT_FAILED"));
    assert!(s.error.as_deref().unwrap().contains("1999-01-01"), "{s:?}");
    hub.close().await;
}

#[tokio::test]
async fn pinned_stateless_revision_fails_when_the_server_lacks_it() {
    let hub = Hub::connect(config(&[demo_entry(
        "demo",
        "protocol_version = \"2026-07-28\"",
    )]))
    .await
    .unwrap();
    let s = &hub.servers()[0];
    assert_eq!(s.state, "failed");
    assert!(s.error.as_deref().unwrap().contains("2026-07-28"), "{s:?}");
    hub.close().await;
}
