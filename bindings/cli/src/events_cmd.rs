//! `mcpmux events`: the events extension (`io.modelcontextprotocol/events`)
//! of the configured servers: `list` their event types, `poll` one from a
//! cursor, `stream` one until interrupted, `subscribe` and `unsubscribe` a
//! webhook the host receives itself. Core does the work
//! (`Hub::list_events`, `poll_events`, `stream_events`, `subscribe_events`,
//! `unsubscribe_events`).

use std::io::Write;

use clap::Subcommand;
use mcpmux_core::events_ext::{EventQuery, SubscribeOptions, Webhook};
use mcpmux_core::{Error, EventStream, Hub, HubEvent};
use serde_json::Value;

#[derive(Subcommand)]
pub enum EventsCommand {
    /// List the event types of every server offering the events extension.
    List {
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
    },
    /// Poll an event type from a cursor; prints its events and the cursor to keep (--json: the page).
    Poll {
        /// The server.
        server: String,
        /// The event type's name.
        name: String,
        /// The subscription's arguments as a JSON object; `-` reads them from stdin.
        args: Option<String>,
        /// The cursor a previous poll or stream printed (default: from now, which returns no events and a cursor).
        #[arg(long)]
        cursor: Option<String>,
        /// Most events to return (at most 1000).
        #[arg(long, value_name = "N")]
        max: Option<u32>,
        /// Replay nothing older than this, even from an older cursor (the page then says events were lost).
        #[arg(long, value_name = "SECONDS")]
        max_age: Option<f64>,
    },
    /// Stream an event type's occurrences until interrupted; --json prints one object per line, each with its cursor.
    Stream {
        /// The server.
        server: String,
        /// The event type's name.
        name: String,
        /// The subscription's arguments as a JSON object; `-` reads them from stdin.
        args: Option<String>,
        /// The cursor to resume from (default: from now).
        #[arg(long)]
        cursor: Option<String>,
        /// Replay nothing older than this, even from an older cursor.
        #[arg(long, value_name = "SECONDS")]
        max_age: Option<f64>,
        /// The server's heartbeat interval (default 30): after twice it without a message the stream is sent again from its cursor.
        #[arg(long, value_name = "SECONDS")]
        heartbeat: Option<f64>,
    },
    /// Subscribe a webhook (yours: mcpmux runs no receiver) to an event type; prints the subscription (--json: as the server answered). Subscribe again before "refresh before" to keep it.
    Subscribe {
        /// The server.
        server: String,
        /// The event type's name.
        name: String,
        /// The subscription's arguments as a JSON object; `-` reads them from stdin.
        args: Option<String>,
        /// Where the server delivers: an https URL (http only to a loopback address).
        #[arg(long)]
        url: String,
        /// The environment variable holding the signing secret (`whsec_` and base64 of 24 to 64 bytes); never printed.
        #[arg(long, value_name = "VAR")]
        secret_env: String,
        /// The cursor to start from (default: from now).
        #[arg(long)]
        cursor: Option<String>,
        /// How long the subscription lasts, in seconds (default: the server's).
        #[arg(long, value_name = "SECONDS", conflicts_with = "no_expiry")]
        ttl: Option<u64>,
        /// Ask for a subscription that never expires (ttlMs: null).
        #[arg(long)]
        no_expiry: bool,
        /// Deliver nothing older than this, even from an older cursor.
        #[arg(long, value_name = "SECONDS")]
        max_age: Option<f64>,
    },
    /// End a webhook subscription: the same server, event type, arguments and URL as subscribed.
    Unsubscribe {
        /// The server.
        server: String,
        /// The event type's name.
        name: String,
        /// The subscription's arguments as a JSON object; `-` reads them from stdin.
        args: Option<String>,
        /// The URL that was subscribed.
        #[arg(long)]
        url: String,
    },
}

