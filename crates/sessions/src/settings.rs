//! Reviewer and loop settings: the call's parameters over the config's
//! `[session]` table over built-in defaults. The resolved settings are
//! stored in `session.json` (never an API key or an environment value;
//! only the *name* of the key's variable) and reused by later rounds.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::params::BeginParams;
use mcpmux_core::error::Error;
use mcpmux_policy::settings::PolicySettings;

/// Default reviewer when neither the call nor `[session]` names one.
pub const DEFAULT_REVIEWER: &str = "command";
/// Default turns of the agent loop per round.
pub const DEFAULT_MAX_TURNS: u32 = 10;
/// Default seconds without progress before a round is `stalled`.
pub const DEFAULT_STALL_SECONDS: f64 = 600.0;
/// Default seconds a round may run before `timeout`.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 18_000.0;
/// Default rounds of a plan/impl review before a stalemate.
pub const DEFAULT_MAX_ROUNDS: u32 = 5;
/// Default `command` reviewer.
pub const DEFAULT_COMMAND: &str = "codex";
/// The largest number of seconds (or turns, rounds, bytes) a setting takes.
pub const MAX_NUMBER: f64 = 1e9;
/// The reviewers mcpmux knows.
pub const REVIEWERS: &[&str] = &["openai", "anthropic", "command", "host"];

/// Everything a round runner needs besides the config's servers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    /// `openai`, `anthropic`, `command` or `host`.
    pub reviewer: String,
    /// Model name (provider default when absent).
    #[serde(default)]
    pub model: Option<String>,
    /// Reasoning effort.
    #[serde(default)]
    pub effort: Option<String>,
    /// API base URL (API reviewers). Not stored when it carries
    /// credentials (user info or a query string); runners then read it
    /// again from the config or the environment ([`fill_runtime`]).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Name of the variable holding the API key (the value is never stored).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Ask API reviewers for streamed responses (`[session] stream`, default true).
    #[serde(default = "yes")]
    pub stream: bool,
    /// Agent-loop turns per round.
    pub max_turns: u32,
    /// Seconds without progress before `stalled`.
    pub stall_seconds: f64,
    /// Seconds a round may run.
    pub timeout_seconds: f64,
    /// Rounds of a plan/impl review before `done`/`stalemate`.
    pub max_rounds: u32,
    /// The `command` reviewer's program.
    pub command: String,
    /// Its arguments for round 1 (the prompt goes on stdin). Not stored:
    /// they may carry expanded `${VAR}` values; runners read them again
    /// from the config ([`fill_runtime`]).
    #[serde(skip)]
    pub args: Vec<String>,
    /// Its arguments for later rounds; `<thread_id>` is replaced. Not
    /// stored, like `args`.
    #[serde(skip)]
    pub resume_args: Vec<String>,
    /// Policy: most tool calls per round.
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
    /// Policy: seconds allowed per tool call.
    #[serde(default)]
    pub call_timeout_seconds: Option<f64>,
    /// Policy: largest tool output shown to the model.
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
    /// Policy: the session's scope.
    #[serde(default)]
    pub scope: Option<String>,
}

impl Settings {
    /// Checks settings read back from `session.json` against the bounds
    /// [`resolve`] puts on them (a number too large for a `Duration` would
    /// panic a runner); the error names the field.
    pub fn check_stored(&self) -> Result<(), String> {
        let seconds = [
            ("settings.timeout_seconds", Some(self.timeout_seconds)),
            ("settings.stall_seconds", Some(self.stall_seconds)),
            ("settings.call_timeout_seconds", self.call_timeout_seconds),
        ];
        for (name, v) in seconds {
            if let Some(v) = v.filter(|v| !(*v > 0.0 && *v <= MAX_NUMBER)) {
                return Err(format!("{name} {v}"));
            }
        }
        let counts = [
            ("settings.max_turns", u64::from(self.max_turns)),
            ("settings.max_rounds", u64::from(self.max_rounds)),
            (
                "settings.max_output_bytes",
                self.max_output_bytes.unwrap_or(0) as u64,
            ),
        ];
        if let Some((name, v)) = counts.iter().find(|(_, v)| *v as f64 > MAX_NUMBER) {
            return Err(format!("{name} {v}"));
        }
        Ok(())
    }

