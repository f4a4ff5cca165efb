//! The events extension (`io.modelcontextprotocol/events`, SEP-3415) as the
//! engine reads it: whether a server offers it, pages of `events/poll` and
//! webhook subscription answers read with bounds, and the streams of
//! `events/stream` (the registry that routes `notifications/events/*` by
//! subscription id, each stream's cursor, and [`EventStreamHandle`]).
//!
//! Built from the incubation design sketch's wire shapes and SEP-3415's
//! reported changes (the capability under `capabilities.extensions`, errors
//! -32023..-32027, `resultType: "complete"`): the SEP's own text was not
//! readable here (docs/extensions.md, "Events"). The
//! requests themselves are sent by the hub (`hub::event_calls`); occurrences
//! pushed on a stream reach the host as [`HubEvent::Event`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{oneshot, Notify};

use crate::error::Error;
use crate::events::{EventSender, HubEvent};

/// The extension's name: a key of `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/events";

/// The `_meta` key naming the `events/stream` request a notification
/// belongs to.
pub const SUBSCRIPTION_META: &str = "io.modelcontextprotocol/subscriptionId";

/// Most occurrences one page of `events/poll` may hold (and the most
/// `maxEvents` asks for).
pub const MAX_PAGE_EVENTS: usize = 1000;

/// The least wait before the next poll, whatever `nextPollMs` says (the
/// sketch's suggested floor); a larger one is capped at [`MAX_POLL_MS`].
pub const MIN_POLL_MS: u64 = 1000;

/// The longest wait before the next poll the engine passes on.
pub const MAX_POLL_MS: u64 = 3_600_000;

/// Most bytes of one id, name, timestamp or cursor read from a server.
pub const MAX_FIELD_BYTES: usize = 4096;

/// Most bytes of one pushed occurrence's `data` (as JSON): a larger one is
/// not delivered (a warning is logged; the stream's cursor still advances).
pub const MAX_EVENT_DATA_BYTES: usize = 256 * 1024;

/// Streams one connection may hold open at once.
pub const MAX_STREAMS: usize = 256;

/// The heartbeat interval assumed when the host gives none (the sketch:
/// at least every 30 s); the stream is sent again after twice it in silence.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);

/// Whether `capabilities` (of `initialize` or `server/discover`) offer the
/// extension: under `extensions` (SEP-3415) or as the sketch's top-level
/// `events`.
pub fn offered(capabilities: &Value) -> bool {
    let extension = capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object);
    extension || capabilities.get("events").is_some_and(Value::is_object)
}

/// Whether `capabilities` say the server tells its clients when its event
/// types change (`listChanged: true` in the extension's capability).
pub fn offers_list_changed(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .or_else(|| capabilities.get("events"))
        .and_then(|e| e.get("listChanged"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// One occurrence of an event type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occurrence {
    /// The server's id (for deduplication).
    pub event_id: String,
    /// The event type's name.
    pub name: String,
    /// When it happened (ISO 8601, as sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The occurrence's `data`, as sent.
    pub data: Value,
    /// The cursor after it (pushed occurrences only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One page of `events/poll`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventsPage {
    /// The occurrences, oldest first.
    pub events: Vec<Occurrence>,
    /// The cursor to keep and send with the next poll; `None` when the
    /// event type has no replay (then nothing is to be kept).
    pub cursor: Option<String>,
    /// Occurrences were lost before these (a stale cursor, or the server's
    /// limits); never an error.
    pub truncated: bool,
    /// More are ready: poll again at once.
    pub has_more: bool,
    /// When to poll next, in milliseconds: the server's `nextPollMs`
    /// within [`MIN_POLL_MS`]..=[`MAX_POLL_MS`].
    pub next_poll_ms: u64,
}

/// A webhook subscription as the server answered `events/subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebhookSubscription {
    /// The server's routing handle (`sub_...`).
    pub id: String,
    /// When to subscribe again before the subscription expires (ISO 8601);
    /// `None` for no expiry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_before: Option<String>,
    /// The cursor the subscription starts from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Occurrences were lost before the cursor.
    pub truncated: bool,
    /// The server's `deliveryStatus`, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_status: Option<Value>,
}

/// Where an `events/poll` or `events/stream` starts and how much it
/// replays. Owned by the caller; the hub copies what it sends.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    /// The cursor to read from (`None`: from now, which replays nothing).
    pub cursor: Option<String>,
    /// `maxAgeMs`: replay nothing older than this, even when the cursor is
    /// older (the server starts at whichever is later and says `truncated`
    /// when that left occurrences out). Ignored by servers without a
    /// cursor.
    pub max_age: Option<Duration>,
    /// Most occurrences of one page (`maxEvents`, polls only; capped at
    /// [`MAX_PAGE_EVENTS`]).
    pub max_events: Option<u32>,
    /// The heartbeat interval the stream is watched with (streams only;
    /// default [`DEFAULT_HEARTBEAT`]): after twice it in silence the stream
    /// is sent again from its cursor. Not sent to the server, which picks
    /// its own interval.
    pub heartbeat: Option<Duration>,
}

