//! The operator's per-server rules (`allow_tools`, `allow_all`, `deny_tools`,
//! `allow_destructive`, `confirm_read_only`, `scopes`) and the one decision
//! they make about a tool: offered to a session's model, or refused and why.
//!
//! The server's own annotations only ever narrow what the operator allowed:
//! a tool marked `destructiveHint: true` also needs `allow_destructive`, and a
//! tool not marked `readOnlyHint: true` also needs `confirm_read_only` (or
//! `allow_destructive`, which accepts more than that). A tool without
//! annotations is not read-only: `allow_all` alone never offers it. A server
//! cannot widen the list by calling a write tool read-only, because an
//! unlisted tool is never offered whatever its hints say.
//!
//! Every tool list (`allow_tools`, `deny_tools`, `allow_destructive`,
//! `confirm_read_only`) takes the server's own tool names or globs: `*` (any
//! run of characters), `?` (one character), `[abc]`, `[a-z]`, `[!abc]` (one
//! character of, or not of, a set). A bad glob fails the load.
//!
//! `--expose-all` ([`ServerPolicy::decide_exposing_all`]) sets the lists and
//! the annotation checks aside; `deny_tools` and `scopes` still hold.
//!
//! This file is a leaf below `config` (it uses only `error` and
//! `tool_names`): `config` parses a server's policy keys with
//! [`ServerPolicy::from_map`] at load time into `ServerConfig::policy`.

use serde::Serialize;
use serde_json::{Map, Value};

use mcpmux_core::error::Error;
use mcpmux_core::internal::tool_names::HubTool;

/// The policy keys of one server entry, parsed and checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerPolicy {
    /// Original tool names or globs (`*`, `?`) the model may use.
    pub allow_tools: Vec<String>,
    /// Every tool is allowed (still minus `deny_tools` and the hint checks).
    pub allow_all: bool,
    /// Names or globs never offered, even when allowed above.
    pub deny_tools: Vec<String>,
    /// Names or globs of tools that may be offered although marked destructive.
    pub allow_destructive: Vec<String>,
    /// Names or globs of tools not marked read-only (annotated otherwise, or
    /// not at all) that the operator accepts; never a destructive one.
    pub confirm_read_only: Vec<String>,
    /// When not empty, the server is offered only in sessions with one of these scopes.
    pub scopes: Vec<String>,
    /// `pin_tools`: whether this server's tool definitions are pinned
    /// ([`crate::pins`]); `None` leaves it to the policy's settings.
    pub pin_tools: Option<bool>,
}

/// The config keys this module reads from a server entry.
pub const SERVER_KEYS: &[&str] = &[
    "allow_tools",
    "allow_all",
    "deny_tools",
    "allow_destructive",
    "confirm_read_only",
    "scopes",
    "pin_tools",
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
                    Value::String(s) if !globs && is_glob(s) => Err(err(
                        &format!("{field}[{i}]"),
                        &format!("must be an exact name, not a glob ('{s}')"),
                    )),
                    Value::String(s) if globs => match Glob::parse(s) {
                        Ok(_) => Ok(s.clone()),
                        Err(why) => Err(err(
                            &format!("{field}[{i}]"),
                            &format!("is not a valid glob ('{s}': {why})"),
                        )),
                    },
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
        let pin_tools = match entry.get("pin_tools") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(err("pin_tools", "must be true or false")),
        };
        Ok(ServerPolicy {
            pin_tools,
            allow_tools: list("allow_tools", true)?,
            allow_all,
            deny_tools: list("deny_tools", true)?,
            allow_destructive: list("allow_destructive", true)?,
            confirm_read_only: list("confirm_read_only", true)?,
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
        if matches_any(&self.deny_tools, name) {
            return Decision::Refused(Refusal::Denied);
        }
        if !(self.allow_all || matches_any(&self.allow_tools, name)) {
            return Decision::Refused(Refusal::NotAllowed);
        }
        let hint = |key: &str| {
            tool.annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
        };
        let destructive_ok = matches_any(&self.allow_destructive, name);
        if hint("destructiveHint") == Some(true) {
            if !destructive_ok {
                return Decision::Refused(Refusal::Destructive);
            }
        } else if hint("readOnlyHint") != Some(true)
            && !destructive_ok
            && !matches_any(&self.confirm_read_only, name)
        {
            return Decision::Refused(Refusal::NotReadOnly);
        }
        Decision::Offered
    }

    /// The decision under `--expose-all`: every tool is offered, whatever
    /// the allow lists and the server's annotations say, except those the
    /// operator explicitly keeps out (`scopes`, `deny_tools`).
    pub fn decide_exposing_all(&self, tool: &HubTool, scope: Option<&str>) -> Decision {
        if !self.in_scope(scope) {
            Decision::Refused(Refusal::OutOfScope)
        } else if matches_any(&self.deny_tools, &tool.tool) {
            Decision::Refused(Refusal::Denied)
        } else {
            Decision::Offered
        }
    }

    /// The globs (not exact names) of the tool lists that match none of
    /// `tools`, as `(key, glob)`: worth a mention, never an error.
    pub fn unmatched_globs<'a>(&'a self, tools: &[&str]) -> Vec<(&'static str, &'a str)> {
        [
            ("allow_tools", &self.allow_tools),
            ("deny_tools", &self.deny_tools),
            ("allow_destructive", &self.allow_destructive),
            ("confirm_read_only", &self.confirm_read_only),
        ]
        .into_iter()
        .flat_map(|(key, list)| {
            list.iter()
                .filter(|g| is_glob(g) && !tools.iter().any(|t| glob_match(g, t)))
                .map(move |g| (key, g.as_str()))
        })
        .collect()
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
    /// Not marked `readOnlyHint: true` (or not annotated at all) and not in
    /// `confirm_read_only`.
    NotReadOnly,
    /// The server is not in the config (or the tool is unknown).
    UnknownTool,
    /// Its definition changed since it was approved, or it is new on a
    /// server whose tools are pinned (`pin_tools`): quarantined.
    ToolChanged,
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
                "the server does not mark it read-only (no readOnlyHint: true) and it is not in 'confirm_read_only'"
            }
            Refusal::UnknownTool => "no such tool was offered in this session",
            Refusal::ToolChanged => {
                "its definition changed since it was approved, or it is new (pin_tools); \
                 approve it with 'mcpmux policy approve SERVER TOOL'"
            }
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

