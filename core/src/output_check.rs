//! Tool results checked against the tool's `outputSchema`.
//!
//! A server that declares an `outputSchema` for a tool promises that every
//! successful result carries a `structuredContent` satisfying it. Each
//! [`crate::Client`] owns one `OutputChecks`: the validators of its tools'
//! schemas, compiled lazily on a tool's first checked call and kept (keyed
//! by tool name and a hash of the schema's text, so a changed schema is
//! compiled anew; bounded by [`MAX_VALIDATORS`]). A schema that does not
//! compile (or names a remote `$ref`: this build never fetches one) is
//! reported once per tool and schema (a tracing warning, and a hub `log`
//! event sent by the client) and leaves the tool's calls unchecked, never
//! a panic. What a violation becomes is the caller's
//! [`ValidateOutput`].

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::error::Error;

/// How many compiled schemas one client keeps; past it the cache starts
/// over (a server that keeps changing its schemas pays compiles, not
/// memory).
pub const MAX_VALIDATORS: usize = 256;

/// The longest reason a violation message quotes, in bytes.
const MAX_REASON: usize = 200;

/// The longest instance path a violation message quotes, in bytes.
const MAX_PATH: usize = 200;

/// What a call does with a result whose `structuredContent` does not
/// satisfy its tool's `outputSchema` (`validate_output` of the call
/// options). A result with `isError: true` is never checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValidateOutput {
    /// The call fails with `OUTPUT_INVALID` naming the server, the tool and
    /// the first failing path (the default).
    #[default]
    Error,
    /// The result is returned; the violation is logged (tracing) and sent
    /// as a hub `log` event (level `warning`, logger `mcpmux`).
    Warn,
    /// No check.
    Off,
}

impl ValidateOutput {
    /// The accepted spellings, as every front end takes them.
    pub const NAMES: &'static [&'static str] = &["error", "warn", "off"];

    /// The option's value as written (`error`, `warn`, `off`).
    pub fn as_str(self) -> &'static str {
        match self {
            ValidateOutput::Error => "error",
            ValidateOutput::Warn => "warn",
            ValidateOutput::Off => "off",
        }
    }

    /// Reads `value` given as `field` (the front end's spelling of the
    /// option); anything but `error`, `warn` or `off` is `INVALID_INPUT`
    /// naming the field.
    pub fn parse(field: &str, value: &str) -> Result<ValidateOutput, Error> {
        match value {
            "error" => Ok(ValidateOutput::Error),
            "warn" => Ok(ValidateOutput::Warn),
            "off" => Ok(ValidateOutput::Off),
            other => Err(Error::InvalidInput(format!(
                "'{field}' must be one of {}, not '{}'",
                Self::NAMES.join(", "),
                crate::events::clip(other, 40)
            ))),
        }
    }
}

/// A compiled schema, or `None` when it did not compile (already reported).
type Compiled = Option<Arc<jsonschema::Validator>>;

/// The compiled output schemas of one client's tools. Shared by the
/// client's clones; locked only to look up or insert, never while
/// validating.
#[derive(Default)]
pub(crate) struct OutputChecks {
    cache: Mutex<HashMap<(String, u64), Compiled>>,
}