/// A duration as the extension's `*Ms` fields have it: whole milliseconds
/// (saturating).
pub fn whole_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Where and how a server is to deliver a webhook subscription. The
/// secret never appears in `Debug`, logs or errors.
#[derive(Clone)]
pub struct Webhook {
    /// The callback URL: `https`, or `http` on a loopback address.
    pub url: String,
    /// The signing secret, `whsec_` and base64.
    pub secret: String,
    /// The cursor to start from (`None`: from now).
    pub cursor: Option<String>,
    /// How long the subscription is to last (`None`: the server's default,
    /// or no expiry with [`SubscribeOptions::no_expiry`]).
    pub ttl: Option<Duration>,
}

/// What else an `events/subscribe` asks for, beside its [`Webhook`]. Owned
/// by the caller; the hub copies what it sends.
#[derive(Debug, Clone, Default)]
pub struct SubscribeOptions {
    /// Ask for a subscription that never expires (`ttlMs: null`; the
    /// answer's `refreshBefore` is then null). `INVALID_INPUT` with a
    /// [`Webhook::ttl`].
    pub no_expiry: bool,
    /// `maxAgeMs`: deliver nothing older than this, even from an older
    /// cursor (as [`EventQuery::max_age`]).
    pub max_age: Option<Duration>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &self.url)
            .field("secret", &"[REDACTED]")
            .field("cursor", &self.cursor)
            .field("ttl", &self.ttl)
            .finish()
    }
}

/// Checks a webhook URL: `https`, or `http` to a loopback host
/// (`localhost`, 127.0.0.0/8, `::1`); else `INVALID_INPUT`.
pub fn check_webhook_url(url: &str) -> Result<(), Error> {
    let bad = |why: &str| Error::InvalidInput(format!("webhook url '{url:.200}': {why}"));
    let parsed = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            if crate::net::is_loopback_host(&parsed) {
                Ok(())
            } else {
                Err(bad("must be https (http only on a loopback address)"))
            }
        }
        _ => Err(bad("must be https")),
    }
}

/// Checks a webhook secret's form, never echoing it: `whsec_` and standard
/// base64 (padding optional) of 24 to 64 bytes, as SEP-3415 asks of the
/// Standard Webhooks signing secret.
pub fn check_webhook_secret(secret: &str) -> Result<(), Error> {
    use base64::Engine as _;
    let body = secret.strip_prefix("whsec_").unwrap_or("");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(body)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(body));
    match decoded {
        Ok(raw) if (24..=64).contains(&raw.len()) => Ok(()),
        _ => Err(Error::InvalidInput(
            "webhook secret: must be 'whsec_' followed by base64 of 24 to 64 bytes".into(),
        )),
    }
}

fn invalid(server: &str, method: &str, what: impl std::fmt::Display) -> Error {
    Error::ProtocolError(format!(
        "server '{server}': invalid {method} result: {what}"
    ))
}

/// A string member of at most [`MAX_FIELD_BYTES`]; `Ok(None)` when absent
/// or null.
fn text(v: &Value, key: &str) -> Result<Option<String>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= MAX_FIELD_BYTES => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(format!("'{key}' is longer than {MAX_FIELD_BYTES} bytes")),
        Some(_) => Err(format!("'{key}' is not a string")),
    }
}

fn flag(v: &Value, key: &str) -> Result<bool, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("'{key}' is not a boolean")),
    }
}

