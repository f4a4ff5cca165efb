//! The typed contract of what a host passes with a tool call, a policy and
//! a tool search, defined once here the way `session::params` defines the
//! session verbs: [`CallOptionsParams`] (the per-call options),
//! [`PolicyOptionsParams`] (what a host's policy is created with) and
//! [`SearchParams`] (`search_tools`), each with its JSON Schema
//! ([`call_options_schema`], [`policy_options_schema`], [`search_schema`],
//! all in [`schemas`]).
//!
//! Every front end derives its names from these fields by one rule
//! ([`names`]): Python takes the field name as it is, Node its camelCase
//! (a duration in milliseconds gets `Ms`), the C ABI a key of
//! `options_json` (a duration as `<field>_ms` or `<field>_seconds`; a
//! callback as a parameter of that name), the CLI a `--kebab-case` flag.
//! The drift tests of the front ends read [`schemas`] and fail when one
//! misses or misnames an option.
//!
//! The values are checked here too, once for every front end: a timeout is
//! a positive number no larger than [`MAX_TIMEOUT_SECONDS`] ([`seconds`],
//! [`millis`], [`duration`]; anything else is `INVALID_INPUT` naming the
//! field), and a search limit of 0 finds nothing ([`search_limit`]). So is
//! a key no options object knows: refused, named with the nearest known
//! name as that front end spells it ([`unknown_option`]), never ignored.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::Error;

/// The largest timeout any front end accepts, in seconds (about 31
/// years): every value up to it converts to a [`Duration`] and can be added
/// to the clock without overflow. The same value as the config's
/// [`crate::config::MAX_SECONDS`].
pub const MAX_TIMEOUT_SECONDS: f64 = crate::config::MAX_SECONDS;

/// [`MAX_TIMEOUT_SECONDS`] in milliseconds (the unit of Node's options and
/// of the C ABI's `*_ms` keys).
pub const MAX_TIMEOUT_MS: f64 = MAX_TIMEOUT_SECONDS * 1000.0;

/// How many tools a search returns when the host gives no limit.
pub const SEARCH_DEFAULT_LIMIT: usize = crate::tool_search::DEFAULT_LIMIT;

/// The unit a front end gives a duration in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds (Python, the CLI, the C ABI's `*_seconds` keys).
    Seconds,
    /// Milliseconds (Node, the C ABI's `*_ms` keys).
    Millis,
}

impl Unit {
    /// The unit's word in messages (`seconds`, `milliseconds`).
    pub fn word(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Millis => "milliseconds",
        }
    }

    /// The largest value accepted in this unit.
    pub fn cap(self) -> f64 {
        match self {
            Unit::Seconds => MAX_TIMEOUT_SECONDS,
            Unit::Millis => MAX_TIMEOUT_MS,
        }
    }
}

/// The one check of a timeout given by a host: `value` in `unit` as a
/// [`Duration`] when it is a positive, finite number no larger than
/// [`MAX_TIMEOUT_SECONDS`]; else `INVALID_INPUT` naming `field` (as the
/// front end spells it: `timeout`, `timeoutMs`, `--timeout`, ...), the unit
/// and the cap.
pub fn duration(field: &str, value: f64, unit: Unit) -> Result<Duration, Error> {
    let secs = match unit {
        Unit::Seconds => value,
        Unit::Millis => value / 1000.0,
    };
    if value > 0.0 && value.is_finite() && value <= unit.cap() {
        if let Ok(d) = Duration::try_from_secs_f64(secs) {
            if !d.is_zero() {
                return Ok(d);
            }
        }
    }
    Err(Error::InvalidInput(format!(
        "'{field}' must be a positive number of {} (at most {}), not {value}",
        unit.word(),
        unit.cap()
    )))
}

/// [`duration`] in seconds.
pub fn seconds(field: &str, value: f64) -> Result<Duration, Error> {
    duration(field, value, Unit::Seconds)
}

/// [`duration`] in milliseconds.
pub fn millis(field: &str, value: f64) -> Result<Duration, Error> {
    duration(field, value, Unit::Millis)
}

