//! `mcpmux events list | poll | stream` against
//! `tests/servers/events_server.py` (the events extension).

mod common;

use std::time::{Duration, Instant};

use common::http_gateway::HttpGateway;
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

/// The signing secret of the webhook tests: 27 bytes once decoded.
const SECRET: &str = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0";

#[test]
fn events_subscribe_and_unsubscribe_a_webhook_without_printing_the_secret() {
    let sb = Sandbox::new();
    let subs = sb.path().join("subscriptions.json");
    sb.write(
        "mcpmux.toml",
        &python_entry(
            "ev",
            "events_server.py",
            &format!("env = {{ SUBSCRIPTIONS_FILE = {} }}", qp(&subs)),
        ),
    );
    let hook = "https://hooks.example.com/mcp";
    let out = sb
        .mcpmux(&[
            "events",
            "subscribe",
            "ev",
            "build.finished",
            r#"{"repo":"x"}"#,
            "--url",
            hook,
            "--secret-env",
            "HOOK_SECRET",
            "--ttl",
            "60",
        ])
        .env("HOOK_SECRET", SECRET)
        .run();
    out.ok()
        .stdout_has(&["subscribed: sub_", "refresh before: 20", "cursor: pos-0"]);
    assert!(
        !out.stdout.contains(SECRET) && !out.stderr.contains(SECRET),
        "{out}"
    );
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&subs).unwrap()).unwrap();
    let record = stored.as_object().unwrap().values().next().unwrap().clone();
    assert_eq!(record["url"], hook);
    assert_eq!(record["ttlMs"], 60000);
    assert_eq!(record["arguments"], serde_json::json!({"repo": "x"}));

    // --json: the subscription as the server answered.
    let out = sb
        .mcpmux(&[
            "--json",
            "events",
            "subscribe",
            "ev",
            "build.finished",
            r#"{"repo":"x"}"#,
            "--url",
            hook,
            "--secret-env",
            "HOOK_SECRET",
        ])
        .env("HOOK_SECRET", SECRET)
        .run();
    let sub = out.ok().json();
    assert!(sub["id"].as_str().unwrap().starts_with("sub_"), "{sub}");
    assert_eq!(sub["truncated"], false);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&subs).unwrap()).unwrap();
    assert_eq!(
        stored.as_object().unwrap().len(),
        1,
        "the same subscription, refreshed: {stored}"
    );

    // Checked before the server is asked; the secret never echoed.
    let bad = "whsec_dG9vLXNob3J0";
    let out = sb
        .mcpmux(&[
            "events",
            "subscribe",
            "ev",
            "build.finished",
            "--url",
            hook,
            "--secret-env",
            "HOOK_SECRET",
        ])
        .env("HOOK_SECRET", bad)
        .run();
    let message = out.fails_with("INVALID_INPUT");
    assert!(message.contains("24 to 64"), "{message}");
    assert!(
        !out.stdout.contains(bad) && !out.stderr.contains(bad),
        "{out}"
    );
    let message = sb
        .mcpmux(&[
            "events",
            "subscribe",
            "ev",
            "build.finished",
            "--url",
            hook,
            "--secret-env",
            "NO_SUCH_VAR_SET",
        ])
        .run()
        .fails_with("INVALID_INPUT");
    assert!(message.contains("NO_SUCH_VAR_SET"), "{message}");
    let message = sb
        .mcpmux(&[
            "events",
            "subscribe",
            "ev",
            "build.finished",
            "--url",
            "http://hooks.example.com/mcp",
            "--secret-env",
            "HOOK_SECRET",
        ])
        .env("HOOK_SECRET", SECRET)
        .run()
        .fails_with("INVALID_INPUT");
    assert!(message.contains("https"), "{message}");
    // An event type without webhook delivery: the server's own refusal.
    sb.mcpmux(&[
        "events",
        "subscribe",
        "ev",
        "ticket.created",
        "--url",
        hook,
        "--secret-env",
        "HOOK_SECRET",
    ])
    .env("HOOK_SECRET", SECRET)
    .run()
    .fails_with("SERVER_ERROR");

    let out = sb
        .mcpmux(&[
            "events",
            "unsubscribe",
            "ev",
            "build.finished",
            r#"{"repo":"x"}"#,
            "--url",
            hook,
        ])
        .run();
    out.ok().stdout_has(&["unsubscribed"]);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&subs).unwrap()).unwrap();
    assert_eq!(stored, serde_json::json!({}));
    // Again: the server no longer knows it.
    sb.mcpmux(&[
        "events",
        "unsubscribe",
        "ev",
        "build.finished",
        r#"{"repo":"x"}"#,
        "--url",
        hook,
    ])
    .run()
    .fails_with("SERVER_ERROR");
}

