//! Policy for model-driven tool use (`docs/policy.md`): which hub tools a session's
//! model is offered, and how each call it asks for is run and shown to it.
//!
//! The session agent loop owns one [`SessionPolicy`] per round and sends
//! every tool call the model asks for through [`SessionPolicy::call`]; the
//! policy never panics and never fails the round: refusals, limits and tool
//! failures come back as error results the model sees. Hosts get the same
//! checks, redaction and audit for their own calls by putting a policy in
//! [`CallOptions::policy`].
//!
//! One call goes: count it (refused calls count too) → refuse past
//! `max_tool_calls` (`LIMIT_EXCEEDED`) → refuse a tool that was not offered
//! (`TOOL_NOT_ALLOWED`; the server is never asked) → call with
//! `call_timeout_seconds` → redact → keep the whole (redacted) text when it
//! is over `max_output_bytes` and a `result_dir` is set → cut it to its
//! head and tail → frame as untrusted data → audit.
//!
//! With `pin_tools` on for a server, a tool whose definition changed since
//! it was approved (or a new one) is quarantined: not offered, and a call is
//! refused with `TOOL_CHANGED` before the server is asked ([`pins`]).
//!
//! Modules: [`rules`] (per-server keys, globs and the offer decision),
//! [`settings`] (`[session]` keys, `expose_all`), [`redact`], `output`
//! (render, cap, frame), [`audit`], [`host`] (policies built by hosts from
//! JSON settings), [`hints`] (what a front end says at start about the
//! policy: the keys to add, in the config's own syntax), [`result_store`]
//! (the whole of cut results, paged with `read_result`).

pub mod audit;
mod config_layer;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod hints;
pub mod host;
pub mod output;
pub mod pins;
pub mod redact;
pub mod result_store;
pub mod rules;
pub mod settings;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

pub use audit::{read_audit_log, AuditEvent, AuditListener, AuditStatus};
pub use config_layer::register_config_layer;
pub use redact::{RedactRule, Redactor};
pub use result_store::{ResultPage, ResultStore};
pub use rules::{Decision, Refusal, ServerPolicy, SERVER_KEYS};
pub use settings::{PolicySettings, DEFAULT_MAX_OUTPUT_BYTES};

use futures::future::BoxFuture;

use mcpmux_core::client::{CallOptions, CallPolicy, ToolResult, ToolRouter};
use mcpmux_core::config::{Config, ServerConfig};
use mcpmux_core::error::Error;
use mcpmux_core::events::{EventSender, HubEvent};
use mcpmux_core::hub::{Hub, HubTool};
use mcpmux_core::ValidateOutput;

/// What the model sees for one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelToolResult {
    /// Text shown to the model.
    pub content: String,
    /// The call failed or was refused.
    pub is_error: bool,
}

/// One tool and the policy's decision about it (`mcpmux policy` prints these).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolVerdict {
    /// Hub-wide name.
    pub name: String,
    /// Configured server name.
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    /// Offered to the session's model.
    pub offered: bool,
    /// Why not, when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// The refusal in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// What [`SessionPolicy::refresh`] found.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct RefreshReport {
    /// The server refreshed.
    pub server: String,
    /// Original names of its tools offered now.
    pub offered: Vec<String>,
    /// Tools offered before and not any more (the server dropped them or
    /// its hints now refuse them).
    pub dropped: Vec<String>,
    /// Tools offered now and not before.
    pub added: Vec<String>,
    /// Exact names in `allow_tools` that the server does not offer.
    pub missing: Vec<String>,
}

/// The policy of one session round (or of a host's calls). Shared by
/// reference; `call` may run concurrently from several tasks.
pub struct SessionPolicy {
    settings: PolicySettings,
    servers: BTreeMap<String, ServerPolicy>,
    redactor: Redactor,
    calls_made: AtomicU64,
    /// `(server, tool)` pairs last offered; `None` until [`offered`] runs.
    ///
    /// [`offered`]: SessionPolicy::offered
    snapshot: RwLock<Option<HashSet<(String, String)>>>,
    audit: audit::AuditLog,
    /// The hub this policy was made for ([`SessionPolicy::for_hub`]); it
    /// refuses calls on any other. `None` for a policy built from a config
    /// alone (a session's), which any hub of that config may use.
    hub_id: Option<u64>,
    /// Where the whole of cut results goes (`result_dir`); none is kept
    /// when `None`.
    results: Option<ResultStore>,
    /// The pinned tool definitions of this policy's config.
    pins: pins::Pins,
    /// Where quarantines are reported ([`HubEvent::ToolQuarantined`]): the
    /// hub's events, for a policy made for a hub.
    events: Option<EventSender>,
}

/// The name of the tool that pages a kept result ([`SessionPolicy::read_result`]).
pub const READ_RESULT_TOOL: &str = "read_result";

/// How one call ended, before it is shown to a model or a host.
enum Outcome {
    /// Refused before the server was asked.
    Refused(Error, AuditStatus),
    /// The hub failed the call (transport, protocol, time-out).
    Failed(Error),
    /// The server answered; the result is already redacted.
    Answered {
        result: Value,
        is_error: bool,
        redactions: usize,
    },
}

