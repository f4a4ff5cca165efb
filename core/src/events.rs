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

/// A server's `notifications/message` as a [`HubEvent::Log`]: string data
/// and strings inside structured data have the config's secrets replaced.
pub fn log_event(server: &str, params: &Value) -> HubEvent {
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .unwrap_or("info");
    let logger = params.get("logger").and_then(Value::as_str);
    let mut data = params.get("data").cloned().unwrap_or(Value::Null);
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
fn clip(text: &str, max: usize) -> String {
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
        let log = log_event(
            "a",
            &serde_json::json!({"level": "warning", "data": {"n": 1}}),
        );
        assert_eq!(
            log.to_json(),
            serde_json::json!({"type": "log", "server": "a", "level": "warning", "data": {"n": 1}})
        );
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
