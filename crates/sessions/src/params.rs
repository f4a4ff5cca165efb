//! The typed contract of the session verbs: what `begin`, `wait`, `reply`
//! and `end` accept ([`BeginParams`], [`WaitParams`], [`ReplyParams`],
//! [`EndParams`]) and the words their results use ([`RoundStatus`],
//! [`Next`]).
//!
//! These types are the one statement of what a verb accepts. Every front
//! end derives from them: `mcpmux serve` generates its tool input schemas
//! from [`schema`], and the drift tests of the CLI, Python and Node compare
//! their flags, signatures and typings with [`fields`]. A field added here
//! is a field every front end must take (their tests fail until it does).
//!
//! The JSON on the wire is the verbs' JSON: an unknown key is
//! `INVALID_INPUT` naming it and listing the expected ones, a missing (or
//! empty) required one is `INVALID_INPUT` naming it, a wrong type is
//! `INVALID_INPUT` naming the field. Ranges (positive, at most
//! [`super::settings::MAX_NUMBER`]) are checked where the values are used
//! ([`super::settings::resolve`]).

// The field doc comments are also the descriptions of `mcpmux serve`'s tool
// schemas, written for users: `[session]` there is the config table, not a
// doc link.
#![allow(rustdoc::broken_intra_doc_links)]

use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use mcpmux_core::error::Error;

/// The verbs, in the order a session uses them.
pub const VERBS: &[&str] = &["begin", "wait", "reply", "end"];

/// `begin`: starts a session and its round 1.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BeginParams {
    /// review-plan, review-impl, review-think, review-pr, or the path of a template file
    pub skill: String,
    /// review-impl: what to review
    #[schemars(extend("enum" = ["working-tree", "branch"]))]
    #[serde(default)]
    pub mode: Option<String>,
    /// Markdown: optional `NAME: value` front matter between --- lines, and a `## NAME` section per multi-line value
    pub input: String,
    /// The directory under review (absolute path)
    #[serde(default)]
    pub working_dir: Option<String>,
    /// The reviewer's model
    #[serde(default)]
    pub model: Option<String>,
    /// Reasoning effort
    #[serde(default)]
    pub effort: Option<String>,
    /// Seconds the round may run (default 18000)
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// Who reviews (default from the config's [session])
    #[schemars(extend("enum" = ["openai", "anthropic", "command", "host"]))]
    #[serde(default)]
    pub reviewer: Option<String>,
    /// Agent-loop turns per round (default from the config's [session], else 10)
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Most tool calls per round; 0 allows none (default from the config's [session]: no limit)
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
    /// Seconds allowed per tool call (default from the config's [session])
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub call_timeout_seconds: Option<f64>,
    /// Largest tool output shown to the reviewer, in bytes (default from the config's [session])
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
    /// The session's scope, matched against a server's `scopes` (default from the config's [session])
    #[serde(default)]
    pub scope: Option<String>,
}

/// `wait`: waits for the current round and reports it.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    /// The session directory from review_begin
    pub session_dir: String,
    /// Longest wait (default 50)
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub max_wait_seconds: Option<f64>,
}

/// `reply`: answers the review and starts the next round.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyParams {
    /// The session directory
    pub session_dir: String,
    /// Your response, Markdown
    pub input: String,
    /// The reviewer's model from now on
    #[serde(default)]
    pub model: Option<String>,
    /// Reasoning effort from now on
    #[serde(default)]
    pub effort: Option<String>,
}

/// `end`: ends the session.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndParams {
    /// The session directory
    pub session_dir: String,
    /// How a peer review ended
    #[serde(default)]
    pub outcome: Option<Outcome>,
}

/// How a peer review ended (`end`'s `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The host and the reviewer agree.
    Consensus,
    /// They do not, and will not.
    Stalemate,
}

impl Outcome {
    /// The wire word (`consensus`, `stalemate`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Consensus => "consensus",
            Outcome::Stalemate => "stalemate",
        }
    }
}

/// Where a round stands (`wait`'s `status`, `state.json`'s `status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RoundStatus {
    /// A runner is at it.
    #[default]
    Running,
    /// It ended with a review.
    Completed,
    /// It failed (`failure_reason` says why).
    Failed,
    /// No progress for `stall_seconds`.
    Stalled,
    /// It ran past `timeout_seconds`.
    Timeout,
}

