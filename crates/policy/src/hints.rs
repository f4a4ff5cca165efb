//! What a front end (`mcpmux gateway`) says at start about the policy:
//! which enabled servers offer nothing and the exact keys that would offer
//! their tools, written in the config's own syntax (`"allow_all": true` to
//! `mcpServers.<name>` in a JSON file, `allow_all = true` to the
//! `[[mcp.servers]]` entry in a TOML one); the rule for tools without a
//! read-only annotation, once, when it applies; and, under `--expose-all`,
//! what that flag did. One line per server at most, plus a summary line.

use std::collections::BTreeSet;

use serde_json::Value;

use super::rules::{Decision, Refusal, ServerPolicy};
use super::SessionPolicy;
use mcpmux_core::config::{Config, EntrySyntax, ServerConfig};
use mcpmux_core::hub::HubTool;

/// Names listed in a suggested key before a glob or `allow_all` is
/// suggested instead.
const MAX_NAMES: usize = 8;

/// The notes, one line each (without the front end's own prefix).
/// `listed` is every tool the hub lists, `offered` what the policy offers.
pub fn startup_notes(
    policy: &SessionPolicy,
    config: &Config,
    listed: &[HubTool],
    offered: &[HubTool],
) -> Vec<String> {
    let enabled: Vec<&ServerConfig> = config.servers.iter().filter(|s| s.enabled).collect();
    let mine = |s: &ServerConfig| -> Vec<&HubTool> {
        listed.iter().filter(|t| t.server == s.name).collect()
    };
    let mut notes = Vec::new();
    if policy.settings().expose_all {
        let servers: BTreeSet<&str> = offered.iter().map(|t| t.server.as_str()).collect();
        let withheld = enabled
            .iter()
            .flat_map(|s| mine(s))
            .filter(|t| !offered.iter().any(|o| o.name == t.name))
            .count();
        let all = if withheld == 0 { "all " } else { "" };
        let mut note = format!(
            "--expose-all: offering {all}{} of {} (policy allow lists and annotation checks off: allow_tools, allow_all, confirm_read_only and allow_destructive are not consulted; redaction, limits, --frame-output framing and --audit still on)",
            count(offered.len(), "tool"),
            count(servers.len(), "server")
        );
        if withheld > 0 {
            note.push_str(&format!(
                "; {} withheld by deny_tools or scopes",
                count(withheld, "tool")
            ));
        }
        notes.push(note);
        return notes;
    }
    let scope = policy.settings().scope.as_deref();
    let mut quiet = 0;
    let mut not_read_only: Vec<(&str, &str)> = Vec::new();
    let mut json = false;
    for server in &enabled {
        let tools = mine(server);
        json |= server.written_as.json;
        // Checked at load time; a config built by hand without them has none.
        let rules = &ServerPolicy::from_server(server, "config").unwrap_or_default();
        let names: Vec<&str> = tools.iter().map(|t| t.tool.as_str()).collect();
        let offers_some = offered.iter().any(|t| t.server == server.name);
        // What `allow_all` alone would leave out: not marked read-only.
        let trial = ServerPolicy {
            allow_all: true,
            ..rules.clone()
        };
        for t in &tools {
            if trial.decide(t, scope) == Decision::Refused(Refusal::NotReadOnly)
                && !offered.iter().any(|o| o.name == t.name)
            {
                not_read_only.push((&t.tool, &server.name));
            }
        }
        if !tools.is_empty() && !offers_some {
            quiet += 1;
            notes.push(server_hint(server, &tools, &trial, scope));
        }
        if !tools.is_empty() {
            let unmatched = rules.unmatched_globs(&names);
            if !unmatched.is_empty() {
                let list: Vec<String> = unmatched
                    .iter()
                    .map(|(key, glob)| format!("'{glob}' in {key}"))
                    .collect();
                notes.push(format!(
                    "server '{}': {} {} none of its tools",
                    server.name,
                    list.join(", "),
                    if list.len() == 1 { "matches" } else { "match" }
                ));
            }
        }
    }
    if !not_read_only.is_empty() {
        let example: Vec<String> = not_read_only
            .iter()
            .take(3)
            .map(|(tool, server)| format!("'{tool}' of {server}"))
            .collect();
        notes.push(format!(
            "{} ({}{}) {} no readOnlyHint: true annotation (annotated otherwise or not at all), so the policy does not treat them as read-only and allow_all or allow_tools alone does not offer them; list them in confirm_read_only, by name or glob (e.g. {}); tools marked destructiveHint: true need allow_destructive instead",
            count(not_read_only.len(), "tool"),
            example.join(", "),
            if not_read_only.len() > 3 { ", ..." } else { "" },
            if not_read_only.len() == 1 { "has" } else { "have" },
            key_value(json, "confirm_read_only", &star()),
        ));
    }
    if quiet > 0 {
        notes.push(format!(
            "{quiet} of {} enabled servers offer no tools under the policy (see above); or run `mcpmux gateway --expose-all` to offer every tool of every enabled server (redaction and audit still on)",
            enabled.len()
        ));
    }
    notes
}

