//! The `subscriptions/listen` stream of a 2026-07-28 connection: how the
//! stateless revision delivers what 2025-11-25 sent unasked (list changes)
//! or after `resources/subscribe` (resource updates).
//!
//! A [`Listener`] is owned by its connection's client; the task that keeps
//! the stream open ([`run`]) is spawned at connect and ends when the client
//! is dropped or the connection ends. It asks for every list change the
//! server's capabilities offer (`toolsListChanged`, `promptsListChanged`,
//! `resourcesListChanged`, and the events extension's `eventsListChanged`
//! when its capability says `listChanged: true`)
//! and for the URIs the host subscribed to (`resourceSubscriptions`), and,
//! when the server offers the tasks extension, for the status of the tasks
//! a call is following (`taskIds`, SEP-2663: `notifications/tasks` with
//! the whole task, so the follower need not poll; see [`TaskWatch`]). A new
//! set of URIs is a new stream: the old request is cancelled and the new
//! one sent, and [`Listener::watch_resource`] returns once the server's
//! `notifications/subscriptions/acknowledged` says whether it took the URI.
//! The notifications on the stream are handled as on any connection (by the
//! client's inbound side): the stream only makes the server send them.
//!
//! A server that does not know the method (`-32601`) is not asked again
//! until the URIs change; any other end is retried with a growing pause
//! (at most [`MAX_FAILURES`] in a row without an acknowledgment).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::{oneshot, watch, Notify};

use crate::error::Error;
use crate::jsonrpc::{Peer, RequestOptions};
use crate::stateless::RequestMeta;

/// The request that opens the stream.
pub const METHOD: &str = "subscriptions/listen";

/// The server's first message on a stream: the filter it agreed to.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// Most resource URIs one connection listens for.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1024;

/// Most tasks one connection asks status notifications of; a task past
/// it is followed by polling alone.
pub const MAX_TASK_SUBSCRIPTIONS: usize = 256;

/// Streams that may fail in a row, without an acknowledgment between,
/// before the listener waits for the host to change what it listens for.
pub const MAX_FAILURES: u32 = 8;

/// The pause before the first retry; it doubles up to [`LAST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(60);

/// The JSON-RPC code of a method the server does not know.
const METHOD_NOT_FOUND: i64 = -32601;

/// What one connection listens for, and what the server acknowledged.
/// Shared by the client (the host's resource subscriptions), its inbound
/// side (acknowledgments) and the task that keeps the stream open.
#[derive(Debug)]
pub struct Listener {
    server: String,
    /// The list changes the server's capabilities offer, asked for on every
    /// stream.
    lists: Map<String, Value>,
    /// Whether the server offers resource subscriptions at all.
    resources_offered: bool,
    /// Whether the server offers the tasks extension (whose status
    /// notifications are asked for with `taskIds`).
    tasks_offered: bool,
    /// Set once an acknowledgment left out every task asked for: the
    /// server does not push task status, and is not asked again.
    tasks_refused: std::sync::atomic::AtomicBool,
    state: Mutex<State>,
    /// Bumped on every `notifications/tasks` of a task followed: wakes the
    /// followers, each of which takes its own from `State::pushed`.
    pushes: watch::Sender<u64>,
    /// Wakes the task when the URIs changed (a permit is kept when the task
    /// is busy, so no change is missed).
    changed: Notify,
    /// The latest stream's outcome, by generation of the URIs it asked for.
    acks: watch::Sender<Ack>,
}

#[derive(Debug, Default)]
struct State {
    resources: BTreeSet<String>,
    /// Bumped on every change of `resources`.
    generation: u64,
    /// The request id and generation of the stream now open.
    open: Option<(u64, u64)>,
    /// Whether the open stream was acknowledged.
    acknowledged: bool,
    /// The tasks followed (their ids), asked for as `taskIds`.
    tasks: BTreeSet<String>,
    /// Of those, the ones the open stream's acknowledgment named.
    tasks_acknowledged: BTreeSet<String>,
    /// The latest task a server pushed, by id, until its follower takes it
    /// (only tasks followed: bounded with them).
    pushed: std::collections::HashMap<String, Value>,
}

/// How the stream of one generation began: the filter the server agreed
/// to, or why it did not.
#[derive(Debug, Clone, Default)]
struct Ack {
    generation: u64,
    outcome: Option<Result<Value, Error>>,
}