/// Reads one occurrence.
pub fn occurrence(v: &Value) -> Result<Occurrence, String> {
    if !v.is_object() {
        return Err("an event is not an object".into());
    }
    Ok(Occurrence {
        event_id: text(v, "eventId")?.ok_or("an event has no 'eventId'")?,
        name: text(v, "name")?.ok_or("an event has no 'name'")?,
        timestamp: text(v, "timestamp")?,
        data: v.get("data").cloned().unwrap_or(Value::Null),
        cursor: text(v, "cursor")?,
    })
}

/// Reads an `events/poll` result of `server`: at most [`MAX_PAGE_EVENTS`]
/// occurrences, else `PROTOCOL_ERROR`; `nextPollMs` clamped.
pub fn read_page(server: &str, result: &Value) -> Result<EventsPage, Error> {
    let bad = |what: String| invalid(server, "events/poll", what);
    let list = match result.get("events") {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => &Vec::new(),
        Some(_) => return Err(bad("'events' is not an array".into())),
    };
    if list.len() > MAX_PAGE_EVENTS {
        return Err(bad(format!(
            "{} events in one page (at most {MAX_PAGE_EVENTS})",
            list.len()
        )));
    }
    let events = list
        .iter()
        .map(occurrence)
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    let next = match result.get("nextPollMs") {
        None | Some(Value::Null) => MIN_POLL_MS,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .ok_or_else(|| bad("'nextPollMs' is not a number of milliseconds".into()))?,
    };
    Ok(EventsPage {
        events,
        cursor: text(result, "cursor").map_err(bad)?,
        truncated: flag(result, "truncated").map_err(bad)?,
        has_more: flag(result, "hasMore").map_err(bad)?,
        next_poll_ms: next.clamp(MIN_POLL_MS, MAX_POLL_MS),
    })
}

/// Reads an `events/subscribe` result of `server`.
pub fn read_subscription(server: &str, result: &Value) -> Result<WebhookSubscription, Error> {
    let bad = |what: String| invalid(server, "events/subscribe", what);
    Ok(WebhookSubscription {
        id: text(result, "id")
            .map_err(bad)?
            .ok_or_else(|| bad("no 'id'".into()))?,
        refresh_before: text(result, "refreshBefore").map_err(bad)?,
        cursor: text(result, "cursor").map_err(bad)?,
        truncated: flag(result, "truncated").map_err(bad)?,
        delivery_status: result
            .get("deliveryStatus")
            .filter(|d| d.is_object() && d.to_string().len() <= MAX_FIELD_BYTES)
            .cloned(),
    })
}

/// One open stream, shared by its task, its handle and the registry.
#[derive(Debug)]
pub struct StreamState {
    /// The stream's id (hub-wide, kept across reconnections).
    pub id: u64,
    server: String,
    cursor: Mutex<Option<String>>,
    /// Woken by every notification of the stream (the watchdog).
    pub alive: Notify,
    /// Woken once the server terminated the subscription.
    pub terminated: Notify,
    ended: AtomicBool,
    events: EventSender,
}

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

impl StreamState {
    /// A stream of `server` starting at `cursor`, its events sent to `events`.
    pub fn new(server: &str, cursor: Option<String>, events: EventSender) -> Arc<StreamState> {
        Arc::new(StreamState {
            id: NEXT_STREAM.fetch_add(1, Ordering::Relaxed),
            server: server.to_owned(),
            cursor: Mutex::new(cursor),
            alive: Notify::new(),
            terminated: Notify::new(),
            ended: AtomicBool::new(false),
            events,
        })
    }

    /// The latest cursor.
    pub fn cursor(&self) -> Option<String> {
        self.cursor.lock().unwrap().clone()
    }

    /// Tells the host the stream's state (see [`HubEvent::EventStream`]).
    pub fn tell(&self, state: &str, truncated: bool, error: Option<String>) {
        self.tell_error(state, truncated, error, None, None);
    }

    /// As [`tell`](Self::tell), with the server's error code and `data`
    /// (redacted, dropped past [`MAX_ERROR_DATA_BYTES`]).
    fn tell_error(
        &self,
        state: &str,
        truncated: bool,
        error: Option<String>,
        error_code: Option<i64>,
        error_data: Option<&Value>,
    ) {
        self.events.send(HubEvent::EventStream {
            server: self.server.clone(),
            subscription: self.id,
            state: state.to_owned(),
            cursor: self.cursor(),
            truncated,
            error: error.map(|e| crate::secrets::redact(&e).into_owned()),
            error_code,
            error_data: error_data.and_then(bounded_error_data),
        });
    }

