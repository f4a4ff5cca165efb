//! `mcpmux gateway` against hostile clients: every queue a client can fill
//! is bounded, and nothing a client does ends or stalls the gateway.
//!
//! - a flood of requests: at most 256 run at once, the rest are refused at
//!   once (JSON-RPC -32000), and the ones in flight reach the server;
//! - a client that never reads its answers: the gateway keeps reading and
//!   stays small;
//! - a client that does not read big answers: the gateway holds at most its
//!   budget of answers for it (`--client-budget-mib`; one larger answer
//!   alone), and its further calls get -32000 "gateway busy" at once;
//! - an endless line: refused at `max_message_bytes`, never buffered whole;
//! - a client that declares sampling but never answers relayed requests:
//!   at most 64 wait for it, the servers' other requests get errors at
//!   once, their tool calls still end, and so does the gateway when the
//!   client leaves.
//!
//! Each case also checks the gateway's peak RSS (`VmHWM`).

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::raw_gateway::{Raw, HANG};
use common::*;
use serde_json::{json, Value};

/// The gateway's peak RSS in every case stays below this (it idles at
/// ~15 MiB; each case would pass hundreds of MiB if it buffered what the
/// client sends).
const RSS_LIMIT_MIB: u64 = 100;
/// The gateway's bound on one client's requests in flight.
const MAX_IN_FLIGHT: usize = 256;

fn assert_small(gw: &Raw, case: &str) {
    let peak = gw.peak_rss_mib();
    eprintln!("{case}: gateway peak RSS {peak} MiB");
    assert!(
        peak < RSS_LIMIT_MIB,
        "{case}: gateway peak RSS {peak} MiB passed {RSS_LIMIT_MIB} MiB"
    );
}

/// The start of `msg` as JSON (some answers here are megabytes long).
fn short(msg: &Value) -> String {
    msg.to_string().chars().take(300).collect()
}

/// Lines of `path` (none when it does not exist yet).
fn lines_of(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_flood_of_requests_runs_256_at_once_and_the_rest_are_refused_at_once() {
    let sb = Sandbox::new();
    let cancel_log = sb.path().join("cancelled.log");
    sb.write(
        "mcpmux.toml",
        &python_entry(
            "hang",
            "hang.py",
            &format!(
                "allow_all = true\nallow_destructive = [\"wait_forever\"]\nrestart = \"never\"\nenv = {{ HANG_CANCEL_LOG = {} }}",
                qp(&cancel_log)
            ),
        ),
    );
    let mut gw = Raw::start(&sb, &[]);
    let flood = 2_000u64;
    let first = 1_000u64;
    let mut text = String::new();
    for id in first..first + flood {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "mcp_hang_wait_forever", "arguments": {}}});
        text.push_str(&format!("{msg}\n"));
    }
    gw.stdin().write_all(text.as_bytes()).unwrap();
    gw.stdin().flush().unwrap();
    // The server never answers: every answer is a refusal, one for each
    // request past the bound, and the ones that got a slot are the first.
    let refused_expected = flood as usize - MAX_IN_FLIGHT;
    let mut refused = Vec::new();
    while refused.len() < refused_expected {
        let msg = gw
            .next_message(HANG)
            .unwrap_or_else(|| panic!("only {} refusals within {HANG:?}", refused.len()));
        if msg.get("method").is_some() {
            continue;
        }
        assert_eq!(msg["error"]["code"], -32000, "{msg}");
        assert!(
            msg["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("too many requests in flight"),
            "{msg}"
        );
        refused.push(msg["id"].as_u64().unwrap());
    }
    refused.sort_unstable();
    let expected: Vec<u64> = (first + MAX_IN_FLIGHT as u64..first + flood).collect();
    assert_eq!(refused, expected, "the refused ids are not the last ones");
    // The 256 in flight reached the server: cancelling them reaches it too.
    for id in first..first + MAX_IN_FLIGHT as u64 {
        gw.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "flood over"}}),
        );
    }
    let deadline = Instant::now() + HANG;
    while lines_of(&cancel_log) < MAX_IN_FLIGHT && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        lines_of(&cancel_log),
        MAX_IN_FLIGHT,
        "the server did not see every call in flight cancelled"
    );
    // The slots are free again.
    let pong = gw.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert_small(&gw, "request flood");
}

