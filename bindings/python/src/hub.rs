//! `_native.Hub`: one engine hub, for the Python `mcpmux.Hub` (sync) and
//! `mcpmux.AsyncHub` (asyncio) classes.
//!
//! Every method that talks to servers takes a last argument `aio`: `None`
//! runs it to completion on the calling thread with the GIL released and
//! returns its value; a tuple `(asyncio_future, bridge)` starts it and
//! returns at once (see [`crate::bridge::submit`]).
//!
//! Ownership: the Python object owns one clone of the engine hub. `close()`
//! closes the servers; after it every method raises `TransportClosed`
//! ("the hub is closed"). A hub garbage-collected while open is closed in
//! the background; at interpreter exit [`shutdown`] closes what is left.
//!
//! Events: `events()` hands out a [`NativeEvents`] stream that ends once
//! `close()` finished (or the hub is gone), by core's rule. With `events=True` on connect, one stream is subscribed before
//! the servers start, so its first events are their `server_state`s (the
//! Python layer's `on_event=` delivery thread reads it).

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcpmux_core::{CallOptions, Config, ConfigSource, Error, EventStream, Hub, ProgressUpdate};
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::bridge::{self, Bridge, Exec, Op, Outcome};
use crate::events::NativeEvents;
use crate::{convert, errors, runtime};

/// How often a blocking call looks for signals (Ctrl-C) while it waits.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// The async form of a call: the asyncio future to complete and the loop's bridge.
pub(crate) type Aio<'py> = (Bound<'py, PyAny>, Bound<'py, Bridge>);

/// Every hub of this process that may still be open, for [`shutdown`].
static LIVE: Mutex<Vec<Weak<HubState>>> = Mutex::new(Vec::new());

struct HubState {
    hub: Hub,
    closed: AtomicBool,
    /// The stream subscribed before connecting (`events=True`), until
    /// `events(initial=True)` takes it.
    first_events: Mutex<Option<EventStream>>,
    /// The fork generation that created it (see [`runtime`]).
    generation: u64,
}

impl HubState {
    fn stale(&self) -> bool {
        self.generation != runtime::generation()
    }
}

impl Drop for HubState {
    fn drop(&mut self) {
        if self.stale() {
            // Connected by the parent before fork(): its servers are the
            // parent's; neither close nor kill them from here.
            std::mem::forget(self.hub.clone());
            return;
        }
        let _enter = runtime::get().ok().map(|rt| rt.enter());
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Garbage-collected while open: close gracefully in the background.
            if let Ok(rt) = runtime::get() {
                let hub = self.hub.clone();
                rt.spawn(async move { hub.close().await });
            }
        }
    }
}

/// The config the Python layer handed over; `kind` says what `config` is:
/// `"str"` (a string: core decides whether it is a path or text,
/// [`Config::from_str_guess`]), `"path"` (an `os.PathLike`), `"text"` (TOML
/// or JSON text) or `"json"` (a mapping). Only converts: the rule is core's.
pub(crate) fn load_config(
    py: Python<'_>,
    kind: &str,
    config: &Bound<'_, PyAny>,
) -> PyResult<Config> {
    // The policy's and the sessions' config keys are checked on load.
    mcpmux_sessions::register_config_layers();
    let source = match kind {
        "str" => {
            return Config::from_str_guess(&convert::string(config, "config")?)
                .map_err(|e| errors::to_py(py, &e))
        }
        "path" => ConfigSource::Path(convert::string(config, "config")?.into()),
        "text" => ConfigSource::Text(convert::string(config, "config")?),
        "json" => ConfigSource::Json(convert::to_json(config, "config")?),
        other => {
            return Err(errors::invalid(
                py,
                format!("unknown config kind '{other}'"),
            ))
        }
    };
    Config::from_source(source).map_err(|e| errors::to_py(py, &e))
}

