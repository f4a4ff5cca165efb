//! `_native.Policy`: a tool-use policy (allow lists, limits, redaction,
//! audit; `mcpmux_policy`) for a host's own calls on one hub, for the
//! Python `mcpmux.Policy` / `mcpmux.AsyncPolicy` classes.
//!
//! Audit events for a Python callback are queued here and handed over by
//! [`NativePolicy::take_events`], which the Python layer calls after each
//! call it makes with the policy, on the thread that made it: the engine
//! may record an event on one of its own threads, which never take the GIL.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use mcpmux_policy::audit::LISTENER_QUEUE;
use mcpmux_policy::SessionPolicy;
use pyo3::prelude::*;

use crate::bridge::{Exec, Op, Outcome};
use crate::calls::{json_out, json_outcome, now, run, Aio};
use crate::convert;
use crate::errors;
use crate::handle::NativeHub;

/// A policy bound to the hub it was made for.
#[pyclass(frozen, module = "mcpmux._native", name = "Policy")]
pub struct NativePolicy {
    pub(crate) policy: Arc<SessionPolicy>,
    hub: NativeHub,
    /// Events (JSON lines) not yet handed to the Python callback; `None`
    /// when the Python layer has no callback.
    queue: Option<Arc<Mutex<VecDeque<String>>>>,
}

#[pymethods]
impl NativePolicy {
    /// A policy for calls on `hub`: the config's `[session]` table with
    /// `settings` (a dict of `scope`, `max_tool_calls`,
    /// `call_timeout_seconds`, `max_output_bytes`, `redact`, `pin_tools`) over it;
    /// audit lines appended to `audit_path` when given; events queued for
    /// [`take_events`](NativePolicy::take_events) when `listen`.
    #[new]
    #[pyo3(signature = (hub, settings=None, audit_path=None, listen=false))]
    fn new(
        py: Python<'_>,
        hub: PyRef<'_, NativeHub>,
        settings: Option<&Bound<'_, PyAny>>,
        audit_path: Option<&Bound<'_, PyAny>>,
        listen: bool,
    ) -> PyResult<NativePolicy> {
        let settings = match settings.filter(|s| !s.is_none()) {
            Some(s) => Some(convert::to_json(s, "settings")?),
            None => None,
        };
        let audit_path = match audit_path.filter(|p| !p.is_none()) {
            Some(p) => Some(PathBuf::from(
                p.call_method0("__fspath__")
                    .and_then(|s| s.extract::<String>())
                    .or_else(|_| convert::string(p, "audit_path"))?,
            )),
            None => None,
        };
        let native = hub.clone_ref();
        let engine_hub = native.hub_py(py)?;
        let policy = SessionPolicy::for_hub(&engine_hub, settings.as_ref(), audit_path)
            .map_err(|e| errors::to_py(py, &e))?;
        let queue = listen.then(|| {
            let queue = Arc::new(Mutex::new(VecDeque::new()));
            let sink = queue.clone();
            policy.on_audit(move |event| {
                if let Ok(json) = serde_json::to_string(event) {
                    let mut queue = sink.lock().unwrap_or_else(PoisonError::into_inner);
                    // Taken after each call; the bound is for events the
                    // Python layer never gets to take.
                    if queue.len() < LISTENER_QUEUE {
                        queue.push_back(json);
                    }
                }
            });
            queue
        });
        Ok(NativePolicy {
            policy: Arc::new(policy),
            hub: native,
            queue,
        })
    }

    /// The tools the policy offers, as `list_tools()` shapes them; later
    /// calls are limited to these.
    fn offered(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let hub = self.hub.hub_py(py)?;
        let tools = hub.list_tools();
        json_out(py, &self.policy.offered(&tools))
    }

    /// Every tool with the policy's decision (`name`, `server`, `tool`,
    /// `offered`, `refusal`, `reason`).
    fn verdicts(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let hub = self.hub.hub_py(py)?;
        let tools = hub.list_tools();
        json_out(py, &self.policy.verdicts(&tools))
    }