impl OutputChecks {
    /// Checks `result` (the raw JSON of a `tools/call` result) of tool
    /// `tool` of server `server` against `schema` (the tool's
    /// `outputSchema` as JSON text). `Ok` when it satisfies it, when it is
    /// an error result, or when the schema does not compile; else the
    /// violation, as an `OUTPUT_INVALID` message. A schema that does not
    /// compile is logged and told to `report` (with the message) once,
    /// on the call that found it.
    pub(crate) fn check(
        &self,
        server: &str,
        tool: &str,
        schema: &str,
        result: &str,
        report: &dyn Fn(&str),
    ) -> Result<(), String> {
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(rename = "isError", default)]
            is_error: Option<bool>,
            #[serde(rename = "structuredContent", default)]
            structured: Option<Value>,
        }
        let Ok(probe) = serde_json::from_str::<Probe>(result) else {
            // Not an object: the caller already refused it.
            return Ok(());
        };
        if probe.is_error == Some(true) {
            return Ok(());
        }
        let Some(validator) = self.validator(server, tool, schema, report) else {
            return Ok(());
        };
        let Some(structured) = probe.structured.filter(|v| !v.is_null()) else {
            return Err(format!(
                "server '{server}' tool '{tool}': the result has no structuredContent, \
                 but the tool declares an outputSchema"
            ));
        };
        match validator.validate(&structured) {
            Ok(()) => Ok(()),
            Err(e) => {
                let path = e.instance_path().as_str().to_owned();
                let path = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                let reason = e.masked().to_string();
                Err(format!(
                    "server '{server}' tool '{tool}': structuredContent does not satisfy the \
                     tool's outputSchema at '{}': {}",
                    crate::events::clip(&path, MAX_PATH),
                    crate::events::clip(&reason, MAX_REASON)
                ))
            }
        }
    }

    /// The compiled `schema` of `tool`, compiling it on first use; `None`
    /// (reported once) when it does not compile.
    fn validator(&self, server: &str, tool: &str, schema: &str, report: &dyn Fn(&str)) -> Compiled {
        let mut h = DefaultHasher::new();
        schema.hash(&mut h);
        let key = (tool.to_owned(), h.finish());
        if let Some(found) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return found.clone();
        }
        // Compiled outside the lock: another call may compile it too; the
        // first one in is kept, and only it reports a failure.
        let (compiled, failure) = match compile(schema) {
            Ok(v) => (Some(Arc::new(v)), None),
            Err(why) => (None, Some(why)),
        };
        {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(found) = cache.get(&key) {
                return found.clone();
            }
            if cache.len() >= MAX_VALIDATORS {
                cache.clear();
            }
            cache.insert(key, compiled.clone());
        }
        if let Some(why) = failure {
            let message = format!(
                "server '{server}' tool '{tool}': the tool's outputSchema cannot be compiled; \
                 its results are not checked: {}",
                crate::events::clip(&why, MAX_REASON)
            );
            tracing::warn!(server = %server, tool = %tool, "{message}");
            report(&message);
        }
        compiled
    }
}

/// A validator for `schema` (JSON text): its draft is read from its
/// `$schema` (2020-12 when it has none). No `$ref` outside the schema
/// resolves: this build of the validator has no way to fetch one.
fn compile(schema: &str) -> Result<jsonschema::Validator, String> {
    let value: Value = serde_json::from_str(schema).map_err(|e| e.to_string())?;
    jsonschema::validator_for(&value).map_err(|e| e.masked().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str =
        r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;

    #[test]
    fn a_result_is_checked_against_the_schema() {
        let c = OutputChecks::default();
        assert_eq!(
            c.check(
                "s",
                "t",
                SCHEMA,
                r#"{"structuredContent":{"n":1}}"#,
                &|_| {}
            ),
            Ok(())
        );
        let e = c
            .check(
                "s",
                "t",
                SCHEMA,
                r#"{"structuredContent":{"n":"secret-value"}}"#,
                &|_| {},
            )
            .unwrap_err();
        assert!(
            e.contains("server 's' tool 't'") && e.contains("'/n'"),
            "{e}"
        );
        assert!(!e.contains("secret-value"), "{e}");
        let e = c
            .check("s", "t", SCHEMA, r#"{"content":[]}"#, &|_| {})
            .unwrap_err();
        assert!(e.contains("no structuredContent"), "{e}");
        assert_eq!(
            c.check(
                "s",
                "t",
                SCHEMA,
                r#"{"isError":true,"content":[]}"#,
                &|_| {}
            ),
            Ok(())
        );
    }

    #[test]
    fn draft_07_and_bad_schemas() {
        let c = OutputChecks::default();
        let d7 = r#"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}"#;
        let e = c
            .check(
                "s",
                "t",
                d7,
                r#"{"structuredContent":{"a":["x",2]}}"#,
                &|_| {},
            )
            .unwrap_err();
        assert!(e.contains("'/a/1'"), "{e}");
        // Neither a broken schema nor a remote reference is a panic or a
        // fetch; each is reported once, however often the tool is called.
        let reports = std::cell::Cell::new(0);
        let report = |_: &str| reports.set(reports.get() + 1);
        for bad in [
            r#"{"type":12}"#,
            r#"{"$ref":"http://127.0.0.1:9/schema.json"}"#,
        ] {
            for _ in 0..3 {
                assert_eq!(
                    c.check("s", "bad", bad, r#"{"structuredContent":{}}"#, &report),
                    Ok(()),
                    "{bad}"
                );
            }
        }
        assert_eq!(reports.get(), 2);
    }

    #[test]
    fn the_option_parses() {
        assert_eq!(
            ValidateOutput::parse("x", "warn").unwrap(),
            ValidateOutput::Warn
        );
        let e = ValidateOutput::parse("validateOutput", "loud").unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        assert!(e.to_string().contains("'validateOutput'"));
    }
}
