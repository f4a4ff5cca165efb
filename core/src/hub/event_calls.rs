//! The events extension through the hub (`io.modelcontextprotocol/events`):
//! `events/list`, `events/poll`, `events/stream`, `events/subscribe` and
//! `events/unsubscribe` sent to a named server. What is read from the
//! answers, and the streams' state, is in [`crate::events_ext`].

use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::Hub;
use crate::client::{CallOptions, Client};
use crate::error::Error;
use crate::events_ext::{
    self, EventQuery, EventStreamHandle, EventsPage, StreamState, SubscribeOptions, Webhook,
    WebhookSubscription, DEFAULT_HEARTBEAT, MAX_PAGE_EVENTS,
};

impl Hub {
    /// The event types of every server offering the events extension (or
    /// of `server`), each with a `server` member, as listed
    /// (`events/list`, followed to its last page within the list bounds).
    /// A named server without the extension is `INVALID_INPUT`.
    pub async fn list_events(&self, server: Option<&str>) -> Result<Vec<Value>, Error> {
        let clients = match server {
            Some(name) => vec![self.events_client(name).await?],
            None => {
                if self.is_closed() {
                    return Err(super::closed());
                }
                self.inner
                    .slots()
                    .iter()
                    .filter_map(|s| s.client())
                    .filter(|c| events_ext::offered(&c.init().capabilities))
                    .collect()
            }
        };
        let lists =
            futures::future::join_all(clients.iter().map(|c| c.list_all("events/list", "events")))
                .await;
        let mut out = Vec::new();
        for (client, list) in clients.iter().zip(lists) {
            match list {
                Ok(items) => out.extend(items.into_iter().map(|mut item| {
                    if let Value::Object(m) = &mut item {
                        m.insert("server".into(), client.name().into());
                    }
                    item
                })),
                Err(e) if server.is_some() => return Err(e),
                Err(e) => tracing::warn!(server = %client.name(), error = %e, "events/list failed"),
            }
        }
        Ok(out)
    }

    /// Polls event type `name` of `server` from `cursor` (`events/poll`;
    /// `None`: from now, which returns no events and a cursor to keep).
    /// `max_events` is capped at [`MAX_PAGE_EVENTS`]. Keep the returned
    /// cursor and poll again after `next_poll_ms` (at once when
    /// `has_more`).
    pub async fn poll_events(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Value>,
        cursor: Option<&str>,
        max_events: Option<u32>,
    ) -> Result<EventsPage, Error> {
        let query = EventQuery {
            cursor: cursor.map(str::to_owned),
            max_events,
            ..EventQuery::default()
        };
        self.poll_events_with(server, name, arguments, &query).await
    }

    /// [`Hub::poll_events`] with every option of `events/poll`: also
    /// `maxAgeMs` ([`EventQuery::max_age`]).
    pub async fn poll_events_with(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Value>,
        query: &EventQuery,
    ) -> Result<EventsPage, Error> {
        let client = self.events_client(server).await?;
        let mut params = subscription_params(name, arguments, query.cursor.as_deref())?;
        if let Some(max) = query.max_events {
            let max = (max as usize).clamp(1, MAX_PAGE_EVENTS);
            params.insert("maxEvents".into(), max.into());
        }
        insert_max_age(&mut params, query.max_age);
        let result = client
            .request(
                "events/poll",
                Some(&Value::Object(params)),
                &CallOptions::default(),
            )
            .await?;
        events_ext::read_page(server, &result)
    }

    /// Opens a stream of event type `name` of `server` from `cursor`
    /// (`events/stream`, a long-lived request without a request timeout).
    /// Occurrences arrive on [`Hub::events`] as
    /// [`HubEvent::Event`](crate::HubEvent::Event), changes of the stream
    /// as [`HubEvent::EventStream`](crate::HubEvent::EventStream). When
    /// nothing (not even a heartbeat) arrives for twice `heartbeat`
    /// (default [`DEFAULT_HEARTBEAT`]), the stream is sent again from its
    /// latest cursor. The handle's [`cursor`](EventStreamHandle::cursor)
    /// is the one to keep; stopping or dropping it ends the stream.
    pub async fn stream_events(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Value>,
        cursor: Option<&str>,
        heartbeat: Option<Duration>,
    ) -> Result<EventStreamHandle, Error> {
        let query = EventQuery {
            cursor: cursor.map(str::to_owned),
            heartbeat,
            ..EventQuery::default()
        };
        self.stream_events_with(server, name, arguments, &query)
            .await
    }

    /// [`Hub::stream_events`] with every option of `events/stream`: also
    /// `maxAgeMs` ([`EventQuery::max_age`]), sent again with each resend
    /// (the server starts at the later of the stream's cursor and now
    /// minus the age). `max_events` does not apply to streams.
    pub async fn stream_events_with(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Value>,
        query: &EventQuery,
    ) -> Result<EventStreamHandle, Error> {
        let client = self.events_client(server).await?;
        // Checked now: the task only resends these.
        let mut params = subscription_params(name, arguments, None)?;
        insert_max_age(&mut params, query.max_age);
        let state = StreamState::new(
            server,
            query.cursor.clone(),
            self.inner.options.events.clone(),
        );
        let watchdog = query
            .heartbeat
            .unwrap_or(DEFAULT_HEARTBEAT)
            .max(Duration::from_millis(10))
            .saturating_mul(2);
        // The first request is registered here, so that a full table fails
        // the call rather than the task.
        let id = client.next_request_id();
        client.event_streams().insert(id, state.clone())?;
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(run_stream(
            client,
            params,
            state.clone(),
            id,
            watchdog,
            stopped,
        ));
        Ok(EventStreamHandle::new(state, stop))
    }

