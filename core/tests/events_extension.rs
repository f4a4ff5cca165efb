//! The events extension (`io.modelcontextprotocol/events`) against
//! `tests/servers/events_server.py`: listing event types (both capability
//! forms), polling from a cursor, streams whose occurrences arrive on the
//! hub's events, the heartbeat watchdog, webhook subscriptions.

mod common;

use std::time::Duration;

use common::*;
use mcpmux_core::client::CallOptions;
use mcpmux_core::events_ext::Webhook;
use mcpmux_core::{Error, EventStream, Hub, HubEvent};
use serde_json::{json, Value};

/// An events server named `name` with `env` (TOML inline-table members).
fn events_entry(name: &str, env: &str) -> String {
    script_entry(name, "events_server.py", &format!("env = {{ {env} }}"))
}

async fn tool(hub: &Hub, server: &str, tool: &str, args: Value) -> String {
    let result = hub
        .call_tool(
            &format!("mcp_{server}_{tool}"),
            Some(&args),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    result.value()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn emit(hub: &Hub, server: &str, name: &str, n: u64) -> String {
    tool(hub, server, "emit", json!({"name": name, "data": {"n": n}})).await
}

async fn server_state(hub: &Hub, server: &str) -> Value {
    serde_json::from_str(&tool(hub, server, "state", json!({})).await).unwrap()
}

/// The next event for which `pick` is true, within 10 s.
async fn next_where(events: &mut EventStream, pick: impl Fn(&HubEvent) -> bool) -> HubEvent {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let event = events.recv().await.expect("events end");
            if pick(&event) {
                return event;
            }
        }
    })
    .await
    .expect("no such event within 10 s")
}