impl Listener {
    /// The listener of server `server` with these capabilities (as sent by
    /// `server/discover`); `None` when there is nothing it could listen for.
    pub fn new(server: &str, capabilities: &Value) -> Option<Arc<Listener>> {
        let flag = |section: &str, key: &str| {
            capabilities
                .get(section)
                .and_then(|s| s.get(key))
                .and_then(Value::as_bool)
                == Some(true)
        };
        let mut lists = Map::new();
        for (section, key) in [
            ("tools", "toolsListChanged"),
            ("prompts", "promptsListChanged"),
            ("resources", "resourcesListChanged"),
        ] {
            if flag(section, "listChanged") {
                lists.insert(key.into(), true.into());
            }
        }
        if crate::events_ext::offers_list_changed(capabilities) {
            lists.insert("eventsListChanged".into(), true.into());
        }
        let resources_offered = flag("resources", "subscribe");
        let tasks_offered = capabilities
            .get("extensions")
            .and_then(|e| e.get(crate::tasks::EXTENSION))
            .is_some();
        if lists.is_empty() && !resources_offered && !tasks_offered {
            return None;
        }
        Some(Arc::new(Listener {
            server: server.to_owned(),
            lists,
            resources_offered,
            tasks_offered,
            tasks_refused: Default::default(),
            state: Mutex::default(),
            pushes: watch::Sender::new(0),
            changed: Notify::new(),
            acks: watch::Sender::new(Ack::default()),
        }))
    }

    /// Adds (`on`) or removes `uri` from the resources listened for. Adding
    /// returns once the server acknowledged a stream with it, within
    /// `timeout`: `INVALID_INPUT` when the server left it out (or offers no
    /// resource subscriptions), the server's error when the stream failed,
    /// `TIMEOUT` when no acknowledgment came. Removing returns at once.
    pub async fn watch_resource(
        &self,
        uri: &str,
        on: bool,
        timeout: Duration,
    ) -> Result<(), Error> {
        if !self.resources_offered {
            return Err(Error::InvalidInput(format!(
                "server '{}' does not offer resource subscriptions",
                self.server
            )));
        }
        let generation = {
            let mut state = self.state.lock().unwrap();
            if on && !state.resources.contains(uri) {
                if state.resources.len() >= MAX_RESOURCE_SUBSCRIPTIONS {
                    return Err(Error::LimitExceeded(format!(
                        "server '{}': {MAX_RESOURCE_SUBSCRIPTIONS} resources are subscribed already",
                        self.server
                    )));
                }
                state.resources.insert(uri.to_owned());
            } else if !on && !state.resources.remove(uri) {
                return Ok(());
            } else if on {
                // Already listened for: the open stream's answer stands.
                if state.acknowledged {
                    return Ok(());
                }
            }
            state.generation += 1;
            state.generation
        };
        self.changed.notify_one();
        if !on {
            return Ok(());
        }
        let mut acks = self.acks.subscribe();
        let waited = tokio::time::timeout(
            timeout,
            acks.wait_for(|a| a.generation >= generation && a.outcome.is_some()),
        )
        .await;
        let outcome = match waited {
            Ok(Ok(ack)) => ack.outcome.clone().expect("waited for an outcome"),
            Ok(Err(_)) => Err(Error::TransportClosed(format!(
                "server '{}': connection closed",
                self.server
            ))),
            Err(_) => Err(Error::Timeout(format!(
                "server '{}' did not acknowledge {METHOD} within {:.1} s",
                self.server,
                timeout.as_secs_f64()
            ))),
        };
        let refused = match outcome {
            Ok(accepted) => {
                let taken = accepted
                    .get("resourceSubscriptions")
                    .and_then(Value::as_array)
                    .is_some_and(|uris| uris.iter().any(|u| u.as_str() == Some(uri)));
                if taken {
                    return Ok(());
                }
                Error::InvalidInput(format!(
                    "server '{}' did not accept a subscription to '{uri}'",
                    self.server
                ))
            }
            Err(e) => e,
        };
        // Not listened for after all: the next stream leaves it out.
        let mut state = self.state.lock().unwrap();
        if state.resources.remove(uri) {
            state.generation += 1;
            drop(state);
            self.changed.notify_one();
        }
        Err(refused)
    }