/// An engine hub (see the module docs). Created by `Hub.connect`.
#[pyclass(frozen, module = "mcpmux._native", name = "Hub")]
pub struct NativeHub {
    state: Arc<HubState>,
}

impl NativeHub {
    /// Another handle on the same hub (for a policy bound to it).
    pub(crate) fn clone_ref(&self) -> NativeHub {
        NativeHub {
            state: self.state.clone(),
        }
    }
}

impl NativeHub {
    /// Wraps a connected engine hub (and the event stream subscribed
    /// before it connected, if any) and registers it for [`shutdown`].
    pub fn wrap(hub: Hub, first_events: Option<EventStream>) -> NativeHub {
        let state = Arc::new(HubState {
            hub,
            closed: AtomicBool::new(false),
            first_events: Mutex::new(first_events),
            generation: runtime::generation(),
        });
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&state));
        NativeHub { state }
    }

    /// The engine hub, unless this hub is closed (or from before fork()).
    fn hub(&self) -> Result<&Hub, Error> {
        if self.state.closed.load(Ordering::Acquire) {
            return Err(errors::closed());
        }
        if self.state.stale() {
            return Err(Error::TransportClosed(
                "this hub was connected before fork(); connect again in this process".into(),
            ));
        }
        Ok(&self.state.hub)
    }

    pub(crate) fn hub_py(&self, py: Python<'_>) -> PyResult<Hub> {
        self.hub().cloned().map_err(|e| errors::to_py(py, &e))
    }
}

#[pymethods]
impl NativeHub {
    /// Connects every enabled server of a config (`kind` and `config` as
    /// for [`load_config`]). Servers are started from engine threads.
    #[staticmethod]
    /// `authorize(url, redirect_uri, server) -> str` is the person in the
    /// loop for OAuth servers (see `authorize.rs`). With `events`, an event
    /// stream is subscribed before the servers start (taken by
    /// `events(initial=True)`).
    /// `startup_timeout` (seconds) is core's `HubOptions::startup_wait`.
    #[pyo3(signature = (kind, config, aio=None, authorize=None, events=false, startup_timeout=None))]
    fn connect(
        py: Python<'_>,
        kind: &str,
        config: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
        authorize: Option<Py<PyAny>>,
        events: bool,
        startup_timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let startup_wait = convert::opt_seconds(startup_timeout, "startup_timeout")?;
        let parsed = load_config(py, kind, config)?;
        let mut options = {
            let mut options = mcpmux_core::HubOptions::default();
            options.startup_wait = startup_wait;
            options
        };
        if let Some(callback) = authorize {
            options.auth.handler =
                Some(Arc::new(crate::authorize::PyAuthorize(Arc::new(callback))));
        }
        let first = events.then(|| options.events.subscribe());
        let op: Op = Box::pin(async move {
            let hub = Hub::connect_with(parsed, options).await?;
            Ok(Outcome::Hub(hub, first))
        });
        run(py, op, aio, Exec::Worker)
    }

    /// Whether `close()` was called (or the hub is unusable after fork()).
    #[getter]
    fn closed(&self) -> bool {
        self.hub().is_err()
    }

    /// The status of every configured server (`mcpmux servers --json`).
    fn servers(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let hub = self.hub_py(py)?;
        json_out(py, &hub.servers())
    }

