//! Supervision of one server: one task per enabled server that watches its
//! connection (and pings a remote one), and when it ends or never came up,
//! starts the server again after a backoff, within the restart budget
//! ([`super::restarts`]). While it restarts, the server's tools stay listed
//! under the same names and calls to them wait for it.
//!
//! The task holds the hub and the server's slot weakly; it is aborted when the hub closes, when the
//! server is refreshed (a new task takes over) and when the hub is dropped.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::restarts::{Next, Restarts};
use super::{HubInner, Slot, SlotState};
use crate::client::{CallOptions, Client};
use crate::error::Error;
use crate::protocol;

/// What a supervisor does next.
pub(super) enum Step {
    /// Watch the connected client until its connection ends.
    Watch,
    /// Wait `after`, then start the server again (restart number `attempt`).
    Restart {
        /// Restarts within the window, this one included.
        attempt: u32,
        /// The wait before it.
        after: Duration,
        /// The tools the server had, kept listed meanwhile.
        tools: Arc<Vec<protocol::Tool>>,
    },
}

/// Acts on a failure of server `slot`: marks it `restarting` and returns the
/// restart to run, or marks it `failed` (out of restarts, or `restart =
/// "never"`) and returns `None`.
pub(super) fn after_failure(
    inner: &HubInner,
    slot: &Slot,
    restarts: &mut Restarts,
    error: Error,
    tools: Arc<Vec<protocol::Tool>>,
) -> Option<Step> {
    let name = &slot.config.name;
    match restarts.after_failure(Instant::now()) {
        Next::GiveUp { why } => {
            tracing::warn!(server = %name, error = %error, "server failed: {why}");
            inner.set_state(slot, SlotState::Failed(error), 0);
            None
        }
        Next::Restart { attempt, after } => {
            tracing::info!(server = %name, error = %error, attempt, "restarting the server in {:.1} s", after.as_secs_f64());
            inner.set_state(
                slot,
                SlotState::Restarting {
                    error,
                    tools: tools.clone(),
                },
                attempt,
            );
            Some(Step::Restart {
                attempt,
                after,
                tools,
            })
        }
    }
}

/// Supervises server `slot` of `hub` from `step` until the hub is gone, the
/// server is closed, or it is out of restarts. Runs on an engine task.
pub(super) async fn supervise(
    hub: Weak<HubInner>,
    slot: Weak<Slot>,
    mut restarts: Restarts,
    mut step: Step,
) {
    loop {
        // Held weakly like the hub: a task not yet polled when the hub is
        // dropped must not keep the server's client (and process) alive.
        let Some(slot) = slot.upgrade() else { return };
        let (error, tools) = match step {
            Step::Watch => {
                if hub.upgrade().is_none() {
                    return;
                }
                let current = slot.snapshot();
                let Snapshot::Connected(client, ping, timeout) = current else {
                    return;
                };
                let since = Instant::now();
                let error = watch(&client, ping, timeout).await;
                restarts.healthy_since(since, Instant::now());
                (error, client.tools())
            }
            Step::Restart {
                attempt,
                after,
                tools,
            } => {
                tokio::time::sleep(after).await;
                let Some(inner) = hub.upgrade() else { return };
                if slot.is_closed() {
                    return;
                }
                let config = slot.config.clone();
                let options = inner.options.clone();
                drop(inner);
                let connected = super::surface::connect(&config, &options).await;
                let Some(inner) = hub.upgrade() else { return };
                if slot.is_closed() {
                    if let Ok(client) = connected {
                        client.close().await;
                    }
                    return;
                }
                match connected {
                    Ok(client) => {
                        tracing::info!(server = %config.name, attempt, "server restarted");
                        inner.set_state(&slot, SlotState::Connected(client), attempt);
                        step = Step::Watch;
                        continue;
                    }
                    Err(e) => (e, tools),
                }
            }
        };
        let Some(inner) = hub.upgrade() else { return };
        if slot.is_closed() {
            return;
        }
        match after_failure(&inner, &slot, &mut restarts, error, tools) {
            Some(next) => step = next,
            None => return,
        }
    }
}

/// What the supervisor needs of a slot's state.
pub(super) enum Snapshot {
    /// Connected: the client, its keep-alive interval and request timeout.
    Connected(Client, Option<Duration>, Duration),
    /// Anything else: nothing to watch.
    Other,
}

/// Waits until `client`'s connection ends, pinging it every `ping` (when
/// set); a ping without an answer within `timeout` ends the connection.
/// Returns why it ended.
async fn watch(client: &Client, ping: Option<Duration>, timeout: Duration) -> Error {
    let Some(every) = ping else {
        return client.closed().await;
    };
    loop {
        tokio::select! {
            why = client.closed() => return why,
            _ = tokio::time::sleep(every) => {}
        }
        let opts = CallOptions {
            timeout: Some(timeout),
            max_total_timeout: Some(timeout),
            ..CallOptions::default()
        };
        match client.request("ping", None, &opts).await {
            // An error answer is an answer: the server is there.
            Ok(_) | Err(Error::ServerError { .. }) => {}
            Err(e) => {
                let why = Error::Timeout(format!(
                    "server '{}': keep-alive ping failed ({e}); reconnecting",
                    client.name()
                ));
                client.fail(why.clone());
                return why;
            }
        }
    }
}
