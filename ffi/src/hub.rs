//! [`mcpmux_hub`]: connect servers, list tools, call a tool (blocking), read
//! resources, get prompts, refresh, close.

use std::ffi::c_char;
use std::sync::Arc;

use mcpmux_core::contract::{self, Unit};
use mcpmux_core::{CallOptions, Config, ConfigSource, Error, Hub};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::engine::{mcpmux_engine, Shared};
use crate::error::{mcpmux_error, mcpmux_status};
use crate::util::{c_string, guard_status, guard_value, json_string, write_out, Args};

/// A hub: the servers of one configuration behind one tool list, running on
/// the engine it was connected with. Created by mcpmux_hub_connect() or
/// mcpmux_hub_connect_file(), owned by the caller, freed with
/// mcpmux_hub_free(). Any thread may use it, several at once.
pub struct mcpmux_hub {
    pub(crate) hub: Hub,
    pub(crate) shared: Arc<Shared>,
    id: u64,
    /// The task delivering events to the C listener, if one is set.
    events: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// Runs when the hub is freed, before its servers go: closes the host's
    /// request callback (no call starts after it, running ones end first).
    on_free: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl mcpmux_hub {
    /// Replaces the event-delivery task (aborting the old one).
    pub(crate) fn set_event_task(&self, task: Option<tokio::task::AbortHandle>) {
        if let Some(old) = std::mem::replace(&mut *self.events.lock().unwrap(), task) {
            old.abort();
        }
    }
}

/// The checked hub behind a pointer.
///
/// # Safety
/// `hub` is NULL or a live hub.
pub(crate) unsafe fn hub_ref<'a>(
    args: Args,
    hub: *const mcpmux_hub,
) -> Result<&'a mcpmux_hub, Error> {
    args.non_null("hub", hub)?;
    // SAFETY: non-NULL and live by the caller's promise.
    Ok(unsafe { &*hub })
}

/// Reads `options_json` of a tool call: `timeout_ms` / `timeout_seconds`,
/// `max_total_timeout_ms` / `max_total_timeout_seconds`, `task` (run a tool
/// whose `taskSupport` is `optional` as a task), `task_ttl_ms` /
/// `task_ttl_seconds` and `validate_output` (`"error"`, `"warn"`, `"off"`).
pub(crate) fn call_options(
    args: Args,
    options: Option<Map<String, Value>>,
) -> Result<CallOptions, Error> {
    let mut opts = CallOptions::default();
    for (key, value) in options.unwrap_or_default() {
        if key == "traceparent" || key == "tracestate" {
            // Read by call_trace (telemetry), checked here.
            if !value.is_string() {
                return Err(args.invalid(
                    "options_json",
                    format!("option '{key}' must be a string, not {value}"),
                ));
            }
            continue;
        }
        if key == "validate_output" {
            // "error" | "warn" | "off": core's one check.
            let text = value.as_str().ok_or_else(|| {
                args.invalid(
                    "options_json",
                    format!("option 'validate_output' must be a string, not {value}"),
                )
            })?;
            opts.validate_output = mcpmux_core::ValidateOutput::parse("validate_output", text)
                .map_err(|e| args.invalid("options_json", format!("option {e}")))?;
            continue;
        }
        if key == "task" {
            opts.task = value.as_bool().ok_or_else(|| {
                args.invalid(
                    "options_json",
                    format!("option 'task' must be true or false, not {value}"),
                )
            })?;
            continue;
        }
        let (slot, unit) = match key.as_str() {
            "timeout_ms" => (&mut opts.timeout, Unit::Millis),
            "timeout_seconds" => (&mut opts.timeout, Unit::Seconds),
            "max_total_timeout_ms" => (&mut opts.max_total_timeout, Unit::Millis),
            "max_total_timeout_seconds" => (&mut opts.max_total_timeout, Unit::Seconds),
            "task_ttl_ms" => (&mut opts.task_ttl, Unit::Millis),
            "task_ttl_seconds" => (&mut opts.task_ttl, Unit::Seconds),
            other => return Err(args.unknown_option(other, &call_option_keys())),
        };
        // Core's one check (contract::duration): positive, at most
        // MCPMUX_MAX_TIMEOUT_SECONDS, INVALID_INPUT naming the option.
        let duration = value
            .as_f64()
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "'{key}' must be a positive number of {}, not {value}",
                    unit.word()
                ))
            })
            .and_then(|n| contract::duration(&key, n, unit))
            .map_err(|e| args.invalid("options_json", format!("option {e}")))?;
        if slot.replace(duration).is_some() {
            return Err(args.invalid(
                "options_json",
                format!("sets the same timeout twice ('{key}')"),
            ));
        }
    }
    Ok(opts)
}