/// The number of tools a search returns for a host's `limit`: the limit
/// itself (0 finds nothing: an empty list, in every front end), or
/// [`SEARCH_DEFAULT_LIMIT`] when the host gives none.
pub fn search_limit(limit: Option<u64>) -> usize {
    limit.map_or(SEARCH_DEFAULT_LIMIT, |n| {
        usize::try_from(n).unwrap_or(usize::MAX)
    })
}

/// The known name most like `name` among `known`, when one is close enough
/// to be a typo of it (compared without case, by edit distance relative to
/// length): `timeoutMS` finds `timeoutMs`. The rule config keys are
/// checked by too.
pub fn nearest_name<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    crate::spelling::nearest(name, known)
}

/// What every front end says of an options key it does not know: `key`,
/// the nearest of `known` (the names of that options object as the front
/// end spells them: Node's `timeoutMs`, C's `timeout_ms`) when one is
/// close, and the known ones: `unknown option 'timeoutMS' (did you mean
/// 'timeoutMs'? known: timeoutMs, ...)`. The front end makes it an
/// `INVALID_INPUT` error naming the argument.
pub fn unknown_option(key: &str, known: &[&str]) -> String {
    let list = known.join(", ");
    match nearest_name(key, known.iter().copied()) {
        Some(near) => format!("unknown option '{key}' (did you mean '{near}'? known: {list})"),
        None => format!("unknown option '{key}' (known: {list})"),
    }
}

/// The first of `keys` that is not in `known`, as [`unknown_option`]
/// says it; `Ok` when all are known.
pub fn check_options<'a>(
    keys: impl IntoIterator<Item = &'a str>,
    known: &[&str],
) -> Result<(), String> {
    match keys.into_iter().find(|k| !known.contains(k)) {
        Some(key) => Err(unknown_option(key, known)),
        None => Ok(()),
    }
}

/// The options of one tool call (core's [`crate::CallOptions`]), as hosts
/// give them. Durations are in seconds here; see [`names`] for each front
/// end's spelling and unit.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallOptionsParams {
    /// Time allowed without a response or progress (default: the server's timeout_seconds, 60 s unless configured); progress notifications reset it
    #[schemars(range(min = 0), extend("x-unit" = "seconds"))]
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Upper bound of the whole call however much progress arrives (default: the server's max_total_timeout_seconds)
    #[schemars(range(min = 0), extend("x-unit" = "seconds"))]
    #[serde(default)]
    pub max_total_timeout: Option<f64>,
    /// Run a tool whose execution.taskSupport is "optional" as an MCP task (tools that require one always run as tasks)
    #[serde(default)]
    pub task: Option<bool>,
    /// How long the server keeps a task this call creates (default: the server chooses)
    #[schemars(range(min = 0), extend("x-unit" = "seconds"))]
    #[serde(default)]
    pub task_ttl: Option<f64>,
    /// Receives each progress notification of the call ({progress, total?, message?})
    #[schemars(extend("x-callback" = true))]
    #[serde(default)]
    pub on_progress: Option<Value>,
    /// The W3C trace context of the caller: the call's spans are its children
    #[schemars(extend("x-cli-env" = "TRACEPARENT"))]
    #[serde(default)]
    pub traceparent: Option<String>,
    /// The W3C tracestate that goes with traceparent
    #[schemars(extend("x-cli-env" = "TRACESTATE"))]
    #[serde(default)]
    pub tracestate: Option<String>,
    /// What a result whose structuredContent does not satisfy the tool's outputSchema becomes: "error" (OUTPUT_INVALID, the default), "warn" (returned, with a warning log event) or "off"
    #[schemars(with = "Option<String>", extend("enum" = ["error", "warn", "off"]))]
    #[serde(default)]
    pub validate_output: Option<crate::output_check::ValidateOutput>,
}