impl SessionPolicy {
    /// Builds the policy from the config's per-server keys and the session
    /// settings; `audit_path` is where audit lines are appended
    /// (`<session_dir>/audit.jsonl`), none when `None`.
    pub fn new(
        config: &Config,
        settings: PolicySettings,
        audit_path: Option<PathBuf>,
    ) -> Result<Self, Error> {
        let origin = config
            .source
            .as_ref()
            .map_or_else(|| "config".to_owned(), |p| p.display().to_string());
        let servers = config
            .servers
            .iter()
            .map(|s| Ok((s.name.clone(), ServerPolicy::from_server(s, &origin)?)))
            .collect::<Result<_, Error>>()?;
        let redactor =
            Redactor::new(&settings.redact, &format!("{origin}: [session]"))?.with_config_secrets();
        // Tool output and errors shown to the model (and stored in the
        // session) cannot carry the config's own secrets.
        mcpmux_core::internal::secrets::register(config.secret_values());
        let results = match &settings.result_dir {
            Some(dir) => Some(ResultStore::open(
                dir,
                settings
                    .max_result_store_bytes
                    .unwrap_or(result_store::DEFAULT_MAX_RESULT_STORE_BYTES),
            )?),
            None => None,
        };
        Ok(SessionPolicy {
            settings,
            servers,
            redactor,
            calls_made: AtomicU64::new(0),
            snapshot: RwLock::new(None),
            audit: audit::AuditLog::open(audit_path)?,
            hub_id: None,
            results,
            pins: pins::Pins::for_config(config, None),
            events: None,
        })
    }

