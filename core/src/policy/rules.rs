//! The operator's per-server rules (`allow_tools`, `allow_all`, `deny_tools`,
//! `allow_destructive`, `confirm_read_only`, `scopes`) and the one decision
//! they make about a tool: offered to a session's model, or refused and why.
//!
//! The server's own annotations only ever narrow what the operator allowed:
//! a tool marked `destructiveHint: true` also needs `allow_destructive`, and a
//! tool not marked `readOnlyHint: true` also needs `confirm_read_only` (or
//! `allow_destructive`, which accepts more than that). A server cannot widen
//! the list by calling a write tool read-only, because an unlisted tool is
//! never offered whatever its hints say.
//!
//! This file is a leaf below `config` (it uses only `error` and
//! `tool_names`): `config` parses a server's policy keys with
//! [`ServerPolicy::from_map`] at load time into `ServerConfig::policy`.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::tool_names::HubTool;

/// The policy keys of one server entry, parsed and checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerPolicy {
    /// Original tool names or globs (`*`, `?`) the model may use.
    pub allow_tools: Vec<String>,
    /// Every tool is allowed (still minus `deny_tools` and the hint checks).
    pub allow_all: bool,
    /// Names or globs never offered, even when allowed above.
    pub deny_tools: Vec<String>,
    /// Exact names of tools that may be offered although marked destructive.
    pub allow_destructive: Vec<String>,
    /// Exact names of tools not marked read-only that the operator accepts.
    pub confirm_read_only: Vec<String>,
    /// When not empty, the server is offered only in sessions with one of these scopes.
    pub scopes: Vec<String>,
}

/// The config keys this module reads from a server entry.
pub const SERVER_KEYS: &[&str] = &[
    "allow_tools",
    "allow_all",
    "deny_tools",
    "allow_destructive",
    "confirm_read_only",
    "scopes",
];

impl ServerPolicy {
    /// Reads the policy keys of one server entry (`config` calls it at load
    /// time and keeps the result in `ServerConfig::policy`); a bad value is
    /// a `CONFIG_INVALID` error naming `origin`, the server and the field.
    pub fn from_map(
        entry: &Map<String, Value>,
        origin: &str,
        server: &str,
    ) -> Result<ServerPolicy, Error> {
        let err = |field: &str, what: &str| {
            Error::ConfigInvalid(format!(
                "{origin}: server '{server}': field '{field}' {what}"
            ))
        };
        let list = |field: &str, globs: bool| -> Result<Vec<String>, Error> {
            let items = match entry.get(field) {
                None | Some(Value::Null) => return Ok(Vec::new()),
                Some(Value::Array(items)) => items,
                Some(Value::String(_)) => {
                    return Err(err(field, "must be an array of strings, e.g. [\"read_*\"]"))
                }
                Some(_) => return Err(err(field, "must be an array of strings")),
            };
            items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) if s.trim().is_empty() => {
                        Err(err(&format!("{field}[{i}]"), "is empty"))
                    }
                    Value::String(s) if !globs && (s.contains('*') || s.contains('?')) => Err(err(
                        &format!("{field}[{i}]"),
                        &format!("must be an exact tool name, not a glob ('{s}')"),
                    )),
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(err(&format!("{field}[{i}]"), "must be a string")),
                })
                .collect()
        };
        let allow_all = match entry.get("allow_all") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(err("allow_all", "must be true or false")),
        };
        Ok(ServerPolicy {
            allow_tools: list("allow_tools", true)?,
            allow_all,
            deny_tools: list("deny_tools", true)?,
            allow_destructive: list("allow_destructive", false)?,
            confirm_read_only: list("confirm_read_only", false)?,
            scopes: list("scopes", false)?,
        })
    }

    /// Whether a session with `scope` may use this server at all.
    pub fn in_scope(&self, scope: Option<&str>) -> bool {
        self.scopes.is_empty() || scope.is_some_and(|s| self.scopes.iter().any(|x| x == s))
    }

    /// The decision for one tool of this server in a session with `scope`.
    pub fn decide(&self, tool: &HubTool, scope: Option<&str>) -> Decision {
        let name = tool.tool.as_str();
        if !self.in_scope(scope) {
            return Decision::Refused(Refusal::OutOfScope);
        }
        if self.deny_tools.iter().any(|g| glob_match(g, name)) {
            return Decision::Refused(Refusal::Denied);
        }
        if !(self.allow_all || self.allow_tools.iter().any(|g| glob_match(g, name))) {
            return Decision::Refused(Refusal::NotAllowed);
        }
        let hint = |key: &str| {
            tool.annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
        };
        let destructive_ok = self.allow_destructive.iter().any(|n| n == name);
        if hint("destructiveHint") == Some(true) {
            if !destructive_ok {
                return Decision::Refused(Refusal::Destructive);
            }
        } else if hint("readOnlyHint") != Some(true)
            && !destructive_ok
            && !self.confirm_read_only.iter().any(|n| n == name)
        {
            return Decision::Refused(Refusal::NotReadOnly);
        }
        Decision::Offered
    }

    /// The exact (non-glob) names in `allow_tools` that are not in `tools`.
    pub fn missing_names<'a>(&'a self, tools: &[&str]) -> Vec<&'a str> {
        self.allow_tools
            .iter()
            .filter(|n| !is_glob(n) && !tools.contains(&n.as_str()))
            .map(String::as_str)
            .collect()
    }
}

