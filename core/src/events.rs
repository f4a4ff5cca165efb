//! What happens to a hub's servers, told to the host as [`HubEvent`]s.
//!
//! One [`EventSender`] per hub fans events out to every [`EventStream`]
//! (`Hub::events`). Sending never waits: each stream has a ring of
//! [`EVENT_BUFFER`] events, and a consumer that falls behind loses the
//! oldest ones, told by one [`HubEvent::Lagged`] with how many. The engine
//! is never slowed by a slow host.
//!
//! A stream ends (`None`) once the hub is closed and the events sent while
//! it closed have been read ([`EventSender::close`]), or once the hub is
//! gone: every front end's iterator ends there.
//!
//! Text that came from a server (log data, error messages) has the
//! config's secrets replaced (the `secrets` module) before it is sent.

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

/// Events each [`EventStream`] keeps for its consumer before the oldest are
/// dropped.
pub const EVENT_BUFFER: usize = 1024;

/// One thing that happened to a server of the hub. Serialized as a JSON
/// object whose `type` is the variant's snake_case name (what the C, Python
/// and Node front ends hand to the host).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HubEvent {
    /// A server's connection state changed.
    ServerState {
        /// The configured server name.
        server: String,
        /// `connected`, `failed`, `restarting` or `disabled`; `removed`
        /// when a reload closed a server whose name left the config.
        state: String,
        /// Why, when the state is `failed` or `restarting`.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The error's stable code, with `error`.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// Restart attempts since the server was last healthy (0 for the
        /// first start).
        attempt: u32,
    },
    /// A server's tool list changed (hub names).
    ToolsChanged {
        /// The configured server name.
        server: String,
        /// Tools that are new.
        added: Vec<String>,
        /// Tools that are gone.
        removed: Vec<String>,
    },
    /// A server sent `notifications/resources/list_changed`.
    ResourcesChanged {
        /// The configured server name.
        server: String,
    },
    /// A server sent `notifications/prompts/list_changed`.
    PromptsChanged {
        /// The configured server name.
        server: String,
    },
    /// A server's event types changed (`notifications/events/list_changed`
    /// of the events extension): list them again.
    EventsChanged {
        /// The configured server name.
        server: String,
    },
    /// A subscribed resource changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// The configured server name.
        server: String,
        /// The resource's URI.
        uri: String,
    },
    /// A server's log message (`notifications/message`).
    Log {
        /// The configured server name.
        server: String,
        /// The MCP log level (`debug` ... `emergency`).
        level: String,
        /// The logger's name, when the server gave one.
        #[serde(skip_serializing_if = "Option::is_none")]
        logger: Option<String>,
        /// The message's `data`, as sent (secrets replaced).
        data: Value,
    },
    /// A task's status changed (`notifications/tasks/status` or a poll).
    TaskStatus {
        /// The configured server name.
        server: String,
        /// The task's id.
        task_id: String,
        /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
        status: String,
        /// The server's status message, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// An occurrence pushed on an events-extension stream
    /// (`notifications/events/event`, [`Hub::stream_events`](crate::Hub::stream_events)).
    Event {
        /// The configured server name.
        server: String,
        /// The stream's id ([`EventStreamHandle::id`](crate::events_ext::EventStreamHandle::id)).
        subscription: u64,
        /// The event type's name.
        name: String,
        /// The server's id of the occurrence (for deduplication).
        event_id: String,
        /// When it happened (ISO 8601, as sent), when the server said.
        #[serde(skip_serializing_if = "Option::is_none")]
        timestamp: Option<String>,
        /// The occurrence's `data`, as sent.
        data: Value,
        /// The cursor to resume after this occurrence, when the server gave
        /// one (`None`: the event type has no replay).
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    },
    /// The state of an events-extension stream changed: `active` (the
    /// server confirmed it; again with `truncated` after a gap), `error` (a
    /// transient error, the stream stays open), `reconnecting` (no
    /// heartbeat in time: the stream is sent again from its cursor),
    /// `terminated` (the server ended the subscription), `ended` (the
    /// server closed the stream) or `failed` (the request failed).
    EventStream {
        /// The configured server name.
        server: String,
        /// The stream's id.
        subscription: u64,
        /// One of the states above.
        state: String,
        /// The stream's cursor now, when there is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
        /// Whether events were lost before this point (`active` only).
        truncated: bool,
        /// The error's message (`error`, `terminated`, `failed`).
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The server's JSON-RPC error code (`error`, `terminated`), e.g.
        /// -32023 NotFound or -32025 Forbidden: a host re-lists or stops on it.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_code: Option<i64>,
        /// The server's error `data` (`error`, `terminated`), redacted; absent
        /// when the server sent none or more than 4 KiB.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_data: Option<Value>,
    },
    /// A policy with pinned tool definitions (`pin_tools`) quarantined a
    /// tool: its definition changed since it was approved, or it is new on
    /// a server whose tools are pinned. It is not offered and calls to it
    /// are refused (`TOOL_CHANGED`) until `mcpmux policy approve`. Sent
    /// once per new definition; never carries the server's text.
    ToolQuarantined {
        /// The configured server name.
        server: String,
        /// The server's own tool name.
        tool: String,
        /// Which fields differ from the pin (`name`, `title`,
        /// `description`, `inputSchema`, `outputSchema`, `annotations`),
        /// or `["new"]` for a tool that was never approved.
        changes: Vec<String>,
    },
    /// This stream's consumer fell behind: `count` older events were lost.
    Lagged {
        /// How many events were dropped.
        count: u64,
    },
}