    /// Subscribes `hook.url` to event type `name` of `server`
    /// (`events/subscribe`, webhook delivery). The URL must be `https`
    /// (`http` only to a loopback address) and the secret `whsec_` and
    /// base64, else `INVALID_INPUT` (the secret is never echoed or
    /// logged). Subscribing again with the same url, name and arguments
    /// refreshes the subscription.
    pub async fn subscribe_events(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Value>,
        hook: &Webhook,
    ) -> Result<WebhookSubscription, Error> {
        self.subscribe_events_with(server, name, arguments, hook, &SubscribeOptions::default())
            .await
    }

    /// [`Hub::subscribe_events`] with every option of `events/subscribe`:
    /// also no expiry (`ttlMs: null`) and `maxAgeMs`.
    pub async fn subscribe_events_with(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Value>,
        hook: &Webhook,
        options: &SubscribeOptions,
    ) -> Result<WebhookSubscription, Error> {
        events_ext::check_webhook_url(&hook.url)?;
        events_ext::check_webhook_secret(&hook.secret)?;
        crate::secrets::register([hook.secret.clone()]);
        let client = self.events_client(server).await?;
        let mut params = subscription_params(name, arguments, hook.cursor.as_deref())?;
        params.insert(
            "delivery".into(),
            json!({ "mode": "webhook", "url": hook.url, "secret": hook.secret }),
        );
        match (hook.ttl, options.no_expiry) {
            (Some(_), true) => {
                return Err(Error::InvalidInput(
                    "webhook: a ttl and no expiry cannot both be asked for".into(),
                ))
            }
            (Some(ttl), false) => {
                params.insert("ttlMs".into(), events_ext::whole_millis(ttl).into());
            }
            (None, true) => {
                params.insert("ttlMs".into(), Value::Null);
            }
            (None, false) => {}
        }
        insert_max_age(&mut params, options.max_age);
        let result = client
            .request(
                "events/subscribe",
                Some(&Value::Object(params)),
                &CallOptions::default(),
            )
            .await?;
        events_ext::read_subscription(server, &result)
    }

    /// Ends the webhook subscription of `url` to event type `name` of
    /// `server` with these `arguments` (`events/unsubscribe`).
    pub async fn unsubscribe_events(
        &self,
        server: &str,
        name: &str,
        arguments: Option<&Value>,
        url: &str,
    ) -> Result<(), Error> {
        events_ext::check_webhook_url(url)?;
        let client = self.events_client(server).await?;
        let mut params = subscription_params(name, arguments, None)?;
        params.remove("cursor");
        params.insert("delivery".into(), json!({ "url": url }));
        client
            .request(
                "events/unsubscribe",
                Some(&Value::Object(params)),
                &CallOptions::default(),
            )
            .await
            .map(|_| ())
    }

    /// The client of `server` (started when lazy), which must offer the
    /// extension: else `INVALID_INPUT` naming both.
    async fn events_client(&self, server: &str) -> Result<Client, Error> {
        let client = self.started_client(server).await?;
        if !events_ext::offered(&client.init().capabilities) {
            return Err(Error::InvalidInput(format!(
                "server '{server}' does not offer the events extension ('{}')",
                events_ext::EXTENSION
            )));
        }
        Ok(client)
    }
}

/// `{name, arguments, cursor}`; `arguments` must be an object.
/// Adds `maxAgeMs` to a request's params when the host gave one.
fn insert_max_age(params: &mut Map<String, Value>, max_age: Option<Duration>) {
    if let Some(age) = max_age {
        params.insert("maxAgeMs".into(), events_ext::whole_millis(age).into());
    }
}

fn subscription_params(
    name: &str,
    arguments: Option<&Value>,
    cursor: Option<&str>,
) -> Result<Map<String, Value>, Error> {
    if name.is_empty() {
        return Err(Error::InvalidInput("event name: empty".into()));
    }
    let arguments = match arguments {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => {
            return Err(Error::InvalidInput(format!(
                "event '{name}': arguments must be a JSON object"
            )))
        }
    };
    let mut params = Map::new();
    params.insert("name".into(), name.into());
    params.insert("arguments".into(), arguments);
    params.insert("cursor".into(), cursor.map_or(Value::Null, Value::from));
    Ok(params)
}

/// Runs one stream until it is stopped, ends or fails; sends it again
/// from its cursor when the server falls silent for `watchdog`.
async fn run_stream(
    client: Client,
    params: Map<String, Value>,
    state: std::sync::Arc<StreamState>,
    mut id: u64,
    watchdog: Duration,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        let mut params = params.clone();
        params.insert(
            "cursor".into(),
            state.cursor().map_or(Value::Null, Value::from),
        );
        let request = client.long_request(id, "events/stream", Value::Object(params));
        tokio::pin!(request);
        let silent = async {
            loop {
                if tokio::time::timeout(watchdog, state.alive.notified())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        };
        tokio::pin!(silent);
        let outcome = tokio::select! {
            answer = &mut request => Some(answer),
            _ = &mut stopped => None,
            _ = state.terminated.notified() => None,
            _ = &mut silent => {
                client.event_streams().remove(id);
                tracing::debug!(server = %client.name(), stream = state.id, "event stream silent; sent again");
                state.tell("reconnecting", false, None);
                // The request is dropped (so cancelled) with this round.
                id = client.next_request_id();
                if let Err(e) = client.event_streams().insert(id, state.clone()) {
                    if state.end() {
                        state.tell("failed", false, Some(e.to_string()));
                    }
                    return;
                }
                continue;
            }
        };
        client.event_streams().remove(id);
        match outcome {
            Some(Ok(_)) if state.end() => state.tell("ended", false, None),
            Some(Err(e)) if state.end() => state.tell("failed", false, Some(e.to_string())),
            _ => {
                state.end();
            }
        }
        return;
    }
}