/// Why a tool is not offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The server has `scopes` and the session's scope is not one of them.
    OutOfScope,
    /// The tool matches `deny_tools`.
    Denied,
    /// Neither `allow_all` nor a match in `allow_tools`.
    NotAllowed,
    /// Marked `destructiveHint: true` and not in `allow_destructive`.
    Destructive,
    /// Not marked `readOnlyHint: true` and not in `confirm_read_only`.
    NotReadOnly,
    /// The server is not in the config (or the tool is unknown).
    UnknownTool,
}

impl Refusal {
    /// A short explanation naming the config key that would change it.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::OutOfScope => "the server's 'scopes' do not include this session's scope",
            Refusal::Denied => "listed in 'deny_tools'",
            Refusal::NotAllowed => "not in 'allow_tools' and 'allow_all' is not set",
            Refusal::Destructive => {
                "the server marks it destructive and it is not in 'allow_destructive'"
            }
            Refusal::NotReadOnly => {
                "the server does not mark it read-only and it is not in 'confirm_read_only'"
            }
            Refusal::UnknownTool => "no such tool was offered in this session",
        }
    }
}

/// The outcome of [`ServerPolicy::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The model may be offered the tool.
    Offered,
    /// The tool is refused, for this reason.
    Refused(Refusal),
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains('*') || pattern.contains('?')
}