/// The keys of a call's `options_json`: core's call options as the C ABI
/// spells them (`contract::names`; a callback is a parameter, not a key).
pub(crate) fn call_option_keys() -> Vec<String> {
    let schema = contract::call_options_schema();
    contract::names("call_options")
        .unwrap_or_default()
        .into_iter()
        .filter(|n| schema["properties"][&n.field]["x-callback"] != true)
        .flat_map(|n| n.c)
        .collect()
}

/// The W3C trace context of a call's `options_json` (`traceparent`,
/// `tracestate`): with telemetry on, the call's spans are its children.
#[derive(Default)]
pub(crate) struct CallTrace {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl CallTrace {
    /// Reads it from the options (checked by [`call_options`]).
    pub(crate) fn of(options: Option<&Map<String, Value>>) -> CallTrace {
        let field = |key: &str| {
            options
                .and_then(|o| o.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        CallTrace {
            traceparent: field("traceparent"),
            tracestate: field("tracestate"),
        }
    }

    /// Runs `fut` in this context.
    pub(crate) async fn run<F: std::future::Future>(self, fut: F) -> F::Output {
        mcpmux_core::telemetry::in_context(
            self.traceparent.as_deref(),
            self.tracestate.as_deref(),
            fut,
        )
        .await
    }
}

/// Reads `args_json` of a tool call: NULL or a JSON object.
///
/// # Safety
/// `args_json` is NULL or a NUL-terminated string.
pub(crate) unsafe fn tool_arguments(
    args: Args,
    args_json: *const c_char,
) -> Result<Option<Value>, Error> {
    // SAFETY: forwarded.
    match unsafe { args.opt_json("args_json", args_json) }? {
        Some(v) if !v.is_object() => Err(args.invalid("args_json", "must be a JSON object")),
        other => Ok(other),
    }
}

/// Reads `args_json` of a tool call as it is, for core's
/// `Hub::call_tool_raw`: NULL or the text of a JSON object, checked but not
/// parsed into a value (the call sends it on unchanged).
///
/// # Safety
/// `args_json` is NULL or a NUL-terminated string that outlives the
/// returned reference.
pub(crate) unsafe fn tool_arguments_raw<'a>(
    args: Args,
    args_json: *const c_char,
) -> Result<Option<&'a RawValue>, Error> {
    // SAFETY: forwarded.
    match unsafe { args.opt_raw_json("args_json", args_json) }? {
        Some(raw) if !raw.get().starts_with('{') => {
            Err(args.invalid("args_json", "must be a JSON object"))
        }
        other => Ok(other),
    }
}

/// Connects `config` on `engine` and returns the boxed hub.
fn connect(
    args: Args,
    engine: &mcpmux_engine,
    config: Result<Config, Error>,
) -> Result<*mut mcpmux_hub, Error> {
    connect_with(args, engine, config, mcpmux_core::HubOptions::default())
}

/// [`connect`] with hub options (the authorization handler).
pub(crate) fn connect_with(
    args: Args,
    engine: &mcpmux_engine,
    config: Result<Config, Error>,
    options: mcpmux_core::HubOptions,
) -> Result<*mut mcpmux_hub, Error> {
    connect_with_gate(args, engine, config, options, None)
}

/// [`connect_with`], with what must run when the hub is freed.
pub(crate) fn connect_with_gate(
    args: Args,
    engine: &mcpmux_engine,
    config: Result<Config, Error>,
    options: mcpmux_core::HubOptions,
    on_free: Option<Box<dyn FnOnce() + Send + Sync>>,
) -> Result<*mut mcpmux_hub, Error> {
    let shared = engine.shared().clone();
    let config = config?;
    let hub = shared.block_on(args, Hub::connect_with(config, options))??;
    let id = shared.register(hub.clone());
    Ok(Box::into_raw(Box::new(mcpmux_hub {
        hub,
        shared,
        id,
        events: std::sync::Mutex::new(None),
        on_free,
    })))
}

/// Connects every enabled server of a configuration at once. Blocking.
///
/// `config_text` is TOML (`[[mcp.servers]]`) or JSON (`{"mcpServers":
/// ...}`); `${VAR}` expands from the environment. A malformed config is a
/// CONFIG_INVALID error. A server that fails to start or initialize does
/// not fail the connect: mcpmux_hub_servers() shows it as "failed" with its
/// error, and the other servers work.
///
/// On success `*out` receives the hub, owned by the caller, freed with
/// mcpmux_hub_free(). The hub runs on `engine`, which must outlive it.
///
/// # Safety
/// `engine` is a live engine; `config_text` a NUL-terminated string; `out`
/// and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_connect(
    engine: *mut mcpmux_engine,
    config_text: *const c_char,
    out: *mut *mut mcpmux_hub,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_connect",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("engine", engine)?;
            let text = args.str("config_text", config_text)?;
            args.non_null("out", out)?;
            let hub = connect(
                args,
                &*engine,
                crate::util::load_config(ConfigSource::Text(text.to_owned())),
            )?;
            write_out(out, hub);
            Ok(())
        })
    }
}

