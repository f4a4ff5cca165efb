//! `subscriptions/listen` of the gateway's 2026-07-28 clients: the stream on
//! which the stateless revision delivers list changes and resource updates
//! (2025-11-25 clients get them unasked on their session's stream). The
//! gateway agrees to what it can tell (the lists it serves, the events
//! extension's types when a server behind it says `listChanged`, the
//! resources a server behind it accepted a subscription to), acknowledges
//! with that filter first, then relays the hub's events that match, each
//! tagged with the request's id, until the client cancels the request (its
//! task is then dropped) or the gateway's hub ends. A client that declared
//! the tasks extension may ask for its own tasks (`taskIds`, SEP-2663 task
//! status notifications): each one granted is pushed whole
//! (`notifications/tasks`, what `tasks/get` would answer) on every change
//! of its state until it ends.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use mcpmux_core::error::Error;
use mcpmux_core::events::HubEvent;
use mcpmux_core::events_ext::SUBSCRIPTION_META as SUBSCRIPTION_ID;
use serde_json::{json, Map, Value};

use super::out::Out;
use super::tasks::GatewayTask;
use super::{Gateway, GatewayMode};

/// Most resource URIs one stream may ask for: past it, the rest are left
/// out of the acknowledged filter.
const MAX_RESOURCES: usize = 1024;

/// Subscriptions asked of the hub at once for one stream: a server behind
/// that never acknowledges costs one of its timeouts per this many URIs.
const SUBSCRIBING_AT_ONCE: usize = 64;

/// How long the acknowledgment may wait for the servers behind to take
/// the URIs asked for; those not taken by then are left out of it.
const ACKNOWLEDGE_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Most task ids one stream may ask for: past it, the rest are left out
/// of the acknowledged filter.
const MAX_TASKS: usize = 256;

/// What one stream was granted.
#[derive(Default)]
struct Granted {
    tools: bool,
    prompts: bool,
    resources: bool,
    events: bool,
    uris: BTreeSet<String>,
}

/// Whether `filter` asks for `key` (`true`).
fn asks(filter: &Value, key: &str) -> bool {
    filter.get(key).and_then(Value::as_bool) == Some(true)
}