/// Matches `text` against a glob where `*` is any run of characters and `?`
/// one character; everything else matches itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it currently covers up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            // Let the last `*` swallow one more character and retry.
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, annotations: Option<Value>) -> HubTool {
        HubTool {
            name: format!("mcp_s_{name}"),
            server: "s".into(),
            tool: name.into(),
            title: None,
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations,
            execution: None,
            icons: None,
            meta: None,
        }
    }

    fn policy(v: Value) -> Result<ServerPolicy, Error> {
        ServerPolicy::from_map(v.as_object().unwrap(), "test.toml", "s")
    }

    #[test]
    fn globs() {
        assert!(glob_match("read_*", "read_file"));
        assert!(glob_match("read_*", "read_"));
        assert!(!glob_match("read_*", "write_file"));
        assert!(glob_match("*", ""));
        assert!(glob_match("?et_*s", "get_items"));
        assert!(!glob_match("?et_*s", "get_item"));
        assert!(glob_match("a*b*c", "axxbyybzc"));
        assert!(!glob_match("a*b*c", "axxbyyb"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
        assert!(glob_match("*_*_*", "a_b_c"));
        assert!(glob_match("é*", "éclair"));
    }

    #[test]
    fn decisions_follow_the_operator_and_hints_only_narrow() {
        let ro = tool("read", Some(json!({"readOnlyHint": true})));
        let plain = tool("plain", None);
        let wipe = tool("wipe", Some(json!({"destructiveHint": true})));
        // A server calling a write tool read-only does not get it offered.
        let liar = tool("liar", Some(json!({"readOnlyHint": true})));
        let p = policy(json!({"allow_tools": ["read", "plain", "wipe"]})).unwrap();
        assert_eq!(p.decide(&ro, None), Decision::Offered);
        assert_eq!(
            p.decide(&plain, None),
            Decision::Refused(Refusal::NotReadOnly)
        );
        assert_eq!(
            p.decide(&wipe, None),
            Decision::Refused(Refusal::Destructive)
        );
        assert_eq!(
            p.decide(&liar, None),
            Decision::Refused(Refusal::NotAllowed)
        );

        let p = policy(json!({"allow_all": true, "deny_tools": ["li*"],
            "confirm_read_only": ["plain"], "allow_destructive": ["wipe"]}))
        .unwrap();
        assert_eq!(p.decide(&plain, None), Decision::Offered);
        assert_eq!(p.decide(&wipe, None), Decision::Offered);
        assert_eq!(p.decide(&liar, None), Decision::Refused(Refusal::Denied));
        // confirm_read_only does not cover a tool marked destructive.
        let p = policy(json!({"allow_all": true, "confirm_read_only": ["wipe"]})).unwrap();
        assert_eq!(
            p.decide(&wipe, None),
            Decision::Refused(Refusal::Destructive)
        );
        // Marked both read-only and destructive: destructive wins.
        let both = tool(
            "both",
            Some(json!({"readOnlyHint": true, "destructiveHint": true})),
        );
        assert_eq!(
            p.decide(&both, None),
            Decision::Refused(Refusal::Destructive)
        );
        // Empty means none.
        let p = policy(json!({})).unwrap();
        assert_eq!(p.decide(&ro, None), Decision::Refused(Refusal::NotAllowed));
    }

    #[test]
    fn scopes() {
        let ro = tool("read", Some(json!({"readOnlyHint": true})));
        let p = policy(json!({"allow_all": true, "scopes": ["ci", "review"]})).unwrap();
        assert_eq!(p.decide(&ro, Some("review")), Decision::Offered);
        assert_eq!(
            p.decide(&ro, Some("prod")),
            Decision::Refused(Refusal::OutOfScope)
        );
        assert_eq!(p.decide(&ro, None), Decision::Refused(Refusal::OutOfScope));
        let open = policy(json!({"allow_all": true})).unwrap();
        assert_eq!(open.decide(&ro, Some("anything")), Decision::Offered);
    }

    #[test]
    fn bad_values_name_the_field() {
        let e = policy(json!({"allow_tools": "read_*"})).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        let m = e.to_string();
        assert!(
            m.contains("test.toml") && m.contains("server 's'") && m.contains("'allow_tools'"),
            "{m}"
        );
        let m = policy(json!({"allow_all": "yes"})).unwrap_err().to_string();
        assert!(m.contains("'allow_all'"), "{m}");
        let m = policy(json!({"deny_tools": [1]})).unwrap_err().to_string();
        assert!(m.contains("'deny_tools[0]'"), "{m}");
        let m = policy(json!({"allow_destructive": ["rm_*"]}))
            .unwrap_err()
            .to_string();
        assert!(m.contains("exact tool name"), "{m}");
        let m = policy(json!({"scopes": [""]})).unwrap_err().to_string();
        assert!(m.contains("'scopes[0]'") && m.contains("empty"), "{m}");
    }

    #[test]
    fn missing_exact_names() {
        let p = policy(json!({"allow_tools": ["a", "b*", "c"]})).unwrap();
        assert_eq!(p.missing_names(&["a", "bb"]), vec!["c"]);
    }
}