/// Like mcpmux_hub_connect(), with the configuration read from the file at
/// `path` (JSON for `.json`, TOML for `.toml`, else by content). A missing
/// or unreadable file is a CONFIG_INVALID error. Blocking.
///
/// # Safety
/// As for mcpmux_hub_connect().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_connect_file(
    engine: *mut mcpmux_engine,
    path: *const c_char,
    out: *mut *mut mcpmux_hub,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_connect_file",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("engine", engine)?;
            let path = args.str("path", path)?;
            args.non_null("out", out)?;
            let hub = connect(
                args,
                &*engine,
                crate::util::load_config(ConfigSource::Path(path.into())),
            )?;
            write_out(out, hub);
            Ok(())
        })
    }
}

/// The keys of a connect's `options_json`.
pub(crate) const CONNECT_OPTIONS: [&str; 6] = [
    "startup_timeout_ms",
    "startup_timeout_seconds",
    "roots",
    "deny_private",
    "allow_networks",
    "require_https",
];

/// Reads `options_json` of a connect: `startup_timeout_ms` /
/// `startup_timeout_seconds` (core's `HubOptions::startup_wait`), `roots`
/// (core's `HubOptions::roots`) and `deny_private`, `allow_networks`,
/// `require_https` (core's `HubOptions::network`). `also`: the keys the
/// caller read already (named with the others when a key is unknown).
pub(crate) fn connect_options(
    args: Args,
    options: Option<Map<String, Value>>,
    also: &[&str],
) -> Result<mcpmux_core::HubOptions, Error> {
    let mut hub_options = mcpmux_core::HubOptions::default();
    let (mut deny_private, mut require_https) = (false, false);
    let mut allow_networks: Vec<String> = Vec::new();
    for (key, value) in options.unwrap_or_default() {
        let unit = match key.as_str() {
            "deny_private" | "require_https" => {
                let Value::Bool(on) = value else {
                    return Err(args.invalid(
                        "options_json",
                        format!("option '{key}' must be true or false, not {value}"),
                    ));
                };
                match key.as_str() {
                    "deny_private" => deny_private = on,
                    _ => require_https = on,
                }
                continue;
            }
            "allow_networks" => {
                allow_networks = crate::util::string_list(
                    args,
                    "options_json 'allow_networks'",
                    &value,
                    "a JSON array of networks such as \"10.1.2.0/24\"",
                )?;
                continue;
            }
            "startup_timeout_ms" => Unit::Millis,
            "startup_timeout_seconds" => Unit::Seconds,
            "roots" => {
                let roots = crate::util::string_list(
                    args,
                    "options_json 'roots'",
                    &value,
                    "a JSON array of paths or file:// URIs",
                )?;
                hub_options.roots = Some(
                    mcpmux_core::Roots::new(&roots)
                        .map_err(|e| args.invalid("options_json", format!("option {e}")))?,
                );
                continue;
            }
            other => {
                let known: Vec<&str> = CONNECT_OPTIONS.iter().chain(also).copied().collect();
                return Err(args.unknown_option(other, &known));
            }
        };
        // Core's one check (contract::duration): positive, at most
        // MCPMUX_MAX_TIMEOUT_SECONDS, INVALID_INPUT naming the option.
        let duration = value
            .as_f64()
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "'{key}' must be a positive number of {}, not {value}",
                    unit.word()
                ))
            })
            .and_then(|n| contract::duration(&key, n, unit))
            .map_err(|e| args.invalid("options_json", format!("option {e}")))?;
        if hub_options.startup_wait.replace(duration).is_some() {
            return Err(args.invalid(
                "options_json",
                format!("sets the startup timeout twice ('{key}')"),
            ));
        }
    }
    hub_options.network = mcpmux_core::NetworkPolicy::from_options(
        deny_private,
        &allow_networks,
        require_https,
        "allow_networks",
    )
    .map_err(|e| args.invalid("options_json", format!("option {e}")))?;
    Ok(hub_options)
}