    /// Which servers failed (their tools are missing from the lists), or
    /// `None`; the Python layer warns with it.
    fn failed_servers_note(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.hub_py(py)?.failed_servers_note())
    }

    /// Every tool of every connected server (`mcpmux tools --json`).
    fn list_tools(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let hub = self.hub_py(py)?;
        let tools = hub.list_tools();
        json_out(py, &tools)
    }

    /// The tools matching `query`, best first, at most `limit`
    /// (`Hub::search_tools`).
    #[pyo3(signature = (query, limit = mcpmux_core::Hub::SEARCH_DEFAULT_LIMIT))]
    fn search_tools(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        limit: usize,
    ) -> PyResult<Py<PyAny>> {
        let query = convert::string(query, "query")?;
        let hub = self.hub_py(py)?;
        json_out(py, &hub.search_tools(&query, limit))
    }

    /// The tool list rendered for an LLM API.
    fn tools_for(&self, py: Python<'_>, format: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let format = convert::string(format, "format")?;
        let hub = self.hub_py(py)?;
        let value = hub.tools_for(&format).map_err(|e| errors::to_py(py, &e))?;
        json_out(py, &value)
    }

    /// Calls a tool by its hub name; returns the MCP `CallToolResult`.
    /// `on_progress(progress, total, message)` runs on the calling thread
    /// (sync) or on the event loop's thread (async). With `policy` the call
    /// goes through it (checks, limits, redaction, audit).
    /// `task` runs a tool whose `execution.taskSupport` is `optional` as an
    /// MCP task (`required` ones always are).
    /// `traceparent` / `tracestate`: the host's active OpenTelemetry
    /// context (W3C), the parent of the call's spans.
    /// `max_total_timeout` and `task_ttl`: seconds, as `timeout` (core's
    /// `CallOptions`; `mcpmux_core::contract` names them).
    #[pyo3(signature = (name, arguments=None, timeout=None, on_progress=None, aio=None, policy=None, task=false, traceparent=None, tracestate=None, max_total_timeout=None, task_ttl=None))]
    #[allow(clippy::too_many_arguments)]
    fn call_tool(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        on_progress: Option<Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
        policy: Option<PyRef<'_, crate::policy::NativePolicy>>,
        task: bool,
        traceparent: Option<String>,
        tracestate: Option<String>,
        max_total_timeout: Option<&Bound<'_, PyAny>>,
        task_ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let name = convert::string(name, "name")?;
        let arguments = convert::opt_object(arguments, "arguments")?;
        let timeout = convert::opt_seconds(timeout, "timeout")?;
        let max_total_timeout = convert::opt_seconds(max_total_timeout, "max_total_timeout")?;
        let task_ttl = convert::opt_seconds(task_ttl, "task_ttl")?;
        let on_progress = on_progress.filter(|c| !c.is_none());
        if let Some(cb) = &on_progress {
            if !cb.is_callable() {
                return Err(errors::invalid(
                    py,
                    format!(
                        "argument 'on_progress' must be callable or None, not {}",
                        convert::type_name(cb)
                    ),
                ));
            }
        }
        let hub = self.hub_py(py)?;
        let mut opts = {
            let mut options = CallOptions::default().with_task(task);
            options.timeout = timeout;
            options.max_total_timeout = max_total_timeout;
            options.task_ttl = task_ttl;
            options.policy = policy.map(|p| p.policy.clone() as Arc<dyn mcpmux_core::CallPolicy>);
            options
        };
        match aio {
            Some((future, bridge)) => {
                if let Some(cb) = on_progress {
                    opts.on_progress = Some(bridge::progress_to_bridge(&bridge, cb.unbind()));
                }
                let op: Op = Box::pin(async move {
                    let call = hub.call_tool(&name, arguments.as_ref(), &opts);
                    mcpmux_core::telemetry::in_context(
                        traceparent.as_deref(),
                        tracestate.as_deref(),
                        call,
                    )
                    .await
                    .map(Outcome::Tool)
                });
                bridge::submit(py, &future, &bridge, op, Exec::Here)
            }
            None => {
                let mut progress = None;
                if let Some(cb) = on_progress {
                    let (tx, rx) = mpsc::unbounded_channel::<ProgressUpdate>();
                    opts.on_progress = Some(Arc::new(move |u| {
                        let _ = tx.send(u);
                    }));
                    progress = Some((cb.unbind(), rx));
                }
                let op: Op = Box::pin(async move {
                    let call = hub.call_tool(&name, arguments.as_ref(), &opts);
                    mcpmux_core::telemetry::in_context(
                        traceparent.as_deref(),
                        tracestate.as_deref(),
                        call,
                    )
                    .await
                    .map(Outcome::Tool)
                });
                block(py, op, Exec::Here, progress)?.into_py(py)
            }
        }
    }

    /// Resources of every server, or of `server`.
    #[pyo3(signature = (server=None, aio=None))]
    fn list_resources(
        &self,
        py: Python<'_>,
        server: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let list = hub.list_resources(server.as_deref()).await?;
            Ok(json_outcome(&list))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Resource templates of every server, or of `server`.
    #[pyo3(signature = (server=None, aio=None))]
    fn list_resource_templates(
        &self,
        py: Python<'_>,
        server: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let list = hub.list_resource_templates(server.as_deref()).await?;
            Ok(json_outcome(&list))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Reads a resource (`resources/read` result).
    #[pyo3(signature = (uri, server=None, aio=None))]
    fn read_resource(
        &self,
        py: Python<'_>,
        uri: &Bound<'_, PyAny>,
        server: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let uri = convert::string(uri, "uri")?;
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let value = hub.read_resource(&uri, server.as_deref()).await?;
            Ok(json_outcome(&value))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Prompts of every server, or of `server`.
    #[pyo3(signature = (server=None, aio=None))]
    fn list_prompts(
        &self,
        py: Python<'_>,
        server: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let list = hub.list_prompts(server.as_deref()).await?;
            Ok(json_outcome(&list))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Gets a prompt (`prompts/get` result).
    #[pyo3(signature = (name, arguments=None, server=None, aio=None))]
    fn get_prompt(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        server: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let name = convert::string(name, "name")?;
        let arguments = convert::opt_object(arguments, "arguments")?;
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let value = hub
                .get_prompt(&name, arguments.as_ref(), server.as_deref())
                .await?;
            Ok(json_outcome(&value))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Reconnects `server` and lists its tools again (on an engine thread,
    /// since it starts a process).
    #[pyo3(signature = (server, aio=None))]
    fn refresh(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            hub.refresh(&server).await?;
            Ok(Outcome::Unit)
        });
        run(py, op, aio, Exec::Worker)
    }

    /// Applies a new config (`kind` and `config` as for `connect`): the
    /// engine keeps unchanged servers, closes removed ones, starts added
    /// and changed ones (`Hub::reload`). On an engine thread, since it may
    /// start processes.
    #[pyo3(signature = (kind, config, aio=None))]
    fn reload(
        &self,
        py: Python<'_>,
        kind: &str,
        config: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let parsed = load_config(py, kind, config)?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            hub.reload(parsed).await?;
            Ok(Outcome::Unit)
        });
        run(py, op, aio, Exec::Worker)
    }

    /// A stream of the hub's events from now on (see [`NativeEvents`]);
    /// with `initial`, the one subscribed before connecting (`events=True`),
    /// once. `TransportClosed` on a closed hub.
    #[pyo3(signature = (initial=false))]
    fn events(&self, py: Python<'_>, initial: bool) -> PyResult<NativeEvents> {
        let hub = self.hub_py(py)?;
        let first = initial
            .then(|| {
                self.state
                    .first_events
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
            })
            .flatten();
        let stream = first.unwrap_or_else(|| hub.events());
        Ok(NativeEvents::new(stream))
    }

    /// Starts tool `name` as an MCP task; its handle `{"server", "task_id"}`.
    /// `task_ttl` (seconds): how long the server keeps the task.
    #[pyo3(signature = (name, arguments=None, timeout=None, aio=None, task_ttl=None))]
    fn call_tool_as_task(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
        task_ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let name = convert::string(name, "name")?;
        let arguments = convert::opt_object(arguments, "arguments")?;
        let timeout = convert::opt_seconds(timeout, "timeout")?;
        let task_ttl = convert::opt_seconds(task_ttl, "task_ttl")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let opts = {
                let mut options = CallOptions::default();
                options.timeout = timeout;
                options.task_ttl = task_ttl;
                options
            };
            let handle = hub
                .call_tool_as_task(&name, arguments.as_ref(), &opts)
                .await?;
            Ok(json_outcome(&handle))
        });
        run(py, op, aio, Exec::Here)
    }

    /// The status of task `task_id` of `server` (`tasks/get`).
    #[pyo3(signature = (server, task_id, aio=None))]
    fn task(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        task_id: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let task_id = convert::string(task_id, "task_id")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let task = hub.task(&server, &task_id).await?;
            Ok(json_outcome(&task))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Waits for task `task_id` of `server` to end (at most `timeout`
    /// seconds, else the server's `max_total_timeout_seconds`); its
    /// `CallToolResult`.
    #[pyo3(signature = (server, task_id, timeout=None, aio=None))]
    fn task_result(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        task_id: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let task_id = convert::string(task_id, "task_id")?;
        let timeout = convert::opt_seconds(timeout, "timeout")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let opts = {
                let mut options = CallOptions::default();
                options.max_total_timeout = timeout;
                options
            };
            hub.task_result(&server, &task_id, &opts)
                .await
                .map(Outcome::Tool)
        });
        run(py, op, aio, Exec::Here)
    }

    /// Cancels task `task_id` of `server` (`tasks/cancel`); the task after.
    #[pyo3(signature = (server, task_id, aio=None))]
    fn cancel_task(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        task_id: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let task_id = convert::string(task_id, "task_id")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let task = hub.cancel_task(&server, &task_id).await?;
            Ok(json_outcome(&task))
        });
        run(py, op, aio, Exec::Here)
    }

    /// The tasks `server` keeps for this hub (`tasks/list`).
    #[pyo3(signature = (server, aio=None))]
    fn list_tasks(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let tasks = hub.list_tasks(&server).await?;
            Ok(json_outcome(&tasks))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Pings `server`; the round-trip time in seconds.
    #[pyo3(signature = (server, aio=None))]
    fn ping(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let rtt = hub.ping(&server).await?;
            Ok(json_outcome(&rtt.as_secs_f64()))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Asks `server` for log messages at `level` or above (`log` events).
    #[pyo3(signature = (server, level, aio=None))]
    fn set_log_level(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        level: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let level = convert::string(level, "level")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            hub.set_log_level(&server, &level).await?;
            Ok(Outcome::Unit)
        });
        run(py, op, aio, Exec::Here)
    }

    /// `completion/complete`: the server's `completion` object.
    #[pyo3(signature = (reference, argument, context=None, server=None, aio=None))]
    fn complete(
        &self,
        py: Python<'_>,
        reference: &Bound<'_, PyAny>,
        argument: &Bound<'_, PyAny>,
        context: Option<&Bound<'_, PyAny>>,
        server: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let reference: Value = convert::to_json(reference, "ref")?;
        let argument: Value = convert::to_json(argument, "argument")?;
        let context = convert::opt_object(context, "context")?;
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let value = hub
                .complete(&reference, &argument, context.as_ref(), server.as_deref())
                .await?;
            Ok(json_outcome(&value))
        });
        run(py, op, aio, Exec::Here)
    }

    /// `resources/subscribe` (`unsubscribe` when `on` is false) for `uri`
    /// on `server`, or on the server that lists it.
    #[pyo3(signature = (uri, server=None, on=true, aio=None))]
    fn subscribe(
        &self,
        py: Python<'_>,
        uri: &Bound<'_, PyAny>,
        server: Option<&Bound<'_, PyAny>>,
        on: bool,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let uri = convert::string(uri, "uri")?;
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            if on {
                hub.subscribe(&uri, server.as_deref()).await?;
            } else {
                hub.unsubscribe(&uri, server.as_deref()).await?;
            }
            Ok(Outcome::Unit)
        });
        run(py, op, aio, Exec::Here)
    }

    /// Closes every server and waits until they are gone, then ends the
    /// hub's event streams. Idempotent: a second call returns at once.
    #[pyo3(signature = (aio=None))]
    fn close(&self, py: Python<'_>, aio: Option<Aio<'_>>) -> PyResult<Py<PyAny>> {
        let stale = self.state.stale();
        let op: Op = if stale || self.state.closed.swap(true, Ordering::AcqRel) {
            Box::pin(async { Ok(Outcome::Unit) })
        } else {
            let hub = self.state.hub.clone();
            Box::pin(async move {
                // Also ends the hub's event streams (core's rule).
                hub.close().await;
                Ok(Outcome::Unit)
            })
        };
        // On an engine thread: closing waits for processes to exit.
        run(py, op, aio, Exec::Worker)
    }
}

