//! `mcpmux events list | poll | stream` against
//! `tests/servers/events_server.py` (the events extension).

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn sandbox() -> Sandbox {
    Sandbox::with_config(&format!(
        "{}{}",
        python_entry(
            "ev",
            "events_server.py",
            "env = { PRELOAD = \"3\", TICK_MS = \"100\", HEARTBEAT_MS = \"100\" }"
        ),
        python_entry(
            "plain",
            "events_server.py",
            "env = { CAPABILITY = \"none\" }"
        ),
    ))
}

#[test]
fn events_list_shows_the_types_of_servers_with_the_extension() {
    let sb = sandbox();
    let out = sb.mcpmux(&["events", "list"]).run();
    out.ok().stdout_has(&[
        "ev  ticket.created  [poll, push]",
        "ev  build.finished  [poll, push, webhook]",
    ]);
    assert!(!out.stdout.contains("plain"), "{out}");
    let out = sb
        .mcpmux(&["--json", "events", "list", "--server", "ev"])
        .run();
    let listed = out.ok().json();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0]["server"], "ev");
    let message = sb
        .mcpmux(&["events", "list", "--server", "plain"])
        .run()
        .fails_with("INVALID_INPUT");
    assert!(
        message.contains("io.modelcontextprotocol/events"),
        "{message}"
    );
}

#[test]
fn events_poll_prints_the_events_and_the_cursor_to_keep() {
    let sb = sandbox();
    let out = sb
        .mcpmux(&[
            "events",
            "poll",
            "ev",
            "ticket.created",
            "{}",
            "--cursor",
            "pos-0",
            "--max",
            "2",
        ])
        .run();
    out.ok().stdout_has(&[
        "ticket.created evt-1 {\"title\":\"preloaded 0\"}",
        "ticket.created evt-2 ",
        "cursor: pos-2",
        "more: poll again now",
    ]);
    let out = sb
        .mcpmux(&[
            "--json",
            "events",
            "poll",
            "ev",
            "ticket.created",
            "--cursor",
            "pos-2",
        ])
        .run();
    let page = out.ok().json();
    assert_eq!(page["events"][0]["event_id"], "evt-3");
    assert!(page["cursor"].as_str().unwrap().starts_with("pos-"));
    assert_eq!(page["truncated"], false);
    assert!(page["next_poll_ms"].as_u64().unwrap() >= 1000);
    // From now: no events, a cursor.
    let out = sb.mcpmux(&["events", "poll", "ev", "ticket.created"]).run();
    out.ok().stdout_has(&["cursor: pos-"]);
    sb.mcpmux(&["events", "poll", "ev", "ticket.created", "[1]"])
        .run()
        .fails_with("INVALID_INPUT");
    let out = sb.mcpmux(&["events", "poll", "ev", "no.such"]).run();
    assert!(out.fails_with("SERVER_ERROR").contains("no.such"), "{out}");
}

#[test]
fn events_stream_prints_json_lines_until_interrupted_then_the_cursor() {
    let sb = sandbox();
    let running = sb
        .mcpmux(&[
            "--json",
            "events",
            "stream",
            "ev",
            "ticket.created",
            "--cursor",
            "pos-1",
        ])
        .spawn();
    // The server makes one occurrence every 100 ms.
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    running.signal("INT");
    let out = running.wait();
    out.ok();
    // Without --json the cursor is on stderr.
    let running = sb
        .mcpmux(&["events", "stream", "ev", "build.finished"])
        .spawn();
    std::thread::sleep(Duration::from_millis(700));
    running.signal("INT");
    let human = running.wait();
    human.expect_exit(0);
    assert!(human.stderr.contains("mcpmux: cursor: pos-"), "{human}");
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let events: Vec<&Value> = lines.iter().filter(|v| v["type"] == "event").collect();
    assert!(
        lines
            .iter()
            .any(|v| v["type"] == "event_stream" && v["state"] == "active"),
        "{out}"
    );
    // Replayed from the cursor: the second and third preloaded, then new ones.
    assert!(events.len() >= 3, "{out} after {:?}", start.elapsed());
    assert_eq!(events[0]["event_id"], "evt-2");
    assert_eq!(events[0]["cursor"], "pos-2");
    assert_eq!(events[0]["server"], "ev");
    let last = events.last().unwrap()["cursor"].as_str().unwrap();
    // The last line: the cursor to resume from.
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "cursor", "{out}");
    let kept = end["cursor"].as_str().unwrap();
    // Heartbeats may have moved it on.
    let n = |c: &str| c.trim_start_matches("pos-").parse::<u64>().unwrap();
    assert!(n(kept) >= n(last), "{kept} < {last}");
}