#[test]
fn a_client_that_does_not_read_is_slowed_down_and_still_gets_one_answer_per_request() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true\nrestart = \"never\""));
    let mut gw = Raw::start_unbuffered(&sb, &[]);
    // 40 MiB of requests, more than fits in what the gateway may hold for
    // a client (its queues and the pipes).
    let count = 100_000usize;
    let big = "x".repeat(400);
    let mut text = String::new();
    for id in 0..count {
        let msg = json!({"jsonrpc": "2.0", "id": format!("p{id}"), "method": "tools/call",
            "params": {"name": "mcp_demo_echo", "arguments": {"text": big}}});
        text.push_str(&format!("{msg}\n"));
    }
    let writer = gw.write_in_background(text.into_bytes());
    // Not reading: the gateway fills its pipe to us, then stops reading
    // ours (it holds a bounded number of answers meanwhile). Only a hang
    // fails here: on a loaded 2-core machine, with the other floods of this
    // file running beside it, getting there once took longer than HANG.
    let deadline = Instant::now() + 3 * HANG;
    loop {
        let (stalled, fill) = gw.stalled();
        if stalled {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway never stopped reading a client that does not read: {fill}"
        );
    }
    assert_small(&gw, "client that does not read");
    // Reading again: every request gets exactly one answer, result or
    // refusal, none lost.
    let mut answered = std::collections::HashSet::new();
    while answered.len() < count {
        let msg = gw.next_message(HANG).unwrap_or_else(|| {
            panic!(
                "{} of {count} requests answered within {HANG:?}",
                answered.len()
            )
        });
        if msg.get("method").is_some() {
            continue;
        }
        let id = msg["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{msg}"))
            .to_owned();
        assert!(
            msg.get("result").is_some() || msg["error"]["code"] == -32000,
            "{msg}"
        );
        assert!(answered.insert(id), "two answers to one request: {msg}");
    }
    gw.join_writer(writer);
    let pong = gw.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert_small(&gw, "client that does not read");
}