/// Runs `op` blocking (no `aio`) or as an asyncio future.
pub(crate) fn run(py: Python<'_>, op: Op, aio: Option<Aio<'_>>, exec: Exec) -> PyResult<Py<PyAny>> {
    match aio {
        Some((future, bridge)) => bridge::submit(py, &future, &bridge, op, exec),
        None => block(py, op, exec, None)?.into_py(py),
    }
}

/// A progress callback of a blocking call and the updates for it.
type Progress = (Py<PyAny>, mpsc::UnboundedReceiver<ProgressUpdate>);

/// Runs `op` to completion with the GIL released. Every
/// [`SIGNAL_CHECK`] it looks for signals, so Ctrl-C interrupts the wait
/// (and cancels the request); progress callbacks run on this thread.
fn block(py: Python<'_>, op: Op, exec: Exec, progress: Option<Progress>) -> PyResult<Outcome> {
    let rt = runtime::get().map_err(|e| errors::to_py(py, &e))?;
    let op = bridge::guarded(op);
    let nested = tokio::runtime::Handle::try_current().is_ok();
    let result: Result<Result<Outcome, Error>, PyErr> = py.detach(move || {
        if exec == Exec::Here && !nested {
            return mcpmux_core::runtime::block_on(rt.handle(), wait(op, progress));
        }
        // On an engine thread; wait for it from here.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = rt.spawn(async move {
            let _ = tx.send(op.await);
        });
        let waited = if nested {
            // Already inside some tokio runtime (a progress callback that
            // makes a blocking call, or another library's runtime): block
            // this thread on a plain channel instead of entering a runtime,
            // and look for signals from here. Only the thread that called
            // can handle them (Python runs signal handlers on the main
            // thread): checked on the engine thread that runs `wait`,
            // Ctrl-C would be lost until the call ended or timed out.
            let (tx2, rx2) = std::sync::mpsc::channel();
            let waiter = rt.spawn(async move {
                let _ = tx2.send(wait(rx, progress).await);
            });
            loop {
                match rx2.recv_timeout(SIGNAL_CHECK) {
                    Ok(done) => break done,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(interrupted) = Python::attach(|py| py.check_signals()) {
                            waiter.abort();
                            break Err(interrupted);
                        }
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                        break Ok(Ok(Err(Error::Internal(
                            "the engine task ended without an answer".into(),
                        ))))
                    }
                }
            }
        } else {
            mcpmux_core::runtime::block_on(rt.handle(), wait(rx, progress))
        };
        if waited.is_err() {
            task.abort();
        }
        waited.map(|r| {
            r.unwrap_or_else(|_| {
                Err(Error::Internal(
                    "the engine task ended without an answer".into(),
                ))
            })
        })
    });
    match result {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(e)) => Err(errors::to_py(py, &e)),
        Err(interrupted) => Err(interrupted),
    }
}