impl RoundStatus {
    /// The wire word (`running`, `completed`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RoundStatus::Running => "running",
            RoundStatus::Completed => "completed",
            RoundStatus::Failed => "failed",
            RoundStatus::Stalled => "stalled",
            RoundStatus::Timeout => "timeout",
        }
    }

    /// The status a wire word names, if any.
    pub fn parse(word: &str) -> Option<Self> {
        [
            RoundStatus::Running,
            RoundStatus::Completed,
            RoundStatus::Failed,
            RoundStatus::Stalled,
            RoundStatus::Timeout,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

impl From<RoundStatus> for String {
    fn from(s: RoundStatus) -> String {
        s.as_str().to_owned()
    }
}

impl PartialEq<RoundStatus> for String {
    fn eq(&self, other: &RoundStatus) -> bool {
        self == other.as_str()
    }
}

/// What the host should do after `wait` (`wait`'s `next`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// The round still runs: wait again.
    Running,
    /// Answer the review with `reply`.
    Respond,
    /// A peer skill's advisory verdict: check it against your own analysis.
    CrossCheck,
    /// The session is over: `end` it.
    Done,
    /// Nothing to act on: ask the user.
    AskUser,
    /// The round stopped (failed, stalled, timed out).
    Stopped,
}

impl Next {
    /// The wire word (`running`, `respond`, `cross_check`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Next::Running => "running",
            Next::Respond => "respond",
            Next::CrossCheck => "cross_check",
            Next::Done => "done",
            Next::AskUser => "ask_user",
            Next::Stopped => "stopped",
        }
    }
}

/// Decodes a verb's JSON parameters into `T`. Errors are `INVALID_INPUT`:
/// an unknown key is named with the expected ones, a missing required one
/// is named, a wrong type names its field.
pub(crate) fn decode<T: DeserializeOwned + JsonSchema>(params: &Value) -> Result<T, Error> {
    let Value::Object(map) = params else {
        return Err(Error::InvalidInput("params must be a JSON object".into()));
    };
    let schema = schema_of::<T>();
    let names = property_names(&schema);
    if let Some(k) = map.keys().find(|k| !names.iter().any(|n| n == *k)) {
        let hint = mcpmux_core::contract::nearest_name(k, names.iter().map(String::as_str))
            .map(|n| format!("did you mean '{n}'? "))
            .unwrap_or_default();
        return Err(Error::InvalidInput(format!(
            "unknown parameter '{k}' ({hint}expected: {})",
            names.join(", ")
        )));
    }
    // A required field that is absent, null or empty is missing (as it
    // always was), not a type error.
    for key in required_names(&schema) {
        match map.get(&key) {
            None | Some(Value::Null) => return Err(missing(&key)),
            Some(Value::String(s)) if s.is_empty() => return Err(missing(&key)),
            _ => {}
        }
    }
    let decoded: T = serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        Error::InvalidInput(format!("parameter '{path}': {}", e.into_inner()))
    })?;
    Ok(decoded)
}

fn missing(key: &str) -> Error {
    Error::InvalidInput(format!("missing required parameter '{key}'"))
}

/// The JSON Schema of `T` as an MCP tool's `inputSchema`: `type`,
/// `properties` (each with its `description`), `required`,
/// `additionalProperties: false`; no `$schema`/`title`, no number
/// `format`s, no `null` alternatives (an optional field is one that is not
/// `required`; `null` is accepted as "not given" all the same), and enums
/// inline (an MCP client need not resolve references).
fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let schema: Schema = generator.into_root_schema_for::<T>();
    let mut v = schema.to_value();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("title");
        obj.remove("description");
        obj.remove("$schema");
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            for p in props.values_mut() {
                not_null(p);
                if let Some(p) = p.as_object_mut() {
                    p.remove("format");
                    p.remove("default");
                }
            }
        }
        obj.entry("required")
            .or_insert_with(|| Value::Array(vec![]));
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    v
}