/// `1 tool`, `2 tools`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A suggested value: `true` or a list of names.
enum Suggested {
    True,
    Names(Vec<String>),
}

/// `["*"]`: every tool of the server.
fn star() -> Suggested {
    Suggested::Names(vec!["*".to_owned()])
}

/// `"key": value` (JSON) or `key = value` (TOML).
fn key_value(json: bool, key: &str, value: &Suggested) -> String {
    let value = match value {
        Suggested::True => "true".to_owned(),
        Suggested::Names(names) => {
            let items: Vec<String> = names
                .iter()
                .map(|n| Value::String(n.clone()).to_string())
                .collect();
            format!("[{}]", items.join(", "))
        }
    };
    if json {
        format!("\"{key}\": {value}")
    } else {
        format!("{key} = {value}")
    }
}

/// Where to add keys to the entry of `name`, in its own syntax.
fn entry_place(syntax: EntrySyntax, name: &str) -> String {
    let quoted = Value::String(name.to_owned()).to_string();
    match (syntax.json, syntax.mcp_servers) {
        (true, true) => format!("mcpServers.{name}"),
        (true, false) => format!("its \"mcp\": {{\"servers\": [...]}} entry (\"name\": {quoted})"),
        (false, true) => format!("[mcpServers.{name}]"),
        (false, false) => format!("its [[mcp.servers]] entry (name = {quoted})"),
    }
}

/// The names themselves when few, else a glob or `allow_all`.
fn names_or(names: &[&str], many: Suggested) -> Suggested {
    if names.len() <= MAX_NAMES {
        Suggested::Names(names.iter().map(|n| (*n).to_owned()).collect())
    } else {
        many
    }
}

/// One server offering none of its tools: why, and the keys that would
/// offer them.
fn server_hint(
    server: &ServerConfig,
    tools: &[&HubTool],
    trial: &ServerPolicy,
    scope: Option<&str>,
) -> String {
    let name = &server.name;
    let json = server.written_as.json;
    let rules = ServerPolicy::from_server(server, "config").unwrap_or_default();
    let head = format!(
        "server '{name}' offers none of its {} under the policy",
        count(tools.len(), "tool")
    );
    if !trial.in_scope(scope) {
        return format!(
            "{head}: it is out of this gateway's scope (its scopes: {}); run with --scope {}",
            trial.scopes.join(", "),
            trial.scopes.first().map_or("", String::as_str)
        );
    }
    let mut read_only = Vec::new();
    let mut plain = Vec::new();
    let mut destructive = Vec::new();
    let mut denied = 0;
    for t in tools {
        match trial.decide(t, scope) {
            Decision::Refused(Refusal::Denied) => denied += 1,
            Decision::Refused(Refusal::NotReadOnly) => plain.push(t.tool.as_str()),
            Decision::Refused(Refusal::Destructive) => destructive.push(t.tool.as_str()),
            // Offered once allowed (read-only, or already confirmed).
            _ => read_only.push(t.tool.as_str()),
        }
    }
    if read_only.is_empty() && plain.is_empty() && destructive.is_empty() {
        return format!("{head}: deny_tools matches every one of them");
    }
    let mut keys: Vec<String> = Vec::new();
    let wanted: Vec<&str> = if read_only.is_empty() && plain.is_empty() {
        destructive.clone()
    } else {
        read_only.iter().chain(&plain).copied().collect()
    };
    let not_allowed: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|n| !allowed_by_list(&rules, n))
        .collect();
    let mut listed_by_name = false;
    if !rules.allow_all && !not_allowed.is_empty() {
        keys.push(match names_or(&not_allowed, Suggested::True) {
            Suggested::True => key_value(json, "allow_all", &Suggested::True),
            names => {
                listed_by_name = true;
                key_value(json, "allow_tools", &names)
            }
        });
    }
    if !plain.is_empty() {
        let value = if read_only.is_empty() {
            star()
        } else {
            names_or(&plain, star())
        };
        keys.push(key_value(json, "confirm_read_only", &value));
    }
    let destructive_value = names_or(&destructive, star());
    if read_only.is_empty() && plain.is_empty() {
        keys.push(key_value(json, "allow_destructive", &destructive_value));
    }
    let joiner = if json { ", " } else { " and " };
    let denied = if denied > 0 {
        format!(", {denied} in deny_tools")
    } else {
        String::new()
    };
    let mut line = format!(
        "{head} ({} marked read-only, {} not marked read-only, {} marked destructive{denied}); to offer them add {} to {}",
        read_only.len(),
        plain.len(),
        destructive.len(),
        keys.join(joiner),
        entry_place(server.written_as, name)
    );
    let others = !(read_only.is_empty() && plain.is_empty());
    if !destructive.is_empty() && others {
        let allowed_too = if listed_by_name {
            "list them in allow_tools as well and "
        } else {
            ""
        };
        line.push_str(&format!(
            " (to offer its destructive ones too, {allowed_too}add {})",
            key_value(json, "allow_destructive", &destructive_value)
        ));
    }
    line
}