/// Awaits `fut`, checking for signals and running progress callbacks.
async fn wait<F: Future + Unpin>(
    mut fut: F,
    mut progress: Option<Progress>,
) -> Result<F::Output, PyErr> {
    // A signal that landed just before the call (while Rust code held the
    // GIL, so Python did not handle it) interrupts it before it starts,
    // rather than after the request went out.
    Python::attach(|py| py.check_signals())?;
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + SIGNAL_CHECK, SIGNAL_CHECK);
    loop {
        let update = async {
            match progress.as_mut() {
                Some((_, rx)) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            out = &mut fut => {
                // Progress that arrived just before the result is delivered first.
                if let Some((cb, rx)) = progress.as_mut() {
                    while let Ok(u) = rx.try_recv() {
                        Python::attach(|py| bridge::call_progress_or_interrupt(py, cb, u))?;
                    }
                }
                return Ok(out);
            }
            Some(u) = update => {
                if let Some((cb, _)) = &progress {
                    Python::attach(|py| bridge::call_progress_or_interrupt(py, cb, u))?;
                }
            }
            _ = tick.tick() => Python::attach(|py| py.check_signals())?,
        }
    }
}

/// Runs a future of the engine that never waits (such as `Policy::report`,
/// which reads the hub's index) on this thread.
pub(crate) fn now<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let _enter = runtime::get().ok().map(|rt| rt.enter());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            return v;
        }
        // Not expected; should the engine ever wait here, wait politely.
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(crate) fn json_outcome<T: serde::Serialize + ?Sized>(value: &T) -> Outcome {
    match serde_json::to_string(value) {
        Ok(text) => Outcome::Json(text),
        Err(_) => Outcome::Json("null".into()),
    }
}