#[test]
fn a_client_that_does_not_read_big_answers_holds_its_budget_and_further_calls_are_busy() {
    let sb = Sandbox::with_config(&demo_entry("demo", "allow_all = true\nrestart = \"never\""));
    // A budget of 1 MiB per client (64 by default: the same, with answers
    // 64 times larger).
    let mut gw = Raw::start_unbuffered(&sb, &["--client-budget-mib", "1"]);
    // A ping whose answer our side takes off the pipe and then holds (one
    // line at most), so that nothing more leaves the pipe; then one answer
    // larger than the client's budget: it goes out alone, and while the
    // gateway cannot finish writing it, it keeps the budget taken.
    gw.send(json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}));
    let big = 2usize << 20;
    gw.send(
        json!({"jsonrpc": "2.0", "id": "big", "method": "tools/call",
        "params": {"name": "mcp_demo_big", "arguments": {"bytes": big}}}),
    );
    let deadline = Instant::now() + HANG;
    while !gw.stdout_pipe_full() {
        assert!(Instant::now() < deadline, "the big answer never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Then 600 calls (fewer than the gateway's queue to the client holds,
    // so it never stops reading them), each of which would add to what the
    // client does not read; then 100 KiB of blank lines (skipped), more
    // than the pipe and the gateway's read buffer hold: once all of it is
    // written, the gateway has read, and acted on, every call.
    let count = 600usize;
    let mut text = String::new();
    for id in 0..count {
        let msg = json!({"jsonrpc": "2.0", "id": format!("c{id}"), "method": "tools/call",
            "params": {"name": "mcp_demo_big", "arguments": {"bytes": 1024}}});
        text.push_str(&format!("{msg}\n"));
    }
    text.push_str(&"\n".repeat(100 << 10));
    let writer = gw.write_in_background(text.into_bytes());
    while !writer.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the gateway stopped reading a client that does not read"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    gw.join_writer(writer);
    // All of it was decided before we read anything: the big answer,
    // whole, then a busy refusal for each call, none of which reached the
    // server.
    let pong = gw.next_message(HANG).expect("the ping's answer");
    assert_eq!(pong["id"], "ping", "{}", short(&pong));
    let first = gw.next_message(HANG).expect("the big answer");
    assert_eq!(first["id"], "big");
    let text = first["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert_eq!(text.len(), big, "the big answer was not whole");
    let mut answered = std::collections::HashSet::new();
    while answered.len() < count {
        let msg = gw.next_message(HANG).unwrap_or_else(|| {
            panic!(
                "{} of {count} calls answered within {HANG:?}",
                answered.len()
            )
        });
        if msg.get("method").is_some() {
            continue;
        }
        let id = msg["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{msg}"))
            .to_owned();
        assert_eq!(msg["error"]["code"], -32000, "{}", short(&msg));
        assert!(
            msg["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("busy"),
            "{}",
            short(&msg)
        );
        assert!(
            answered.insert(id),
            "two answers to one call: {}",
            short(&msg)
        );
    }
    // Read, the answers gave the budget back: the client is served again.
    let again = gw.request(
        "tools/call",
        json!({"name": "mcp_demo_big", "arguments": {"bytes": 1 << 20}}),
    );
    let text = again["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert_eq!(text.len(), 1 << 20);
    eprintln!(
        "client that does not read big answers: gateway peak RSS {} MiB",
        gw.peak_rss_mib()
    );
}

#[test]
fn an_endless_line_is_refused_at_the_limit_and_never_buffered() {
    let sb = Sandbox::with_config(&demo_entry(
        "demo",
        "allow_all = true\nrestart = \"never\"\nmax_message_bytes = 1048576",
    ));
    let mut gw = Raw::start(&sb, &[]);
    // 256 MiB without a newline, written in chunks.
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..256 {
        gw.stdin().write_all(&chunk).unwrap();
    }
    gw.stdin().write_all(b"\n").unwrap();
    let pong = gw.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    let refusal = gw
        .seen
        .iter()
        .find(|m| m["error"]["code"] == -32700)
        .unwrap_or_else(|| panic!("no parse error for the endless line: {:?}", gw.seen));
    assert_eq!(
        refusal["error"]["data"]["code"], "LIMIT_EXCEEDED",
        "{refusal}"
    );
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("1048576"),
        "{refusal}"
    );
    assert_small(&gw, "endless line");
}

#[test]
fn a_client_that_never_answers_relayed_requests_holds_at_most_64_and_calls_still_end() {
    // Two servers each send 2,000 sampling requests at once; each waits
    // for all but 64 answers before its tool call returns.
    let storm = |name: &str| {
        python_entry(
            name,
            "request_storm.py",
            "allow_all = true\nconfirm_read_only = [\"storm\"]\nrestart = \"never\"\nenv = { STORM_REQUESTS = \"2000\", STORM_UNANSWERED = \"64\" }",
        )
    };
    let sb = Sandbox::with_config(&format!("{}{}", storm("s1"), storm("s2")));
    let mut gw = Raw::start_with(&sb, &[], json!({"sampling": {}}));
    for (id, tool) in [(101, "mcp_s1_storm"), (102, "mcp_s2_storm")] {
        gw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}}));
    }
    let mut relayed = 0usize;
    let mut results = Vec::new();
    while results.len() < 2 {
        let msg = gw
            .next_message(HANG)
            .unwrap_or_else(|| panic!("the storm calls did not end within {HANG:?}"));
        if msg["method"] == "sampling/createMessage" {
            relayed += 1; // and never answered
        } else if msg["id"] == 101 || msg["id"] == 102 {
            assert!(msg["result"]["isError"] != true, "{msg}");
            results.push(msg);
        }
    }
    assert_eq!(
        relayed, 64,
        "relayed requests waiting for the client: {results:?}"
    );
    for result in &results {
        let text = result["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{result}"));
        let summary: Value = serde_json::from_str(text).unwrap();
        assert_eq!(summary["results"], 0, "{summary}");
        assert!(
            summary["errors"].as_u64().unwrap() >= 2000 - 64,
            "{summary}"
        );
    }
    let pong = gw.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert_small(&gw, "never-answering client");
    // The client leaves with 64 requests still waiting for it: the gateway
    // ends anyway.
    gw.close_stdin();
    let status = gw
        .wait_exit(HANG)
        .expect("the gateway did not exit after the client left");
    assert!(status.success(), "the gateway exited with {status}");
}