    /// Refuses (`INVALID_INPUT`) a hub other than the one this policy was
    /// made for with [`SessionPolicy::for_hub`]; every front end relies on
    /// this check (calls, refresh, and the C functions taking both).
    pub fn check_hub(&self, hub: &dyn ToolRouter) -> Result<(), Error> {
        match self.hub_id {
            Some(id) if id != hub.hub_id() => Err(Error::InvalidInput(
                "policy was made for another hub (make one with this hub's policy())".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &PolicySettings {
        &self.settings
    }

    /// Counts `n` calls already made in this round before a resume, so the
    /// limit holds across processes.
    pub fn set_calls_made(&self, n: u64) {
        self.calls_made.store(n, Ordering::SeqCst);
    }

    /// Calls asked for so far in this round, refused ones included.
    pub fn calls_made(&self) -> u64 {
        self.calls_made.load(Ordering::SeqCst)
    }

    /// The rules of server `name`, when the config has it.
    pub fn server_policy(&self, name: &str) -> Option<&ServerPolicy> {
        self.servers.get(name)
    }

    /// The decision for one hub tool under the config and this session's
    /// scope (and [`PolicySettings::expose_all`]).
    pub fn decide(&self, tool: &HubTool) -> Decision {
        let scope = self.settings.scope.as_deref();
        let decision = match self.servers.get(&tool.server) {
            Some(p) if self.settings.expose_all => p.decide_exposing_all(tool, scope),
            Some(p) => p.decide(tool, scope),
            None => Decision::Refused(Refusal::UnknownTool),
        };
        if decision == Decision::Offered
            && self.pins_server(&tool.server)
            && self.pins.quarantine(&tool.server, &tool.tool).is_some()
        {
            return Decision::Refused(Refusal::ToolChanged);
        }
        decision
    }

    /// Sets [`PolicySettings::pin_default`]: whether servers whose config
    /// says nothing have their tool definitions pinned (`mcpmux gateway`
    /// and review sessions turn it on).
    pub fn set_pin_default(&mut self, on: bool) {
        self.settings.pin_default = on;
    }

    /// Keeps this policy's pins in `pins` instead (a host's own store or
    /// key, a test's file).
    pub fn set_pins(&mut self, pins: pins::Pins) {
        self.pins = pins;
    }

    /// The pins this policy checks tools against.
    pub fn pins(&self) -> &pins::Pins {
        &self.pins
    }

    /// Whether `server`'s tool definitions are pinned: its own `pin_tools`,
    /// else `[session] pin_tools` (or the host's), else the front end's
    /// default.
    pub fn pins_server(&self, server: &str) -> bool {
        self.servers
            .get(server)
            .and_then(|p| p.pin_tools)
            .or(self.settings.pin_tools)
            .unwrap_or(self.settings.pin_default)
    }

    /// Compares the tools of every pinned server in `tools` (whole lists,
    /// as the hub gives them) with their pins; reports new quarantines as
    /// events and on the log.
    fn observe(&self, tools: &[HubTool], events: Option<&EventSender>) {
        let mut servers: Vec<&str> = tools.iter().map(|t| t.server.as_str()).collect();
        servers.sort_unstable();
        servers.dedup();
        for server in servers.into_iter().filter(|s| self.pins_server(s)) {
            let mine: Vec<HubTool> = tools
                .iter()
                .filter(|t| t.server == server)
                .cloned()
                .collect();
            self.report_quarantined(self.pins.observe(server, &mine), events);
        }
    }

    fn report_quarantined(&self, found: Vec<pins::Quarantined>, events: Option<&EventSender>) {
        for q in found {
            tracing::warn!(
                server = %q.server,
                tool = %q.tool,
                changes = %q.changes.join(","),
                "tool quarantined: its definition differs from the approved one \
                 (mcpmux policy approve {} {})",
                q.server,
                q.tool
            );
            if let Some(events) = events.or(self.events.as_ref()) {
                events.send(HubEvent::ToolQuarantined {
                    server: q.server,
                    tool: q.tool,
                    changes: q.changes,
                });
            }
        }
    }

    /// The error for a call to a quarantined tool: the server, the tool and
    /// the fields that changed, never the text.
    fn changed_error(server: &str, tool: &str, changes: &[String]) -> Error {
        let what = if changes.iter().any(|c| c == "new") {
            "is new since the server's tools were approved".to_owned()
        } else {
            format!("changed since it was approved ({})", changes.join(", "))
        };
        Error::ToolChanged(format!(
            "tool '{tool}' of server '{server}' {what}: it is quarantined and was not called; \
             an operator can review and approve it with 'mcpmux policy approve {server} {tool}'"
        ))
    }

    /// Sets [`PolicySettings::expose_all`] (`mcpmux gateway --expose-all`).
    pub fn set_expose_all(&mut self, on: bool) {
        self.settings.expose_all = on;
    }

    /// Every tool with its decision, in hub order.
    pub fn verdicts(&self, tools: &[HubTool]) -> Vec<ToolVerdict> {
        self.observe(tools, None);
        tools
            .iter()
            .map(|t| {
                let refusal = match self.decide(t) {
                    Decision::Offered => None,
                    Decision::Refused(r) => Some(r),
                };
                ToolVerdict {
                    name: t.name.clone(),
                    server: t.server.clone(),
                    tool: t.tool.clone(),
                    offered: refusal.is_none(),
                    refusal,
                    reason: refusal.map(Refusal::reason),
                }
            })
            .collect()
    }

    /// The tools the model may be offered, in hub order: never a tool only
    /// its app may call (MCP Apps `visibility` without `"model"`). Later
    /// calls are limited to these (and still checked again against the
    /// current hints).
    pub fn offered(&self, tools: &[HubTool]) -> Vec<HubTool> {
        self.offer(tools, false)
    }

    /// [`offered`](Self::offered) for a host that shows tools to its model
    /// itself (the gateway's clients): the app-only tools the rules allow
    /// are kept, since the host's app calls them (the MCP Apps text has the
    /// host hide them from its model). Later calls are limited to these.
    pub fn offered_to_host(&self, tools: &[HubTool]) -> Vec<HubTool> {
        self.offer(tools, true)
    }

    fn offer(&self, tools: &[HubTool], app_only_too: bool) -> Vec<HubTool> {
        self.observe(tools, None);
        let offered: Vec<HubTool> = tools
            .iter()
            .filter(|t| (app_only_too || !t.is_app_only()) && self.decide(t) == Decision::Offered)
            .cloned()
            .collect();
        let pairs = offered
            .iter()
            .map(|t| (t.server.clone(), t.tool.clone()))
            .collect();
        *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = Some(pairs);
        offered
    }

    /// Adds a host's audit listener; it sees every later call's event.
    pub fn on_audit(&self, listener: impl Fn(&AuditEvent) + Send + Sync + 'static) {
        self.audit.add_listener(Arc::new(listener));
    }

    /// The events recorded by this policy so far (the last
    /// [`audit::MEMORY_EVENTS`]), oldest first.
    pub fn audit_events(&self) -> Vec<AuditEvent> {
        self.audit.events()
    }

    /// Reconnects `server`, lists its tools again and reports which offered
    /// tools dropped out. The offered set is updated for that server.
    pub async fn refresh(&self, hub: &Hub, server: &str) -> Result<RefreshReport, Error> {
        self.check_hub(hub)?;
        let Some(rules) = self.servers.get(server) else {
            return Err(Error::UnknownServer(format!("unknown server '{server}'")));
        };
        let of_server = |tools: Vec<HubTool>| -> Vec<HubTool> {
            tools.into_iter().filter(|t| t.server == server).collect()
        };
        let current = of_server(hub.list_tools());
        let before: Vec<String> = {
            let snapshot = self.snapshot.read().unwrap_or_else(|e| e.into_inner());
            match &*snapshot {
                // What was offered, in hub order (a tool already gone
                // from the hub after a list change goes last).
                Some(pairs) => {
                    let mut names: Vec<String> = pairs
                        .iter()
                        .filter(|(s, _)| s == server)
                        .map(|(_, t)| t.clone())
                        .collect();
                    let pos = |n: &String| current.iter().position(|t| &t.tool == n);
                    names.sort_by_key(|n| (pos(n).unwrap_or(usize::MAX), n.clone()));
                    names
                }
                None => current
                    .iter()
                    .filter(|t| self.decide(t) == Decision::Offered)
                    .map(|t| t.tool.clone())
                    .collect(),
            }
        };
        let outcome = hub.refresh(server).await;
        let after_tools = of_server(hub.list_tools());
        self.observe(&after_tools, None);
        let after: Vec<String> = after_tools
            .iter()
            .filter(|t| self.decide(t) == Decision::Offered)
            .map(|t| t.tool.clone())
            .collect();
        if let Some(pairs) = &mut *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) {
            pairs.retain(|(s, _)| s != server);
            pairs.extend(after.iter().map(|t| (server.to_owned(), t.clone())));
        }
        outcome?;
        let names: Vec<&str> = after_tools.iter().map(|t| t.tool.as_str()).collect();
        Ok(RefreshReport {
            server: server.to_owned(),
            dropped: before
                .iter()
                .filter(|t| !after.contains(t))
                .cloned()
                .collect(),
            added: after
                .iter()
                .filter(|t| !before.contains(t))
                .cloned()
                .collect(),
            missing: rules
                .missing_names(&names)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            offered: after,
        })
    }

    /// Runs one tool call the model asked for through the hub, applying
    /// the policy; never fails. The content is redacted, capped and framed
    /// as untrusted data; refusals carry `TOOL_NOT_ALLOWED` or
    /// `LIMIT_EXCEEDED`.
    pub async fn call(&self, hub: &Hub, name: &str, arguments: &Value) -> ModelToolResult {
        let args = (!arguments.is_null()).then_some(arguments);
        // A model's results are always checked against the tool's
        // outputSchema: a violation reaches it as an OUTPUT_INVALID error.
        let opts = CallOptions::default().with_validate_output(ValidateOutput::Error);
        let outcome = self.run(hub, name, args, &opts).await;
        match outcome {
            Outcome::Refused(e, _) => ModelToolResult {
                content: format!("{}: {e}", e.code()),
                is_error: true,
            },
            Outcome::Failed(e) => {
                // The message may quote the server (a JSON-RPC error): it
                // is untrusted and may hold secrets like any output.
                let (message, _) = self.redactor.redact(&e.to_string());
                let message = self.fit(&message, false);
                let content = match &e {
                    Error::Timeout(_) if self.settings.call_timeout.is_some() => format!(
                        "TIMEOUT: the call ran past call_timeout_seconds (LIMIT_EXCEEDED).\n{}",
                        output::frame(name, &message)
                    ),
                    _ => format!(
                        "{}: the call failed.\n{}",
                        e.code(),
                        output::frame(name, &message)
                    ),
                };
                ModelToolResult {
                    content,
                    is_error: true,
                }
            }
            Outcome::Answered {
                result, is_error, ..
            } => {
                let rendered = output::render(&result);
                let (text, kept) = self.fit_kept(&rendered, true);
                let mut framed = output::frame(name, &text);
                if let Some(id) = kept {
                    // Said outside the frame too: inside it, a server could
                    // have written a marker of its own.
                    framed = format!(
                        "The output was cut at max_output_bytes; the whole ({} bytes) is kept: \
                         read_result with id {id}.\n{framed}",
                        rendered.len()
                    );
                }
                ModelToolResult {
                    content: if is_error {
                        format!("The tool reported an error.\n{framed}")
                    } else {
                        framed
                    },
                    is_error,
                }
            }
        }
    }

    /// `text` as shown: whole when it fits `max_output_bytes`, else its
    /// head and tail, the whole kept first when `keep` and a `result_dir`
    /// is set.
    fn fit(&self, text: &str, keep: bool) -> String {
        self.fit_kept(text, keep).0
    }

    /// [`fit`](Self::fit), with the id the whole was kept under.
    fn fit_kept(&self, text: &str, keep: bool) -> (String, Option<String>) {
        let max = self.settings.output_cap();
        if text.len() <= max {
            return (text.to_owned(), None);
        }
        let kept = if keep { self.keep(text) } else { None };
        let cut = output::cut(text, max, self.settings.tail_fraction(), kept.as_deref());
        (cut, kept)
    }

    /// A host's result whose `structuredContent` is longer than `max` as
    /// JSON: it goes, and its JSON text comes instead as a text block cut
    /// to head and tail (the whole kept, when results are), so a host gets
    /// valid JSON of a bounded size and is told what happened.
    fn cut_structured(&self, result: &mut Value, max: usize) {
        let Some(obj) = result.as_object_mut() else {
            return;
        };
        let json = match obj.get("structuredContent") {
            Some(v) if !v.is_null() => v.to_string(),
            _ => return,
        };
        if json.len() <= max {
            return;
        }
        obj.remove("structuredContent");
        let kept = self.keep(&json);
        let text = output::cut(&json, max, self.settings.tail_fraction(), kept.as_deref());
        let block = serde_json::json!({"type": "text", "text": format!(
            "[structuredContent, as JSON text, cut by mcpmux]\n{text}"
        )});
        match obj.get_mut("content") {
            Some(Value::Array(blocks)) => blocks.push(block),
            _ => {
                obj.insert("content".into(), Value::Array(vec![block]));
            }
        }
    }

    /// Keeps `text` (already redacted) when results are kept; its id.
    fn keep(&self, text: &str) -> Option<String> {
        self.results.as_ref()?.keep(text)
    }

    /// Keeps cut results in `dir` from now on (made 0700 when missing),
    /// bounded by `max_result_store_bytes`: a front end's own place for
    /// them (`mcpmux gateway --result-dir`, or its temporary directory).
    pub fn set_result_dir(&mut self, dir: &std::path::Path) -> Result<(), Error> {
        self.results = Some(ResultStore::open(
            dir,
            self.settings
                .max_result_store_bytes
                .unwrap_or(result_store::DEFAULT_MAX_RESULT_STORE_BYTES),
        )?);
        self.settings.result_dir = Some(dir.to_owned());
        Ok(())
    }

    /// Whether cut results are kept (a `result_dir` is set), so
    /// [`READ_RESULT_TOOL`] has something to page.
    pub fn keeps_results(&self) -> bool {
        self.results.is_some()
    }

    /// The store of kept results, when there is one.
    pub fn result_store(&self) -> Option<&ResultStore> {
        self.results.as_ref()
    }

    /// Pages kept result `id`: `length` bytes (at most `max_output_bytes`;
    /// that much when `None`) from `offset`. `INVALID_INPUT` when nothing
    /// is kept, or for an id that is not a kept result's; never a path.
    pub fn read_result(
        &self,
        id: &str,
        offset: u64,
        length: Option<u64>,
    ) -> Result<ResultPage, Error> {
        let Some(store) = &self.results else {
            return Err(Error::InvalidInput(
                "read_result: results are not kept here (no result_dir)".into(),
            ));
        };
        let max = self.settings.output_cap();
        let length = length.map_or(max, |l| usize::try_from(l).unwrap_or(max).min(max));
        store.read(id, offset, length)
    }

    /// The MCP tool definition of [`READ_RESULT_TOOL`], offered when
    /// results are kept (review sessions' models, gateway clients).
    pub fn read_result_tool(&self) -> Value {
        read_result_tool(self.settings.output_cap())
    }

    /// Runs a [`READ_RESULT_TOOL`] call from its JSON arguments (`id`,
    /// `offset`?, `length`?); a bad argument is `INVALID_INPUT` naming it.
    /// Never reaches a server.
    pub fn read_result_args(&self, arguments: &Value) -> Result<ResultPage, Error> {
        let bad =
            |field: &str, what: &str| Error::InvalidInput(format!("read_result: '{field}' {what}"));
        let Some(id) = arguments.get("id").and_then(Value::as_str) else {
            return Err(bad("id", "must be the id string from the cut's marker"));
        };
        let num = |field: &str| match arguments.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| bad(field, "must be a non-negative integer")),
        };
        self.read_result(id, num("offset")?.unwrap_or(0), num("length")?)
    }

    /// [`SessionPolicy::read_result_args`] for a model: the page framed as
    /// untrusted data, with where it is in the whole result and the next
    /// offset outside the frame; an error as an error result.
    /// It counts toward `max_tool_calls` like any call the model asks for
    /// (past it: `LIMIT_EXCEEDED`), so paging is bounded too.
    pub fn read_result_for_model(&self, arguments: &Value) -> ModelToolResult {
        let n = self.calls_made.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(max) = self.settings.max_tool_calls {
            if n > max {
                return ModelToolResult {
                    content: format!(
                        "LIMIT_EXCEEDED: max_tool_calls reached: at most {max} tool calls per round; \
                         no more tools can be called, answer with what you have"
                    ),
                    is_error: true,
                };
            }
        }
        match self.read_result_args(arguments) {
            Ok(page) => {
                let end = page.offset + page.text.len() as u64;
                let next = match page.next_offset {
                    Some(n) => format!("next: read_result with offset {n}"),
                    None => "this is the end".to_owned(),
                };
                ModelToolResult {
                    content: format!(
                        "Bytes {}..{end} of {} of the kept result; {next}.\n{}",
                        page.offset,
                        page.total,
                        output::frame(READ_RESULT_TOOL, &page.text)
                    ),
                    is_error: false,
                }
            }
            Err(e) => ModelToolResult {
                content: format!("{}: {e}", e.code()),
                is_error: true,
            },
        }
    }

    /// Records a call the model asked for that its session refused before
    /// the policy's own checks (arguments that are not JSON, the turn
    /// budget spent): it counts against `max_tool_calls` and gets its audit
    /// line like any other call; the server is never asked.
    pub fn refused(&self, hub: &Hub, name: &str, status: AuditStatus, code: &str) {
        self.calls_made.fetch_add(1, Ordering::SeqCst);
        let tool = hub.tool(name);
        self.audit.record(AuditEvent {
            time: audit::rfc3339(SystemTime::now()),
            server: tool.as_ref().map(|t| t.server.clone()),
            tool: tool.map_or_else(|| name.to_owned(), |t| t.tool),
            status,
            bytes: 0,
            duration_ms: 0,
            redactions: 0,
            truncated: false,
            code: Some(code.to_owned()),
        });
    }

    /// A host's call with this policy ([`CallOptions::policy`]): the same
    /// checks, limits, redaction and audit as [`SessionPolicy::call`], with
    /// refusals as errors (`TOOL_NOT_ALLOWED`, `LIMIT_EXCEEDED`) and the
    /// result kept as MCP JSON (redacted; text blocks capped together at
    /// `max_output_bytes` only when it is set; not framed).
    pub async fn call_for_host(
        &self,
        hub: &Hub,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        self.host_call(hub, name, arguments, opts).await
    }

    /// [`SessionPolicy::call_for_host`] through any [`ToolRouter`] (what
    /// [`CallPolicy::call_tool`] runs).
    async fn host_call(
        &self,
        hub: &dyn ToolRouter,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Result<ToolResult, Error> {
        // Before counting: a call on the wrong hub is the host's mistake,
        // not a call the policy's budget or audit log should see.
        self.check_hub(hub)?;
        let outcome = self.run(hub, name, arguments, opts).await;
        match outcome {
            Outcome::Refused(e, _) | Outcome::Failed(e) => Err(e),
            Outcome::Answered { mut result, .. } => {
                self.cap_for_host(&mut result);
                ToolResult::from_value(&result)
            }
        }
    }

    /// A result of tool `name` (a hub name) that reached the host by
    /// another way than a call through this policy (a task's, read from
    /// its server by a gateway replica that did not start the call),
    /// screened as [`SessionPolicy::call_for_host`] screens one: refused
    /// (`TOOL_NOT_ALLOWED`) when the tool is not offered now, else checked
    /// against its `outputSchema` (`OUTPUT_INVALID`), redacted and capped.
    /// Not counted or audited: the call it ends was, where it began.
    pub fn screen_for_host(&self, hub: &Hub, name: &str, result: &Value) -> Result<Value, Error> {
        self.check_hub(hub)?;
        let not_allowed =
            |why: &str| Error::ToolNotAllowed(format!("tool '{name}' is not allowed here: {why}"));
        let tool = hub
            .tool_shared(name)
            .ok_or_else(|| not_allowed(Refusal::UnknownTool.reason()))?;
        if let Decision::Refused(r) = self.decide(&tool) {
            return Err(not_allowed(r.reason()));
        }
        hub.check_tool_output(name, result)?;
        let mut result = result.clone();
        output::redact_result(&self.redactor, &mut result);
        self.cap_for_host(&mut result);
        Ok(result)
    }

    /// A host's result capped at `max_output_bytes`, when it is set.
    fn cap_for_host(&self, result: &mut Value) {
        if let Some(max) = self.settings.max_output_bytes {
            let total: usize = text_blocks(result).iter().map(|t| t.len()).sum();
            if total > max {
                let kept = self.keep(&output::render(result));
                cap_text_blocks_kept(result, max, self.settings.tail_fraction(), kept.as_deref());
            }
            self.cut_structured(result, max);
        }
    }

    /// The shared path: count, check, call, redact, audit.
    async fn run(
        &self,
        hub: &dyn ToolRouter,
        name: &str,
        arguments: Option<&Value>,
        opts: &CallOptions,
    ) -> Outcome {
        let started = Instant::now();
        let time = audit::rfc3339(SystemTime::now());
        let tool = hub.tool_shared(name);
        let server = tool.as_ref().map(|t| t.server.clone());
        let tool_name = tool
            .as_ref()
            .map_or_else(|| name.to_owned(), |t| t.tool.clone());
        let mut bytes = 0u64;
        let mut truncated = false;
        let outcome = self
            .run_inner(hub, name, tool.as_ref(), arguments, opts, &mut bytes)
            .await;
        let (status, redactions, code) = match &outcome {
            Outcome::Refused(e, status) => (*status, 0, Some(e.code())),
            Outcome::Failed(e) => (
                if e.code() == "TIMEOUT" {
                    AuditStatus::Timeout
                } else {
                    AuditStatus::Error
                },
                0,
                Some(e.code()),
            ),
            Outcome::Answered {
                result,
                is_error,
                redactions,
            } => {
                truncated = output::render(result).len() > self.settings.output_cap();
                (
                    if *is_error {
                        AuditStatus::Error
                    } else {
                        AuditStatus::Ok
                    },
                    *redactions,
                    None,
                )
            }
        };
        self.audit.record(AuditEvent {
            time,
            server,
            tool: tool_name,
            status,
            bytes,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            redactions: redactions as u64,
            truncated,
            code: code.map(str::to_owned),
        });
        outcome
    }

    async fn run_inner(
        &self,
        hub: &dyn ToolRouter,
        name: &str,
        tool: Option<&Arc<HubTool>>,
        arguments: Option<&Value>,
        opts: &CallOptions,
        bytes: &mut u64,
    ) -> Outcome {
        let n = self.calls_made.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(max) = self.settings.max_tool_calls {
            if n > max {
                return Outcome::Refused(
                    Error::LimitExceeded(format!(
                        "max_tool_calls reached: at most {max} tool calls per round; \
                         no more tools can be called, answer with what you have"
                    )),
                    AuditStatus::LimitExceeded,
                );
            }
        }
        let not_allowed = |why: &str| {
            Outcome::Refused(
                Error::ToolNotAllowed(format!("tool '{name}' is not allowed here: {why}")),
                AuditStatus::NotAllowed,
            )
        };
        let Some(tool) = tool else {
            return not_allowed(Refusal::UnknownTool.reason());
        };
        if self.pins_server(&tool.server) {
            // The definition the hub holds now, whatever was offered.
            let events = hub.event_sender();
            let found = match self.pins.observe_shared(tool) {
                Some(found) => found,
                // First sight of the server: pin its whole list.
                None => {
                    let mut listed = hub.tools_of_server(&tool.server);
                    if listed.is_empty() {
                        listed.push(HubTool::clone(tool));
                    }
                    self.pins.observe(&tool.server, &listed)
                }
            };
            self.report_quarantined(found, events.as_ref());
        }
        let was_offered = self
            .snapshot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_none_or(|pairs| pairs.contains(&(tool.server.clone(), tool.tool.clone())));
        match self.decide(tool) {
            Decision::Refused(Refusal::ToolChanged) => {
                let changes = self
                    .pins
                    .quarantine(&tool.server, &tool.tool)
                    .unwrap_or_default();
                return Outcome::Refused(
                    Self::changed_error(&tool.server, &tool.tool, &changes),
                    AuditStatus::NotAllowed,
                );
            }
            Decision::Refused(r) => return not_allowed(r.reason()),
            Decision::Offered => {}
        }
        if !was_offered {
            return not_allowed(Refusal::UnknownTool.reason());
        }
        let mut opts = opts.clone();
        if let Some(limit) = self.settings.call_timeout {
            // The session's limit is a hard one: progress cannot extend it.
            opts.timeout = Some(opts.timeout.map_or(limit, |t| t.min(limit)));
            opts.max_total_timeout = Some(opts.max_total_timeout.map_or(limit, |t| t.min(limit)));
        }
        match hub.call_unchecked(name, arguments, &opts).await {
            Err(e) => Outcome::Failed(e),
            Ok(result) => {
                *bytes = result.json().len() as u64;
                let is_error = result.is_error();
                let mut value = result.value();
                let redactions = output::redact_result(&self.redactor, &mut value);
                Outcome::Answered {
                    result: value,
                    is_error,
                    redactions,
                }
            }
        }
    }
}

/// The `text` of each text block of a result, in order.
fn text_blocks(result: &mut Value) -> Vec<&mut String> {
    let Some(Value::Array(blocks)) = result.get_mut("content") else {
        return Vec::new();
    };
    blocks
        .iter_mut()
        .filter_map(|b| match b.get_mut("text") {
            Some(Value::String(t)) => Some(t),
            _ => None,
        })
        .collect()
}

impl SessionPolicy {
    /// Every tool of the pinned servers of `hub` with its pin status
    /// (`pinned`, `changed` with what changed, `new`, `removed`), for the
    /// operator (`mcpmux policy`, the hosts' pin listings); never for a
    /// model. `server` limits it to one (`UNKNOWN_SERVER` when not in the
    /// config). Servers seen for the first time are pinned first.
    pub fn pin_report(
        &self,
        hub: &Hub,
        server: Option<&str>,
    ) -> Result<Vec<pins::PinReport>, Error> {
        self.check_hub(hub)?;
        let tools = hub.list_tools();
        self.observe(&tools, hub.event_sender().as_ref());
        let mut out = Vec::new();
        for name in self.pin_servers(hub, server)? {
            let mine: Vec<HubTool> = tools.iter().filter(|t| t.server == name).cloned().collect();
            out.extend(self.pins.report(&name, &mine));
        }
        Ok(out)
    }

    /// Approves the definitions `hub` lists now: of `tools` of `server`, of
    /// every tool of `server` when `tools` is empty, of every pinned
    /// server's tools when `server` is `None`. Quarantined tools become
    /// callable at once (those the rules offer are added to what this
    /// policy offers). Returns `(server, tool)` of each tool approved.
    pub fn approve_tools(
        &self,
        hub: &Hub,
        server: Option<&str>,
        tools: &[String],
    ) -> Result<Vec<(String, String)>, Error> {
        self.check_hub(hub)?;
        if server.is_none() && !tools.is_empty() {
            return Err(Error::InvalidInput(
                "naming tools to approve needs their server".into(),
            ));
        }
        let listed = hub.list_tools();
        let mut out = Vec::new();
        for name in self.pin_servers(hub, server)? {
            let mine: Vec<HubTool> = listed
                .iter()
                .filter(|t| t.server == name)
                .cloned()
                .collect();
            for t in self.pins.approve(&name, &mine, tools)? {
                out.push((name.clone(), t));
            }
        }
        // Approved tools the rules offer are callable now, without waiting
        // for the next list (an app-only one waits: the list decides it).
        if let Some(pairs) = &mut *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) {
            for t in listed.iter().filter(|t| {
                out.iter().any(|(s, n)| *s == t.server && *n == t.tool)
                    && !t.is_app_only()
                    && self.decide(t) == Decision::Offered
            }) {
                pairs.insert((t.server.clone(), t.tool.clone()));
            }
        }
        Ok(out)
    }

    /// Forgets the pins of `tools` of `server` (all of the server's when
    /// `tools` is empty, all of every server's when `server` is `None`):
    /// a server without pins is pinned again as it is when next seen; a
    /// tool without a pin on a server with pins is quarantined as new.
    /// Returns `(server, tool)` of each pin removed.
    pub fn revoke_pins(
        &self,
        hub: &Hub,
        server: Option<&str>,
        tools: &[String],
    ) -> Result<Vec<(String, String)>, Error> {
        self.check_hub(hub)?;
        if server.is_none() && !tools.is_empty() {
            return Err(Error::InvalidInput(
                "naming tools to revoke needs their server".into(),
            ));
        }
        let mut out = Vec::new();
        for name in self.pin_servers(hub, server)? {
            for t in self.pins.revoke(&name, tools)? {
                out.push((name.clone(), t));
            }
        }
        Ok(out)
    }

    /// The servers a pin operation covers: `server` (which must be in the
    /// config), or every configured server whose tools are pinned.
    fn pin_servers(&self, hub: &Hub, server: Option<&str>) -> Result<Vec<String>, Error> {
        let config = hub.config();
        match server {
            Some(s) if config.servers.iter().any(|c| c.name == s) => Ok(vec![s.to_owned()]),
            Some(s) => Err(Error::UnknownServer(format!("unknown server '{s}'"))),
            None => Ok(config
                .servers
                .iter()
                .map(|c| c.name.clone())
                .filter(|n| self.pins_server(n))
                .collect()),
        }
    }
}

/// Cuts the text blocks of a result so that together they hold at most
/// `max` bytes, with the default split and nothing kept.
#[cfg(test)]
fn cap_text_blocks(result: &mut Value, max: usize) {
    cap_text_blocks_kept(result, max, output::DEFAULT_TAIL_FRACTION, None);
}

/// Cuts the text blocks of a result, taken together as one text, to its
/// head and tail ([`output::cut_points`]): blocks wholly between them are
/// emptied, and the block where the head ends gets the marker (saying
/// where the whole is, `kept`) after its head part.
fn cap_text_blocks_kept(result: &mut Value, max: usize, tail_fraction: f64, kept: Option<&str>) {
    let texts = text_blocks(result);
    let total: usize = texts.iter().map(|t| t.len()).sum();
    if total <= max {
        return;
    }
    let joined: String = texts.iter().map(|t| t.as_str()).collect();
    let (head_end, tail_start) = output::cut_points(&joined, max, tail_fraction);
    let marker = output::marker(tail_start - head_end, total, max, kept);
    let mut start = 0;
    let mut marked = false;
    for text in texts {
        let end = start + text.len();
        let head = &text[..head_end.clamp(start, end) - start];
        let tail = &text[tail_start.clamp(start, end) - start..];
        let mut parts = Vec::new();
        if !head.is_empty() {
            parts.push(head);
        }
        if !marked && head_end <= end {
            marked = true;
            parts.push(&marker);
        }
        if !tail.is_empty() {
            parts.push(tail);
        }
        let new = parts.join("\n");
        *text = new;
        start = end;
    }
}

/// The MCP definition of [`READ_RESULT_TOOL`]; `max` is the most bytes one
/// page holds.
pub fn read_result_tool(max: usize) -> Value {
    serde_json::json!({
        "name": READ_RESULT_TOOL,
        "description": format!(
            "Reads part of a tool result that was too long to show whole. A cut result \
             says 'whole result: read_result id=...'; give that id, and the byte offset \
             to start at (0 for the start). At most {max} bytes come back per call; \
             the answer says where the next part starts."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The id from the cut's marker."},
                "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at (default 0)."},
                "length": {"type": "integer", "minimum": 1, "description": format!("Bytes to read (default and most {max}).")}
            },
            "required": ["id"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true}
    })
}

impl ServerPolicy {
    /// The policy keys of `server` (in its
    /// [`extra`](mcpmux_core::config::ServerConfig::extra) keys, checked at
    /// load time by [`register_config_layer`]'s layer); a bad value, in a
    /// config built by hand, is `CONFIG_INVALID` naming `origin`.
    pub fn from_server(server: &ServerConfig, origin: &str) -> Result<ServerPolicy, Error> {
        ServerPolicy::from_map(&server.extra, origin, &server.name)
    }
}

/// A host's call with a policy set ([`CallOptions::policy`]): the hub hands
/// it here, and it runs as [`SessionPolicy::call_for_host`].
impl CallPolicy for SessionPolicy {
    fn call_tool<'a>(
        &'a self,
        router: &'a dyn ToolRouter,
        name: &'a str,
        arguments: Option<&'a Value>,
        opts: &'a CallOptions,
    ) -> BoxFuture<'a, Result<ToolResult, Error>> {
        Box::pin(self.host_call(router, name, arguments, opts))
    }
}

impl std::fmt::Debug for SessionPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionPolicy")
            .field("settings", &self.settings)
            .field("servers", &self.servers)
            .field("calls_made", &self.calls_made())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