/// `subscriptions/listen`: acknowledges, then relays until cancelled.
/// `holder` is who the client's credential makes it (its tasks).
pub(crate) async fn listen(
    gateway: &Gateway,
    params: &Value,
    request_id: &Value,
    out: &Out,
    holder: Option<u64>,
) -> Result<Value, Error> {
    let filter = params.get("notifications").cloned().unwrap_or(Value::Null);
    if !filter.is_object() {
        return Err(Error::InvalidInput(
            "subscriptions/listen: params.notifications must be an object".into(),
        ));
    }
    let task_ids = filter
        .get("taskIds")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !task_ids.is_empty() && !super::tasks::declared(params) {
        return Err(super::tasks::missing_capability());
    }
    // The client's own tasks of the extension; another's, or one this
    // replica does not hold, is left out (as a server does with what it
    // cannot tell).
    let mut tasks: Vec<Arc<GatewayTask>> = Vec::new();
    for id in task_ids.iter().filter_map(Value::as_str) {
        if tasks.len() == MAX_TASKS {
            break;
        }
        if let Ok(task) = gateway.inner.tasks.get_shared(id, holder) {
            if !tasks.iter().any(|t| Arc::ptr_eq(t, &task)) {
                tasks.push(task);
            }
        }
    }
    // Watched from before the acknowledgment: no change goes by.
    let watched: Vec<_> = tasks
        .into_iter()
        .map(|task| {
            let changes = task.watch_changes();
            (task, changes)
        })
        .collect();
    let hub = gateway.hub();
    // Subscribed first, so that nothing after the acknowledgment goes by.
    let mut events = hub.events();
    let mut pins_changed = gateway.inner.pins_changed.subscribe();
    let events_list_changed = hub.servers().iter().any(|s| {
        s.capabilities
            .as_ref()
            .is_some_and(mcpmux_core::events_ext::offers_list_changed)
    });
    let mut granted = Granted {
        tools: asks(&filter, "toolsListChanged"),
        prompts: asks(&filter, "promptsListChanged"),
        resources: asks(&filter, "resourcesListChanged"),
        events: asks(&filter, "eventsListChanged") && events_list_changed,
        uris: BTreeSet::new(),
    };
    let mut wanted = BTreeSet::new();
    let asked = filter
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for uri in asked.iter().filter_map(Value::as_str) {
        if wanted.len() == MAX_RESOURCES {
            break;
        }
        wanted.insert(uri.to_owned());
    }
    // A resource no server behind takes (in time) is left out, as the
    // revision says a server does with what it does not support.
    let mut pending = wanted.into_iter();
    let mut taking = FuturesUnordered::new();
    let deadline = tokio::time::sleep(ACKNOWLEDGE_WITHIN);
    tokio::pin!(deadline);
    loop {
        while taking.len() < SUBSCRIBING_AT_ONCE {
            let Some(uri) = pending.next() else { break };
            taking.push(async move {
                let (own, server) = super::apps::upstream(gateway, &uri);
                let taken = hub.subscribe(&own, server.as_deref()).await.is_ok();
                (uri, taken)
            });
        }
        tokio::select! {
            taken = taking.next() => match taken {
                Some((uri, true)) => { granted.uris.insert(uri); }
                Some((_, false)) => {}
                None => break,
            },
            _ = &mut deadline => break,
        }
    }
    drop(taking);
    let notify = |method: &str, body: Option<Value>| push(out, request_id, method, body);
    let mut accepted = Map::new();
    for (on, key) in [
        (granted.tools, "toolsListChanged"),
        (granted.prompts, "promptsListChanged"),
        (granted.resources, "resourcesListChanged"),
        (granted.events, "eventsListChanged"),
    ] {
        if on {
            accepted.insert(key.into(), true.into());
        }
    }
    if !granted.uris.is_empty() {
        accepted.insert(
            "resourceSubscriptions".into(),
            granted.uris.iter().cloned().collect::<Vec<_>>().into(),
        );
    }
    if !watched.is_empty() {
        accepted.insert(
            "taskIds".into(),
            watched
                .iter()
                .map(|(task, _)| Value::from(task.id()))
                .collect::<Vec<_>>()
                .into(),
        );
    }
    if !notify(
        "notifications/subscriptions/acknowledged",
        Some(json!({ "notifications": accepted })),
    ) {
        return Ok(ended(request_id));
    }
    // Dropped with the stream, which stops them.
    let mut pushing = tokio::task::JoinSet::new();
    for (task, changes) in watched {
        pushing.spawn(push_task(task, changes, out.clone(), request_id.clone()));
    }
    let search = gateway.inner.options.mode == GatewayMode::Search;
    let tools = granted.tools && !search;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            Ok(()) = pins_changed.changed() => {
                // An approval changed what is offered.
                if tools && !notify("notifications/tools/list_changed", None) {
                    break;
                }
                continue;
            }
        };
        let Some(event) = event else { break };
        let sent = match event {
            HubEvent::ToolsChanged { .. } | HubEvent::ToolQuarantined { .. } if tools => {
                notify("notifications/tools/list_changed", None)
            }
            HubEvent::ResourcesChanged { .. } if granted.resources => {
                notify("notifications/resources/list_changed", None)
            }
            HubEvent::PromptsChanged { .. } if granted.prompts => {
                notify("notifications/prompts/list_changed", None)
            }
            HubEvent::EventsChanged { .. } if granted.events => {
                notify("notifications/events/list_changed", None)
            }
            HubEvent::ResourceUpdated { server, uri }
                if granted
                    .uris
                    .contains(&super::apps::shown_uri(&server, &uri)) =>
            {
                notify(
                    "notifications/resources/updated",
                    Some(json!({ "uri": super::apps::shown_uri(&server, &uri) })),
                )
            }
            // Lost events: every list granted may have changed.
            HubEvent::Lagged { .. } => {
                (!tools || notify("notifications/tools/list_changed", None))
                    && (!granted.resources || notify("notifications/resources/list_changed", None))
                    && (!granted.prompts || notify("notifications/prompts/list_changed", None))
            }
            _ => true,
        };
        if !sent {
            break;
        }
    }
    Ok(ended(request_id))
}

/// Sends one notification of the stream `request_id`; false once the
/// client is gone. A full queue loses this one (the client is slow).
fn push(out: &Out, request_id: &Value, method: &str, body: Option<Value>) -> bool {
    let mut body = body.unwrap_or_else(|| json!({}));
    body["_meta"] = json!({ SUBSCRIPTION_ID: request_id });
    out.try_send(json!({"jsonrpc": "2.0", "method": method, "params": body}).into())
        || !out.is_closed()
}

/// Pushes `task` whole on each change of its state until it ended (one
/// that already has is pushed at once), the client went away or the task
/// was forgotten.
async fn push_task(
    task: Arc<GatewayTask>,
    mut changes: tokio::sync::watch::Receiver<u64>,
    out: Out,
    request_id: Value,
) {
    if !task.has_ended() && changes.changed().await.is_err() {
        return;
    }
    loop {
        let ended = task.has_ended();
        if !push(
            &out,
            &request_id,
            "notifications/tasks",
            Some(task.detailed()),
        ) || ended
        {
            return;
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// The result of a stream that ended (the hub closed, or the client
/// stopped reading): the stream's id in `_meta`.
fn ended(request_id: &Value) -> Value {
    json!({ "_meta": { SUBSCRIPTION_ID: request_id } })
}
