//! A server entry and the `[mcp]` table as written, read with serde into raw
//! structs (`crate::raw_table`) and then checked by `super`. A value of the
//! wrong type gets the same words as a bad value of the right type, so a
//! message never depends on which of the two went wrong.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Number, Value};

pub(super) use crate::raw_table::decode;

/// An item of `args`: a string, or a number taken as its text.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Arg {
    /// A string, `${VAR}`s to expand.
    Text(String),
    /// A number, used as written.
    Number(Number),
}

/// A value of `env` or `headers`: a string, or a number or boolean taken as
/// its text.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Scalar {
    /// A string, `${VAR}`s to expand.
    Text(String),
    /// A number, used as written.
    Number(Number),
    /// `true` or `false`, used as written.
    Flag(bool),
}

/// One server entry's engine keys (its other keys belong to the config
/// layers, the supervision or other clients, and are read elsewhere).
/// `null` is the same as a key left out.
#[derive(Deserialize)]
pub(super) struct RawEntry {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub transport: Option<String>,
    /// What some other clients write for `type` (`mcpServers` only).
    #[serde(rename = "transportType")]
    pub transport_type: Option<String>,
    pub command: Option<String>,
    pub args: Option<Vec<Arg>>,
    pub env: Option<BTreeMap<String, Scalar>>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, Scalar>>,
    pub enabled: Option<bool>,
    pub disabled: Option<bool>,
    pub timeout_seconds: Option<f64>,
    pub max_total_timeout_seconds: Option<f64>,
    pub max_message_bytes: Option<u64>,
    pub protocol_version: Option<String>,
    pub auth: Option<Map<String, Value>>,
}

/// The `[mcp]` table's defaults for every server (its `servers` list and
/// supervision keys are read elsewhere).
#[derive(Deserialize)]
pub(super) struct RawDefaults {
    pub timeout_seconds: Option<f64>,
    pub max_message_bytes: Option<u64>,
}

/// What a value of `key` must be, in the words of the message for a bad
/// value: `nested` is an item of it (`args[0]`, `env.HOME`).
pub(super) fn entry_wrong_type(key: &str, nested: bool) -> &'static str {
    match (key, nested) {
        ("args", false) => "must be an array of strings",
        ("env" | "headers", false) => "must be a table of strings",
        ("enabled" | "disabled", _) => "must be true or false",
        ("timeout_seconds" | "max_total_timeout_seconds", _) => {
            "must be a positive number of seconds"
        }
        ("max_message_bytes", _) => "must be a positive integer",
        ("auth", _) => "must be a table",
        _ => "must be a string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wrong(v: Value) -> (String, String, bool) {
        match decode::<RawEntry>(v.as_object().unwrap()) {
            Ok(_) => panic!("{v} decoded"),
            Err(w) => (w.field, w.key, w.nested),
        }
    }

    #[test]
    fn wrong_types_are_found_where_they_are() {
        assert_eq!(
            wrong(json!({"args": ["a", 1, true]})),
            ("args[2]".into(), "args".into(), true)
        );
        assert_eq!(
            wrong(json!({"args": "a b"})),
            ("args".into(), "args".into(), false)
        );
        assert_eq!(
            wrong(json!({"env": {"A": "x", "B": [1]}})),
            ("env.B".into(), "env".into(), true)
        );
        assert_eq!(
            wrong(json!({"enabled": "yes"})),
            ("enabled".into(), "enabled".into(), false)
        );
        assert_eq!(
            wrong(json!({"max_message_bytes": -1})),
            (
                "max_message_bytes".into(),
                "max_message_bytes".into(),
                false
            )
        );
    }

    #[test]
    fn nulls_and_other_keys_are_not_set() {
        let entry: RawEntry = decode(
            json!({"command": "x", "args": null, "allow_tools": ["a"], "autoApprove": []})
                .as_object()
                .unwrap(),
        )
        .ok()
        .unwrap();
        assert_eq!(entry.command.as_deref(), Some("x"));
        assert!(entry.args.is_none());
    }
}