    fn advance(&self, cursor: Result<Option<String>, String>) {
        if let Ok(Some(c)) = cursor {
            *self.cursor.lock().unwrap() = Some(c);
        }
    }

    /// Handles one `notifications/events/*` of this stream.
    fn on_notification(&self, kind: &str, params: &Value) {
        self.alive.notify_one();
        match kind {
            "event" => {
                let occurrence = match occurrence(params) {
                    Ok(o) => o,
                    Err(e) => {
                        tracing::debug!(server = %self.server, error = %e, "event ignored");
                        return;
                    }
                };
                self.advance(Ok(occurrence.cursor.clone()));
                let size = occurrence.data.to_string().len();
                if size > MAX_EVENT_DATA_BYTES {
                    tracing::warn!(server = %self.server, name = %occurrence.name, size,
                        "event not delivered: its data passes {MAX_EVENT_DATA_BYTES} bytes");
                    return;
                }
                self.events.send(HubEvent::Event {
                    server: self.server.clone(),
                    subscription: self.id,
                    name: occurrence.name,
                    event_id: occurrence.event_id,
                    timestamp: occurrence.timestamp,
                    data: occurrence.data,
                    cursor: occurrence.cursor,
                });
            }
            "heartbeat" => self.advance(text(params, "cursor")),
            "active" => {
                self.advance(text(params, "cursor"));
                self.tell("active", flag(params, "truncated").unwrap_or(false), None);
            }
            "error" | "terminated" => {
                let error = params.get("error");
                let message = error
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .chars()
                    .take(1024)
                    .collect::<String>();
                let code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
                let data = error.and_then(|e| e.get("data"));
                let message = match code {
                    Some(code) => format!("{message} (code {code})"),
                    None => message,
                };
                if kind == "terminated" {
                    if !self.ended.swap(true, Ordering::Relaxed) {
                        self.tell_error("terminated", false, Some(message), code, data);
                    }
                    self.terminated.notify_one();
                } else {
                    self.tell_error("error", false, Some(message), code, data);
                }
            }
            _ => {}
        }
    }

    /// Marks the stream ended; `true` the first time (only one final
    /// state is told).
    pub fn end(&self) -> bool {
        !self.ended.swap(true, Ordering::Relaxed)
    }
}

/// The most a stream error's `data` may take, serialized; a bigger one is
/// dropped (the code and message still reach the host).
pub const MAX_ERROR_DATA_BYTES: usize = 4096;

/// A server's error `data` as the host may see it: at most
/// [`MAX_ERROR_DATA_BYTES`], with the host's secrets redacted (a server may
/// echo one back).
fn bounded_error_data(data: &Value) -> Option<Value> {
    if data.to_string().len() > MAX_ERROR_DATA_BYTES {
        return None;
    }
    let mut data = data.clone();
    crate::secrets::redact_value(&mut data);
    Some(data)
}

/// The open streams of one connection, by the id of their `events/stream`
/// request.
#[derive(Debug, Default)]
pub struct Streams {
    open: Mutex<HashMap<u64, Arc<StreamState>>>,
}

impl Streams {
    /// Routes `notifications/events/<kind>` to the stream its `_meta`
    /// names; `false` when the method is not one of the extension's.
    pub fn on_notification(&self, server: &str, method: &str, params: &Value) -> bool {
        let Some(kind) = method.strip_prefix("notifications/events/") else {
            return false;
        };
        if kind == "list_changed" {
            tracing::debug!(server, "event types changed");
            return true;
        }
        let id = params
            .get("_meta")
            .and_then(|m| m.get(SUBSCRIPTION_META))
            .and_then(|id| id.as_u64().or_else(|| id.as_str()?.parse().ok()));
        let stream = id.and_then(|id| self.open.lock().unwrap().get(&id).cloned());
        match stream {
            Some(stream) => stream.on_notification(kind, params),
            None => tracing::debug!(server, method, "notification of no open stream"),
        }
        true
    }