impl HubEvent {
    /// The event as a JSON object (`{"type": ..., ...}`).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The sending side of a hub's events; cheap to clone. Owned by the hub
/// and the clients it made.
#[derive(Clone)]
pub struct EventSender {
    tx: broadcast::Sender<HubEvent>,
    /// `true` once the hub closed: streams end after what is queued.
    closed: Arc<watch::Sender<bool>>,
}

impl Default for EventSender {
    fn default() -> Self {
        EventSender {
            tx: broadcast::channel(EVENT_BUFFER).0,
            closed: Arc::new(watch::Sender::new(false)),
        }
    }
}

impl std::fmt::Debug for EventSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSender")
            .field("streams", &self.tx.receiver_count())
            .finish()
    }
}

impl EventSender {
    /// Sends `event` to every stream; never waits, and costs nothing when
    /// no stream is open.
    pub fn send(&self, event: HubEvent) {
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(event);
        }
    }

    /// Ends every stream once it has read what was sent before: the hub
    /// closed ([`crate::Hub::close`] calls it last).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Whether any stream is open (events nobody reads need not be made).
    pub fn has_streams(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// A new stream of the events sent from now on.
    pub fn subscribe(&self) -> EventStream {
        EventStream {
            rx: self.tx.subscribe(),
            closed: self.closed.subscribe(),
            ended: false,
        }
    }
}

/// The events of one hub, from when the stream was made. Owned by the
/// host; dropping it unsubscribes.
pub struct EventStream {
    rx: broadcast::Receiver<HubEvent>,
    closed: watch::Receiver<bool>,
    ended: bool,
}

impl EventStream {
    /// The next event, waiting for one; `None` once the hub closed (after
    /// the events sent before) or is gone. After the consumer fell behind,
    /// the next event is [`HubEvent::Lagged`].
    pub async fn recv(&mut self) -> Option<HubEvent> {
        if self.ended {
            return None;
        }
        let received = tokio::select! {
            biased;
            r = self.rx.recv() => Some(r),
            // Closed (or the sender gone): what is queued, then the end.
            _ = self.closed.wait_for(|closed| *closed) => None,
        };
        let next = match received {
            Some(Ok(event)) => Some(event),
            Some(Err(broadcast::error::RecvError::Lagged(count))) => {
                Some(HubEvent::Lagged { count })
            }
            Some(Err(broadcast::error::RecvError::Closed)) => None,
            None => self.try_recv().ok().flatten(),
        };
        if next.is_none() {
            self.ended = true;
        }
        next
    }

    /// The next event if one is waiting, without waiting: `Ok(None)` when
    /// none is, `Err(())` once the stream has ended (the hub closed and
    /// nothing is left, or the hub is gone).
    #[allow(clippy::result_unit_err)]
    pub fn try_recv(&mut self) -> Result<Option<HubEvent>, ()> {
        if self.ended {
            return Err(());
        }
        match self.rx.try_recv() {
            Ok(event) => Ok(Some(event)),
            Err(broadcast::error::TryRecvError::Lagged(count)) => {
                Ok(Some(HubEvent::Lagged { count }))
            }
            Err(broadcast::error::TryRecvError::Empty)
                if !*self.closed.borrow() && self.closed.has_changed().is_ok() =>
            {
                Ok(None)
            }
            Err(_) => {
                self.ended = true;
                Err(())
            }
        }
    }

    /// The stream as a [`futures::Stream`].
    pub fn into_stream(self) -> impl futures::Stream<Item = HubEvent> + Send + Unpin {
        Box::pin(futures::stream::unfold(self, |mut s| async move {
            s.recv().await.map(|e| (e, s))
        }))
    }
}

/// The most bytes of a server's log message (its params as sent) that
/// reach the event stream; a longer message keeps its level and logger,
/// and its data becomes a note of its size. Events wait in buffers of
/// [`EVENT_BUFFER`] for each slow subscriber, so what one holds is bounded.
pub const MAX_LOG_MESSAGE: usize = 64 * 1024;

/// The longest resource URI that a `notifications/resources/updated`
/// may carry to the event stream; a longer one is dropped (cut, it would
/// name another resource).
pub const MAX_EVENT_URI: usize = 8 * 1024;