/// Whether `pattern` has any glob syntax (`*`, `?`, `[`).
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

fn matches_any(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|g| glob_match(g, name))
}

/// One element of a parsed glob.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Char(char),
    /// `?`
    One,
    /// `*`
    Star,
    /// `[...]`: inclusive ranges, negated with `[!...]` (or `[^...]`).
    Class(bool, Vec<(char, char)>),
}

impl Token {
    fn matches(&self, c: char) -> bool {
        match self {
            Token::Char(x) => *x == c,
            Token::One => true,
            Token::Star => false,
            Token::Class(negated, ranges) => {
                ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
            }
        }
    }
}

/// A glob over tool names, parsed once.
#[derive(Debug, Clone, PartialEq)]
pub struct Glob(Vec<Token>);

impl Glob {
    /// Parses `pattern`; a `[` without its `]`, an empty set (`[]`, `[!]`)
    /// or a backwards range (`[z-a]`) is an error saying so.
    pub fn parse(pattern: &str) -> Result<Glob, String> {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' => Token::Star,
                '?' => Token::One,
                '[' => {
                    let negated = matches!(chars.peek(), Some('!' | '^'));
                    if negated {
                        chars.next();
                    }
                    let mut ranges = Vec::new();
                    let mut closed = false;
                    // A `]` first in the set is a member, as in shells.
                    let mut first = true;
                    while let Some(c) = chars.next() {
                        if c == ']' && !first {
                            closed = true;
                            break;
                        }
                        first = false;
                        let mut lookahead = chars.clone();
                        if lookahead.next() == Some('-') {
                            if let Some(hi) = lookahead.next().filter(|&h| h != ']') {
                                if hi < c {
                                    return Err(format!("backwards range '{c}-{hi}'"));
                                }
                                chars.next();
                                chars.next();
                                ranges.push((c, hi));
                                continue;
                            }
                        }
                        ranges.push((c, c));
                    }
                    if !closed {
                        return Err("'[' without a closing ']'".into());
                    }
                    Token::Class(negated, ranges)
                }
                c => Token::Char(c),
            });
        }
        Ok(Glob(tokens))
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        let p = &self.0;
        let t: Vec<char> = text.chars().collect();
        let (mut pi, mut ti) = (0, 0);
        // Where the last `*` was, and the text position it currently covers up to.
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            if pi < p.len() && p[pi] != Token::Star && p[pi].matches(t[ti]) {
                pi += 1;
                ti += 1;
            } else if pi < p.len() && p[pi] == Token::Star {
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
        p[pi..].iter().all(|t| *t == Token::Star)
    }
}

