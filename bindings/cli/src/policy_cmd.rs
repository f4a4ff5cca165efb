//! `mcpmux policy [--scope S]`: what a review session's model would be
//! offered, per server — each tool offered or refused with the reason, the
//! exact names in `allow_tools` that the server does not have, and each
//! pinned tool's status (pinned, changed, new, removed).
//!
//! `mcpmux policy approve [SERVER] [TOOL...]` approves the definitions the
//! servers list now (`--list` shows the pins and what changed, `--revoke`
//! forgets them). Review sessions pin by default, so these commands do too.

use clap::Subcommand;
use mcpmux_core::{Config, Error, Hub};
use mcpmux_policy::{PolicySettings, SessionPolicy};
use serde_json::{json, Value};

/// What `mcpmux policy` does besides its report.
#[derive(Subcommand, Debug, Clone)]
pub enum PolicyAction {
    /// Approve the tool definitions servers list now (pin_tools): quarantined tools become callable. No SERVER: every pinned server; no TOOL: every tool of SERVER.
    Approve {
        /// The server (default: every server whose tools are pinned).
        server: Option<String>,
        /// Its tools (default: all it lists now).
        tools: Vec<String>,
        /// Show each tool's pin status and what changed; approve nothing.
        #[arg(long, conflicts_with = "revoke")]
        list: bool,
        /// Forget the pins instead: a server without pins is pinned again as it is when next seen; a tool without a pin is quarantined as new.
        #[arg(long)]
        revoke: bool,
    },
}

/// The policy a review session would have: `scope`, and pinning on unless
/// the config turns it off.
fn session_policy(config: &Config, scope: Option<&str>) -> Result<SessionPolicy, Error> {
    let settings = PolicySettings {
        scope: scope.map(str::to_owned),
        ..PolicySettings::default()
    };
    let base = PolicySettings::from_session_table(
        &config.session,
        &config
            .source
            .as_ref()
            .map_or_else(|| "config".to_owned(), |p| p.display().to_string()),
    )?;
    let mut policy = SessionPolicy::new(config, base.overlay(&settings), None)?;
    policy.set_pin_default(true);
    Ok(policy)
}

/// The effective allow list as JSON (`--json` prints exactly this); the
/// bindings' `policy.report()` gives the same object.
pub async fn report(hub: &Hub, config: &Config, scope: Option<&str>) -> Result<Value, Error> {
    Ok(session_policy(config, scope)?.report(hub).await)
}

/// Runs `approve` (or `--list`, `--revoke`); the JSON it prints with `--json`.
pub fn act(
    hub: &Hub,
    config: &Config,
    scope: Option<&str>,
    action: &PolicyAction,
) -> Result<Value, Error> {
    let policy = session_policy(config, scope)?;
    let PolicyAction::Approve {
        server,
        tools,
        list,
        revoke,
    } = action;
    let server = server.as_deref();
    let pairs = |v: Vec<(String, String)>| -> Vec<Value> {
        v.into_iter()
            .map(|(s, t)| json!({"server": s, "tool": t}))
            .collect()
    };
    let store = policy
        .pins()
        .location()
        .map(|(p, key)| json!({"path": p.display().to_string(), "key": key}));
    Ok(if *list {
        json!({"store": store, "pins": policy.pin_report(hub, server)?})
    } else if *revoke {
        json!({"store": store, "revoked": pairs(policy.revoke_pins(hub, server, tools)?)})
    } else {
        json!({"store": store, "approved": pairs(policy.approve_tools(hub, server, tools)?)})
    })
}

/// [`act`]'s answer for people.
pub fn human_action(out: &Value) -> String {
    let mut lines = Vec::new();
    let pair = |v: &Value| {
        format!(
            "{} {}",
            v["server"].as_str().unwrap_or(""),
            v["tool"].as_str().unwrap_or("")
        )
    };
    for (key, verb) in [("approved", "approved"), ("revoked", "revoked ")] {
        if let Some(rows) = out[key].as_array() {
            if rows.is_empty() {
                lines.push(format!("nothing {}", verb.trim()));
            }
            lines.extend(rows.iter().map(|r| format!("{verb}  {}", pair(r))));
        }
    }
    for p in out["pins"].as_array().into_iter().flatten() {
        lines.push(format!(
            "{:<8} {}",
            p["status"].as_str().unwrap_or(""),
            pair(p)
        ));
        lines.extend(change_lines(&p["changes"]));
    }
    if let Some(path) = out["store"]["path"].as_str() {
        lines.push(format!("pin store: {path}"));
    } else {
        lines.push("pin store: none (the config has no file): pins last for this run".into());
    }
    lines.join("\n")
}

/// What changed in a pinned tool, indented: the fields, the description's
/// differing part, schema paths added, removed or changed.
fn change_lines(changes: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if changes.is_null() {
        return out;
    }
    let list = |k: &str| -> Vec<String> {
        changes[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    out.push(format!("           changed: {}", list("fields").join(", ")));
    if let Some(d) = changes.get("description") {
        out.push(format!(
            "           description was: {}",
            d["before"].as_str().unwrap_or("")
        ));
        out.push(format!(
            "           description now: {}",
            d["after"].as_str().unwrap_or("")
        ));
    }
    for (k, label) in [
        ("added", "added"),
        ("removed", "removed"),
        ("changed", "changed"),
    ] {
        for p in list(k) {
            out.push(format!("           {label:<7} {p}"));
        }
    }
    out
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
        for t in rows("pins") {
            let status = t["status"].as_str().unwrap_or("");
            if status != "pinned" {
                out.push_str(&format!(
                    "\n  {status:<8} {}  (pin_tools; mcpmux policy approve --list)",
                    t["tool"].as_str().unwrap_or("")
                ));
            }
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
