//! Supervision of one server: one task per enabled server that watches its
//! connection (and pings a remote one), and when it ends or never came up,
//! starts the server again after a backoff, within the restart budget
//! ([`super::restarts`]). While it restarts, the server's tools stay listed
//! under the same names and calls to them wait for it.
//!
//! The task holds the hub and the server's slot weakly; it is aborted when the hub closes, when the
//! server is refreshed (a new task takes over) and when the hub is dropped.

use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::restarts::{Next, Restarts};
use super::{HubInner, Slot, SlotState};
use crate::client::{CallOptions, Client};
use crate::config::{StdioConfig, TransportConfig};
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
    #[cfg(feature = "telemetry")]
    if let Some(t) = crate::telemetry::active() {
        t.count_failure(name, error.code());
    }
    if let Some(why) = unfixable_by_restart(&error, &slot.config.transport) {
        tracing::warn!(server = %name, error = %error, "server failed: {why}");
        inner.set_state(slot, SlotState::Failed(error), 0);
        return None;
    }
    match restarts.after_failure(Instant::now()) {
        Next::GiveUp { why } => {
            tracing::warn!(server = %name, error = %error, "server failed: {why}");
            inner.set_state(slot, SlotState::Failed(error), 0);
            None
        }
        Next::Restart { attempt, after } => {
            #[cfg(feature = "telemetry")]
            if let Some(t) = crate::telemetry::active() {
                t.count_restart(name);
            }
            tracing::info!(server = %name, error = %error, attempt, "restarting the server in {:.1} s", after.as_secs_f64());
            inner.set_state(
                slot,
                SlotState::Restarting {
                    error,
                    tools: tools.clone(),
                },
                attempt,
            );
            slot.note_next_try(std::time::SystemTime::now() + after);
            Some(Step::Restart {
                attempt,
                after,
                tools,
            })
        }
    }
}

/// Why starting the server again cannot help, for failures that need the
/// user: a config the server refused, or credentials it turned down (a new
/// login or token is needed; retrying would only hammer the authorization
/// server). `None` for every failure a restart may cure.
/// So is a stdio server whose program is not there: a restart would run
/// the same missing program.
fn unfixable_by_restart(error: &Error, transport: &TransportConfig) -> Option<&'static str> {
    match (error, transport) {
        (Error::ConfigInvalid(_), _) => Some("its config is invalid; fix it, then refresh"),
        (Error::AuthRequired(_) | Error::AuthFailed(_), _) => {
            Some("it needs authorization; log in (`mcpmux auth login`), then refresh")
        }
        (Error::ConnectFailed(_), TransportConfig::Stdio(stdio)) if program_missing(stdio) => {
            Some("its command is not there; install it or fix `command`, then refresh")
        }
        _ => None,
    }
}

/// Whether `stdio.command` names no file: as a path (relative ones are
/// tried from both the host's and the server's working directory, since
/// which one applies is platform-specific), or else in no directory of the
/// `PATH` the server gets.
fn program_missing(stdio: &StdioConfig) -> bool {
    let command = Path::new(&stdio.command);
    if stdio.command.contains('/') {
        let from_cwd = stdio.cwd.as_ref().map(|dir| dir.join(command));
        return !command.is_file() && !from_cwd.is_some_and(|p| p.is_file());
    }
    let path = match stdio.env.get("PATH") {
        Some(own) => Some(OsString::from(own)),
        None => std::env::var_os("PATH"),
    };
    !path.is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(command).is_file()))
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
                let options = inner.connect_options();
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
        let opts = CallOptions::default()
            .with_timeout(timeout)
            .with_max_total_timeout(timeout);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str, path: Option<&str>) -> StdioConfig {
        StdioConfig {
            command: command.into(),
            args: Vec::new(),
            env: path
                .map(|p| [("PATH".to_string(), p.to_string())].into())
                .unwrap_or_default(),
            cwd: None,
        }
    }

    #[test]
    fn a_missing_program_is_told_apart_from_one_that_is_there() {
        assert!(program_missing(&stdio("/nonexistent/mcpmux-x", None)));
        assert!(!program_missing(&stdio("/bin/sh", None)));
        assert!(!program_missing(&stdio("sh", Some("/nonexistent:/bin"))));
        // The server's own PATH decides, not the host's.
        assert!(program_missing(&stdio("sh", Some("/nonexistent"))));
        assert!(program_missing(&stdio("mcpmux-no-such-program", None)));
    }

    #[test]
    fn only_failures_a_restart_may_cure_are_restarted() {
        let missing = TransportConfig::Stdio(stdio("/nonexistent/mcpmux-x", None));
        let there = TransportConfig::Stdio(stdio("/bin/sh", None));
        let refused = Error::ConnectFailed("x".into());
        assert!(unfixable_by_restart(&refused, &missing).is_some());
        assert!(unfixable_by_restart(&refused, &there).is_none());
        assert!(unfixable_by_restart(&Error::AuthRequired("x".into()), &there).is_some());
        assert!(unfixable_by_restart(&Error::Timeout("x".into()), &missing).is_none());
    }
}
