//! The keys mcpmux reads in each part of a config file, and the check that
//! makes any other key a `CONFIG_INVALID` error naming it and the nearest
//! known key: a typo (`timeout_secs`, `[mcp.servers.headezs]`) must fail at
//! load time instead of being silently ignored.
//!
//! JSON `mcpServers` entries are shared with other MCP clients, so the keys
//! those clients write ([`MCP_SERVERS_COMPAT`]) are accepted there too.

use serde_json::{Map, Value};

/// Top-level keys of a TOML config. (A JSON file's other top-level keys
/// belong to the other clients that read the same file and are ignored.)
pub(super) const TOP_LEVEL: &[&str] = &[
    "mcp",
    "mcpServers",
    "session",
    "telemetry",
    "network",
    "gateway",
    "policy",
];

/// Keys of the `[mcp]` table.
pub(super) const MCP: &[&str] = &["servers", "timeout_seconds", "max_message_bytes"];

/// Keys of one server entry that the engine reads (the keys of the
/// registered config layers, `super::layers`, are accepted as well, and so are
/// the supervision keys of `super::supervision::KEYS`, also allowed in
/// `[mcp]` as defaults: `restart`, `max_restarts`,
/// `restart_window_seconds`, `ping_interval_seconds`, `log_level`, and
/// `lazy` (start the server on first use instead of at connect)).
pub(super) const SERVER: &[&str] = &[
    "name",
    "type",
    "transport",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "enabled",
    "disabled",
    "timeout_seconds",
    "max_total_timeout_seconds",
    "max_message_bytes",
    "protocol_version",
    "auth",
];

/// Keys other MCP clients write in `mcpServers` entries. `transportType` is
/// read as `type` when neither `type` nor `transport` is given; the others
/// are ignored: `autoApprove`/`alwaysAllow` are another client's approval
/// lists (mcpmux's are `allow_tools` and friends) and `timeout` is in
/// seconds for some clients and milliseconds for others
/// (`timeout_seconds` is mcpmux's).
pub(super) const MCP_SERVERS_COMPAT: &[&str] =
    &["autoApprove", "alwaysAllow", "timeout", "transportType"];

/// The first key of `table` that is in none of `known`, as a message
/// `unknown key 'k' (did you mean 'x'?)`.
pub(super) fn unknown(table: &Map<String, Value>, known: &[&[&str]]) -> Option<String> {
    let is_known = |k: &str| known.iter().any(|list| list.contains(&k));
    let key = table.keys().find(|k| !is_known(k))?;
    let hint = crate::spelling::nearest(key, known.iter().flat_map(|l| l.iter().copied()))
        .map(|k| format!(" (did you mean '{k}'?)"))
        .unwrap_or_default();
    Some(format!("unknown key '{key}'{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value, known: &[&[&str]]) -> Option<String> {
        unknown(v.as_object().unwrap(), known)
    }

    #[test]
    fn typos_get_the_nearest_key() {
        let m = check(json!({"name": "a", "timeout_secs": 5}), &[SERVER]).unwrap();
        assert_eq!(
            m,
            "unknown key 'timeout_secs' (did you mean 'timeout_seconds'?)"
        );
        let m = check(json!({"headezs": {}}), &[SERVER]).unwrap();
        assert!(m.contains("did you mean 'headers'"), "{m}");
        let m = check(json!({"sersers": []}), &[MCP]).unwrap();
        assert!(m.contains("did you mean 'servers'"), "{m}");
        let m = check(json!({"Allow_Tool": []}), &[SERVER, &["allow_tools"]]).unwrap();
        assert!(m.contains("did you mean 'allow_tools'"), "{m}");
    }

    #[test]
    fn far_keys_get_no_hint_and_known_keys_pass() {
        let m = check(json!({"zzzzzz": 1}), &[SERVER]).unwrap();
        assert_eq!(m, "unknown key 'zzzzzz'");
        assert_eq!(check(json!({"name": "a", "url": "x"}), &[SERVER]), None);
        assert_eq!(
            check(json!({"autoApprove": []}), &[SERVER, MCP_SERVERS_COMPAT]),
            None
        );
    }
}
