//! The events extension (`io.modelcontextprotocol/events`) through the
//! gateway: the event types of every server behind it, under the gateway's
//! names (`mcp_{server}_{name}` as tools are named; the server's own name
//! with `--no-prefix`), polled, streamed and subscribed to through the
//! hub, whose bounds hold (mcpmux_core's `events_ext`). A cursor is the
//! server's own, passed through: each client keeps its own, so sessions
//! never share one. A stream is the client's request: the gateway opens the
//! server's, forwards its occurrences as `notifications/events/*` tagged
//! with the client's request id, and closes it when the client cancels.

use mcpmux_core::error::Error;
use mcpmux_core::events::HubEvent;
use mcpmux_core::events_ext::SUBSCRIPTION_META as SUBSCRIPTION_ID;
use mcpmux_core::events_ext::{EventQuery, EventsPage, SubscribeOptions, Webhook};
use serde_json::{json, Map, Value};
use std::time::Duration;

use super::out::Out;
use super::Gateway;

/// The extension's name.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/events";

/// How often a stream the gateway forwards tells its client it is alive.
const HEARTBEAT: Duration = Duration::from_secs(30);

/// Whether a server behind the gateway offers events.
pub(crate) fn any_server_has_events(gateway: &Gateway) -> bool {
    gateway.hub().servers().iter().any(|s| {
        s.capabilities
            .as_ref()
            .is_some_and(mcpmux_core::events_ext::offered)
    })
}

/// The name a client knows event type `name` of `server` by.
fn shown(gateway: &Gateway, server: &str, name: &str) -> String {
    if gateway.inner.options.no_prefix {
        name.to_owned()
    } else {
        format!("mcp_{server}_{name}")
    }
}

/// The server and its own name of the event type a client names.
fn resolve(gateway: &Gateway, name: &str) -> Result<(String, String), Error> {
    let hub = gateway.hub();
    let config = hub.config();
    let enabled = config.servers.iter().filter(|s| s.enabled);
    let found = if gateway.inner.options.no_prefix {
        enabled.map(|s| (s.name.clone(), name.to_owned())).next()
    } else {
        enabled
            .filter_map(|s| {
                name.strip_prefix(&format!("mcp_{}_", s.name))
                    .map(|own| (s.name.clone(), own.to_owned()))
            })
            // The longest server name that prefixes it (names may nest).
            .max_by_key(|(server, _)| server.len())
    };
    found.ok_or_else(|| Error::InvalidInput(format!("unknown event type '{name:.200}'")))
}

/// A `*Ms` field of the client's params: `None` when absent or null.
fn millis_param(params: &Value, key: &str) -> Result<Option<Duration>, Error> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Duration::from_millis)
            .map(Some)
            .ok_or_else(|| Error::InvalidInput(format!("'{key}' must be a non-negative integer"))),
    }
}

fn name_param(params: &Value) -> Result<&str, Error> {
    params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidInput("a 'name' string is required".into()))
}

/// `events/list`: every server's event types under the gateway's names.
pub(crate) async fn list(gateway: &Gateway) -> Result<Value, Error> {
    let mut events = Vec::new();
    for mut item in gateway.hub().list_events(None).await? {
        let server = item
            .as_object_mut()
            .and_then(|o| o.remove("server"))
            .and_then(|s| s.as_str().map(str::to_owned))
            .unwrap_or_default();
        if let Some(name) = item.get("name").and_then(Value::as_str) {
            item["name"] = shown(gateway, &server, name).into();
        }
        events.push(item);
    }
    Ok(json!({ "events": events }))
}

/// An occurrence as the wire has it, under the gateway's name.
fn occurrence(gateway: &Gateway, server: &str, o: &mcpmux_core::events_ext::Occurrence) -> Value {
    let mut v = Map::new();
    v.insert("eventId".into(), o.event_id.clone().into());
    v.insert("name".into(), shown(gateway, server, &o.name).into());
    if let Some(t) = &o.timestamp {
        v.insert("timestamp".into(), t.clone().into());
    }
    v.insert("data".into(), o.data.clone());
    if let Some(c) = &o.cursor {
        v.insert("cursor".into(), c.clone().into());
    }
    Value::Object(v)
}

/// `events/poll`, passed to the server that has the type.
pub(crate) async fn poll(gateway: &Gateway, params: &Value) -> Result<Value, Error> {
    let (server, own) = resolve(gateway, name_param(params)?)?;
    let max = params
        .get("maxEvents")
        .and_then(Value::as_u64)
        .map(|n| n.min(u64::from(u32::MAX)) as u32);
    let query = EventQuery {
        cursor: params
            .get("cursor")
            .and_then(Value::as_str)
            .map(str::to_owned),
        max_events: max,
        max_age: millis_param(params, "maxAgeMs")?,
        heartbeat: None,
    };
    let page: EventsPage = gateway
        .hub()
        .poll_events_with(&server, &own, params.get("arguments"), &query)
        .await?;
    let events: Vec<Value> = page
        .events
        .iter()
        .map(|o| occurrence(gateway, &server, o))
        .collect();
    Ok(json!({
        "events": events,
        "cursor": page.cursor,
        "truncated": page.truncated,
        "hasMore": page.has_more,
        "nextPollMs": page.next_poll_ms,
    }))
}