/// `--max-age`: from an old cursor, nothing older is replayed and the page
/// says events were lost; `--no-expiry` subscribes without a
/// `refreshBefore` (`ttlMs: null`), and cannot go with `--ttl`.
#[test]
fn events_max_age_and_no_expiry() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "env = { PRELOAD = \"3\", PRELOAD_AGE_MS = \"600000\" }",
    ));
    let poll = |extra: &[&str]| {
        let mut args = vec![
            "--json",
            "events",
            "poll",
            "ev",
            "ticket.created",
            "--cursor",
            "pos-0",
        ];
        args.extend_from_slice(extra);
        sb.mcpmux(&args).run().ok().json()
    };
    let all = poll(&[]);
    assert_eq!(all["events"].as_array().unwrap().len(), 3, "{all}");
    assert_eq!(all["truncated"], false);
    let recent = poll(&["--max-age", "60"]);
    assert_eq!(recent["events"], serde_json::json!([]), "{recent}");
    assert_eq!(recent["truncated"], true, "{recent}");
    let human = sb
        .mcpmux(&[
            "events",
            "poll",
            "ev",
            "ticket.created",
            "--cursor",
            "pos-0",
            "--max-age",
            "60",
        ])
        .run();
    human
        .ok()
        .stdout_has(&["events were lost", "cursor: pos-3"]);
    sb.mcpmux(&["events", "poll", "ev", "ticket.created", "--max-age", "0"])
        .run()
        .fails_with("INVALID_INPUT");

    let hook = "https://hooks.example.com/mcp";
    let out = sb
        .mcpmux(&[
            "events",
            "subscribe",
            "ev",
            "build.finished",
            "--url",
            hook,
            "--secret-env",
            "HOOK_SECRET",
            "--no-expiry",
        ])
        .env("HOOK_SECRET", SECRET)
        .run();
    out.ok().stdout_has(&["refresh before: never (no expiry)"]);
    let both = sb
        .mcpmux(&[
            "events",
            "subscribe",
            "ev",
            "build.finished",
            "--url",
            hook,
            "--secret-env",
            "HOOK_SECRET",
            "--no-expiry",
            "--ttl",
            "60",
        ])
        .env("HOOK_SECRET", SECRET)
        .run();
    both.expect_exit(2);
}

/// `--heartbeat`: a server that falls silent for twice the interval has
/// its stream sent again from the cursor (`reconnecting`).
#[test]
fn events_stream_heartbeat_flag_sets_the_watchdog() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "env = { HEARTBEAT_MS = \"0\" }",
    ));
    let running = sb
        .mcpmux(&[
            "--json",
            "events",
            "stream",
            "ev",
            "ticket.created",
            "--heartbeat",
            "0.2",
        ])
        .spawn();
    std::thread::sleep(Duration::from_millis(1500));
    running.signal("INT");
    let out = running.wait();
    out.ok();
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("\"state\":\"reconnecting\"")),
        "{out}"
    );
}

/// `events stream` over Streamable HTTP, on both revisions: `mcpmux` as the
/// client of `mcpmux gateway --http`, which streams from the events server
/// behind it. Occurrences and the cursor to resume from come through the
/// HTTP response streams, and a stream resumed from that cursor goes on
/// after it.
#[test]
fn events_stream_over_streamable_http_on_both_revisions() {
    let behind = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "allow_all = true\nenv = { PRELOAD = \"3\", TICK_MS = \"100\", HEARTBEAT_MS = \"100\" }",
    ));
    let gw = HttpGateway::start(&behind, "tok-events-secret");
    for revision in ["2025-11-25", "2026-07-28"] {
        let client = Sandbox::with_config(&format!(
            "[[mcp.servers]]\nname = \"gw\"\nurl = {}\nprotocol_version = {}\n\
             headers = {{ Authorization = \"Bearer tok-events-secret\" }}\n",
            q(&gw.url),
            q(revision)
        ));
        let stream = |cursor: Option<&str>| {
            let mut args = vec!["--json", "events", "stream", "gw", "mcp_ev_ticket.created"];
            if let Some(c) = cursor {
                args.extend(["--cursor", c]);
            }
            let running = client.mcpmux(&args).spawn();
            std::thread::sleep(Duration::from_millis(2000));
            running.signal("INT");
            let out = running.wait();
            out.ok();
            let lines: Vec<Value> = out
                .stdout
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            let events: Vec<String> = lines
                .iter()
                .filter(|v| v["type"] == "event")
                .map(|v| v["event_id"].as_str().unwrap_or_default().to_owned())
                .collect();
            let end = lines.last().cloned().unwrap_or_default();
            assert_eq!(end["type"], "cursor", "{revision}: {out}");
            (events, end["cursor"].as_str().unwrap().to_owned())
        };
        // From now: the ticks come, over HTTP.
        let (first, cursor) = stream(None);
        assert!(first.len() >= 3, "{revision}: {first:?}");
        // Resumed from the cursor: nothing seen again, nothing skipped.
        let (second, _) = stream(Some(&cursor));
        assert!(!second.is_empty(), "{revision}: nothing after {cursor}");
        let n = |id: &str| id.trim_start_matches("evt-").parse::<u64>().unwrap();
        let last_seen = n(first.last().unwrap());
        assert!(
            n(&second[0]) > last_seen,
            "{revision}: {second:?} after {first:?}"
        );
        assert!(
            n(&second[0]) <= last_seen + 30,
            "{revision}: the replay skipped from {last_seen} to {}",
            second[0]
        );
    }
}

/// An extension mcpmux does not know is shown to the host as the server
/// declared it (`servers --json`), beside the ones it implements.
#[test]
fn servers_json_shows_an_unknown_extension_as_declared() {
    let sb = Sandbox::with_config(&python_entry(
        "ev",
        "events_server.py",
        "env = { EXTRA_EXTENSION = \"com.example/widgets\" }",
    ));
    let out = sb.mcpmux(&["--json", "servers"]).run();
    let servers = out.ok().json();
    let extensions = &servers[0]["capabilities"]["extensions"];
    assert_eq!(
        extensions["com.example/widgets"],
        serde_json::json!({"flavour": "test"}),
        "{servers}"
    );
    assert!(
        extensions.get("io.modelcontextprotocol/events").is_some(),
        "{servers}"
    );
}