    /// The policy part as stored (redaction rules come from the config's
    /// `[session]` table at run time; see `agent`).
    pub fn policy(&self) -> PolicySettings {
        PolicySettings {
            max_tool_calls: self.max_tool_calls,
            call_timeout: self
                .call_timeout_seconds
                .map(|s| Duration::from_secs_f64(s.clamp(0.0, MAX_NUMBER))),
            max_output_bytes: self.max_output_bytes,
            scope: self.scope.clone(),
            redact: Vec::new(),
            expose_all: false,
            pin_tools: None,
            // Review sessions pin tool definitions unless the config says not to.
            pin_default: true,
            ..PolicySettings::default()
        }
    }

    /// The environment variable holding the API key.
    pub fn key_env(&self) -> String {
        self.api_key_env
            .clone()
            .unwrap_or_else(|| match self.reviewer.as_str() {
                "anthropic" => "ANTHROPIC_API_KEY".into(),
                _ => "OPENAI_API_KEY".into(),
            })
    }
}

fn yes() -> bool {
    true
}

struct Layer<'a> {
    map: &'a Map<String, Value>,
    origin: &'a str,
    err: fn(String) -> Error,
}

impl Layer<'_> {
    fn string(&self, key: &str) -> Result<Option<String>, Error> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err((self.err)(format!(
                "{}: '{key}' must be a string",
                self.origin
            ))),
        }
    }
    fn number(&self, key: &str) -> Result<Option<f64>, Error> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            // Bounded so that every value converts to a `Duration` (a
            // larger one would panic the round's runner).
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x > 0.0 && x <= MAX_NUMBER => Ok(Some(x)),
                _ => Err((self.err)(format!(
                    "{}: '{key}' must be a positive number (at most {MAX_NUMBER})",
                    self.origin
                ))),
            },
            Some(_) => Err((self.err)(format!(
                "{}: '{key}' must be a positive number",
                self.origin
            ))),
        }
    }
    fn integer(&self, key: &str) -> Result<Option<u64>, Error> {
        match self.number(key)? {
            Some(x) if x.fract() == 0.0 => Ok(Some(x as u64)),
            Some(_) => Err((self.err)(format!(
                "{}: '{key}' must be a positive integer",
                self.origin
            ))),
            None => Ok(None),
        }
    }
    /// A count that may be zero (`max_tool_calls = 0`: no tool calls).
    fn count(&self, key: &str) -> Result<Option<u64>, Error> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                (self.err)(format!(
                    "{}: '{key}' must be a non-negative integer",
                    self.origin
                ))
            }),
        }
    }
    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, Error> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        (self.err)(format!(
                            "{}: '{key}' must be an array of strings",
                            self.origin
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err((self.err)(format!(
                "{}: '{key}' must be an array of strings",
                self.origin
            ))),
        }
    }
}

/// A string the call gave: an empty one counts as not given.
fn given(v: &Option<String>) -> Option<String> {
    v.clone().filter(|s| !s.is_empty())
}

/// A number of seconds the call gave, bounded like the config's so that it
/// converts to a `Duration` (a larger one would panic the round's runner).
fn call_seconds(key: &str, v: Option<f64>) -> Result<Option<f64>, Error> {
    match v {
        Some(x) if !(x > 0.0 && x <= MAX_NUMBER) => Err(Error::InvalidInput(format!(
            "params: '{key}' must be a positive number (at most {MAX_NUMBER})"
        ))),
        v => Ok(v),
    }
}

/// A positive count the call gave (turns, bytes), bounded like the config's.
fn call_positive(key: &str, v: Option<u64>) -> Result<Option<u64>, Error> {
    match v {
        Some(x) if x == 0 || x as f64 > MAX_NUMBER => Err(Error::InvalidInput(format!(
            "params: '{key}' must be a positive integer (at most {MAX_NUMBER})"
        ))),
        v => Ok(v),
    }
}

