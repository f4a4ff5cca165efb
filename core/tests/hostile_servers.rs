//! Hostile stdio servers cost bounded memory: each case ends with a clear
//! error code, the test process stays under [`RSS_LIMIT_MB`] of resident
//! memory, and no server process is left behind.
//!
//! The tests run one at a time (they measure the memory of the whole test
//! process) and reset the process's peak RSS before each case.

mod common;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use mcpmux_core::MAX_SERVER_REQUESTS;
use mcpmux_core::{CallOptions, ClientHandlers, Hub, HubOptions, RequestHandler, ServerStatus};
use serde_json::Value;

/// Failure tests: a failed server stays failed (restarts are tested in
/// `supervision.rs`).
fn config(entries: &[String]) -> mcpmux_core::Config {
    config_without_restarts(entries)
}

/// Most resident memory a hostile server may cost the process.
const RSS_LIMIT_MB: u64 = 200;
/// Only catches hangs: every case ends far sooner when it holds.
const HANG: Duration = Duration::from_secs(120);

/// One case at a time: the memory measured is the whole process's.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Starts a case: takes the serial lock and resets the peak RSS.
async fn start_case() -> tokio::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().await;
    // "5" resets VmHWM to the current RSS (Linux >= 4.0); where it cannot,
    // the peak since the start of the process is checked, which is stricter.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    guard
}

/// A `/proc/self/status` field in MiB.
fn status_mb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("cannot read {line:?}"));
    kb / 1024
}

fn assert_memory_bounded(case: &str) {
    let peak = status_mb("VmHWM:");
    let now = status_mb("VmRSS:");
    eprintln!("{case}: peak RSS {peak} MiB, now {now} MiB");
    assert!(
        peak < RSS_LIMIT_MB,
        "{case}: peak RSS {peak} MiB (now {now} MiB) passed {RSS_LIMIT_MB} MiB"
    );
}

async fn no_hang<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(HANG, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no end within {HANG:?}"))
}

fn status(hub: &Hub, name: &str) -> ServerStatus {
    hub.servers().into_iter().find(|s| s.name == name).unwrap()
}

/// Closes the hub and checks that no marked process is left.
async fn close_and_check(hub: Hub, tag: &str) {
    no_hang("close", hub.close()).await;
    let end = Instant::now() + Duration::from_secs(10);
    while !pids_with(tag).is_empty() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pids_with(tag), Vec::<u32>::new(), "processes left behind");
}

/// An entry for hostile script `script` with `env` (TOML key = "value"
/// pairs) and more `extra` lines; its processes are marked with `tag`.
fn hostile(name: &str, script: &str, tag: &str, env: &str, extra: &str) -> String {
    let env = format!("env = {{ MCPMUX_TEST_MARKER = {}{env} }}", q(tag));
    script_entry(name, script, &format!("{env}\n{extra}"))
}

/// The error of a listing that must fail (without printing what it listed).
fn listing_error(result: Result<Vec<Value>, mcpmux_core::Error>, what: &str) -> mcpmux_core::Error {
    match result {
        Ok(items) => panic!("{what}: listed {} items instead of failing", items.len()),
        Err(e) => e,
    }
}