    /// Handles `notifications/subscriptions/acknowledged`: the filter the
    /// server agreed to for the stream its `_meta` names.
    pub fn acknowledged(&self, params: &Value) {
        let id = params
            .get("_meta")
            .and_then(|m| m.get(crate::events_ext::SUBSCRIPTION_META))
            .and_then(|id| id.as_u64().or_else(|| id.as_str()?.parse().ok()));
        let generation = {
            let mut state = self.state.lock().unwrap();
            match state.open {
                Some((open, generation)) if Some(open) == id => {
                    state.acknowledged = true;
                    let named = params
                        .pointer("/notifications/taskIds")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    state.tasks_acknowledged = named
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|id| state.tasks.contains(*id))
                        .map(str::to_owned)
                        .collect();
                    if !state.tasks.is_empty() && state.tasks_acknowledged.is_empty() {
                        self.tasks_refused
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    generation
                }
                _ => {
                    tracing::debug!(server = %self.server, "acknowledgment of no open stream");
                    return;
                }
            }
        };
        let accepted = params.get("notifications").cloned().unwrap_or(json!({}));
        tracing::debug!(server = %self.server, filter = %accepted, "listening");
        self.acks.send_replace(Ack {
            generation,
            outcome: Some(Ok(accepted)),
        });
    }

    /// Asks for the status notifications of task `task_id` while the
    /// returned watch lives (dropping it takes the task off the stream).
    /// `None` when the server does not offer the tasks extension, left out
    /// every task an earlier stream asked for (it does not push), or
    /// [`MAX_TASK_SUBSCRIPTIONS`] tasks are followed already: the caller
    /// polls alone.
    pub fn follow_task(self: &Arc<Self>, task_id: &str) -> Option<TaskWatch> {
        if !self.tasks_offered
            || self
                .tasks_refused
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            return None;
        }
        {
            let mut state = self.state.lock().unwrap();
            if state.tasks.contains(task_id) || state.tasks.len() >= MAX_TASK_SUBSCRIPTIONS {
                return None;
            }
            state.tasks.insert(task_id.to_owned());
            state.generation += 1;
        }
        self.changed.notify_one();
        Some(TaskWatch {
            listener: self.clone(),
            task_id: task_id.to_owned(),
            pushes: self.pushes.subscribe(),
        })
    }

    /// Handles `notifications/tasks` (the whole task, as `tasks/get` would
    /// answer it): kept for the task's follower, who is woken.
    pub fn task_pushed(&self, task: &Value) {
        let Some(id) = task.get("taskId").and_then(Value::as_str) else {
            return;
        };
        {
            let mut state = self.state.lock().unwrap();
            if !state.tasks.contains(id) {
                return;
            }
            state.pushed.insert(id.to_owned(), task.clone());
        }
        self.pushes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The filter of the next stream and its generation (`None`: nothing to
    /// listen for).
    fn next(&self) -> Option<(Value, u64)> {
        let state = self.state.lock().unwrap();
        let mut filter = self.lists.clone();
        if !state.resources.is_empty() {
            filter.insert(
                "resourceSubscriptions".into(),
                state.resources.iter().cloned().collect::<Vec<_>>().into(),
            );
        }
        if !state.tasks.is_empty() {
            filter.insert(
                "taskIds".into(),
                state.tasks.iter().cloned().collect::<Vec<_>>().into(),
            );
        }
        (!filter.is_empty()).then(|| (Value::Object(filter), state.generation))
    }

    fn generation(&self) -> u64 {
        self.state.lock().unwrap().generation
    }

    fn opened(&self, id: u64, generation: u64) {
        let mut state = self.state.lock().unwrap();
        state.open = Some((id, generation));
        state.acknowledged = false;
        state.tasks_acknowledged.clear();
    }

    /// The stream ended; `Err` is told to whoever waits for its
    /// acknowledgment. Returns whether it had been acknowledged.
    fn ended(&self, outcome: Result<(), Error>) -> bool {
        let (generation, acknowledged) = {
            let mut state = self.state.lock().unwrap();
            let open = state.open.take();
            (
                open.map(|(_, g)| g),
                std::mem::take(&mut state.acknowledged),
            )
        };
        if let (Some(generation), false, Err(e)) = (generation, acknowledged, outcome) {
            self.acks.send_replace(Ack {
                generation,
                outcome: Some(Err(e)),
            });
        }
        acknowledged
    }
}

/// One task's place on the listen stream, held by whoever follows the
/// task (a call waiting for its result); dropping it takes the task off.
pub struct TaskWatch {
    listener: Arc<Listener>,
    task_id: String,
    pushes: watch::Receiver<u64>,
}

impl TaskWatch {
    /// Whether the server agreed to push this task's status (its
    /// acknowledgment named it): polling is then only a safety net.
    pub fn acknowledged(&self) -> bool {
        let state = self.listener.state.lock().unwrap();
        state.acknowledged && state.tasks_acknowledged.contains(&self.task_id)
    }

    /// Waits up to `wait` for the server to push this task; the task it
    /// pushed (`None`: the time passed without one).
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(task) = self.take() {
                return Some(task);
            }
            tokio::select! {
                changed = self.pushes.changed() => {
                    if changed.is_err() {
                        tokio::time::sleep_until(deadline).await;
                        return None;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return self.take(),
            }
        }
    }

    fn take(&self) -> Option<Value> {
        self.listener
            .state
            .lock()
            .unwrap()
            .pushed
            .remove(&self.task_id)
    }
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        {
            let mut state = self.listener.state.lock().unwrap();
            state.pushed.remove(&self.task_id);
            state.tasks_acknowledged.remove(&self.task_id);
            if !state.tasks.remove(&self.task_id) {
                return;
            }
            state.generation += 1;
        }
        self.listener.changed.notify_one();
    }
}

