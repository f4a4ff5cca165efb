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
//! the background; at interpreter exit [`crate::handle::shutdown`] closes
//! what is left.
//!
//! Events: `events()` hands out a [`NativeEvents`] stream that ends once
//! `close()` finished (or the hub is gone), by core's rule. With `events=True` on connect, one stream is subscribed before
//! the servers start, so its first events are their `server_state`s (the
//! Python layer's `on_event=` delivery thread reads it).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use mcpmux_core::events_ext::{EventQuery, SubscribeOptions, Webhook};
use mcpmux_core::{CallOptions, Config, ConfigSource, Hub, ProgressUpdate};
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::bridge::{self, Exec, Op, Outcome};
use crate::calls::{block, json_out, json_outcome, run, Aio};
use crate::events::NativeEvents;
use crate::handle::NativeHub;
use crate::{convert, errors};

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
    /// `on_request(method, params) -> dict` answers the server requests of
    /// the kinds in `requests` (`"elicitation"`, `"sampling"`; see
    /// `requests.rs`); `roots` (paths or `file://` URIs) are shared with
    /// every server. `deny_private`, `allow_networks` and `require_https`
    /// are core's `HubOptions::network` (they add to the config's
    /// `[network]`).
    #[pyo3(signature = (kind, config, aio=None, authorize=None, events=false, startup_timeout=None, on_request=None, requests=Vec::new(), roots=None, deny_private=false, allow_networks=Vec::new(), require_https=false))]
    #[allow(clippy::too_many_arguments)]
    fn connect(
        py: Python<'_>,
        kind: &str,
        config: &Bound<'_, PyAny>,
        aio: Option<Aio<'_>>,
        authorize: Option<Py<PyAny>>,
        events: bool,
        startup_timeout: Option<&Bound<'_, PyAny>>,
        on_request: Option<Py<PyAny>>,
        requests: Vec<String>,
        roots: Option<Vec<String>>,
        deny_private: bool,
        allow_networks: Vec<String>,
        require_https: bool,
    ) -> PyResult<Py<PyAny>> {
        let startup_wait = convert::opt_seconds(startup_timeout, "startup_timeout")?;
        let network = mcpmux_core::NetworkPolicy::from_options(
            deny_private,
            &allow_networks,
            require_https,
            "argument 'allow_networks'",
        )
        .map_err(|e| errors::to_py(py, &e))?;
        let parsed = load_config(py, kind, config)?;
        let mut options = {
            let mut options = mcpmux_core::HubOptions::default().with_network(network);
            options.startup_wait = startup_wait;
            options
        };
        if let Some(callback) = on_request {
            options.handlers = crate::requests::handlers(callback, &requests)
                .map_err(|e| errors::to_py(py, &e))?;
        }
        if let Some(roots) = roots {
            options.roots =
                Some(mcpmux_core::Roots::new(&roots).map_err(|e| errors::to_py(py, &e))?);
        }
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

    /// Replaces the roots shared with servers (`Hub::set_roots`).
    fn set_roots(&self, py: Python<'_>, roots: Vec<String>) -> PyResult<()> {
        let hub = self.hub_py(py)?;
        hub.set_roots(&roots).map_err(|e| errors::to_py(py, &e))
    }

    /// The roots shared with servers now, as `{"uri", "name"}` dicts.
    fn roots(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let hub = self.hub_py(py)?;
        json_out(py, &hub.roots())
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
    /// `validate_output`: `"error"` (default), `"warn"` or `"off"`.
    #[pyo3(signature = (name, arguments=None, timeout=None, on_progress=None, aio=None, policy=None, task=false, traceparent=None, tracestate=None, max_total_timeout=None, task_ttl=None, validate_output=None))]
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
        validate_output: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let name = convert::string(name, "name")?;
        let arguments = convert::opt_object(arguments, "arguments")?;
        let timeout = convert::opt_seconds(timeout, "timeout")?;
        let validate_output = convert::opt_string(validate_output, "validate_output")?
            .map(|v| mcpmux_core::ValidateOutput::parse("validate_output", &v))
            .transpose()
            .map_err(|e| errors::to_py(py, &e))?
            .unwrap_or_default();
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
            options.validate_output = validate_output;
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

    /// Event types of every server offering the events extension, or of
    /// `server` (`events/list`), each with a `server` key.
    #[pyo3(signature = (server=None, aio=None))]
    fn list_events(
        &self,
        py: Python<'_>,
        server: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::opt_string(server, "server")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let list = hub.list_events(server.as_deref()).await?;
            Ok(json_outcome(&list))
        });
        run(py, op, aio, Exec::Here)
    }

    /// One page of event type `name` of `server` from `cursor`
    /// (`events/poll`), as core serializes it. `max_age` in seconds.
    #[pyo3(signature = (server, name, arguments=None, cursor=None, max_events=None, max_age=None, aio=None))]
    #[allow(clippy::too_many_arguments)]
    fn poll_events(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        cursor: Option<&Bound<'_, PyAny>>,
        max_events: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let name = convert::string(name, "name")?;
        let arguments = convert::opt_object(arguments, "arguments")?;
        let query = EventQuery {
            cursor: convert::opt_string(cursor, "cursor")?,
            max_events: convert::opt_count(max_events, "max_events")?,
            max_age: convert::opt_seconds(max_age, "max_age")?,
            heartbeat: None,
        };
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let page = hub
                .poll_events_with(&server, &name, arguments.as_ref(), &query)
                .await?;
            Ok(json_outcome(&page))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Opens a stream of event type `name` of `server` from `cursor`
    /// (`events/stream`); a `_native.EventStream`. Its occurrences arrive
    /// on the hub's events (`event`, `event_stream`). `max_age` and
    /// `heartbeat` in seconds.
    #[pyo3(signature = (server, name, arguments=None, cursor=None, max_age=None, heartbeat=None, aio=None))]
    #[allow(clippy::too_many_arguments)]
    fn stream_events(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        cursor: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        heartbeat: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let name = convert::string(name, "name")?;
        let arguments = convert::opt_object(arguments, "arguments")?;
        let query = EventQuery {
            cursor: convert::opt_string(cursor, "cursor")?,
            max_age: convert::opt_seconds(max_age, "max_age")?,
            heartbeat: convert::opt_seconds(heartbeat, "heartbeat")?,
            max_events: None,
        };
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let handle = hub
                .stream_events_with(&server, &name, arguments.as_ref(), &query)
                .await?;
            Ok(Outcome::EventStream(handle))
        });
        // On an engine thread: the stream's task is spawned on the runtime.
        run(py, op, aio, Exec::Worker)
    }

    /// Subscribes webhook `url` (signed with `secret`) to event type `name`
    /// of `server` (`events/subscribe`); the subscription as core reads it.
    /// `ttl` and `max_age` in seconds; `no_expiry` sends `ttlMs: null`.
    #[pyo3(signature = (server, name, url, secret, arguments=None, cursor=None, ttl=None, no_expiry=false, max_age=None, aio=None))]
    #[allow(clippy::too_many_arguments)]
    fn subscribe_events(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        url: &Bound<'_, PyAny>,
        secret: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        cursor: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        no_expiry: bool,
        max_age: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let name = convert::string(name, "name")?;
        let hook = Webhook {
            url: convert::string(url, "url")?,
            secret: convert::string(secret, "secret")?,
            cursor: convert::opt_string(cursor, "cursor")?,
            ttl: convert::opt_seconds(ttl, "ttl")?,
        };
        let options = SubscribeOptions {
            no_expiry,
            max_age: convert::opt_seconds(max_age, "max_age")?,
        };
        let arguments = convert::opt_object(arguments, "arguments")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            let sub = hub
                .subscribe_events_with(&server, &name, arguments.as_ref(), &hook, &options)
                .await?;
            Ok(json_outcome(&sub))
        });
        run(py, op, aio, Exec::Here)
    }

    /// Ends the webhook subscription of `url` to event type `name` of
    /// `server` with these `arguments` (`events/unsubscribe`).
    #[pyo3(signature = (server, name, url, arguments=None, aio=None))]
    fn unsubscribe_events(
        &self,
        py: Python<'_>,
        server: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        url: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        aio: Option<Aio<'_>>,
    ) -> PyResult<Py<PyAny>> {
        let server = convert::string(server, "server")?;
        let name = convert::string(name, "name")?;
        let url = convert::string(url, "url")?;
        let arguments = convert::opt_object(arguments, "arguments")?;
        let hub = self.hub_py(py)?;
        let op: Op = Box::pin(async move {
            hub.unsubscribe_events(&server, &name, arguments.as_ref(), &url)
                .await?;
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

/// Whether mcpmux exports telemetry (the `OTEL_*` variables): the Python
/// layer then hands the host's active OpenTelemetry context to each call.
#[pyfunction]
pub fn telemetry_enabled() -> bool {
    mcpmux_core::telemetry::enabled()
}