/// Like mcpmux_hub_connect(), with options. `options_json` (nullable): a
/// JSON object; `{"startup_timeout_ms": N}` (or `startup_timeout_seconds`)
/// returns after at most that long with the servers that are up: the others
/// show as "starting" in mcpmux_hub_servers() and go on starting in the
/// background (their tools are listed, with a `tools_changed` event, once
/// they are up). Without it, as mcpmux_hub_connect(): until every server is
/// connected or has failed. `{"deny_private": true}` refuses to connect to
/// loopback, private, link-local, CGNAT, unique-local, multicast and
/// unspecified addresses (judged on the resolved address, for every
/// connection); `"allow_networks": ["10.1.2.0/24"]` are exceptions to it;
/// `"require_https": true` allows only https/wss URLs. They add to the
/// config's `[network]`. A refused server is failed (CONNECT_FAILED naming
/// the server, the host and the address). Blocking.
///
/// # Safety
/// As for mcpmux_hub_connect(); `options_json` is NULL or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_connect_with_options(
    engine: *mut mcpmux_engine,
    config_text: *const c_char,
    options_json: *const c_char,
    out: *mut *mut mcpmux_hub,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_connect_with_options",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("engine", engine)?;
            let text = args.str("config_text", config_text)?;
            let options =
                connect_options(args, args.opt_object("options_json", options_json)?, &[])?;
            args.non_null("out", out)?;
            let hub = connect_with(
                args,
                &*engine,
                crate::util::load_config(ConfigSource::Text(text.to_owned())),
                options,
            )?;
            write_out(out, hub);
            Ok(())
        })
    }
}

/// Frees a hub. Does not block: its server processes are killed at once
/// (SIGKILL to each process group) once no call of it is in flight any
/// more; for a graceful stop call mcpmux_hub_close() first. Asynchronous
/// calls in flight on this hub go on and still call their callback. NULL
/// is a no-op. Any thread, callbacks included.
///
/// # Safety
/// `hub` is NULL or a hub that was not freed; no other thread may be in a
/// call on it, and it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_free(hub: *mut mcpmux_hub) {
    guard_value((), || {
        if !hub.is_null() {
            // SAFETY: the caller gives back ownership of the Box from connect.
            let mut hub = unsafe { Box::from_raw(hub) };
            hub.set_event_task(None);
            if let Some(on_free) = hub.on_free.take() {
                on_free();
            }
            let mcpmux_hub {
                hub, shared, id, ..
            } = *hub;
            shared.release(id, hub);
        }
    })
}

/// Writes the status of every configured server, in config order, to
/// `*out_json`: a JSON array of `{"name", "type", "state" ("connected",
/// "failed", "restarting", "disabled", "idle": lazy, not started yet, or
/// "starting": a bounded connect returned before it came up),
/// "protocol_version", "server_info", "capabilities" (as the server
/// declared them, "extensions" included), "tool_count",
/// "error", "error_code"}`, the same as `mcpmux servers --json`. Does not
/// block; any thread, callbacks included.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `out_json` and `err` are NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_servers(
    hub: *const mcpmux_hub,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_servers",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            args.non_null("out_json", out_json)?;
            write_out(out_json, json_string(&hub.hub.servers())?);
            Ok(())
        })
    }
}