/// Drops the `null` alternative of an optional property: `"type":
/// ["string", "null"]` becomes `"type": "string"`, and `anyOf: [X, {"type":
/// "null"}]` becomes X (keeping the property's own `description`);
/// alternatives that are all constants become one `enum`.
fn not_null(prop: &mut Value) {
    let Some(obj) = prop.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = obj.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let kept = match <[Value; 1]>::try_from(kept) {
            Ok([one]) => one,
            Err(many) => Value::Array(many),
        };
        obj.insert("type".into(), kept);
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alts)) = obj.get(key) else {
            continue;
        };
        let kept: Vec<Value> = alts
            .iter()
            .filter(|a| a.get("type").is_none_or(|t| t != "null"))
            .cloned()
            .collect();
        // Alternatives that are constants (a documented enum): one `enum`.
        let consts: Option<Vec<Value>> = kept.iter().map(|a| a.get("const").cloned()).collect();
        if let Some(values) = consts.filter(|c| !c.is_empty()) {
            obj.remove(key);
            if let Some(t) = kept[0].get("type") {
                obj.entry("type").or_insert_with(|| t.clone());
            }
            obj.insert("enum".into(), Value::Array(values));
            continue;
        }
        if let Ok([Value::Object(one)]) = <[Value; 1]>::try_from(kept) {
            obj.remove(key);
            for (k, v) in one {
                if k != "description" {
                    obj.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

fn property_names(schema: &Value) -> Vec<String> {
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

fn required_names(schema: &Value) -> Vec<String> {
    schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON Schema of `verb`'s parameters (`begin`, `wait`, `reply` or
/// `end`), as an MCP tool `inputSchema`: `{"type": "object", "properties":
/// {...}, "required": [...], "additionalProperties": false}`. An unknown
/// verb is `INVALID_INPUT`.
pub fn schema(verb: &str) -> Result<Value, Error> {
    match verb {
        "begin" => Ok(schema_of::<BeginParams>()),
        "wait" => Ok(schema_of::<WaitParams>()),
        "reply" => Ok(schema_of::<ReplyParams>()),
        "end" => Ok(schema_of::<EndParams>()),
        other => Err(unknown_verb(other)),
    }
}

/// The fields `verb` accepts, in declaration order.
pub fn fields(verb: &str) -> Result<Vec<String>, Error> {
    Ok(property_names(&schema(verb)?))
}

/// `{verb: schema}` for every verb: what the front ends' drift tests read.
pub fn schemas() -> Value {
    Value::Object(
        VERBS
            .iter()
            .map(|v| ((*v).to_owned(), schema(v).unwrap_or(Value::Null)))
            .collect(),
    )
}

pub(crate) fn unknown_verb(verb: &str) -> Error {
    Error::InvalidInput(format!(
        "unknown session verb '{verb}' (expected: {})",
        VERBS.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_are_mcp_input_schemas() {
        let s = schema("begin").unwrap();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], json!(["skill", "input"]));
        assert_eq!(s["properties"]["mode"]["type"], "string");
        assert_eq!(s["properties"]["timeout_seconds"]["type"], "number");
        assert_eq!(s["properties"]["max_turns"]["type"], "integer");
        assert!(s["properties"]["skill"]["description"]
            .as_str()
            .unwrap()
            .contains("review-plan"));
        let e = schema("end").unwrap();
        assert_eq!(
            e["properties"]["outcome"]["enum"],
            json!(["consensus", "stalemate"])
        );
        assert_eq!(
            e["properties"]["outcome"]["description"],
            "How a peer review ended"
        );
        assert!(
            e.get("$defs").is_none() && e.get("definitions").is_none(),
            "{e}"
        );
        assert_eq!(fields("wait").unwrap(), ["session_dir", "max_wait_seconds"]);
        assert_eq!(schema("nap").unwrap_err().code(), "INVALID_INPUT");
    }

    #[test]
    fn decode_names_unknown_missing_and_wrong_fields() {
        let e =
            decode::<BeginParams>(&json!({"skill": "s", "input": "i", "colour": 1})).unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        let m = e.to_string();
        assert!(
            m.contains("'colour'") && m.contains("max_output_bytes"),
            "{m}"
        );
        let e = decode::<BeginParams>(&json!({"skill": "", "input": "i"})).unwrap_err();
        assert!(e.to_string().contains("'skill'"), "{e}");
        let e = decode::<ReplyParams>(&json!({"session_dir": "d"})).unwrap_err();
        assert!(e.to_string().contains("'input'"), "{e}");
        let e = decode::<BeginParams>(&json!({"skill": "s", "input": "i", "max_turns": "ten"}))
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        assert!(e.to_string().contains("max_turns"), "{e}");
        let e = decode::<EndParams>(&json!({"session_dir": "d", "outcome": "sulk"})).unwrap_err();
        assert!(e.to_string().contains("outcome"), "{e}");
        let e = decode::<WaitParams>(&json!("d")).unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        let ok = decode::<BeginParams>(
            &json!({"skill": "s", "input": "i", "mode": null, "max_tool_calls": 0}),
        )
        .unwrap();
        assert_eq!(ok.max_tool_calls, Some(0));
        assert_eq!(ok.mode, None);
    }

    #[test]
    fn words_serialize_as_today() {
        assert_eq!(
            serde_json::to_value(Next::CrossCheck).unwrap(),
            "cross_check"
        );
        assert_eq!(serde_json::to_value(Next::AskUser).unwrap(), "ask_user");
        assert_eq!(
            serde_json::to_value(RoundStatus::Timeout).unwrap(),
            "timeout"
        );
        for s in ["running", "completed", "failed", "stalled", "timeout"] {
            assert_eq!(RoundStatus::parse(s).unwrap().as_str(), s);
        }
    }
}
