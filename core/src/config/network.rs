//! The `[network]` table (JSON: a top-level `"network"` object): where
//! mcpmux may connect (`deny_private`, `allow_networks`, `require_https`),
//! read into a [`NetworkPolicy`]. Checked at load: unknown keys (with the
//! nearest known one), types, every network in `allow_networks`.

use serde_json::Value;

use super::keys;
use super::Ctx;
use crate::error::Error;
use crate::net::policy::{parse_networks, NetworkPolicy};

/// Keys of the `[network]` table.
pub(super) const KEYS: &[&str] = &["deny_private", "allow_networks", "require_https"];

/// The table as a policy; the default (refusing nothing) when absent.
pub(super) fn read(ctx: &Ctx<'_>, value: Option<&Value>) -> Result<NetworkPolicy, Error> {
    let table = match value {
        None => return Ok(NetworkPolicy::default()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(ctx.err("'network' must be a table")),
    };
    if let Some(m) = keys::unknown(table, &[KEYS]) {
        return Err(ctx.err(format!("[network]: {m}")));
    }
    let flag = |key: &str| match table.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ctx.err(format!("[network]: '{key}' must be true or false"))),
    };
    let entries: Vec<String> = match table.get("allow_networks") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => ctx
                    .expand(s, "network", &format!("allow_networks[{i}]"))
                    .map_err(|e| match e {
                        // `expand` names a server's field; this is a table's.
                        Error::ConfigInvalid(m) => Error::ConfigInvalid(m.replacen(
                            "server 'network': field '",
                            "[network]: field '",
                            1,
                        )),
                        other => other,
                    }),
                _ => Err(ctx.err(format!(
                    "[network]: allow_networks[{i}] must be a string (an address or a network such as \"10.1.2.0/24\")"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ctx.err(
                "[network]: 'allow_networks' must be an array of strings (e.g. [\"10.1.2.0/24\"])",
            ))
        }
    };
    let networks = parse_networks(&entries, "[network]: allow_networks").map_err(|m| ctx.err(m))?;
    Ok(NetworkPolicy::new()
        .with_deny_private(flag("deny_private")?)
        .with_allow_networks(networks)
        .with_require_https(flag("require_https")?))
}
