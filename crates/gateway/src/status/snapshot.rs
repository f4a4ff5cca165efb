//! The status as one JSON document (`/status.json`, documented in
//! `docs/gateway.md`): built on demand from the hub, the policy, the board
//! and the open connections. The HTML page renders the same document.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use mcpmux_core::internal::secrets::redact;
use mcpmux_policy::audit::rfc3339;

use super::board;
use super::serve::Fleet;
use crate::Gateway;

/// Stderr lines shown per server.
const STDERR_LINES: usize = 10;
/// Version of the document's shape; bumped only when a field changes
/// meaning or goes away.
const SCHEMA_VERSION: u64 = 1;

fn at_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// The whole document.
pub(crate) fn build(gateway: &Gateway, fleet: &Fleet) -> Value {
    let now = SystemTime::now();
    json!({
        "version": SCHEMA_VERSION,
        "generated_at": rfc3339(now),
        "gateway": {
            "version": env!("CARGO_PKG_VERSION"),
            "transport": fleet.transport,
            "mode": match gateway.inner.options.mode {
                crate::GatewayMode::Full => "full",
                crate::GatewayMode::Search => "search",
            },
        },
        "fleet": {
            "replica": fleet.replica,
            "ready": fleet.ready.is_ok(),
            "reason": fleet.ready.as_ref().err(),
        },
        "servers": servers(gateway, now),
        "tools": tools(gateway),
        "calls": gateway.status_board().map(|b| b.calls()).unwrap_or_default(),
        "tool_stats": {
            "minutes": board::MINUTES,
            "bucket_bounds_ms": board::bucket_bounds(),
            "tools": gateway.status_board().map(|b| b.figures()).unwrap_or_default(),
        },
        "clients": clients(gateway),
    })
}

fn servers(gateway: &Gateway, now: SystemTime) -> Vec<Value> {
    let hub = gateway.hub();
    hub.servers()
        .into_iter()
        .map(|s| {
            let history = hub.server_history(&s.name).unwrap_or_default();
            let uptime_s = history
                .connected_at_ms
                .and_then(|ms| now.duration_since(at_ms(ms)).ok())
                .map(|d| d.as_secs());
            json!({
                "name": s.name,
                "type": s.transport,
                "state": s.state,
                "protocol_version": s.protocol_version,
                "tool_count": s.tool_count,
                "restarts": history.restarts,
                "connected_at": history.connected_at_ms.map(|ms| rfc3339(at_ms(ms))),
                "uptime_s": uptime_s,
                "next_try_at": history.next_try_at_ms.map(|ms| rfc3339(at_ms(ms))),
                "error": s.error.as_deref().map(|e| redact(e).into_owned()),
                "error_code": s.error_code,
                "stderr": hub.server_stderr(&s.name, STDERR_LINES),
            })
        })
        .collect()
}

fn tools(gateway: &Gateway) -> Vec<Value> {
    let hub = gateway.hub();
    let listed = hub.list_tools();
    let policy = &gateway.inner.policy;
    policy
        .verdicts(&listed)
        .into_iter()
        .zip(&listed)
        .map(|(verdict, tool)| {
            let quarantined = policy.pins().quarantine(&verdict.server, &verdict.tool);
            let decision = if verdict.offered {
                "offered"
            } else if quarantined.is_some() {
                "quarantined"
            } else {
                "refused"
            };
            let mut row = Map::new();
            row.insert("name".into(), verdict.name.clone().into());
            row.insert("shown_as".into(), gateway.shown_name(tool).into());
            row.insert("server".into(), verdict.server.clone().into());
            row.insert("tool".into(), verdict.tool.clone().into());
            row.insert("decision".into(), decision.into());
            row.insert("offered".into(), verdict.offered.into());
            row.insert("refusal".into(), json!(verdict.refusal));
            row.insert("reason".into(), json!(verdict.reason));
            row.insert("changes".into(), json!(quarantined));
            row.insert(
                "annotations".into(),
                tool.annotations.clone().unwrap_or(Value::Null),
            );
            row.insert(
                "schema_url".into(),
                format!("/status/tool?name={}", query_escape(&verdict.name)).into(),
            );
            Value::Object(row)
        })
        .collect()
}

fn clients(gateway: &Gateway) -> Value {
    let open = gateway.inner.clients.open();
    let mut by_revision: BTreeMap<String, u64> = BTreeMap::new();
    for c in &open {
        let revision = c.revision();
        let revision = if revision.is_empty() {
            "(initializing)".to_owned()
        } else {
            revision
        };
        *by_revision.entry(revision).or_default() += 1;
    }
    let list: Vec<Value> = open
        .iter()
        .take(super::MAX_CLIENTS_LISTED)
        .map(|c| {
            let (held, bound) = c.held();
            json!({
                "id": format!("c{}", c.id()),
                "revision": c.revision(),
                "held_bytes": held,
                "budget_bytes": bound,
            })
        })
        .collect();
    json!({
        "open": open.len(),
        "by_revision": by_revision,
        "list": list,
        "held_bytes": gateway.held_bytes(),
        "total_budget_bytes": gateway.inner.options.total_budget_bytes,
    })
}

/// `text` for a URL's query: every byte but unreserved ones percent-encoded.
pub(crate) fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query value percent-decoded (`+` as a space); `None` when it is not
/// UTF-8.
pub(crate) fn query_unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The value of `key` in a query string (`a=1&b=2`), decoded.
pub(crate) fn query_param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (query_unescape(k)? == key)
            .then(|| query_unescape(v))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_round_trip() {
        for text in ["mcp_a_b", "x y/z?&=%", "é"] {
            let q = format!("name={}&other=1", query_escape(text));
            assert_eq!(query_param(&q, "name").as_deref(), Some(text));
        }
        assert_eq!(query_param("a=1+2", "a").as_deref(), Some("1 2"));
        assert_eq!(query_param("a=%4", "a"), None);
        assert_eq!(query_param("a=%ZZ", "a"), None);
        assert_eq!(query_param("b=1", "a"), None);
    }
}
