//! Policies built by hosts through a binding or the C ABI: settings given
//! as JSON over the config's `[session]` table, and the effective allow
//! list as JSON (the shape `mcpmux policy --json` prints).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{PolicySettings, SessionPolicy};
use mcpmux_core::config::Config;
use mcpmux_core::error::Error;
use mcpmux_core::hub::{Hub, HubTool};

/// The keys a host may set (the policy keys of `[session]`).
pub const SETTING_KEYS: [&str; 6] = [
    "scope",
    "max_tool_calls",
    "call_timeout_seconds",
    "max_output_bytes",
    "redact",
    "pin_tools",
];

impl SessionPolicy {
    /// A host's policy for `config`: its `[session]` table, with every key
    /// of `settings` (a JSON object of [`SETTING_KEYS`]; `null` values are
    /// unset) put over it. Audit lines go to `audit_path` when given.
    /// An unknown key or a bad value is `INVALID_INPUT` naming the field.
    pub fn from_json(
        config: &Config,
        settings: Option<&Value>,
        audit_path: Option<PathBuf>,
    ) -> Result<SessionPolicy, Error> {
        let origin = config
            .source
            .as_ref()
            .map_or_else(|| "config".to_owned(), |p| p.display().to_string());
        let base = PolicySettings::from_session_table(&config.session, &origin)?;
        let over = match settings {
            None | Some(Value::Null) => PolicySettings::default(),
            Some(Value::Object(map)) => {
                if let Some(k) = map.keys().find(|k| !SETTING_KEYS.contains(&k.as_str())) {
                    let hint = mcpmux_core::contract::nearest_name(k, SETTING_KEYS)
                        .map(|n| format!("did you mean '{n}'? "))
                        .unwrap_or_default();
                    return Err(Error::InvalidInput(format!(
                        "policy settings: unknown key '{k}' ({hint}expected one of {})",
                        SETTING_KEYS.join(", ")
                    )));
                }
                PolicySettings::from_session_table(map, "policy settings").map_err(|e| match e {
                    Error::ConfigInvalid(m) => Error::InvalidInput(m),
                    other => other,
                })?
            }
            Some(_) => {
                return Err(Error::InvalidInput(
                    "policy settings must be a JSON object".to_owned(),
                ))
            }
        };
        SessionPolicy::new(config, base.overlay(&over), audit_path)
    }

    /// A host's policy for the config `hub` was connected with, bound to
    /// that hub: calls and refreshes on another hub are refused
    /// ([`SessionPolicy::check_hub`]). See [`SessionPolicy::from_json`].
    pub fn for_hub(
        hub: &Hub,
        settings: Option<&Value>,
        audit_path: Option<PathBuf>,
    ) -> Result<SessionPolicy, Error> {
        let mut policy = SessionPolicy::from_json(&hub.config(), settings, audit_path)?;
        policy.hub_id = Some(hub.id());
        policy.events = mcpmux_core::client::ToolRouter::event_sender(hub);
        Ok(policy)
    }

    /// The effective allow list per server under this policy's scope:
    /// `{"scope", "servers": [{"name", "state", "scopes", "in_scope",
    /// "offered": [hub names], "refused": [verdicts], "missing": [names],
    /// "pinned": bool, "pins": [pin rows] or null}]}`,
    /// the shape `mcpmux policy --json` prints.
    pub async fn report(&self, hub: &Hub) -> Value {
        let scope = self.settings.scope.as_deref();
        let tools = hub.list_tools();
        let verdicts = self.verdicts(&tools);
        let servers: Vec<Value> = hub
            .servers()
            .iter()
            .map(|s| {
                let rules = self.server_policy(&s.name).cloned().unwrap_or_default();
                let mine: Vec<_> = verdicts.iter().filter(|v| v.server == s.name).collect();
                let names: Vec<&str> = mine.iter().map(|v| v.tool.as_str()).collect();
                let pins = if self.pins_server(&s.name) {
                    let mine: Vec<HubTool> = tools
                        .iter()
                        .filter(|t| t.server == s.name)
                        .cloned()
                        .collect();
                    serde_json::to_value(self.pins().report(&s.name, &mine)).unwrap_or_default()
                } else {
                    Value::Null
                };
                let missing = if s.state == "connected" {
                    rules.missing_names(&names)
                } else {
                    Vec::new()
                };
                json!({
                    "name": s.name,
                    "state": s.state,
                    "scopes": rules.scopes,
                    "in_scope": rules.in_scope(scope),
                    "offered": mine.iter().filter(|v| v.offered).map(|v| &v.name).collect::<Vec<_>>(),
                    "refused": mine.iter().filter(|v| !v.offered).collect::<Vec<_>>(),
                    "missing": missing,
                    "pinned": self.pins_server(&s.name),
                    "pins": pins,
                })
            })
            .collect();
        json!({ "scope": scope, "servers": servers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_options_of_the_contract_are_the_setting_keys() {
        assert_eq!(
            mcpmux_core::contract::fields("policy_options").unwrap(),
            SETTING_KEYS
        );
    }

    fn config() -> Config {
        crate::register_config_layer();
        Config::parse(
            "[session]\nmax_tool_calls = 3\nscope = \"a\"\n\
             [[mcp.servers]]\nname = \"s\"\ncommand = \"x\"\nallow_tools = [\"echo\"]\n",
        )
        .unwrap()
    }

    #[test]
    fn settings_overlay_the_session_table() {
        let p = SessionPolicy::from_json(&config(), None, None).unwrap();
        assert_eq!(p.settings().max_tool_calls, Some(3));
        let over = json!({"max_tool_calls": 1, "max_output_bytes": 10, "scope": null});
        let p = SessionPolicy::from_json(&config(), Some(&over), None).unwrap();
        let s = p.settings();
        assert_eq!(
            (s.max_tool_calls, s.max_output_bytes, s.scope.as_deref()),
            (Some(1), Some(10), Some("a"))
        );
    }

    #[test]
    fn bad_settings_name_the_field() {
        for (v, needle) in [
            (json!({"max_tool_call": 1}), "'max_tool_call'"),
            (json!({"max_tool_calls": -1}), "'max_tool_calls'"),
            (json!([1]), "JSON object"),
        ] {
            let e = SessionPolicy::from_json(&config(), Some(&v), None).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT");
            assert!(e.to_string().contains(needle), "{e}");
        }
    }
}
