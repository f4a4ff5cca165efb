//! Per-session policy settings: the `[session]` table of the config file
//! (or the same keys given per call as JSON).
//!
//! ```toml
//! [session]
//! scope = "review"            # matched against a server's `scopes`
//! max_tool_calls = 20         # per round; refused calls count too
//! call_timeout_seconds = 30   # per tool call, progress cannot extend it
//! max_output_bytes = 16384    # per tool result shown to the model
//! output_tail_fraction = 0.33 # share of a cut result's bytes from its end
//! result_dir = "results"      # keep whole cut results here (read_result)
//! max_result_store_bytes = 268435456  # bound of result_dir, oldest go first
//! pin_tools = true            # pin tool definitions (servers may override)
//!
//! [[session.redact]]          # extra redaction rules (regex crate syntax)
//! name = "ticket"
//! pattern = "INC-(?P<secret>[0-9]{6})"   # only the `secret` group is replaced
//! ```

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::redact::{RedactRule, Redactor};
use mcpmux_core::error::Error;

/// Shown to the model when `max_output_bytes` is not set.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Per-session settings (`[session]` in the config file, overridden per call).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicySettings {
    /// Most tool calls the model may ask for in one round (refused ones count).
    pub max_tool_calls: Option<u64>,
    /// Time allowed for one tool call.
    pub call_timeout: Option<Duration>,
    /// Largest tool output shown to the model, in bytes (after redaction);
    /// [`DEFAULT_MAX_OUTPUT_BYTES`] when `None`.
    pub max_output_bytes: Option<usize>,
    /// The share (0 to 1) of `max_output_bytes` given to the end of a cut
    /// result, the rest to its start;
    /// [`DEFAULT_TAIL_FRACTION`](crate::output::DEFAULT_TAIL_FRACTION)
    /// when `None`; 0 cuts only the end off, as before.
    pub output_tail_fraction: Option<f64>,
    /// Where the whole (redacted) text of a cut result is kept for
    /// `read_result`; nothing is kept when `None`. Review sessions set
    /// their own (`<session_dir>/results`).
    pub result_dir: Option<PathBuf>,
    /// Bound of `result_dir` in bytes;
    /// [`DEFAULT_MAX_RESULT_STORE_BYTES`](crate::result_store::DEFAULT_MAX_RESULT_STORE_BYTES)
    /// when `None`.
    pub max_result_store_bytes: Option<u64>,
    /// The session's scope, matched against a server's `scopes`.
    pub scope: Option<String>,
    /// Redaction rules added to the built-in ones (`[[session.redact]]`).
    pub redact: Vec<RedactRule>,
    /// Offer every tool of every enabled server (`mcpmux gateway
    /// --expose-all`): the allow lists (`allow_tools`, `allow_all`) and the
    /// annotation checks (`allow_destructive`, `confirm_read_only`) are set
    /// aside; `deny_tools`, `scopes`, limits, redaction, framing and audit
    /// still apply. Never read from a config file: only a host or a flag
    /// sets it.
    pub expose_all: bool,
    /// `pin_tools` of `[session]` (or a host's settings): whether servers
    /// without their own `pin_tools` key have their tool definitions pinned
    /// (see [`crate::pins`]); `None` leaves it to [`pin_default`](Self::pin_default).
    pub pin_tools: Option<bool>,
    /// Whether pinning is on when neither the server nor `pin_tools` says:
    /// set by the front end (on for review sessions and `mcpmux gateway`,
    /// off for a host's own calls). Never read from a config file.
    pub pin_default: bool,
}

/// The `[session]` keys [`PolicySettings::from_session_table`] reads.
pub const SESSION_KEYS: &[&str] = &[
    "max_tool_calls",
    "call_timeout_seconds",
    "max_output_bytes",
    "scope",
    "redact",
    "output_tail_fraction",
    "result_dir",
    "max_result_store_bytes",
    "pin_tools",
];

