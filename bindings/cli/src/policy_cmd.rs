//! `mcpmux policy [--scope S]`: what a review session's model would be
//! offered, per server — each tool offered or refused with the reason, and
//! the exact names in `allow_tools` that the server does not have.

use mcpmux_core::{Config, Error, Hub};
use mcpmux_policy::{PolicySettings, SessionPolicy};
use serde_json::Value;

/// The effective allow list as JSON (`--json` prints exactly this); the
/// bindings' `policy.report()` gives the same object.
pub async fn report(hub: &Hub, config: &Config, scope: Option<&str>) -> Result<Value, Error> {
    let settings = PolicySettings {
        scope: scope.map(str::to_owned),
        ..PolicySettings::default()
    };
    Ok(SessionPolicy::new(config, settings, None)?
        .report(hub)
        .await)
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