/// Writes one line naming the enabled servers that failed (so their tools
/// are missing from mcpmux_hub_list_tools() and mcpmux_hub_tools_for()),
/// each with its error code, to `*out_text`; writes NULL when none failed.
/// The same line `mcpmux tools` prints on stderr. Does not block; any
/// thread, callbacks included.
///
/// On success `*out_text` receives NULL or a string owned by the caller
/// (free it with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `out_text` and `err` are NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_failed_servers_note(
    hub: *const mcpmux_hub,
    out_text: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_failed_servers_note",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            args.non_null("out_text", out_text)?;
            let note = match hub.hub.failed_servers_note() {
                Some(note) => c_string(&note)?,
                None => std::ptr::null_mut(),
            };
            write_out(out_text, note);
            Ok(())
        })
    }
}

/// Writes every tool of every connected server, in config order, to
/// `*out_json`: a JSON array of `{"name" (mcp_{server}_{tool}), "server",
/// "tool", "title", "description", "input_schema", "output_schema",
/// "annotations"}`, plus "execution", "icons" and "_meta" as the server
/// sent them and, for a tool with an MCP app, "ui_resource_uri" (and
/// "app_only": true when only its app may call it), the same as `mcpmux
/// tools --json`. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// As for mcpmux_hub_servers().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_list_tools(
    hub: *const mcpmux_hub,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_list_tools",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            args.non_null("out_json", out_json)?;
            // list_tools does not wait; block_on keeps this function's
            // documented checks (engine thread, engine shut down).
            let tools = hub.shared.block_on(args, async { hub.hub.list_tools() })?;
            write_out(out_json, json_string(&tools)?);
            Ok(())
        })
    }
}

/// Writes the tools matching `query` to `*out_json`, best first, at most
/// `limit` (pass MCPMUX_SEARCH_DEFAULT_LIMIT for the default of every
/// front end; 0 finds nothing: `[]`, as in Python, Node and the CLI): a
/// JSON array of the objects of mcpmux_hub_list_tools(). BM25 over names,
/// titles, descriptions and parameter names, stemmed, with a few
/// synonyms; never empty while there are tools and `limit` > 0.
/// Does not block; any thread, callbacks included.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `query` a NUL-terminated string; `out_json` and
/// `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_search_tools(
    hub: *const mcpmux_hub,
    query: *const c_char,
    limit: u32,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_search_tools",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let query = args.str("query", query)?;
            args.non_null("out_json", out_json)?;
            // Core's meaning of a limit (contract::search_limit): 0 finds nothing.
            let limit = contract::search_limit(Some(u64::from(limit)));
            write_out(out_json, json_string(&hub.hub.search_tools(query, limit))?);
            Ok(())
        })
    }
}

/// Writes the tool list rendered for an LLM API to `*out_json`. `format`
/// is "anthropic", "openai" (chat completions), "openai-responses" or
/// "mcp" (the same as `mcpmux tools --format F`); any other is
/// INVALID_INPUT. Does not block; any thread, callbacks included.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `format` a NUL-terminated string; `out_json` and
/// `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_tools_for(
    hub: *const mcpmux_hub,
    format: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_tools_for",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let format = args.str("format", format)?;
            args.non_null("out_json", out_json)?;
            write_out(out_json, json_string(&hub.hub.tools_for(format)?)?);
            Ok(())
        })
    }
}

