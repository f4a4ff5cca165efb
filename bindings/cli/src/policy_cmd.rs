//! `mcpmux policy [--scope S]`: what a review session's model would be
//! offered, per server — each tool offered or refused with the reason, and
//! the exact names in `allow_tools` that the server does not have.

use mcpmux_core::policy::{PolicySettings, SessionPolicy};
use mcpmux_core::{Config, Error, Hub};
use serde_json::{json, Value};

/// The effective allow list as JSON (`--json` prints exactly this).
pub async fn report(hub: &Hub, config: &Config, scope: Option<&str>) -> Result<Value, Error> {
    let settings = PolicySettings {
        scope: scope.map(str::to_owned),
        ..PolicySettings::default()
    };
    let policy = SessionPolicy::new(config, settings, None)?;
    let verdicts = policy.verdicts(&hub.list_tools().await);
    let servers: Vec<Value> = hub
        .servers()
        .iter()
        .map(|s| {
            let rules = policy.server_policy(&s.name).cloned().unwrap_or_default();
            let mine: Vec<_> = verdicts.iter().filter(|v| v.server == s.name).collect();
            let names: Vec<&str> = mine.iter().map(|v| v.tool.as_str()).collect();
            json!({
                "name": s.name,
                "state": s.state,
                "scopes": rules.scopes,
                "in_scope": rules.in_scope(scope),
                "offered": mine.iter().filter(|v| v.offered).map(|v| &v.name).collect::<Vec<_>>(),
                "refused": mine.iter().filter(|v| !v.offered).collect::<Vec<_>>(),
                "missing": if s.state == "connected" { rules.missing_names(&names) } else { Vec::new() },
            })
        })
        .collect();
    Ok(json!({ "scope": scope, "servers": servers }))
}

/// The same report for people.
pub fn human(report: &Value) -> String {
    let mut out = format!("scope: {}", report["scope"].as_str().unwrap_or("(none)"));
    for s in report["servers"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or("");
        out.push_str(&format!("\n{name} ({})", s["state"].as_str().unwrap_or("")));
        if s["in_scope"] == false {
            let scopes: Vec<&str> = s["scopes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            out.push_str(&format!(" — out of scope (scopes: {})", scopes.join(", ")));
        }
        let rows = |key: &str| s[key].as_array().cloned().unwrap_or_default();
        for t in rows("offered") {
            out.push_str(&format!("\n  offered  {}", t.as_str().unwrap_or("")));
        }
        for t in rows("refused") {
            out.push_str(&format!(
                "\n  refused  {}  ({})",
                t["name"].as_str().unwrap_or(""),
                t["reason"].as_str().unwrap_or("")
            ));
        }
        for t in rows("missing") {
            out.push_str(&format!(
                "\n  missing  {}  (in allow_tools, not offered by the server)",
                t.as_str().unwrap_or("")
            ));
        }
    }
    out
}