/// Resolves settings from the call's [`BeginParams`] (`reviewer`, `model`,
/// `effort`, `timeout_seconds`, and the per-session limits `max_turns`,
/// `max_tool_calls`, `call_timeout_seconds`, `max_output_bytes`, `scope`)
/// over `[session]` over the defaults.
/// `base_url` falls back to `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`.
pub fn resolve(session: &Map<String, Value>, call: &BeginParams) -> Result<Settings, Error> {
    let cfg = Layer {
        map: session,
        origin: "config [session]",
        err: Error::ConfigInvalid,
    };
    let reviewer = given(&call.reviewer)
        .or(cfg.string("reviewer")?)
        .unwrap_or_else(|| DEFAULT_REVIEWER.into());
    if !REVIEWERS.contains(&reviewer.as_str()) {
        return Err(Error::ReviewerNotFound(format!(
            "unknown reviewer '{reviewer}' (expected one of: {})",
            REVIEWERS.join(", ")
        )));
    }
    let env_base = match reviewer.as_str() {
        "openai" => std::env::var("OPENAI_BASE_URL").ok(),
        "anthropic" => std::env::var("ANTHROPIC_BASE_URL").ok(),
        _ => None,
    }
    .filter(|s| !s.is_empty());
    let base_url = cfg.string("base_url")?.or(env_base);
    let command = cfg
        .string("command")?
        .unwrap_or_else(|| DEFAULT_COMMAND.into());
    Ok(Settings {
        model: given(&call.model).or(cfg.string("model")?),
        effort: given(&call.effort).or(cfg.string("effort")?),
        base_url,
        api_key_env: cfg.string("api_key_env")?,
        stream: match session.get("stream") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(Error::ConfigInvalid(
                    "config [session]: 'stream' must be true or false".into(),
                ))
            }
        },
        max_turns: call_positive("max_turns", call.max_turns.map(u64::from))?
            .or(cfg.integer("max_turns")?)
            .unwrap_or(DEFAULT_MAX_TURNS as u64) as u32,
        stall_seconds: cfg
            .number("stall_seconds")?
            .unwrap_or(DEFAULT_STALL_SECONDS),
        timeout_seconds: call_seconds("timeout_seconds", call.timeout_seconds)?
            .or(cfg.number("timeout_seconds")?)
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        max_rounds: cfg
            .integer("max_rounds")?
            .unwrap_or(DEFAULT_MAX_ROUNDS as u64) as u32,
        args: cfg.strings("args")?.unwrap_or_else(default_args),
        resume_args: cfg
            .strings("resume_args")?
            .unwrap_or_else(default_resume_args),
        command,
        max_tool_calls: call.max_tool_calls.or(cfg.count("max_tool_calls")?),
        call_timeout_seconds: call_seconds("call_timeout_seconds", call.call_timeout_seconds)?
            .or(cfg.number("call_timeout_seconds")?),
        max_output_bytes: call_positive("max_output_bytes", call.max_output_bytes)?
            .or(cfg.integer("max_output_bytes")?)
            .map(|x| x as usize),
        scope: given(&call.scope).or(cfg.string("scope")?),
        reviewer,
    })
}

/// Default `args` of the `command` reviewer (codex reads the prompt from stdin).
pub fn default_args() -> Vec<String> {
    ["exec", "--json", "-"].map(String::from).to_vec()
}

/// Default `resume_args` of the `command` reviewer.
pub fn default_resume_args() -> Vec<String> {
    ["exec", "--json", "resume", "<thread_id>", "-"]
        .map(String::from)
        .to_vec()
}

/// Whether a URL carries credentials (user info or a query string) and so
/// must not be written to disk.
pub fn url_has_secrets(url: &str) -> bool {
    url::Url::parse(url)
        .is_ok_and(|u| !u.username().is_empty() || u.password().is_some() || u.query().is_some())
}

/// Completes stored settings for a runner: the `command` reviewer's
/// arguments and a base URL that was not stored, from the config's
/// `[session]` table (or the environment, or the defaults). `expand`
/// expands a stored `${VAR}` reference for a field (the caller passes
/// `config::expand_session_value`: this module sits below `config`, which
/// runs it at load time, so it does not call back up).
pub fn fill_runtime(
    settings: &mut Settings,
    session: &Map<String, Value>,
    expand: &dyn Fn(&str, &str) -> Result<String, Error>,
) -> Result<(), Error> {
    restore_references(settings, session, expand)?;
    let cfg = Layer {
        map: session,
        origin: "config [session]",
        err: Error::ConfigInvalid,
    };
    settings.args = cfg.strings("args")?.unwrap_or_else(default_args);
    settings.resume_args = cfg
        .strings("resume_args")?
        .unwrap_or_else(default_resume_args);
    if settings.base_url.is_none() {
        let env = match settings.reviewer.as_str() {
            "openai" => std::env::var("OPENAI_BASE_URL").ok(),
            "anthropic" => std::env::var("ANTHROPIC_BASE_URL").ok(),
            _ => None,
        }
        .filter(|s| !s.is_empty());
        settings.base_url = cfg.string("base_url")?.or(env);
    }
    Ok(())
}