/// Calls the tool `name` (its hub name, mcp_{server}_{tool}) and waits for
/// the result. Blocking.
///
/// `args_json` (nullable): the arguments, a JSON object (NULL means `{}`).
/// `options_json` (nullable): a JSON object with `timeout_ms` or
/// `timeout_seconds` (time allowed without a response or progress; default:
/// the server's `timeout_seconds`, 60 s unless configured) and
/// `max_total_timeout_ms` or `max_total_timeout_seconds` (every duration a
/// positive number, at most MCPMUX_MAX_TIMEOUT_SECONDS seconds, the cap of
/// every front end; else INVALID_INPUT naming the option); `"task": true`
/// runs a tool whose `execution.taskSupport` is `optional` as an MCP task
/// (one that is `required` always runs as a task: the call polls it and
/// returns its result, answering `input_required` through the hub's
/// handlers; past the total time or when cancelled the task is cancelled),
/// `task_ttl_ms` / `task_ttl_seconds` how long the server keeps it;
/// `traceparent` (and `tracestate`), a W3C trace context: with telemetry
/// on (the `OTEL_*` variables, docs/telemetry.md), the call's spans are its
/// children; `validate_output`: `"error"` (the default: a result whose
/// `structuredContent` does not satisfy the tool's `outputSchema` is
/// OUTPUT_INVALID), `"warn"` (returned, with a `log` event) or `"off"`.
/// For progress notifications (`on_progress`), use
/// mcpmux_hub_call_tool_with_progress(). docs/call-options.md lists these
/// options in every front end.
///
/// On success `*out_json` receives the MCP CallToolResult exactly as the
/// server sent it (`content`, `structuredContent`, `isError`, ...), owned by
/// the caller (free it with mcpmux_string_free()). A tool's own failure is a
/// success with `"isError": true` in that JSON; routing, transport and
/// protocol failures are errors (UNKNOWN_TOOL, TIMEOUT, TRANSPORT_CLOSED,
/// SERVER_ERROR, ...). A timed-out call is cancelled on the server.
///
/// # Safety
/// `hub` is a live hub; `name` a NUL-terminated string; `args_json` and
/// `options_json` NULL or NUL-terminated strings; `out_json` and `err` are
/// NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_call_tool(
    hub: *const mcpmux_hub,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_call_tool",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let name = args.str("name", name)?;
            let arguments = tool_arguments_raw(args, args_json)?;
            let options = args.opt_object("options_json", options_json)?;
            let trace = CallTrace::of(options.as_ref());
            let opts = call_options(args, options)?;
            args.non_null("out_json", out_json)?;
            let result = hub.shared.block_on(
                args,
                trace.run(hub.hub.call_tool_raw(name, arguments, &opts)),
            )??;
            write_out(out_json, c_string(result.json())?);
            Ok(())
        })
    }
}

/// Writes the resources and resource templates of every server (or of
/// `server` only, when not NULL) to `*out_json`: `{"resources": [...],
/// "resourceTemplates": [...]}`, each item with a "server" member and each
/// `ui://` resource with "app_of" (the hub names of the tools whose MCP app
/// it is), the same as `mcpmux resources --json`. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `server` NULL or a NUL-terminated string; `out_json`
/// and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_list_resources(
    hub: *const mcpmux_hub,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_list_resources",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.opt_str("server", server)?;
            args.non_null("out_json", out_json)?;
            let h = &hub.hub;
            let (resources, templates) = hub.shared.block_on(args, async {
                futures::join!(h.list_resources(server), h.list_resource_templates(server))
            })?;
            let value =
                serde_json::json!({ "resources": resources?, "resourceTemplates": templates? });
            write_out(out_json, json_string(&value)?);
            Ok(())
        })
    }
}

/// Reads the resource `uri` and writes the MCP ReadResourceResult
/// (`{"contents": [...]}`) to `*out_json`. `server` (nullable) names the
/// server to ask; when NULL, the server that lists `uri` is asked first,
/// then every other server with resources. Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()). A server's refusal is SERVER_ERROR (see
/// mcpmux_error_rpc_code()).
///
/// # Safety
/// `hub` is a live hub; `uri` a NUL-terminated string; `server` NULL or a
/// NUL-terminated string; `out_json` and `err` are NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_read_resource(
    hub: *const mcpmux_hub,
    uri: *const c_char,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_read_resource",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let uri = args.str("uri", uri)?;
            let server = args.opt_str("server", server)?;
            args.non_null("out_json", out_json)?;
            let result = hub
                .shared
                .block_on(args, hub.hub.read_resource(uri, server))??;
            write_out(out_json, json_string(&result)?);
            Ok(())
        })
    }
}