impl EventsCommand {
    /// The server a command is aimed at (only it starts).
    pub fn server(&self) -> Option<&str> {
        match self {
            EventsCommand::List { server } => server.as_deref(),
            EventsCommand::Poll { server, .. }
            | EventsCommand::Stream { server, .. }
            | EventsCommand::Subscribe { server, .. }
            | EventsCommand::Unsubscribe { server, .. } => Some(server),
        }
    }

    /// The subscription arguments as written.
    pub fn args(&self) -> Option<&str> {
        match self {
            EventsCommand::List { .. } => None,
            EventsCommand::Poll { args, .. }
            | EventsCommand::Stream { args, .. }
            | EventsCommand::Subscribe { args, .. }
            | EventsCommand::Unsubscribe { args, .. } => args.as_deref(),
        }
    }
}

/// Runs `list` or `poll`; `stream` goes to [`stream`].
pub async fn run(
    hub: &Hub,
    action: &EventsCommand,
    args: Option<&Value>,
    json: bool,
) -> Result<(), Error> {
    match action {
        EventsCommand::List { server } => {
            let listed = hub.list_events(server.as_deref()).await?;
            if json {
                super::print_json(&listed)
            } else {
                super::print(&human_list(&listed))
            }
        }
        EventsCommand::Poll {
            server,
            name,
            cursor,
            max,
            max_age,
            ..
        } => {
            let query = EventQuery {
                cursor: cursor.clone(),
                max_events: *max,
                max_age: seconds("--max-age", *max_age)?,
                heartbeat: None,
            };
            let page = hub.poll_events_with(server, name, args, &query).await?;
            if json {
                return super::print_json(&page);
            }
            let mut lines: Vec<String> = page
                .events
                .iter()
                .map(|e| occurrence_line(e.timestamp.as_deref(), &e.name, &e.event_id, &e.data))
                .collect();
            if page.truncated {
                lines.push(
                    "(events were lost before these: the cursor was too old, or --max-age left them out)"
                        .into(),
                );
            }
            match &page.cursor {
                Some(c) => lines.push(format!("cursor: {c}")),
                None => lines.push("cursor: none (this event type has no replay)".into()),
            }
            if page.has_more {
                lines.push("more: poll again now".into());
            } else {
                lines.push(format!("next poll: in {} ms", page.next_poll_ms));
            }
            super::print(&lines.join("\n"))
        }
        EventsCommand::Subscribe {
            server,
            name,
            url,
            secret_env,
            cursor,
            ttl,
            no_expiry,
            max_age,
            ..
        } => {
            let secret = match std::env::var(secret_env) {
                Ok(v) if !v.is_empty() => v,
                _ => {
                    return Err(Error::InvalidInput(format!(
                        "--secret-env {secret_env}: the variable is unset or empty"
                    )))
                }
            };
            let hook = Webhook {
                url: url.clone(),
                secret,
                cursor: cursor.clone(),
                ttl: ttl.map(std::time::Duration::from_secs),
            };
            let options = SubscribeOptions {
                no_expiry: *no_expiry,
                max_age: seconds("--max-age", *max_age)?,
            };
            let sub = hub
                .subscribe_events_with(server, name, args, &hook, &options)
                .await?;
            if json {
                return super::print_json(&sub);
            }
            let mut lines = vec![format!("subscribed: {}", sub.id)];
            lines.push(match &sub.refresh_before {
                Some(t) => format!("refresh before: {t}"),
                None => "refresh before: never (no expiry)".into(),
            });
            if sub.truncated {
                lines.push("(events were lost before the cursor: it was too old)".into());
            }
            if let Some(c) = &sub.cursor {
                lines.push(format!("cursor: {c}"));
            }
            super::print(&lines.join("\n"))
        }
        EventsCommand::Unsubscribe {
            server, name, url, ..
        } => {
            hub.unsubscribe_events(server, name, args, url).await?;
            if json {
                super::print_json(&serde_json::json!({ "unsubscribed": true }))
            } else {
                super::print(&format!("unsubscribed {url} from {server} {name}"))
            }
        }
        EventsCommand::Stream { .. } => unreachable!("streamed by `stream`"),
    }
}