/// Whether `allow_tools` already lets `name` through.
fn allowed_by_list(rules: &ServerPolicy, name: &str) -> bool {
    rules
        .allow_tools
        .iter()
        .any(|g| super::rules::glob_match(g, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(server: &str, name: &str, annotations: Option<Value>) -> HubTool {
        HubTool {
            name: format!("mcp_{server}_{name}"),
            server: server.into(),
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

    fn notes(config: &str, tools: &[HubTool], expose_all: bool) -> Vec<String> {
        crate::register_config_layer();
        let config = Config::parse(config).unwrap();
        let mut policy = SessionPolicy::new(&config, Default::default(), None).unwrap();
        policy.set_expose_all(expose_all);
        let offered = policy.offered(tools);
        startup_notes(&policy, &config, tools, &offered)
    }

    fn sqlite_tools() -> Vec<HubTool> {
        vec![
            tool("sqlite", "read_query", None),
            tool("sqlite", "list_tables", None),
            tool("calc", "add", None),
            tool("fs", "read_file", Some(json!({"readOnlyHint": true}))),
            tool("fs", "delete", Some(json!({"destructiveHint": true}))),
        ]
    }

    const JSON: &str = r#"{"mcpServers": {
        "sqlite": {"command": "x"},
        "calc": {"command": "x", "allow_all": true},
        "fs": {"command": "x", "allow_tools": ["nope_*"]}}}"#;

    #[test]
    fn a_json_config_gets_json_hints_naming_the_entry_and_the_key() {
        let n = notes(JSON, &sqlite_tools(), false);
        let text = n.join("\n");
        assert!(
            n.iter().any(|l| l.contains("server 'sqlite'")
                && l.contains(r#"add "allow_tools": ["read_query", "list_tables"], "confirm_read_only": ["*"] to mcpServers.sqlite"#)),
            "{text}"
        );
        // allow_all is set and does not offer them: the key that would.
        assert!(
            n.iter().any(|l| l.contains("server 'calc'")
                && l.contains(r#"add "confirm_read_only": ["*"] to mcpServers.calc"#)
                && !l.contains("allow_all")),
            "{text}"
        );
        assert!(
            n.iter().any(|l| l.contains("server 'fs'")
                && l.contains(r#""allow_tools": ["read_file"] to mcpServers.fs"#)
                && l.contains(r#""allow_destructive": ["delete"]"#)),
            "{text}"
        );
        assert!(
            text.contains("'nope_*' in allow_tools matches none"),
            "{text}"
        );
        assert!(text.contains("no readOnlyHint: true"), "{text}");
        assert!(text.contains("--expose-all"), "{text}");
        assert!(!text.contains(" = "), "TOML syntax in a JSON hint: {text}");
        // Bounded: one line per server, the rule, the glob and the summary.
        assert_eq!(n.len(), 6, "{text}");
    }

    #[test]
    fn a_toml_config_gets_toml_hints() {
        let n = notes(
            "[[mcp.servers]]\nname = \"sqlite\"\ncommand = \"x\"\n",
            &sqlite_tools()[..2],
            false,
        );
        assert!(
            n[0].contains(r#"add allow_tools = ["read_query", "list_tables"] and confirm_read_only = ["*"] to its [[mcp.servers]] entry (name = "sqlite")"#),
            "{n:?}"
        );
    }

    #[test]
    fn expose_all_says_what_it_did() {
        let n = notes(JSON, &sqlite_tools(), true);
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].starts_with("--expose-all: offering all 5 tools of 3 servers"),
            "{n:?}"
        );
    }
}