    /// The effective allow list per server (`mcpmux policy --json`).
    fn report(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let hub = self.hub.hub_py(py)?;
        json_out(py, &now(self.policy.report(&hub)))
    }

    /// Each pinned tool's status (`server`, `tool`, `status`: `pinned`,
    /// `changed`, `new` or `removed`, `changes`, `pinned_at`), of `server`
    /// or of every pinned server. For the operator, never a model.
    #[pyo3(signature = (server=None))]
    fn pins(&self, py: Python<'_>, server: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let server = optional_string(server, "server")?;
        let hub = self.hub.hub_py(py)?;
        let report = self
            .policy
            .pin_report(&hub, server.as_deref())
            .map_err(|e| errors::to_py(py, &e))?;
        json_out(py, &report)
    }

    /// Approves the definitions the servers list now (of `tools` of
    /// `server`; every tool of it when `tools` is empty; every pinned
    /// server when `server` is `None`); returns `[{"server", "tool"}]`.
    #[pyo3(signature = (server=None, tools=None))]
    fn approve_tools(
        &self,
        py: Python<'_>,
        server: Option<&Bound<'_, PyAny>>,
        tools: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let server = optional_string(server, "server")?;
        let hub = self.hub.hub_py(py)?;
        let done = self
            .policy
            .approve_tools(&hub, server.as_deref(), &tools.unwrap_or_default())
            .map_err(|e| errors::to_py(py, &e))?;
        json_out(py, &pairs(done))
    }

    /// Forgets pins (as [`approve_tools`](Self::approve_tools) chooses
    /// them); returns `[{"server", "tool"}]` of the pins removed.
    #[pyo3(signature = (server=None, tools=None))]
    fn revoke_pins(
        &self,
        py: Python<'_>,
        server: Option<&Bound<'_, PyAny>>,
        tools: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let server = optional_string(server, "server")?;
        let hub = self.hub.hub_py(py)?;
        let done = self
            .policy
            .revoke_pins(&hub, server.as_deref(), &tools.unwrap_or_default())
            .map_err(|e| errors::to_py(py, &e))?;
        json_out(py, &pairs(done))
    }

    /// The audit events so far, oldest first.
    fn audit_events(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        json_out(py, &self.policy.audit_events())
    }

    /// Calls asked for so far, refused ones included.
    #[getter]
    fn calls_made(&self) -> u64 {
        self.policy.calls_made()
    }

    /// Events recorded since the last call, for the Python callback.
    fn take_events(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let events: Vec<String> = match &self.queue {
            Some(q) => q
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain(..)
                .collect(),
            None => Vec::new(),
        };
        json_outcome_lines(&events).into_py(py)
    }

    /// Reconnects `server`, lists its tools again and returns the report
    /// (`server`, `offered`, `dropped`, `added`, `missing`). On an engine
    /// thread, since it starts a process.
    #[pyo3(signature = (server, aio=None))]
    fn refresh(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let hub = self.hub.hub_py(py)?;
        let policy = self.policy.clone();
        let op: Op = Box::pin(async move {
            let report = policy.refresh(&hub, &server).await?;
            Ok(json_outcome(&report))
        });
        run(py, op, aio, Exec::Worker)
    }
}

/// An optional string argument (`None` stays `None`).
fn optional_string(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    v.filter(|v| !v.is_none())
        .map(|v| convert::string(v, what))
        .transpose()
}

/// `(server, tool)` pairs as `[{"server", "tool"}]`.
fn pairs(done: Vec<(String, String)>) -> serde_json::Value {
    done.into_iter()
        .map(|(server, tool)| serde_json::json!({"server": server, "tool": tool}))
        .collect()
}

/// A JSON array of already encoded JSON values.
fn json_outcome_lines(lines: &[String]) -> Outcome {
    Outcome::Json(format!("[{}]", lines.join(",")))
}