pub(crate) fn json_out<T: serde::Serialize + ?Sized>(
    py: Python<'_>,
    value: &T,
) -> PyResult<Py<PyAny>> {
    json_outcome(value).into_py(py)
}

/// Closes every hub of this process that is still open, all at once,
/// giving them `grace_seconds` to exit after their stdin is closed; what is
/// left then is killed (SIGKILL to its process group). Registered with
/// `atexit` by the Python layer, so that interpreter exit never hangs and
/// leaves no server behind.
#[pyfunction]
pub fn shutdown(py: Python<'_>, grace_seconds: f64) -> PyResult<()> {
    let hubs: Vec<Hub> = {
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        live.drain(..)
            .filter_map(|w| w.upgrade())
            .filter(|s| !s.stale() && !s.closed.swap(true, Ordering::AcqRel))
            .map(|s| s.hub.clone())
            .collect()
    };
    if hubs.is_empty() {
        return Ok(());
    }
    let rt = runtime::get().map_err(|e| errors::to_py(py, &e))?;
    let grace = Duration::try_from_secs_f64(grace_seconds).unwrap_or(Duration::from_secs(1));
    py.detach(move || {
        let all = async move {
            // Closing also ends the event streams (the on_event threads).
            let closes = hubs.iter().map(Hub::close);
            // Dropping the unfinished closes (on timeout) drops the last
            // handles on their servers, which kills their process groups.
            let _ = tokio::time::timeout(grace, join_all(closes)).await;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        rt.spawn(async move {
            all.await;
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(grace + Duration::from_secs(2));
    });
    // Spans and metrics go out too (bounded; nothing when telemetry is off).
    py.detach(mcpmux_core::telemetry::shutdown);
    Ok(())
}

/// Whether mcpmux exports telemetry (the `OTEL_*` variables): the Python
/// layer then hands the host's active OpenTelemetry context to each call.
#[pyfunction]
pub fn telemetry_enabled() -> bool {
    mcpmux_core::telemetry::enabled()
}

/// Awaits every future of `futs` concurrently.
async fn join_all<F: Future<Output = ()>>(futs: impl IntoIterator<Item = F>) {
    let mut set = Vec::new();
    for f in futs {
        set.push(Box::pin(f));
    }
    std::future::poll_fn(|cx| {
        set.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if set.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}