/// Writes the prompts of every server (or of `server` only, when not NULL)
/// to `*out_json`: a JSON array of MCP prompts, each with a "server" member
/// (the same as `mcpmux prompts --json`). Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// As for mcpmux_hub_list_resources().
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_list_prompts(
    hub: *const mcpmux_hub,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_list_prompts",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.opt_str("server", server)?;
            args.non_null("out_json", out_json)?;
            let prompts = hub.shared.block_on(args, hub.hub.list_prompts(server))??;
            write_out(out_json, json_string(&prompts)?);
            Ok(())
        })
    }
}

/// Gets the prompt `name` and writes the MCP GetPromptResult
/// (`{"description", "messages": [...]}`) to `*out_json`. `args_json`
/// (nullable): the prompt's arguments, a JSON object of strings. `server`
/// (nullable) names the server; when NULL, the one server that lists a
/// prompt of that name is asked (none or several is INVALID_INPUT).
/// Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `name` a NUL-terminated string; `args_json` and
/// `server` NULL or NUL-terminated strings; `out_json` and `err` are NULL
/// or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_get_prompt(
    hub: *const mcpmux_hub,
    name: *const c_char,
    args_json: *const c_char,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_get_prompt",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let name = args.str("name", name)?;
            let arguments = tool_arguments(args, args_json)?;
            let server = args.opt_str("server", server)?;
            args.non_null("out_json", out_json)?;
            let result = hub
                .shared
                .block_on(args, hub.hub.get_prompt(name, arguments.as_ref(), server))??;
            write_out(out_json, json_string(&result)?);
            Ok(())
        })
    }
}

/// Reconnects the server named `server` (closing its old connection) and
/// lists its tools again. A server that fails to come back is marked
/// failed and its error returned (CONNECT_FAILED, ...); UNKNOWN_SERVER when
/// no server has that name. Blocking.
///
/// # Safety
/// `hub` is a live hub; `server` a NUL-terminated string; `err` is NULL or
/// valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_refresh(
    hub: *const mcpmux_hub,
    server: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_refresh",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            hub.shared.block_on(args, hub.hub.refresh(server))?
        })
    }
}

/// Applies a new configuration to a running hub (TOML or JSON text, as for
/// mcpmux_hub_connect()). Servers whose entry is unchanged stay connected
/// (same process); removed ones are closed; added ones are started (unless
/// `lazy`); changed ones are closed and started again. Tool names follow the
/// new configuration; events ("server_state", "tools_changed") tell an
/// event callback. A server that fails to start is marked failed, as at
/// connect. A malformed config is CONFIG_INVALID and changes nothing; a
/// closed hub is TRANSPORT_CLOSED. Blocking.
///
/// # Safety
/// `hub` is a live hub; `config_text` a NUL-terminated string; `err` is
/// NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_reload(
    hub: *const mcpmux_hub,
    config_text: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_reload",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let text = args.str("config_text", config_text)?;
            let config = crate::util::load_config(ConfigSource::Text(text.to_owned()))?;
            hub.shared.block_on(args, hub.hub.reload(config))?
        })
    }
}

/// Like mcpmux_hub_reload(), with the configuration read from the file at
/// `path` (as mcpmux_hub_connect_file() reads it). Blocking.
///
/// # Safety
/// As for mcpmux_hub_reload(), with `path` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_reload_file(
    hub: *const mcpmux_hub,
    path: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_reload_file",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let path = args.str("path", path)?;
            let config = crate::util::load_config(ConfigSource::Path(path.into()))?;
            hub.shared.block_on(args, hub.hub.reload(config))?
        })
    }
}

/// Closes every server of the hub gracefully and at once (stdio: close
/// stdin, wait 2 s, SIGTERM, wait 2 s, SIGKILL) and waits until all are
/// gone. Afterwards calls on the hub fail with TRANSPORT_CLOSED; the hub
/// must still be freed with mcpmux_hub_free(). Blocking.
///
/// # Safety
/// `hub` is a live hub; `err` is NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_close(
    hub: *const mcpmux_hub,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_close",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            hub.shared.block_on(args, hub.hub.close())
        })
    }
}