/// A flag's seconds, checked as every front end checks a duration.
fn seconds(flag: &str, value: Option<f64>) -> Result<Option<std::time::Duration>, Error> {
    value
        .map(|s| mcpmux_core::contract::seconds(flag, s))
        .transpose()
}

/// Streams until the server ends the stream or `interrupted` resolves:
/// occurrences on stdout, the stream's state on stderr (JSON Lines of both
/// on stdout with `json`). The cursor to resume from is printed when it
/// ends: `mcpmux: cursor: C` on stderr, or with `json` a last line
/// `{"type": "cursor", "cursor": C}`.
pub async fn stream(
    hub: &Hub,
    action: &EventsCommand,
    args: Option<&Value>,
    json: bool,
    mut events: EventStream,
    mut interrupted: std::pin::Pin<&mut impl std::future::Future<Output = Error>>,
) -> Result<(), Error> {
    let EventsCommand::Stream {
        server,
        name,
        cursor,
        max_age,
        heartbeat,
        ..
    } = action
    else {
        unreachable!("only stream");
    };
    let query = EventQuery {
        cursor: cursor.clone(),
        max_age: seconds("--max-age", *max_age)?,
        heartbeat: seconds("--heartbeat", *heartbeat)?,
        max_events: None,
    };
    let handle = tokio::select! {
        h = hub.stream_events_with(server, name, args, &query) => h?,
        e = &mut interrupted => return Err(e),
    };
    let id = handle.id();
    let outcome = loop {
        let next = tokio::select! {
            next = events.recv() => next,
            _ = &mut interrupted => None,
        };
        let Some(event) = next else {
            break Ok(());
        };
        let line = match &event {
            HubEvent::Event { subscription, .. } if *subscription == id => {
                if json {
                    event.to_json().to_string()
                } else {
                    let v = event.to_json();
                    occurrence_line(
                        v["timestamp"].as_str(),
                        v["name"].as_str().unwrap_or_default(),
                        v["event_id"].as_str().unwrap_or_default(),
                        &v["data"],
                    )
                }
            }
            HubEvent::EventStream {
                subscription,
                state,
                error,
                ..
            } if *subscription == id => {
                let end = match state.as_str() {
                    "failed" => Some(Err(Error::TransportClosed(format!(
                        "server '{server}': the event stream failed: {}",
                        error.as_deref().unwrap_or("")
                    )))),
                    "ended" | "terminated" => Some(Ok(())),
                    _ => None,
                };
                if json {
                    print_line(&event.to_json().to_string());
                } else {
                    let why = error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    let _ = writeln!(std::io::stderr(), "mcpmux: event stream {state}{why}");
                }
                match end {
                    Some(end) => break end,
                    None => continue,
                }
            }
            _ => continue,
        };
        if !print_line(&line) {
            break Ok(());
        }
    };
    // The cursor to resume from (heartbeats may have moved it past the
    // last occurrence).
    match (handle.cursor(), json) {
        (Some(c), true) => {
            print_line(&serde_json::json!({ "type": "cursor", "cursor": c }).to_string());
        }
        (Some(c), false) => {
            let _ = writeln!(std::io::stderr(), "mcpmux: cursor: {c}");
        }
        (None, _) => {}
    }
    outcome
}

/// Writes one line to stdout; `false` once stdout is closed.
pub fn print_line(line: &str) -> bool {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|()| out.flush()).is_ok()
}

fn occurrence_line(timestamp: Option<&str>, name: &str, id: &str, data: &Value) -> String {
    format!("{} {name} {id} {data}", timestamp.unwrap_or("-"))
}

/// The event types as a table for people: server, name, delivery modes,
/// description.
fn human_list(listed: &[Value]) -> String {
    if listed.is_empty() {
        return "(no event types)".into();
    }
    listed
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default();
            let delivery: Vec<&str> = e["delivery"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "{}  {}  [{}]  {}",
                s("server"),
                s("name"),
                delivery.join(", "),
                s("description")
            )
            .trim_end()
            .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