/// Stored settings that may hold a `${VAR}` reference of the config's
/// `[session]` table instead of its value ([`with_references`]). The
/// reviewer `command` is one: a variable naming the program (often a path
/// under a user's home, sometimes a wrapper carrying a token) stays in the
/// environment, not in the session directory.
const REFERENCED: &[&str] = &["model", "effort", "base_url", "scope", "command"];

fn referenced<'a>(settings: &'a mut Settings, key: &str) -> Option<&'a mut String> {
    match key {
        "model" => settings.model.as_mut(),
        "effort" => settings.effort.as_mut(),
        "base_url" => settings.base_url.as_mut(),
        "scope" => settings.scope.as_mut(),
        "command" => Some(&mut settings.command),
        _ => None,
    }
}

/// Puts back the `${VAR}` references of the config's `[session]` table
/// (`raw` as written, `expanded` after expansion) in settings about to be
/// stored: a setting that is the config's expanded value is stored as the
/// reference, so `session.json` never holds what a variable expanded to.
pub fn with_references(
    stored: &mut Settings,
    raw: &Map<String, Value>,
    expanded: &Map<String, Value>,
) {
    for key in REFERENCED {
        let (Some(Value::String(r)), Some(Value::String(e))) = (raw.get(*key), expanded.get(*key))
        else {
            continue;
        };
        if let Some(field) = referenced(stored, key) {
            if r.contains("${") && *field == *e {
                *field = r.clone();
            }
        }
    }
}

/// Expands the `${VAR}` references [`with_references`] stored: the
/// runner's config's `[session]` value when it has one, else the
/// environment.
fn restore_references(
    settings: &mut Settings,
    session: &Map<String, Value>,
    expand: &dyn Fn(&str, &str) -> Result<String, Error>,
) -> Result<(), Error> {
    for key in REFERENCED {
        let Some(field) = referenced(settings, key) else {
            continue;
        };
        if !field.contains("${") {
            continue;
        }
        *field = match session.get(*key) {
            Some(Value::String(v)) => v.clone(),
            _ => expand(field, key)?,
        };
    }
    Ok(())
}