impl PolicySettings {
    /// Reads `max_tool_calls`, `call_timeout_seconds`, `max_output_bytes`,
    /// `output_tail_fraction`, `result_dir`, `max_result_store_bytes`,
    /// `scope` and `redact` from a `[session]` table; other keys are left to
    /// the session layer. A bad value is `CONFIG_INVALID` naming `origin`
    /// and the field.
    pub fn from_session_table(
        table: &Map<String, Value>,
        origin: &str,
    ) -> Result<PolicySettings, Error> {
        let err = |field: &str, what: &str| {
            Error::ConfigInvalid(format!("{origin}: [session]: field '{field}' {what}"))
        };
        let max_tool_calls = match table.get("max_tool_calls") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| err("max_tool_calls", "must be a non-negative integer"))?,
            ),
        };
        let call_timeout = match table.get("call_timeout_seconds") {
            None | Some(Value::Null) => None,
            // Core's one timeout rule (contract::seconds): the same cap as every front end.
            Some(v) => match v
                .as_f64()
                .and_then(|s| mcpmux_core::contract::seconds("call_timeout_seconds", s).ok())
            {
                Some(d) => Some(d),
                _ => {
                    return Err(err(
                        "call_timeout_seconds",
                        "must be a positive number of seconds",
                    ))
                }
            },
        };
        let max_output_bytes = match table.get("max_output_bytes") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                _ => return Err(err("max_output_bytes", "must be a positive integer")),
            },
        };
        let output_tail_fraction = match table.get("output_tail_fraction") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(f) if (0.0..1.0).contains(&f) => Some(f),
                _ => {
                    return Err(err(
                        "output_tail_fraction",
                        "must be a number from 0 up to (not including) 1",
                    ))
                }
            },
        };
        let result_dir = match table.get("result_dir") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(PathBuf::from(s)),
            Some(_) => return Err(err("result_dir", "must be a non-empty path")),
        };
        let max_result_store_bytes = match table.get("max_result_store_bytes") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => Some(n),
                _ => return Err(err("max_result_store_bytes", "must be a positive integer")),
            },
        };
        let scope = match table.get("scope") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => return Err(err("scope", "must be a non-empty string")),
        };
        let redact = match table.get("redact") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(rules)) => rules
                .iter()
                .enumerate()
                .map(|(i, rule)| {
                    let at = format!("redact[{i}]");
                    let Value::Object(rule) = rule else {
                        return Err(err(&at, "must be a table with 'name' and 'pattern'"));
                    };
                    if let Some(k) = rule.keys().find(|k| *k != "name" && *k != "pattern") {
                        let hint = mcpmux_core::contract::nearest_name(k, ["name", "pattern"])
                            .map(|n| format!("did you mean '{n}'? "))
                            .unwrap_or_default();
                        return Err(err(
                            &at,
                            &format!("has unknown key '{k}' ({hint}expected 'name' and 'pattern')"),
                        ));
                    }
                    let get = |k: &str| match rule.get(k) {
                        Some(Value::String(s)) => Ok(s.clone()),
                        _ => Err(err(&format!("{at}.{k}"), "must be a string")),
                    };
                    Ok(RedactRule {
                        name: get("name")?,
                        pattern: get("pattern")?,
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(err(
                    "redact",
                    "must be an array of tables ([[session.redact]])",
                ))
            }
        };
        let pin_tools = match table.get("pin_tools") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(err("pin_tools", "must be true or false")),
        };
        // Compile now so a bad pattern fails at load time, not mid-session.
        Redactor::new(&redact, &format!("{origin}: [session]"))?;
        Ok(PolicySettings {
            max_tool_calls,
            call_timeout,
            max_output_bytes,
            output_tail_fraction,
            result_dir,
            max_result_store_bytes,
            scope,
            redact,
            expose_all: false,
            pin_tools,
            pin_default: false,
        })
    }

    /// These settings with every value that `over` sets put over them (for
    /// per-call overrides of `[session]`); redaction rules add up.
    pub fn overlay(&self, over: &PolicySettings) -> PolicySettings {
        let mut redact = self.redact.clone();
        redact.extend(over.redact.iter().cloned());
        PolicySettings {
            max_tool_calls: over.max_tool_calls.or(self.max_tool_calls),
            call_timeout: over.call_timeout.or(self.call_timeout),
            max_output_bytes: over.max_output_bytes.or(self.max_output_bytes),
            output_tail_fraction: over.output_tail_fraction.or(self.output_tail_fraction),
            result_dir: over.result_dir.clone().or_else(|| self.result_dir.clone()),
            max_result_store_bytes: over.max_result_store_bytes.or(self.max_result_store_bytes),
            scope: over.scope.clone().or_else(|| self.scope.clone()),
            redact,
            expose_all: self.expose_all || over.expose_all,
            pin_tools: over.pin_tools.or(self.pin_tools),
            pin_default: self.pin_default || over.pin_default,
        }
    }

    /// The share of a cut result's bytes taken from its end.
    pub fn tail_fraction(&self) -> f64 {
        self.output_tail_fraction
            .unwrap_or(crate::output::DEFAULT_TAIL_FRACTION)
    }

    /// The output cap in force.
    pub fn output_cap(&self) -> usize {
        self.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<PolicySettings, Error> {
        PolicySettings::from_session_table(v.as_object().unwrap(), "mcpmux.toml")
    }

    #[test]
    fn reads_every_key() {
        let table: toml::Table = toml::from_str(
            r#"
            scope = "review"
            max_tool_calls = 0
            call_timeout_seconds = 1.5
            max_output_bytes = 100
            output_tail_fraction = 0.5
            result_dir = "out/results"
            max_result_store_bytes = 1000
            max_turns = 4
            [[redact]]
            name = "ticket"
            pattern = "INC-[0-9]+"
            "#,
        )
        .unwrap();
        let s = parse(serde_json::to_value(table).unwrap()).unwrap();
        assert_eq!(s.scope.as_deref(), Some("review"));
        assert_eq!(s.max_tool_calls, Some(0));
        assert_eq!(s.call_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(s.output_cap(), 100);
        assert_eq!(s.tail_fraction(), 0.5);
        assert_eq!(s.result_dir, Some(PathBuf::from("out/results")));
        assert_eq!(s.max_result_store_bytes, Some(1000));
        assert_eq!(s.redact[0].name, "ticket");
        assert_eq!(
            parse(json!({})).unwrap().output_cap(),
            DEFAULT_MAX_OUTPUT_BYTES
        );
    }

    #[test]
    fn errors_name_origin_and_field() {
        for (v, field) in [
            (json!({"max_tool_calls": -1}), "'max_tool_calls'"),
            (json!({"call_timeout_seconds": 0}), "'call_timeout_seconds'"),
            (json!({"max_output_bytes": "big"}), "'max_output_bytes'"),
            (json!({"scope": ""}), "'scope'"),
            (json!({"output_tail_fraction": 1}), "'output_tail_fraction'"),
            (
                json!({"output_tail_fraction": -0.1}),
                "'output_tail_fraction'",
            ),
            (json!({"result_dir": 3}), "'result_dir'"),
            (
                json!({"max_result_store_bytes": 0}),
                "'max_result_store_bytes'",
            ),
            (json!({"redact": {"name": "x"}}), "'redact'"),
            (json!({"redact": [{"name": "x"}]}), "'redact[0].pattern'"),
            (
                json!({"redact": [{"name": "x", "pattern": "a", "flags": "i"}]}),
                "'redact[0]'",
            ),
            (
                json!({"redact": [{"name": "x", "pattern": "(("}]}),
                "redact[0]",
            ),
        ] {
            let e = parse(v).unwrap_err();
            assert_eq!(e.code(), "CONFIG_INVALID");
            let m = e.to_string();
            assert!(m.starts_with("mcpmux.toml: [session]"), "{m}");
            assert!(m.contains(field), "{field}: {m}");
        }
    }

    #[test]
    fn overlay_prefers_the_call() {
        let base = parse(json!({"max_tool_calls": 5, "scope": "a"})).unwrap();
        let over = parse(json!({"scope": "b"})).unwrap();
        let s = base.overlay(&over);
        assert_eq!((s.max_tool_calls, s.scope.as_deref()), (Some(5), Some("b")));
    }
}