fn stream_state(event: &HubEvent) -> Option<&str> {
    match event {
        HubEvent::EventStream { state, .. } => Some(state),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_event_types_of_both_capability_forms_only() {
    let hub = Hub::connect(config(&[
        events_entry("ext", "CAPABILITY = \"extension\""),
        events_entry("top", "CAPABILITY = \"top\""),
        events_entry("none", "CAPABILITY = \"none\""),
    ]))
    .await
    .unwrap();
    let listed = hub.list_events(None).await.unwrap();
    let mut seen: Vec<String> = listed
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["server"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
        .collect();
    seen.sort();
    // Both pages of each server; nothing of the server without the extension.
    assert_eq!(
        seen,
        [
            "ext build.finished",
            "ext ticket.created",
            "top build.finished",
            "top ticket.created"
        ]
    );
    assert_eq!(listed[0]["delivery"], json!(["poll", "push"]));
    let one = hub.list_events(Some("top")).await.unwrap();
    assert_eq!(one.len(), 2);
    let e = hub.list_events(Some("none")).await.unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.to_string().contains("'none'"), "{e}");
    assert!(
        e.to_string().contains("io.modelcontextprotocol/events"),
        "{e}"
    );
    let e = hub
        .poll_events("none", "ticket.created", None, None, None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_from_a_cursor() {
    let hub = Hub::connect(config(&[events_entry("ev", "KEEP = \"4\"")]))
        .await
        .unwrap();
    // From now: nothing, and a cursor to keep.
    let first = hub
        .poll_events("ev", "ticket.created", None, None, None)
        .await
        .unwrap();
    assert!(first.events.is_empty());
    let start = first.cursor.clone().expect("a cursor");
    // The server asks for 200 ms; the floor is 1 s.
    assert_eq!(first.next_poll_ms, 1000);
    for n in 0..3 {
        emit(&hub, "ev", "ticket.created", n).await;
    }
    emit(&hub, "ev", "build.finished", 9).await;
    let page = hub
        .poll_events("ev", "ticket.created", None, Some(&start), Some(2))
        .await
        .unwrap();
    assert_eq!(page.events.len(), 2);
    assert!(page.has_more && !page.truncated);
    assert_eq!(page.events[0].data, json!({"n": 0}));
    assert_eq!(page.events[0].name, "ticket.created");
    let rest = hub
        .poll_events(
            "ev",
            "ticket.created",
            None,
            page.cursor.as_deref(),
            Some(2),
        )
        .await
        .unwrap();
    assert_eq!(rest.events.len(), 1);
    assert_eq!(rest.events[0].data, json!({"n": 2}));
    assert!(!rest.has_more);
    // Past what the server keeps (4 occurrences): a gap, not an error.
    for n in 3..8 {
        emit(&hub, "ev", "ticket.created", n).await;
    }
    let late = hub
        .poll_events("ev", "ticket.created", None, Some(&start), None)
        .await
        .unwrap();
    assert!(late.truncated);
    assert_eq!(late.events.len(), 4);
    // The server's own error keeps its code.
    match hub.poll_events("ev", "no.such", None, None, None).await {
        Err(Error::ServerError { code, .. }) => assert_eq!(code, -32023),
        other => panic!("expected the server's error, got {other:?}"),
    }
    let e = hub
        .poll_events("ev", "ticket.created", Some(&json!([1])), None, None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_delivers_events_on_the_hub_stream_and_keeps_the_cursor() {
    let hub = Hub::connect(config(&[events_entry("ev", "HEARTBEAT_MS = \"100\"")]))
        .await
        .unwrap();
    let mut events = hub.events();
    emit(&hub, "ev", "ticket.created", 0).await;
    let mut handle = hub
        .stream_events("ev", "ticket.created", None, Some("pos-0"), None)
        .await
        .unwrap();
    let id = handle.id();
    let active = next_where(&mut events, |e| stream_state(e) == Some("active")).await;
    assert!(matches!(active, HubEvent::EventStream { subscription, .. } if subscription == id));
    // The one before the stream was opened is replayed from the cursor.
    let replayed = next_where(&mut events, |e| matches!(e, HubEvent::Event { .. })).await;
    let HubEvent::Event { data, event_id, .. } = &replayed else {
        unreachable!()
    };
    assert_eq!(data, &json!({"n": 0}));
    assert_eq!(event_id, "evt-1");
    emit(&hub, "ev", "build.finished", 1).await;
    emit(&hub, "ev", "ticket.created", 2).await;
    let pushed = next_where(&mut events, |e| matches!(e, HubEvent::Event { .. })).await;
    match &pushed {
        HubEvent::Event {
            server,
            subscription,
            name,
            data,
            cursor,
            ..
        } => {
            assert_eq!((server.as_str(), *subscription), ("ev", id));
            assert_eq!(name, "ticket.created");
            assert_eq!(data, &json!({"n": 2}));
            assert_eq!(cursor.as_deref(), Some("pos-3"));
        }
        _ => unreachable!(),
    }
    assert_eq!(pushed.to_json()["type"], "event");
    // Heartbeats move the cursor on without events.
    emit(&hub, "ev", "build.finished", 3).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while handle.cursor().as_deref() != Some("pos-4") {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            handle.cursor()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.stop();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let state = server_state(&hub, "ev").await;
        if state["streams"] == json!([]) && state["cancelled"].as_array().unwrap().len() == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not cancelled: {state}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_stream_is_sent_again_from_its_cursor_and_an_ended_one_is_told() {
    // No heartbeats at all: the watchdog (2 x 100 ms) fires.
    let hub = Hub::connect(config(&[events_entry("ev", "HEARTBEAT_MS = \"0\"")]))
        .await
        .unwrap();
    let mut events = hub.events();
    let handle = hub
        .stream_events(
            "ev",
            "ticket.created",
            None,
            None,
            Some(Duration::from_millis(100)),
        )
        .await
        .unwrap();
    next_where(&mut events, |e| stream_state(e) == Some("reconnecting")).await;
    next_where(&mut events, |e| stream_state(e) == Some("active")).await;
    let state = server_state(&hub, "ev").await;
    assert!(
        !state["cancelled"].as_array().unwrap().is_empty(),
        "the silent request was cancelled: {state}"
    );
    assert!(handle.cursor().is_some());
    drop(handle);
    // A stream the server closes is told as ended.
    let _kept = hub
        .stream_events("ev", "build.finished", None, None, None)
        .await
        .unwrap();
    next_where(&mut events, |e| stream_state(e) == Some("active")).await;
    tool(&hub, "ev", "end_streams", json!({})).await;
    next_where(&mut events, |e| stream_state(e) == Some("ended")).await;
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_error_and_termination_keep_the_servers_code_and_data() {
    let secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0";
    mcpmux_core::internal::secrets::register([secret.to_owned()]);
    let hub = Hub::connect(config(&[events_entry("ev", "HEARTBEAT_MS = \"100\"")]))
        .await
        .unwrap();
    let mut events = hub.events();
    let handle = hub
        .stream_events("ev", "ticket.created", None, None, None)
        .await
        .unwrap();
    next_where(&mut events, |e| stream_state(e) == Some("active")).await;
    tool(
        &hub,
        "ev",
        "fail_streams",
        json!({"kind": "error", "code": -32025, "message": "Forbidden",
               "data": {"reason": "revoked", "echo": secret}}),
    )
    .await;
    let error = next_where(&mut events, |e| stream_state(e) == Some("error")).await;
    let v = error.to_json();
    assert_eq!(v["error_code"], -32025, "{v}");
    assert_eq!(v["error_data"]["reason"], "revoked", "{v}");
    assert!(!v.to_string().contains(secret), "a secret echoed back: {v}");
    // Data past the bound is dropped; the code still comes.
    tool(
        &hub,
        "ev",
        "fail_streams",
        json!({"kind": "terminated", "code": -32023, "message": "gone",
               "data": {"pad": "x".repeat(5000)}}),
    )
    .await;
    let ended = next_where(&mut events, |e| stream_state(e) == Some("terminated")).await;
    let v = ended.to_json();
    assert_eq!(v["error_code"], -32023, "{v}");
    assert!(v.get("error_data").is_none(), "{v}");
    assert!(v["error"].as_str().unwrap().starts_with("gone"), "{v}");
    assert_eq!(handle.id(), v["subscription"].as_u64().unwrap());
    hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_subscriptions() {
    let hub = Hub::connect(config(&[events_entry("ev", "")]))
        .await
        .unwrap();
    let secret = format!("whsec_{}", "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0");
    let mut hook = Webhook {
        url: "http://example.com/hook".into(),
        secret: secret.clone(),
        cursor: None,
        ttl: Some(Duration::from_secs(60)),
    };
    let e = hub
        .subscribe_events("ev", "build.finished", None, &hook)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    hook.url = "https://example.com/hook".into();
    let bad = Webhook {
        secret: "not-a-secret-at-all".into(),
        ..hook.clone()
    };
    let e = hub
        .subscribe_events("ev", "build.finished", None, &bad)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(!e.to_string().contains("not-a-secret-at-all"));
    // Neither reached the server.
    assert_eq!(server_state(&hub, "ev").await["secrets_seen"], 0);
    let sub = hub
        .subscribe_events("ev", "build.finished", Some(&json!({"repo": "x"})), &hook)
        .await
        .unwrap();
    assert!(sub.id.starts_with("sub_"), "{sub:?}");
    assert!(sub.refresh_before.is_some() && sub.cursor.is_some());
    let state = server_state(&hub, "ev").await;
    assert_eq!(state["subscriptions"][0]["url"], "https://example.com/hook");
    assert_eq!(state["subscriptions"][0]["ttlMs"], 60000);
    // Webhooks only where the event type offers them: the server's error.
    match hub
        .subscribe_events("ev", "ticket.created", None, &hook)
        .await
    {
        Err(Error::ServerError { code, .. }) => assert_eq!(code, -32026),
        other => panic!("expected the server's error, got {other:?}"),
    }
    hub.unsubscribe_events(
        "ev",
        "build.finished",
        Some(&json!({"repo": "x"})),
        &hook.url,
    )
    .await
    .unwrap();
    assert_eq!(server_state(&hub, "ev").await["subscriptions"], json!([]));
    match hub
        .unsubscribe_events(
            "ev",
            "build.finished",
            Some(&json!({"repo": "x"})),
            &hook.url,
        )
        .await
    {
        Err(Error::ServerError { code, .. }) => assert_eq!(code, -32023),
        other => panic!("expected the server's error, got {other:?}"),
    }
    hub.close().await;
}

/// SEP-3415 (Final) defines the extension for the 2026-07-28 revision: a
/// server that speaks only it (`server/discover`, `_meta` on every request)
/// is listed, polled, streamed and subscribed to as the older one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_the_2026_07_28_revision() {
    let entry = script_entry(
        "ev",
        "events_server.py",
        "protocol_version = \"2026-07-28\"\nenv = { REVISION = \"2026-07-28\", HEARTBEAT_MS = \"100\" }",
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    let listed = hub.list_events(Some("ev")).await.unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let page = hub
        .poll_events("ev", "ticket.created", None, None, None)
        .await
        .unwrap();
    let start = page.cursor.clone().expect("a cursor from now");
    emit(&hub, "ev", "ticket.created", 1).await;
    let page = hub
        .poll_events("ev", "ticket.created", None, Some(&start), None)
        .await
        .unwrap();
    assert_eq!(page.events.len(), 1, "{page:?}");
    let mut events = hub.events();
    let mut handle = hub
        .stream_events("ev", "ticket.created", None, Some(&start), None)
        .await
        .unwrap();
    let replayed = next_where(&mut events, |e| matches!(e, HubEvent::Event { .. })).await;
    assert_eq!(replayed.to_json()["data"], json!({"n": 1}));
    assert_eq!(replayed.to_json()["subscription"], handle.id());
    handle.stop();
    let sub = hub
        .subscribe_events(
            "ev",
            "build.finished",
            None,
            &Webhook {
                url: "https://hooks.example.com/h".into(),
                secret: "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0".into(),
                cursor: None,
                ttl: Some(Duration::from_secs(60)),
            },
        )
        .await
        .unwrap();
    assert!(sub.id.starts_with("sub_"), "{sub:?}");
    hub.unsubscribe_events("ev", "build.finished", None, "https://hooks.example.com/h")
        .await
        .unwrap();
    hub.close().await;
}

/// On 2026-07-28 the client declares the extension, and a server whose
/// capability says `listChanged: true` is asked for
/// `notifications/events/list_changed` on the `subscriptions/listen`
/// stream; each one reaches the host as `events_changed`. On 2025-11-25
/// the server sends it unasked, with the same result.
#[tokio::test]
async fn a_change_of_event_types_reaches_the_host_on_both_revisions() {
    for stateless in [true, false] {
        let entry = if stateless {
            script_entry(
                "ev",
                "events_server.py",
                "protocol_version = \"2026-07-28\"\nenv = { REVISION = \"2026-07-28\", LIST_CHANGED = \"1\" }",
            )
        } else {
            events_entry("ev", "LIST_CHANGED = \"1\"")
        };
        let hub = Hub::connect(config(&[entry])).await.unwrap();
        let mut events = hub.events();
        // The listen stream is opened by a task of its own.
        let mut told = String::new();
        for _ in 0..100 {
            told = tool(&hub, "ev", "change_types", json!({})).await;
            if told == "1" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(told, "1", "stateless: {stateless}");
        let changed =
            next_where(&mut events, |e| matches!(e, HubEvent::EventsChanged { .. })).await;
        assert_eq!(
            changed.to_json(),
            json!({"type": "events_changed", "server": "ev"})
        );
        let seen = server_state(&hub, "ev").await;
        assert_eq!(seen["declared"], json!(stateless), "{seen}");
        if stateless {
            assert_eq!(
                seen["listeners"].as_array().map(Vec::len),
                Some(1),
                "{seen}"
            );
            assert_eq!(seen["listens"], json!(1), "one stream, opened once: {seen}");
        }
        hub.close().await;
    }
}

/// Without `listChanged: true` nothing is asked for: no listen stream.
#[tokio::test]
async fn no_listen_stream_when_the_server_offers_no_list_changes() {
    let entry = script_entry(
        "ev",
        "events_server.py",
        "protocol_version = \"2026-07-28\"\nenv = { REVISION = \"2026-07-28\", LIST_CHANGED = \"0\" }",
    );
    let hub = Hub::connect(config(&[entry])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server_state(&hub, "ev").await["listens"], json!(0));
    hub.close().await;
}

/// `maxAgeMs` (SEP-3415): from an old cursor, nothing older than the age is
/// replayed, and the gap is said with `truncated`, on polls, streams and
/// subscriptions; without it the whole log since the cursor comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_age_leaves_older_occurrences_out_and_says_so() {
    use mcpmux_core::events_ext::EventQuery;
    let hub = Hub::connect(config(&[events_entry(
        "ev",
        "PRELOAD = \"3\", PRELOAD_AGE_MS = \"600000\", HEARTBEAT_MS = \"100\"",
    )]))
    .await
    .unwrap();
    emit(&hub, "ev", "ticket.created", 7).await;
    let from_start = EventQuery {
        cursor: Some("pos-0".into()),
        ..EventQuery::default()
    };
    let all = hub
        .poll_events_with("ev", "ticket.created", None, &from_start)
        .await
        .unwrap();
    assert_eq!(all.events.len(), 4, "{all:?}");
    assert!(!all.truncated);
    let recent = EventQuery {
        max_age: Some(Duration::from_secs(60)),
        ..from_start.clone()
    };
    let page = hub
        .poll_events_with("ev", "ticket.created", None, &recent)
        .await
        .unwrap();
    assert_eq!(page.events.len(), 1, "{page:?}");
    assert_eq!(page.events[0].data, json!({"n": 7}));
    assert!(page.truncated, "the three old ones were left out: {page:?}");

    let mut events = hub.events();
    let _stream = hub
        .stream_events_with("ev", "ticket.created", None, &recent)
        .await
        .unwrap();
    let active = next_where(&mut events, |e| stream_state(e) == Some("active")).await;
    assert!(
        matches!(
            active,
            HubEvent::EventStream {
                truncated: true,
                ..
            }
        ),
        "{active:?}"
    );
    let first = next_where(&mut events, |e| matches!(e, HubEvent::Event { .. })).await;
    assert!(
        matches!(&first, HubEvent::Event { data, .. } if data == &json!({"n": 7})),
        "the first replayed is the recent one: {first:?}"
    );
    hub.close().await;
}

/// A subscription asked never to expire sends `ttlMs: null` and gets no
/// `refreshBefore`; asking for a ttl as well is refused before the server
/// is asked.
#[tokio::test]
async fn a_webhook_subscription_without_expiry() {
    use mcpmux_core::events_ext::SubscribeOptions;
    let hub = Hub::connect(config(&[events_entry("ev", "")]))
        .await
        .unwrap();
    let mut hook = Webhook {
        url: "https://example.com/hook".into(),
        secret: format!("whsec_{}", "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"),
        cursor: None,
        ttl: None,
    };
    let forever = SubscribeOptions {
        no_expiry: true,
        ..SubscribeOptions::default()
    };
    let sub = hub
        .subscribe_events_with("ev", "build.finished", None, &hook, &forever)
        .await
        .unwrap();
    assert_eq!(sub.refresh_before, None, "{sub:?}");
    let state = server_state(&hub, "ev").await;
    assert_eq!(state["subscriptions"][0]["ttlMs"], Value::Null, "{state}");
    // The server's default (an hour here) when neither is asked.
    let sub = hub
        .subscribe_events("ev", "build.finished", Some(&json!({"a": 1})), &hook)
        .await
        .unwrap();
    assert!(sub.refresh_before.is_some(), "{sub:?}");
    hook.ttl = Some(Duration::from_secs(60));
    let e = hub
        .subscribe_events_with("ev", "build.finished", None, &hook, &forever)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT", "{e}");
    hub.close().await;
}