/// What a host's session policy is created with (the policy crate's
/// `PolicySettings` as a host gives it, over the config's `[session]`
/// table; `mcpmux_policy::host::SETTING_KEYS` is checked against it there).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyOptionsParams {
    /// The session's scope, matched against a server's scopes
    #[serde(default)]
    pub scope: Option<String>,
    /// Most tool calls allowed with this policy; refused calls count too
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
    /// Seconds allowed per tool call; progress cannot extend it
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub call_timeout_seconds: Option<f64>,
    /// Largest tool output kept, in bytes, after redaction
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
    /// Redaction rules added to the built-in ones; only a `secret` group is replaced when present
    #[serde(default)]
    pub redact: Option<Vec<RedactRuleParams>>,
    /// Pin tool definitions: a tool that changed since it was approved, or is new, is not called (TOOL_CHANGED)
    #[serde(default)]
    pub pin_tools: Option<bool>,
}

/// One redaction rule of [`PolicyOptionsParams::redact`].
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactRuleParams {
    /// The rule's name (shown where it redacted)
    pub name: String,
    /// A regular expression (regex crate syntax)
    pub pattern: String,
}

/// A tool search (`search_tools`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Words to look for in tool names, titles, descriptions and parameter names
    pub query: String,
    /// Most results (default 10); 0 finds nothing
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The JSON Schema of `T`: `type`, `properties` (each with its
/// `description` and, for durations, `x-unit`), `required`,
/// `additionalProperties: false`; subschemas inline.
fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let mut v = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("title");
        obj.remove("description");
        obj.remove("$schema");
        obj.entry("required")
            .or_insert_with(|| Value::Array(vec![]));
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    v
}

/// The JSON Schema of [`CallOptionsParams`].
pub fn call_options_schema() -> Value {
    schema_of::<CallOptionsParams>()
}

/// The JSON Schema of [`PolicyOptionsParams`].
pub fn policy_options_schema() -> Value {
    schema_of::<PolicyOptionsParams>()
}

/// The JSON Schema of [`SearchParams`].
pub fn search_schema() -> Value {
    schema_of::<SearchParams>()
}

/// The parts of the contract, by name: `call_options`, `policy_options`,
/// `search`.
pub const PARTS: &[&str] = &["call_options", "policy_options", "search"];

/// The fields of a part of the contract, in declaration order; an unknown
/// part is `INVALID_INPUT`.
pub fn fields(part: &str) -> Result<Vec<String>, Error> {
    let schema = match part {
        "call_options" => call_options_schema(),
        "policy_options" => policy_options_schema(),
        "search" => search_schema(),
        other => {
            return Err(Error::InvalidInput(format!(
                "unknown contract part '{other}' (expected: {})",
                PARTS.join(", ")
            )))
        }
    };
    Ok(schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default())
}

/// How one field is spelled in each front end ([`names`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontEndNames {
    /// The contract's field.
    pub field: String,
    /// Python: a keyword argument (durations in seconds, as `float`).
    pub python: String,
    /// Node: an option (durations in milliseconds).
    pub node: String,
    /// The C ABI: the keys of `options_json` (a duration in either unit),
    /// or the parameter name of a callback.
    pub c: Vec<String>,
    /// The CLI: a flag (`--name`), or an environment variable (`$NAME`).
    pub cli: String,
}

/// `snake_case` as `camelCase`.
pub fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for ch in snake.chars() {
        if ch == '_' {
            upper = true;
        } else if upper {
            out.extend(ch.to_uppercase());
            upper = false;
        } else {
            out.push(ch);
        }
    }
    out
}