fn text(result: &mcpmux_core::ToolResult) -> String {
    result.value()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_server_that_floods_pings_and_never_reads_is_failed() {
    let _case = start_case().await;
    let tag = marker("flood");
    // 8000 pings with 64 KiB ids: 512 MiB of answers if they were all kept.
    let entry = hostile("flood", "flood_pings.py", &tag, "", "timeout_seconds = 30");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let e = no_hang(
        "call",
        hub.call_tool("mcp_flood_flood", None, &CallOptions::default()),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_CLOSED", "{e}");
    assert!(e.to_string().contains("does not read its stdin"), "{e}");
    assert!(e.to_string().contains("flood"), "{e}");
    let state = status(&hub, "flood");
    assert_eq!(state.state, "failed");
    assert_eq!(state.error_code, Some("TRANSPORT_CLOSED"));
    assert_memory_bounded("ping flood");
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn a_storm_of_list_changed_refreshes_the_tools_a_few_times() {
    let _case = start_case().await;
    let tag = marker("storm");
    let entry = hostile("storm", "list_changed_storm.py", &tag, "", "");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let sent = no_hang(
        "storm",
        hub.call_tool("mcp_storm_storm", None, &CallOptions::default()),
    )
    .await
    .unwrap();
    assert_eq!(text(&sent), "sent 1000000");
    let count = no_hang(
        "count",
        hub.call_tool("mcp_storm_count", None, &CallOptions::default()),
    )
    .await
    .unwrap();
    let listed: u64 = text(&count).parse().unwrap();
    eprintln!("1000000 list_changed notifications: {listed} tools/list requests");
    // One refresh runs at a time and one more waits: a refresh per round
    // trip at most, never one per notification.
    assert!(
        (1..100_000).contains(&listed),
        "{listed} tools/list requests for 1000000 notifications"
    );
    assert_eq!(status(&hub, "storm").state, "connected");
    assert!(hub.tool("mcp_storm_count").is_some());
    assert_memory_bounded("list_changed storm");
    close_and_check(hub, &tag).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_while_connecting_never_loses_the_tools() {
    let _case = start_case().await;
    // The refresh that `list_changed` starts and the connect that follows
    // both rebuild the tool list, on different threads: whichever order
    // they finish in, the server's tools must be listed once it is
    // connected.
    for round in 0..20 {
        let tag = marker(&format!("early-{round}"));
        let env = ", LIST_CHANGED_AT_START = \"3\"";
        let entry = hostile("early", "list_changed_storm.py", &tag, env, "");
        let hub = Hub::connect(config(&[entry])).await.unwrap();
        assert_eq!(status(&hub, "early").state, "connected");
        let count = no_hang(
            "count",
            hub.call_tool("mcp_early_count", None, &CallOptions::default()),
        )
        .await
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(text(&count).parse::<u64>().unwrap() >= 1);
        close_and_check(hub, &tag).await;
    }
}

/// A server whose `list` never ends, in `mode`; `pages` ends it after that
/// many pages (so code without bounds gets an answer, not a hang).
fn endless(tag: &str, list: &str, mode: &str, pages: u32, extra: &str) -> String {
    let env = format!(
        ", ENDLESS_LIST = {}, ENDLESS_MODE = {}, ENDLESS_PAGES = \"{pages}\"",
        q(list),
        q(mode)
    );
    hostile("pages", "endless_pages.py", tag, &env, extra)
}

fn assert_failed_with(hub: &Hub, needle: &str) {
    let state = status(hub, "pages");
    assert_eq!(state.state, "failed", "{state:?}");
    assert_eq!(state.error_code, Some("PROTOCOL_ERROR"), "{state:?}");
    let error = state.error.unwrap_or_default();
    assert!(error.contains(needle), "{error}");
}

#[tokio::test]
async fn endless_tool_pages_fail_the_server_at_the_item_limit() {
    let _case = start_case().await;
    let tag = marker("tool-pages");
    // 1000 tools a page for 300 pages: 300,000 tools without a bound.
    let entry = endless(&tag, "tools/list", "items", 300, "");
    let hub = no_hang("connect", Hub::connect(config(&[entry])))
        .await
        .unwrap();
    assert_failed_with(&hub, "more than 100000 items");
    assert_eq!(hub.list_tools().len(), 0);
    assert_memory_bounded("endless tools/list");
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn endless_template_pages_fail_the_server_at_the_item_limit() {
    let _case = start_case().await;
    let tag = marker("template-pages");
    let entry = endless(&tag, "resources/templates/list", "items", 300, "");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let listed = no_hang("list", hub.list_resource_templates(Some("pages"))).await;
    let e = listing_error(listed, "resources/templates/list");
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("more than 100000 items"), "{e}");
    assert_failed_with(&hub, "more than 100000 items");
    assert_memory_bounded("endless resources/templates/list");
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn a_page_of_tiny_items_fails_the_server_while_it_is_read() {
    let _case = start_case().await;
    let tag = marker("dense-page");
    // One 15 MB page of 5,000,000 `{}`: hundreds of MiB if read whole.
    let entry = endless(&tag, "resources/list", "dense", 1, "");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let listed = no_hang("list", hub.list_resources(Some("pages"))).await;
    let e = listing_error(listed, "resources/list");
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("more than 100000 items"), "{e}");
    assert_failed_with(&hub, "more than 100000 items");
    assert_memory_bounded("dense resources/list page");
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn endless_resource_pages_fail_the_server_at_the_byte_limit() {
    let _case = start_case().await;
    let tag = marker("resource-pages");
    // 1 MiB pages for 300 pages: 300 MiB of resources without a bound.
    let entry = endless(&tag, "resources/list", "bytes", 300, "");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let listed = no_hang("list", hub.list_resources(Some("pages"))).await;
    let e = listing_error(listed, "resources/list");
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("33554432 bytes"), "{e}");
    assert_failed_with(&hub, "the limit of one listing");
    // Later requests fail with the same error instead of asking again.
    let listed = no_hang("list again", hub.list_resources(Some("pages"))).await;
    let again = listing_error(listed, "resources/list again");
    assert_eq!(again.code(), "PROTOCOL_ERROR", "{again}");
    assert_memory_bounded("endless resources/list");
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn slow_endless_prompt_pages_fail_the_server_within_the_timeout() {
    let _case = start_case().await;
    let tag = marker("prompt-pages");
    // A page every 0.25 s forever; the whole listing gets timeout_seconds.
    let entry = endless(&tag, "prompts/list", "slow", 0, "timeout_seconds = 2");
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let listed = no_hang("list", hub.list_prompts(Some("pages"))).await;
    let e = listing_error(listed, "prompts/list");
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(e.to_string().contains("timeout_seconds"), "{e}");
    assert!(e.to_string().contains("prompts/list"), "{e}");
    assert_failed_with(&hub, "pagination did not end");
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn server_requests_beyond_the_limit_are_refused_at_once() {
    let _case = start_case().await;
    let tag = marker("requests");
    let invoked = Arc::new(AtomicUsize::new(0));
    let seen = invoked.clone();
    // A host handler that never answers: every accepted request stays in flight.
    let sampling: RequestHandler = Arc::new(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        Box::pin(futures::future::pending())
    });
    let options = HubOptions::default().with_handlers(ClientHandlers {
        sampling: Some(sampling),
        ..ClientHandlers::default()
    });
    let env = format!(", STORM_UNANSWERED = \"{MAX_SERVER_REQUESTS}\"");
    let entry = hostile(
        "asker",
        "request_storm.py",
        &tag,
        &env,
        "timeout_seconds = 30",
    );
    let hub = Hub::connect_with(config(&[entry]), options).await.unwrap();
    let r = no_hang(
        "storm",
        hub.call_tool("mcp_asker_storm", None, &CallOptions::default()),
    )
    .await
    .unwrap();
    let answers: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(invoked.load(Ordering::SeqCst), MAX_SERVER_REQUESTS);
    assert_eq!(answers["errors"], 2000 - MAX_SERVER_REQUESTS, "{answers}");
    assert_eq!(answers["results"], 0, "{answers}");
    assert_eq!(answers["codes"], serde_json::json!([-32000]), "{answers}");
    assert_eq!(status(&hub, "asker").state, "connected");
    assert_memory_bounded("server request storm");
    close_and_check(hub, &tag).await;
}

#[tokio::test]
async fn a_line_that_never_ends_fails_once_it_passes_the_cap() {
    let _case = start_case().await;
    let tag = marker("endless-line");
    let entry = hostile(
        "endless",
        "endless_line.py",
        &tag,
        "",
        "timeout_seconds = 30\nmax_message_bytes = 1048576",
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let e = no_hang(
        "call",
        hub.call_tool("mcp_endless_endless", None, &CallOptions::default()),
    )
    .await
    .unwrap_err();
    // Not TIMEOUT: the call ends when the cap is passed, not after 30 s.
    assert_eq!(e.code(), "PROTOCOL_ERROR", "{e}");
    assert!(
        e.to_string().contains("exceeds the limit of 1048576 bytes"),
        "{e}"
    );
    assert_memory_bounded("endless line");
    close_and_check(hub, &tag).await;
}

/// Over Streamable HTTP every answer is a POST of its own: a server that
/// pings without end and holds every answer's POST open would make us keep
/// one task and one connection per ping. At most
/// `MAX_NOTICES_IN_FLIGHT` answers wait; the others are dropped.
#[tokio::test]
async fn http_pings_whose_answers_are_never_accepted_cost_a_bounded_number_of_posts() {
    let _case = start_case().await;
    let log = tempfile::NamedTempFile::new().unwrap();
    let log_path = log.path().display().to_string();
    let server = net_fixture("faults.py", &["--fault", "ping-flood", "--log", &log_path]);
    let entry = net_entry(
        "flood",
        "streamable-http",
        &server.http("/mcp"),
        "timeout_seconds = 5",
    );
    let hub = no_hang("connect", Hub::connect(config(&[entry])))
        .await
        .unwrap();
    let e = no_hang(
        "call",
        hub.call_tool("mcp_flood_work", None, &CallOptions::default()),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), "TIMEOUT", "{e}");
    // The server sent its 2000 pings long before the call timed out.
    assert!(
        server.output().contains("ping-flood: sent 2000 pings"),
        "{}",
        server.output()
    );
    let answers = std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .filter(|l| *l == "<response>")
        .count();
    eprintln!("answers POSTed while none was accepted: {answers}");
    assert!(
        answers <= mcpmux_core::MAX_NOTICES_IN_FLIGHT,
        "{answers} answers were POSTed at once"
    );
    assert!(answers > 0, "no answer was sent at all");
    assert_memory_bounded("http ping flood");
    no_hang("close", hub.close()).await;
}

/// A WebSocket server that floods pings (64 KiB ids) and stops reading:
/// what waits for the socket stays under 2 × `max_message_bytes` (pongs and
/// answers past it are dropped), where unbounded it would grow by 512 MiB.
#[cfg(feature = "websocket")]
#[tokio::test]
async fn websocket_pings_from_a_server_that_stops_reading_cost_bounded_memory() {
    let _case = start_case().await;
    let server = net_fixture("faults.py", &["--fault", "ws-ping-flood"]);
    // The call waits while the server floods (the flood's pace depends on
    // the machine's load, so the test waits for the flood, not a clock),
    // then is given up.
    let entry = net_entry(
        "flood",
        "websocket",
        &server.ws("/ws"),
        "timeout_seconds = 120",
    );
    let hub = no_hang("connect", Hub::connect(config(&[entry])))
        .await
        .unwrap();
    {
        let opts = CallOptions::default();
        let call = hub.call_tool("mcp_flood_work", None, &opts);
        tokio::pin!(call);
        let deadline = Instant::now() + Duration::from_secs(110);
        while !server.output().contains("ws-ping-flood: sent 8000 pings") {
            assert!(
                Instant::now() < deadline,
                "the flood did not end: {}",
                server.output()
            );
            tokio::select! {
                r = &mut call => panic!("the call ended during the flood: {r:?}"),
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }
    assert_memory_bounded("websocket ping flood");
    no_hang("close", hub.close()).await;
}