/// Keeps `listener`'s stream open on `peer` (each request with `meta`)
/// until `dropped` fires (the client is gone) or the connection ends.
pub async fn run(
    listener: Arc<Listener>,
    peer: Peer,
    meta: RequestMeta,
    mut dropped: oneshot::Receiver<()>,
) {
    let opts = RequestOptions {
        timeout: Duration::MAX,
        max_total: Duration::MAX,
        ..RequestOptions::default()
    };
    let mut failures = 0u32;
    let mut pause = FIRST_RETRY;
    // Set when the server cannot be asked until the URIs change.
    let mut idle = false;
    loop {
        let next = if idle { None } else { listener.next() };
        let Some((filter, generation)) = next else {
            tokio::select! {
                _ = listener.changed.notified() => { idle = false; continue }
                _ = &mut dropped => return,
                _ = peer.closed() => return,
            }
        };
        let id = peer.next_id();
        listener.opened(id, generation);
        let params = meta.apply(Some(json!({ "notifications": filter })));
        let request = peer.request(id, METHOD, Some(&params), &opts);
        tokio::pin!(request);
        let outcome = loop {
            tokio::select! {
                answer = &mut request => break Some(answer.map(|_| ())),
                // A wake-up left from before this stream opened changes
                // nothing; a real change drops (so cancels) the request.
                _ = listener.changed.notified() => {
                    if listener.generation() != generation {
                        break None;
                    }
                }
                _ = &mut dropped => return,
            }
        };
        let Some(outcome) = outcome else {
            listener.ended(Ok(()));
            continue;
        };
        if peer.closed_error().is_some() {
            listener.ended(Err(Error::TransportClosed(format!(
                "server '{}': connection closed",
                listener.server
            ))));
            return;
        }
        let unknown = matches!(&outcome, Err(e) if e.rpc_code() == Some(METHOD_NOT_FOUND));
        match &outcome {
            Ok(()) => {
                tracing::debug!(server = %listener.server, "the server ended {METHOD}; opened again")
            }
            Err(e) if unknown => {
                tracing::debug!(server = %listener.server, error = %e, "{METHOD} not supported")
            }
            Err(e) => tracing::warn!(server = %listener.server, error = %e, "{METHOD} failed"),
        }
        if listener.ended(outcome) {
            failures = 0;
            pause = FIRST_RETRY;
        }
        if unknown {
            idle = true;
            continue;
        }
        failures += 1;
        if failures >= MAX_FAILURES {
            tracing::warn!(server = %listener.server, "{METHOD} failed {failures} times in a row; not asked again until the subscriptions change");
            failures = 0;
            pause = FIRST_RETRY;
            idle = true;
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = listener.changed.notified() => {}
            _ = &mut dropped => return,
        }
        pause = (pause * 2).min(LAST_RETRY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds `uri` on a task of its own (the test stands in for the stream).
    fn subscribing(
        listener: &Arc<Listener>,
        uri: &'static str,
    ) -> tokio::task::JoinHandle<Result<(), Error>> {
        let listener = listener.clone();
        tokio::spawn(async move {
            listener
                .watch_resource(uri, true, Duration::from_secs(5))
                .await
        })
    }

    #[test]
    fn the_filter_asks_for_what_the_capabilities_offer() {
        let caps = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": true},
            "extensions": {"io.modelcontextprotocol/events": {"listChanged": true}}
        });
        let listener = Listener::new("s", &caps).unwrap();
        let (filter, generation) = listener.next().unwrap();
        assert_eq!(
            filter,
            json!({"toolsListChanged": true, "resourcesListChanged": true, "eventsListChanged": true})
        );
        assert_eq!(generation, 0);
        assert!(Listener::new("s", &json!({"tools": {}})).is_none());
        let events =
            json!({"extensions": {"io.modelcontextprotocol/events": {"listChanged": false}}});
        assert!(Listener::new("s", &events).is_none());
        // Subscriptions alone: nothing to ask for until a URI is added.
        let only = Listener::new("s", &json!({"resources": {"subscribe": true}})).unwrap();
        assert!(only.next().is_none());
    }

    #[tokio::test]
    async fn a_resource_is_taken_when_the_acknowledgment_names_it() {
        let listener = Listener::new("s", &json!({"resources": {"subscribe": true}})).unwrap();
        let waiting = subscribing(&listener, "file:///a");
        // Stand in for the task: open the stream the change asks for.
        listener.changed.notified().await;
        let (filter, generation) = listener.next().unwrap();
        assert_eq!(filter, json!({"resourceSubscriptions": ["file:///a"]}));
        listener.opened(7, generation);
        // An acknowledgment of another stream is ignored.
        listener.acknowledged(
            &json!({"_meta": {crate::events_ext::SUBSCRIPTION_META: 6}, "notifications": {}}),
        );
        listener.acknowledged(&json!({
            "_meta": {crate::events_ext::SUBSCRIPTION_META: 7},
            "notifications": {"resourceSubscriptions": ["file:///a"]}
        }));
        waiting.await.unwrap().unwrap();

        // A URI the server leaves out is refused and dropped from the set.
        let refused = subscribing(&listener, "file:///b");
        listener.changed.notified().await;
        let (_, generation) = listener.next().unwrap();
        listener.opened(8, generation);
        listener.acknowledged(&json!({
            "_meta": {crate::events_ext::SUBSCRIPTION_META: "8"},
            "notifications": {"resourceSubscriptions": ["file:///a"]}
        }));
        let e = refused.await.unwrap().unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        assert!(e.to_string().contains("file:///b"), "{e}");
        assert_eq!(
            listener.next().unwrap().0,
            json!({"resourceSubscriptions": ["file:///a"]})
        );
    }

    #[tokio::test]
    async fn a_failed_stream_fails_the_waiter_and_no_answer_times_out() {
        let listener = Listener::new("s", &json!({"resources": {"subscribe": true}})).unwrap();
        let waiting = subscribing(&listener, "file:///a");
        listener.changed.notified().await;
        let (_, generation) = listener.next().unwrap();
        listener.opened(3, generation);
        listener.ended(Err(Error::ServerError {
            code: -32602,
            message: "no".into(),
            data: None,
        }));
        assert_eq!(waiting.await.unwrap().unwrap_err().code(), "SERVER_ERROR");

        let e = listener
            .watch_resource("file:///c", true, Duration::from_millis(20))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "TIMEOUT");
        let none = Listener::new("s", &json!({"tools": {"listChanged": true}})).unwrap();
        let e = none
            .watch_resource("file:///a", true, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
    }

    #[tokio::test]
    async fn a_followed_task_is_asked_for_pushed_and_dropped() {
        let caps = json!({"extensions": {crate::tasks::EXTENSION: {}}});
        let listener = Listener::new("s", &caps).unwrap();
        assert!(listener.next().is_none());
        let mut watch = listener.follow_task("t1").unwrap();
        assert!(listener.follow_task("t1").is_none(), "followed once");
        let (filter, generation) = listener.next().unwrap();
        assert_eq!(filter, json!({"taskIds": ["t1"]}));
        listener.opened(4, generation);
        assert!(!watch.acknowledged());
        listener.acknowledged(&json!({
            "_meta": {crate::events_ext::SUBSCRIPTION_META: 4},
            "notifications": {"taskIds": ["t1", "not-ours"]}
        }));
        assert!(watch.acknowledged());
        // A push of another task is not kept; this one's is.
        listener.task_pushed(&json!({"taskId": "other", "status": "completed"}));
        assert!(watch.next(Duration::from_millis(10)).await.is_none());
        listener.task_pushed(&json!({"taskId": "t1", "status": "completed"}));
        let pushed = watch.next(Duration::from_secs(5)).await.unwrap();
        assert_eq!(pushed["status"], "completed");
        drop(watch);
        assert!(listener.next().is_none(), "dropped: nothing to ask for");

        // A server that leaves every task out is not asked again.
        let _watch = listener.follow_task("t2").unwrap();
        let (_, generation) = listener.next().unwrap();
        listener.opened(5, generation);
        listener.acknowledged(&json!({
            "_meta": {crate::events_ext::SUBSCRIPTION_META: 5},
            "notifications": {}
        }));
        assert!(listener.follow_task("t3").is_none());
    }
}