    /// Opens request `id` for `stream`; `INVALID_INPUT` past [`MAX_STREAMS`].
    pub fn insert(&self, id: u64, stream: Arc<StreamState>) -> Result<(), Error> {
        let mut open = self.open.lock().unwrap();
        if open.len() >= MAX_STREAMS {
            return Err(Error::InvalidInput(format!(
                "server '{}': {MAX_STREAMS} event streams are open already",
                stream.server
            )));
        }
        open.insert(id, stream);
        Ok(())
    }

    /// Forgets request `id`.
    pub fn remove(&self, id: u64) {
        self.open.lock().unwrap().remove(&id);
    }
}

/// An open `events/stream` ([`Hub::stream_events`](crate::Hub::stream_events)).
/// Its occurrences arrive on the hub's events as [`HubEvent::Event`] with
/// this handle's [`id`](EventStreamHandle::id). Stopping it or dropping it
/// ends the stream (`notifications/cancelled` to the server).
#[derive(Debug)]
pub struct EventStreamHandle {
    state: Arc<StreamState>,
    stop: Option<oneshot::Sender<()>>,
}

impl EventStreamHandle {
    /// A handle of `state`; dropping `stop`'s sender stops the stream.
    pub fn new(state: Arc<StreamState>, stop: oneshot::Sender<()>) -> EventStreamHandle {
        EventStreamHandle {
            state,
            stop: Some(stop),
        }
    }

    /// The stream's id: the `subscription` of its events.
    pub fn id(&self) -> u64 {
        self.state.id
    }

    /// The latest cursor (from the last occurrence, heartbeat or
    /// confirmation): keep it to resume, also after a restart.
    pub fn cursor(&self) -> Option<String> {
        self.state.cursor()
    }

    /// Ends the stream.
    pub fn stop(&mut self) {
        self.stop.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_both_capability_forms() {
        assert!(offered(&json!({"extensions": {EXTENSION: {}}})));
        assert!(offered(&json!({"events": {"listChanged": false}})));
        assert!(!offered(&json!({"tools": {}})));
        assert!(!offered(&json!({"extensions": {EXTENSION: true}})));
    }

    #[test]
    fn clamps_next_poll_and_bounds_pages() {
        let page = read_page("s", &json!({"events": [], "cursor": "c", "nextPollMs": 5})).unwrap();
        assert_eq!(page.next_poll_ms, MIN_POLL_MS);
        let page = read_page("s", &json!({"nextPollMs": u64::MAX})).unwrap();
        assert_eq!(page.next_poll_ms, MAX_POLL_MS);
        let many = vec![json!({"eventId": "e", "name": "n"}); MAX_PAGE_EVENTS + 1];
        let e = read_page("s", &json!({"events": many})).unwrap_err();
        assert_eq!(e.code(), "PROTOCOL_ERROR");
        let e = read_page("s", &json!({"events": [{"name": "n"}]})).unwrap_err();
        assert_eq!(e.code(), "PROTOCOL_ERROR");
    }

    #[test]
    fn checks_webhook_urls_and_secrets() {
        assert!(check_webhook_url("https://example.com/h").is_ok());
        assert!(check_webhook_url("http://127.0.0.1:8080/h").is_ok());
        assert!(check_webhook_url("http://[::1]/h").is_ok());
        assert!(check_webhook_url("http://localhost/h").is_ok());
        assert!(check_webhook_url("http://example.com/h").is_err());
        assert!(check_webhook_url("ftp://example.com/h").is_err());
        let secret = format!("whsec_{}", "A".repeat(32));
        assert!(check_webhook_secret(&secret).is_ok());
        let e = check_webhook_secret("hunter2-secret").unwrap_err();
        assert!(!e.to_string().contains("hunter2"));
        // 23 and 65 bytes once decoded: outside the SEP's 24 to 64.
        for n in [23usize, 65] {
            use base64::Engine as _;
            let body = base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
            let e = check_webhook_secret(&format!("whsec_{body}")).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT", "{n} bytes");
        }
        assert!(check_webhook_secret("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0").is_ok());
        assert!(check_webhook_secret(&format!("whsec_{}!", "A".repeat(32))).is_err());
        let hook = Webhook {
            url: "https://x".into(),
            secret: secret.clone(),
            cursor: None,
            ttl: None,
        };
        assert!(!format!("{hook:?}").contains(&secret));
    }
}