/// `events/subscribe` (webhook delivery), passed to the server.
pub(crate) async fn subscribe(gateway: &Gateway, params: &Value) -> Result<Value, Error> {
    let (server, own) = resolve(gateway, name_param(params)?)?;
    let delivery = params.get("delivery").cloned().unwrap_or(Value::Null);
    let text = |key: &str| delivery.get(key).and_then(Value::as_str).map(str::to_owned);
    let (Some(url), Some(secret)) = (text("url"), text("secret")) else {
        return Err(Error::InvalidInput(
            "events/subscribe: delivery {mode: \"webhook\", url, secret} is required".into(),
        ));
    };
    // `ttlMs: null` asks for no expiry; omitted, the server's default.
    let options = SubscribeOptions {
        no_expiry: params.get("ttlMs").is_some_and(Value::is_null),
        max_age: millis_param(params, "maxAgeMs")?,
    };
    let hook = Webhook {
        url,
        secret,
        cursor: params
            .get("cursor")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ttl: millis_param(params, "ttlMs")?,
    };
    let sub = gateway
        .hub()
        .subscribe_events_with(&server, &own, params.get("arguments"), &hook, &options)
        .await?;
    let mut answer = json!({
        "id": sub.id,
        "refreshBefore": sub.refresh_before,
        "cursor": sub.cursor,
        "truncated": sub.truncated,
    });
    if let Some(status) = sub.delivery_status {
        answer["deliveryStatus"] = status;
    }
    Ok(answer)
}

/// `events/unsubscribe`, passed to the server.
pub(crate) async fn unsubscribe(gateway: &Gateway, params: &Value) -> Result<Value, Error> {
    let (server, own) = resolve(gateway, name_param(params)?)?;
    let url = params
        .pointer("/delivery/url")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Error::InvalidInput("events/unsubscribe: delivery.url is required".into())
        })?;
    gateway
        .hub()
        .unsubscribe_events(&server, &own, params.get("arguments"), url)
        .await?;
    Ok(json!({}))
}

/// `events/stream`: open until the client cancels it (its task is then
/// dropped, which stops the server's stream) or the server ends it.
pub(crate) async fn stream(
    gateway: &Gateway,
    params: &Value,
    request_id: &Value,
    out: &Out,
) -> Result<Value, Error> {
    let (server, own) = resolve(gateway, name_param(params)?)?;
    let hub = gateway.hub();
    // Subscribed first, so that no occurrence goes by unseen.
    let mut events = hub.events();
    let query = EventQuery {
        cursor: params
            .get("cursor")
            .and_then(Value::as_str)
            .map(str::to_owned),
        max_age: millis_param(params, "maxAgeMs")?,
        ..EventQuery::default()
    };
    let handle = hub
        .stream_events_with(&server, &own, params.get("arguments"), &query)
        .await?;
    let id = handle.id();
    let notify = |method: &str, mut body: Value| {
        body["_meta"] = json!({ SUBSCRIPTION_ID: request_id });
        out.try_send(json!({"jsonrpc": "2.0", "method": method, "params": body}).into());
    };
    // The client's watchdog needs a sign of life; the server's heartbeats
    // stay with the hub's stream.
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.tick().await;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = heartbeat.tick() => {
                notify("notifications/events/heartbeat", json!({ "cursor": handle.cursor() }));
                continue;
            }
        };
        let Some(event) = event else { break };
        match event {
            HubEvent::Event {
                server: s,
                subscription,
                name,
                event_id,
                timestamp,
                data,
                cursor,
            } if s == server && subscription == id => {
                let o = mcpmux_core::events_ext::Occurrence {
                    event_id,
                    name,
                    timestamp,
                    data,
                    cursor,
                };
                notify(
                    "notifications/events/event",
                    occurrence(gateway, &server, &o),
                );
            }
            HubEvent::EventStream {
                server: s,
                subscription,
                state,
                cursor,
                truncated,
                error,
                error_code,
                error_data,
            } if s == server && subscription == id => match state.as_str() {
                "active" => notify(
                    "notifications/events/active",
                    json!({ "cursor": cursor, "truncated": truncated }),
                ),
                "error" => notify(
                    "notifications/events/error",
                    json!({ "error": wire_error(error, error_code, error_data) }),
                ),
                "terminated" | "failed" => {
                    notify(
                        "notifications/events/terminated",
                        json!({ "error": wire_error(error, error_code, error_data) }),
                    );
                    return Ok(ended(request_id));
                }
                "ended" => return Ok(ended(request_id)),
                _ => {}
            },
            _ => {}
        }
    }
    drop(handle);
    Ok(ended(request_id))
}

/// A stream's error as the client gets it: the server's code, message and
/// `data` as the hub kept them (SEP-3415: a client re-lists on NotFound,
/// stops on Forbidden, so the code must survive); -32603 for a failure of
/// the gateway's own (the server's request failed).
fn wire_error(message: Option<String>, code: Option<i64>, data: Option<Value>) -> Value {
    let mut message = message.unwrap_or_default();
    if let Some(code) = code {
        // The hub appends the code for people; the wire has it apart.
        let suffix = format!(" (code {code})");
        if message.ends_with(&suffix) {
            message.truncate(message.len() - suffix.len());
        }
    }
    let mut error = json!({ "code": code.unwrap_or(-32603), "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    error
}

/// The result of an `events/stream` that ended: the stream's id in `_meta`
/// (SEP-3415's `StreamEventsResult`; `resultType` is added for the clients
/// whose revision has it).
fn ended(request_id: &Value) -> Value {
    json!({ "_meta": { SUBSCRIPTION_ID: request_id } })
}
