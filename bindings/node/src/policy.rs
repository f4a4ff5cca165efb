//! `NativePolicy`: a tool-use policy (allow lists, limits, redaction,
//! audit; `mcpmux_policy`) for a host's own calls on one hub, driven
//! by the `Policy` class of `index.js`.
//!
//! Audit events reach the JavaScript `onAudit` function through a weak
//! threadsafe function: queued without blocking from whichever thread
//! recorded the event, delivered in order on the JavaScript thread, and
//! never keeping the process alive.

use std::sync::Arc;

use mcpmux_core::{Error, Hub};
use mcpmux_policy::audit::LISTENER_QUEUE;
use mcpmux_policy::SessionPolicy;
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

use crate::error::{error_json, invalid_input};
use crate::{json_outcome, spawn_op, Sink};

/// A policy bound to the hub it was made for. Its methods are called on
/// the JavaScript thread; asynchronous ones post completion `id`.
#[napi]
pub struct NativePolicy {
    pub(crate) policy: Arc<SessionPolicy>,
    hub: Hub,
    sink: Arc<Sink>,
}

/// `(server, tool)` pairs as `[{server, tool}]`.
fn pairs(done: Vec<(String, String)>) -> serde_json::Value {
    done.into_iter()
        .map(|(server, tool)| serde_json::json!({"server": server, "tool": tool}))
        .collect()
}

/// Builds a policy for `hub` (see `NativeHub::policy`). A bad setting
/// throws an error whose message is the JSON text `{code, message}`.
pub(crate) fn new_policy(
    hub: Hub,
    sink: Arc<Sink>,
    settings: Option<String>,
    audit_path: Option<String>,
    on_audit: Option<Function<'_, String, ()>>,
) -> napi::Result<NativePolicy> {
    let fail = |e: &Error| napi::Error::new(Status::GenericFailure, error_json(e));
    let settings = match settings {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| fail(&invalid_input("settings", format!("not JSON: {e}"))))?,
        ),
    };
    let policy = SessionPolicy::for_hub(&hub, settings.as_ref(), audit_path.map(Into::into))
        .map_err(|e| fail(&e))?;
    if let Some(f) = on_audit {
        let tsfn: ThreadsafeFunction<String, (), String, Status, false, true, LISTENER_QUEUE> = f
            .build_threadsafe_function::<String>()
            .callee_handled::<false>()
            .weak::<true>()
            .max_queue_size::<LISTENER_QUEUE>()
            .build_callback(|ctx| Ok(ctx.value))?;
        policy.on_audit(move |event| {
            if let Ok(json) = serde_json::to_string(event) {
                // Non-blocking: past LISTENER_QUEUE events the JavaScript
                // thread has not taken (QueueFull), or once the environment
                // is closing, the event is dropped for this listener.
                let _ = tsfn.call(json, ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
    }
    Ok(NativePolicy {
        policy: Arc::new(policy),
        hub,
        sink,
    })
}

#[napi]
impl NativePolicy {
    /// The tools the policy offers (the objects of `listTools`); later
    /// calls are limited to these.
    #[napi]
    pub fn offered(&self, id: u32) {
        let (hub, policy) = (self.hub.clone(), self.policy.clone());
        spawn_op(&self.sink, id, async move {
            json_outcome(&policy.offered(&hub.list_tools()))
        });
    }

    /// Every tool with the policy's decision (`name`, `server`, `tool`,
    /// `offered`, `refusal`, `reason`).
    #[napi]
    pub fn verdicts(&self, id: u32) {
        let (hub, policy) = (self.hub.clone(), self.policy.clone());
        spawn_op(&self.sink, id, async move {
            json_outcome(&policy.verdicts(&hub.list_tools()))
        });
    }

    /// The effective allow list per server (`mcpmux policy --json`).
    #[napi]
    pub fn report(&self, id: u32) {
        let (hub, policy) = (self.hub.clone(), self.policy.clone());
        spawn_op(&self.sink, id, async move {
            json_outcome(&policy.report(&hub).await)
        });
    }

    /// Reconnects `server`, lists its tools again and reports what changed
    /// for the policy (`server`, `offered`, `dropped`, `added`, `missing`).
    #[napi]
    pub fn refresh(&self, id: u32, server: String) {
        let (hub, policy) = (self.hub.clone(), self.policy.clone());
        spawn_op(&self.sink, id, async move {
            json_outcome(&policy.refresh(&hub, &server).await?)
        });
    }

    /// Each pinned tool's status (`server`, `tool`, `status`, `changes`,
    /// `pinned_at`), of `server` or of every pinned server.
    #[napi]
    pub fn pins(&self, id: u32, server: Option<String>) {
        let (hub, policy) = (self.hub.clone(), self.policy.clone());
        spawn_op(&self.sink, id, async move {
            json_outcome(&policy.pin_report(&hub, server.as_deref())?)
        });
    }

    /// Approves the definitions the servers list now; `[{server, tool}]`.
    #[napi]
    pub fn approve_tools(&self, id: u32, server: Option<String>, tools: Option<Vec<String>>) {
        let (hub, policy) = (self.hub.clone(), self.policy.clone());
        spawn_op(&self.sink, id, async move {
            let done = policy.approve_tools(&hub, server.as_deref(), &tools.unwrap_or_default())?;
            json_outcome(&pairs(done))
        });
    }

    /// Forgets pins; `[{server, tool}]` of those removed.
    #[napi]
    pub fn revoke_pins(&self, id: u32, server: Option<String>, tools: Option<Vec<String>>) {
        let (hub, policy) = (self.hub.clone(), self.policy.clone());
        spawn_op(&self.sink, id, async move {
            let done = policy.revoke_pins(&hub, server.as_deref(), &tools.unwrap_or_default())?;
            json_outcome(&pairs(done))
        });
    }

    /// The audit events so far as JSON text, oldest first. Synchronous: it
    /// only reads memory.
    #[napi]
    pub fn audit_events(&self) -> String {
        serde_json::to_string(&self.policy.audit_events()).unwrap_or_else(|_| "[]".into())
    }

    /// Calls asked for so far, refused ones included.
    #[napi]
    pub fn calls_made(&self) -> f64 {
        self.policy.calls_made() as f64
    }
}