/// Each front end's spelling of every field of `part`, by the one rule:
/// Python the field; Node its camelCase, plus `Ms` for a duration
/// (`x-unit`); C `<field>_ms` and `<field>_seconds` for a duration, else
/// the field; the CLI `--kebab-case` (a callback `on_x` is `--x`; a field
/// read from the environment, `x-cli-env`, is `$NAME`).
pub fn names(part: &str) -> Result<Vec<FrontEndNames>, Error> {
    let schema = match part {
        "call_options" => call_options_schema(),
        "policy_options" => policy_options_schema(),
        "search" => search_schema(),
        other => return fields(other).map(|_| Vec::new()),
    };
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    Ok(props
        .iter()
        .map(|(field, prop)| {
            let timed = prop.get("x-unit").is_some();
            let callback = prop.get("x-callback") == Some(&Value::Bool(true));
            let node = if timed {
                format!("{}Ms", camel_case(field))
            } else {
                camel_case(field)
            };
            let c = if timed {
                vec![format!("{field}_ms"), format!("{field}_seconds")]
            } else {
                vec![field.clone()]
            };
            let cli = match prop.get("x-cli-env").and_then(Value::as_str) {
                Some(var) => format!("${var}"),
                None => {
                    let base = if callback {
                        field.strip_prefix("on_").unwrap_or(field)
                    } else {
                        field
                    };
                    format!("--{}", base.replace('_', "-"))
                }
            };
            FrontEndNames {
                field: field.clone(),
                python: field.clone(),
                node,
                c,
                cli,
            }
        })
        .collect())
}