/// The settings as stored in `session.json`: without a base URL that
/// carries credentials.
pub fn for_storage(settings: &Settings) -> Settings {
    let mut s = settings.clone();
    if s.base_url.as_deref().is_some_and(url_has_secrets) {
        s.base_url = None;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The call's parameters as `begin` decodes them.
    fn call(v: Value) -> BeginParams {
        let mut v = v;
        v["skill"] = "review-plan".into();
        v["input"] = "x".into();
        crate::params::decode(&v).unwrap()
    }

    fn none() -> BeginParams {
        BeginParams::default()
    }

    /// The expander as `config::expand_session_value` behaves with every
    /// variable unset (the real one is tested in `config`; this module sits
    /// below `config` and is handed it by the runner).
    fn unset(text: &str, field: &str) -> Result<String, Error> {
        Err(Error::ConfigInvalid(format!(
            "config: [session]: field '{field}': '{text}' is not set"
        )))
    }

    #[test]
    fn review_sessions_pin_tool_definitions_unless_the_config_says_not() {
        let s = resolve(&Map::new(), &none()).unwrap();
        let policy = s.policy();
        assert!(policy.pin_default && policy.pin_tools.is_none());
        // The config's `[session] pin_tools = false` wins over the default.
        let table = json!({"pin_tools": false});
        let base =
            PolicySettings::from_session_table(table.as_object().unwrap(), "mcpmux.toml").unwrap();
        assert_eq!(base.overlay(&policy).pin_tools, Some(false));
    }

    #[test]
    fn references_are_stored_and_restored() {
        let raw = json!({"model": "${M_VAR}", "scope": "fixed", "effort": "${E_VAR:-low}"});
        let expanded = json!({"model": "secret-model", "scope": "fixed", "effort": "low"});
        let (raw, expanded) = (raw.as_object().unwrap(), expanded.as_object().unwrap());
        let mut s = resolve(expanded, &none()).unwrap();
        with_references(&mut s, raw, expanded);
        assert_eq!(s.model.as_deref(), Some("${M_VAR}"));
        assert_eq!(s.effort.as_deref(), Some("${E_VAR:-low}"));
        assert_eq!(s.scope.as_deref(), Some("fixed"));
        fill_runtime(&mut s, expanded, &unset).unwrap();
        assert_eq!(s.model.as_deref(), Some("secret-model"));
        assert_eq!(s.effort.as_deref(), Some("low"));
        // A value given by the call is stored as it is.
        let mut s = resolve(expanded, &call(json!({"model": "call"}))).unwrap();
        with_references(&mut s, raw, expanded);
        assert_eq!(s.model.as_deref(), Some("call"));
        // Without a config, the environment; an unset variable is named.
        let mut s = resolve(expanded, &none()).unwrap();
        with_references(&mut s, raw, expanded);
        let e = fill_runtime(&mut s, &Map::new(), &unset).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        assert!(e.to_string().contains("M_VAR"), "{e}");
    }

    #[test]
    fn call_over_config_over_defaults_and_nothing_secret_stored() {
        let table = json!({"reviewer": "openai", "model": "cfg-model", "max_turns": 4,
            "base_url": "https://llm.example/v1?api-key=SECRET", "args": ["--token", "SECRET"]});
        let params = json!({"model": "call-model", "timeout_seconds": 60});
        let s = resolve(table.as_object().unwrap(), &call(params)).unwrap();
        assert_eq!(s.model.as_deref(), Some("call-model"));
        assert_eq!(s.max_turns, 4);
        assert_eq!(s.timeout_seconds, 60.0);
        assert_eq!(s.stall_seconds, DEFAULT_STALL_SECONDS);
        assert_eq!(s.key_env(), "OPENAI_API_KEY");
        let stored = serde_json::to_string(&for_storage(&s)).unwrap();
        assert!(!stored.contains("SECRET"), "{stored}");
        let mut back: Settings = serde_json::from_str(&stored).unwrap();
        fill_runtime(&mut back, table.as_object().unwrap(), &unset).unwrap();
        assert_eq!(back.base_url, s.base_url);
        assert_eq!(back.args, ["--token", "SECRET"]);
        let e = resolve(&Map::new(), &call(json!({"reviewer": "pigeon"}))).unwrap_err();
        assert_eq!(e.code(), "REVIEWER_NOT_FOUND");
        let e = resolve(json!({"max_turns": "ten"}).as_object().unwrap(), &none()).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        assert!(e.to_string().contains("max_turns"), "{e}");
    }

    #[test]
    fn session_limits_per_call_over_config_and_zero_calls_allowed() {
        let table = json!({"max_tool_calls": 0, "scope": "dev", "max_turns": 4});
        let s = resolve(table.as_object().unwrap(), &none()).unwrap();
        assert_eq!(s.max_tool_calls, Some(0));
        let params = json!({"scope": "prod", "max_tool_calls": 3, "max_turns": 2,
            "call_timeout_seconds": 5, "max_output_bytes": 100});
        let s = resolve(table.as_object().unwrap(), &call(params)).unwrap();
        assert_eq!(s.scope.as_deref(), Some("prod"));
        assert_eq!(s.max_tool_calls, Some(3));
        assert_eq!(s.max_turns, 2);
        assert_eq!(s.call_timeout_seconds, Some(5.0));
        assert_eq!(s.max_output_bytes, Some(100));
        let e = crate::params::decode::<BeginParams>(
            &json!({"skill": "s", "input": "i", "max_tool_calls": -1}),
        )
        .unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        // Numbers too large for a Duration are refused, not a later panic.
        let e = resolve(
            json!({"stall_seconds": 1e300}).as_object().unwrap(),
            &none(),
        )
        .unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        assert!(e.to_string().contains("stall_seconds"), "{e}");
        let e = resolve(&Map::new(), &call(json!({"timeout_seconds": 1e300}))).unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
    }
}