/// Matches `text` against a glob: `*` is any run of characters, `?` one
/// character, `[...]` one character of a set (`[!...]`: not of it);
/// everything else matches itself. A pattern that does not parse (the load
/// refuses those) matches only itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    if !is_glob(pattern) {
        return pattern == text;
    }
    match Glob::parse(pattern) {
        Ok(glob) => glob.matches(text),
        Err(_) => pattern == text,
    }
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
    fn glob_sets_and_bad_globs() {
        assert!(glob_match("get_[abc]*", "get_birds"));
        assert!(!glob_match("get_[abc]*", "get_dogs"));
        assert!(glob_match("v[0-9]", "v7"));
        assert!(!glob_match("v[0-9]", "vx"));
        assert!(glob_match("[!_]*", "list"));
        assert!(!glob_match("[!_]*", "_private"));
        assert!(glob_match("[]x]", "]"));
        assert!(glob_match("a[-]b", "a-b"));
        assert!(glob_match("*", "anything_at_all"));
        for bad in ["read_[", "x[abc", "[z-a]", "[!"] {
            assert!(Glob::parse(bad).is_err(), "{bad}");
        }
        assert!(Glob::parse("plain_name").is_ok());
    }

    #[test]
    fn globs_in_every_list() {
        let plain = tool("run_query", None);
        let other = tool("write_note", Some(json!({"readOnlyHint": false})));
        let wipe = tool("drop_table", Some(json!({"destructiveHint": true})));
        let ro = tool("list_tables", Some(json!({"readOnlyHint": true})));
        let p = policy(json!({"allow_all": true, "confirm_read_only": ["*"]})).unwrap();
        assert_eq!(p.decide(&plain, None), Decision::Offered);
        assert_eq!(p.decide(&other, None), Decision::Offered);
        assert_eq!(p.decide(&ro, None), Decision::Offered);
        // `confirm_read_only = ["*"]` never covers a destructive tool.
        assert_eq!(
            p.decide(&wipe, None),
            Decision::Refused(Refusal::Destructive)
        );
        let p = policy(
            json!({"allow_tools": ["*_table*"], "allow_destructive": ["drop_*"],
            "confirm_read_only": ["run_*"]}),
        )
        .unwrap();
        assert_eq!(p.decide(&wipe, None), Decision::Offered);
        assert_eq!(p.decide(&ro, None), Decision::Offered);
        assert_eq!(
            p.decide(&plain, None),
            Decision::Refused(Refusal::NotAllowed)
        );
        // Globs that match nothing are fine, and reported.
        let p =
            policy(json!({"allow_tools": ["nothing_*", "exact"], "deny_tools": ["x?"]})).unwrap();
        assert_eq!(
            p.unmatched_globs(&["run_query"]),
            vec![("allow_tools", "nothing_*"), ("deny_tools", "x?")]
        );
    }

    #[test]
    fn expose_all_sets_lists_and_hints_aside_but_not_deny_or_scopes() {
        let wipe = tool("wipe", Some(json!({"destructiveHint": true})));
        let plain = tool("plain", None);
        let p = policy(json!({})).unwrap();
        assert_eq!(p.decide_exposing_all(&wipe, None), Decision::Offered);
        assert_eq!(p.decide_exposing_all(&plain, None), Decision::Offered);
        let p = policy(json!({"deny_tools": ["wi*"], "scopes": ["ci"]})).unwrap();
        assert_eq!(
            p.decide_exposing_all(&plain, None),
            Decision::Refused(Refusal::OutOfScope)
        );
        assert_eq!(
            p.decide_exposing_all(&wipe, Some("ci")),
            Decision::Refused(Refusal::Denied)
        );
        assert_eq!(p.decide_exposing_all(&plain, Some("ci")), Decision::Offered);
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
        assert!(policy(json!({"allow_destructive": ["rm_*"]})).is_ok());
        for key in [
            "allow_tools",
            "deny_tools",
            "allow_destructive",
            "confirm_read_only",
        ] {
            let e = policy(json!({ key: ["ok", "rm_[a"] })).unwrap_err();
            assert_eq!(e.code(), "CONFIG_INVALID");
            let m = e.to_string();
            assert!(
                m.contains("server 's'")
                    && m.contains(&format!("'{key}[1]'"))
                    && m.contains("not a valid glob"),
                "{m}"
            );
        }
        let m = policy(json!({"scopes": [""]})).unwrap_err().to_string();
        assert!(m.contains("'scopes[0]'") && m.contains("empty"), "{m}");
    }

    #[test]
    fn missing_exact_names() {
        let p = policy(json!({"allow_tools": ["a", "b*", "c"]})).unwrap();
        assert_eq!(p.missing_names(&["a", "bb"]), vec!["c"]);
    }
}