/// `{part: schema}` for every part, plus `names`: `{part: [{field, python,
/// node, c, cli}]}` and the `max_timeout_seconds` cap. What the front
/// ends' drift tests read (Python `_native.contract()`, Node
/// `native.contract()`, and Rust tests directly).
pub fn schemas() -> Value {
    let mut out = Map::new();
    let mut all_names = Map::new();
    for part in PARTS {
        let schema = match *part {
            "call_options" => call_options_schema(),
            "policy_options" => policy_options_schema(),
            _ => search_schema(),
        };
        out.insert((*part).to_owned(), schema);
        let list: Vec<Value> = names(part)
            .unwrap_or_default()
            .into_iter()
            .map(|n| json!({"field": n.field, "python": n.python, "node": n.node, "c": n.c, "cli": n.cli}))
            .collect();
        all_names.insert((*part).to_owned(), Value::Array(list));
    }
    out.insert("names".into(), Value::Object(all_names));
    out.insert("max_timeout_seconds".into(), json!(MAX_TIMEOUT_SECONDS));
    out.insert("search_default_limit".into(), json!(SEARCH_DEFAULT_LIMIT));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_one_value_in_both_units() {
        assert_eq!(
            seconds("timeout", 1.5).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            millis("timeoutMs", 250.0).unwrap(),
            Duration::from_millis(250)
        );
        assert!(seconds("timeout", MAX_TIMEOUT_SECONDS).is_ok());
        assert!(millis("timeoutMs", MAX_TIMEOUT_MS).is_ok());
        for (v, unit) in [
            (0.0, Unit::Seconds),
            (-1.0, Unit::Millis),
            (f64::NAN, Unit::Seconds),
            (f64::INFINITY, Unit::Millis),
            (MAX_TIMEOUT_SECONDS * 1.5, Unit::Seconds),
            (MAX_TIMEOUT_MS * 1.5, Unit::Millis),
            (1e-12, Unit::Seconds),
        ] {
            let e = duration("max_total_timeout", v, unit).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT");
            let m = e.to_string();
            assert!(
                m.contains("'max_total_timeout'") && m.contains(unit.word()),
                "{m}"
            );
        }
        assert_eq!(MAX_TIMEOUT_SECONDS, crate::config::MAX_SECONDS);
    }

    #[test]
    fn search_limit_zero_finds_nothing() {
        assert_eq!(search_limit(Some(0)), 0);
        assert_eq!(search_limit(Some(3)), 3);
        assert_eq!(search_limit(None), SEARCH_DEFAULT_LIMIT);
    }

    #[test]
    fn call_options_cover_core_call_options() {
        // Every host-given field of core's CallOptions (`policy` is a handle,
        // not an option value; `on_progress` is the callback).
        let core = crate::CallOptions::default().with_task(false);
        let _ = core;
        assert_eq!(
            fields("call_options").unwrap(),
            [
                "timeout",
                "max_total_timeout",
                "task",
                "task_ttl",
                "on_progress",
                "traceparent",
                "tracestate",
                "validate_output"
            ]
        );
        assert_eq!(fields("search").unwrap(), ["query", "limit"]);
        assert_eq!(fields("nope").unwrap_err().code(), "INVALID_INPUT");
    }

    #[test]
    fn names_follow_one_rule() {
        let n = names("call_options").unwrap();
        let find = |f: &str| n.iter().find(|x| x.field == f).unwrap().clone();
        let t = find("max_total_timeout");
        assert_eq!(t.python, "max_total_timeout");
        assert_eq!(t.node, "maxTotalTimeoutMs");
        assert_eq!(t.c, ["max_total_timeout_ms", "max_total_timeout_seconds"]);
        assert_eq!(t.cli, "--max-total-timeout");
        assert_eq!(find("task_ttl").node, "taskTtlMs");
        let p = find("on_progress");
        assert_eq!(
            (p.node.as_str(), p.cli.as_str()),
            ("onProgress", "--progress")
        );
        assert_eq!(find("traceparent").cli, "$TRACEPARENT");
        let v = find("validate_output");
        assert_eq!(
            (v.node.as_str(), v.c.as_slice(), v.cli.as_str()),
            (
                "validateOutput",
                &["validate_output".to_owned()][..],
                "--validate-output"
            )
        );
        let policy = names("policy_options").unwrap();
        assert_eq!(policy[2].node, "callTimeoutSeconds");
        let s = schemas();
        assert_eq!(
            s["call_options"]["properties"]["validate_output"]["enum"],
            json!(crate::output_check::ValidateOutput::NAMES)
        );
        assert_eq!(s["call_options"]["additionalProperties"], false);
        assert_eq!(
            s["call_options"]["properties"]["timeout"]["x-unit"],
            "seconds"
        );
        assert_eq!(s["names"]["search"][1]["cli"], "--limit");
        assert_eq!(s["max_timeout_seconds"], 1e9);
    }

    #[test]
    fn error_json_carries_server_error_data() {
        let e = Error::ServerError {
            code: -32001,
            message: "no".into(),
            data: Some(json!({"token": "t"})),
        };
        assert_eq!(e.data(), Some(&json!({"token": "t"})));
        assert_eq!(e.to_json()["data"], json!({"token": "t"}));
        let plain = Error::Timeout("slow".into());
        assert!(plain.to_json().get("data").is_none());
    }

    #[test]
    fn an_unknown_option_is_named_with_the_nearest_known_name() {
        let node: Vec<String> = names("call_options")
            .unwrap()
            .into_iter()
            .map(|n| n.node)
            .collect();
        let node: Vec<&str> = node.iter().map(String::as_str).collect();
        let m = unknown_option("timeoutMS", &node);
        assert!(
            m.starts_with(
                "unknown option 'timeoutMS' (did you mean 'timeoutMs'? known: timeoutMs, "
            ),
            "{m}"
        );
        let c: Vec<String> = names("call_options")
            .unwrap()
            .into_iter()
            .flat_map(|n| n.c)
            .collect();
        let c: Vec<&str> = c.iter().map(String::as_str).collect();
        assert!(unknown_option("timeout", &c).contains("did you mean 'timeout_ms'?"));
        assert!(unknown_option("max_total_timeout_secs", &c)
            .contains("did you mean 'max_total_timeout_seconds'?"));
        assert_eq!(
            unknown_option("colour", &["a", "b"]),
            "unknown option 'colour' (known: a, b)"
        );
        assert_eq!(check_options(["timeoutMs", "task"], &node), Ok(()));
        assert!(check_options(["task", "tsak"], &node)
            .unwrap_err()
            .contains("'tsak' (did you mean 'task'?"));
    }

    #[test]
    fn params_decode_and_refuse_unknown_keys() {
        let p: CallOptionsParams =
            serde_json::from_value(json!({"timeout": 2.0, "task": true})).unwrap();
        assert_eq!((p.timeout, p.task), (Some(2.0), Some(true)));
        assert!(serde_json::from_value::<CallOptionsParams>(json!({"timeot": 1})).is_err());
        assert!(serde_json::from_value::<PolicyOptionsParams>(json!({"scop": "x"})).is_err());
    }
}