/// A server's `notifications/message` (its params as sent) as a
/// [`HubEvent::Log`]: string data and strings inside structured data have
/// the config's secrets replaced; data of a message over
/// [`MAX_LOG_MESSAGE`] is left out.
pub fn log_event(server: &str, params: Option<&RawValue>) -> HubEvent {
    // Level and logger of any JSON type: one that is not a string is
    // ignored, not a reason to lose the message.
    #[derive(serde::Deserialize)]
    struct Message<D> {
        level: Option<Value>,
        logger: Option<Value>,
        data: Option<D>,
    }
    let text = params.map_or("null", RawValue::get);
    let (message, mut data) = if text.len() > MAX_LOG_MESSAGE {
        // Level and logger only: the data is skipped, not built.
        let message = serde_json::from_str::<Message<serde::de::IgnoredAny>>(text).ok();
        let note = format!(
            "[{} bytes of log message left out: over {MAX_LOG_MESSAGE}]",
            text.len()
        );
        let message = message.map(|m| Message::<Value> {
            level: m.level,
            logger: m.logger,
            data: None,
        });
        (message, Value::String(note))
    } else {
        match serde_json::from_str::<Message<Value>>(text) {
            Ok(mut m) => {
                let data = m.data.take().unwrap_or(Value::Null);
                (Some(m), data)
            }
            Err(_) => (None, Value::Null),
        }
    };
    let level = message
        .as_ref()
        .and_then(|m| m.level.as_ref()?.as_str())
        .unwrap_or("info");
    let logger = message.as_ref().and_then(|m| m.logger.as_ref()?.as_str());
    crate::secrets::redact_value(&mut data);
    HubEvent::Log {
        server: server.to_owned(),
        level: clip(level, 16),
        logger: logger.map(|l| clip(l, 256)),
        data,
    }
}

/// At most `max` bytes of `text` (on a char boundary): names a server
/// chooses are not echoed at any length.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_slow_stream_loses_the_oldest_events_and_is_told_how_many() {
        let sender = EventSender::default();
        let mut stream = sender.subscribe();
        for i in 0..(EVENT_BUFFER + 10) {
            sender.send(HubEvent::ResourceUpdated {
                server: "s".into(),
                uri: format!("file:///{i}"),
            });
        }
        assert_eq!(stream.recv().await, Some(HubEvent::Lagged { count: 10 }));
        assert_eq!(
            stream.recv().await,
            Some(HubEvent::ResourceUpdated {
                server: "s".into(),
                uri: "file:///10".into()
            })
        );
    }

    #[test]
    fn events_serialize_with_their_type() {
        let e = HubEvent::ToolsChanged {
            server: "a".into(),
            added: vec!["mcp_a_x".into()],
            removed: vec![],
        };
        assert_eq!(
            e.to_json(),
            serde_json::json!({"type": "tools_changed", "server": "a", "added": ["mcp_a_x"], "removed": []})
        );
        let params =
            RawValue::from_string(r#"{"level": "warning", "data": {"n": 1}}"#.into()).unwrap();
        let log = log_event("a", Some(&params));
        assert_eq!(
            log.to_json(),
            serde_json::json!({"type": "log", "server": "a", "level": "warning", "data": {"n": 1}})
        );
    }

    #[test]
    fn a_log_message_too_large_for_the_stream_keeps_its_level_not_its_data() {
        let big = "x".repeat(MAX_LOG_MESSAGE);
        let text = format!(r#"{{"level":"error","logger":"db","data":"{big}"}}"#);
        let params = RawValue::from_string(text.clone()).unwrap();
        let HubEvent::Log {
            level,
            logger,
            data,
            ..
        } = log_event("a", Some(&params))
        else {
            panic!("not a log event")
        };
        assert_eq!((level.as_str(), logger.as_deref()), ("error", Some("db")));
        let note = data.as_str().unwrap();
        assert!(note.contains(&format!("{} bytes", text.len())), "{note}");
        // A level that is not a string: the data is kept.
        let params =
            RawValue::from_string(r#"{"level": 5, "logger": [], "data": "kept"}"#.into()).unwrap();
        let HubEvent::Log { level, data, .. } = log_event("a", Some(&params)) else {
            panic!("not a log event")
        };
        assert_eq!((level.as_str(), data), ("info", Value::from("kept")));
        // Params that are not an object: no panic, no data.
        for text in ["[1, 2]", "\"x\"", "null"] {
            let params = RawValue::from_string(text.into()).unwrap();
            let HubEvent::Log { level, data, .. } = log_event("a", Some(&params)) else {
                panic!("not a log event")
            };
            assert_eq!((level.as_str(), data), ("info", Value::Null), "{text}");
        }
    }

    #[tokio::test]
    async fn a_closed_hub_ends_its_streams_after_what_was_sent() {
        let sender = EventSender::default();
        let mut stream = sender.subscribe();
        sender.send(HubEvent::PromptsChanged { server: "s".into() });
        sender.close();
        assert_eq!(
            stream.recv().await,
            Some(HubEvent::PromptsChanged { server: "s".into() })
        );
        assert_eq!(stream.recv().await, None);
        assert_eq!(stream.try_recv(), Err(()));
    }

    #[test]
    fn the_stream_ends_with_the_hub() {
        let sender = EventSender::default();
        let mut stream = sender.subscribe();
        drop(sender);
        assert_eq!(stream.try_recv(), Err(()));
    }
}
