//! The `[gateway]` table (JSON: a top-level `"gateway"` object): settings of
//! `mcpmux gateway --http` that belong with the config rather than on the
//! command line of each replica of a fleet (`session_key_file`, `replica`,
//! `drain_seconds`). The gateway's flags override them. Checked at load:
//! unknown keys (with the nearest known one) and types.

use std::path::PathBuf;

use serde_json::Value;

use super::keys;
use super::Ctx;
use crate::error::Error;

/// Keys of the `[gateway]` table.
pub(super) const KEYS: &[&str] = &["session_key_file", "replica", "drain_seconds"];

/// The `[gateway]` table as read; every field `None` when absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatewayConfig {
    /// `session_key_file`: the key file session ids are sealed with, as
    /// written (`${VAR}` expanded); relative to the config file's
    /// directory (the gateway joins it).
    pub session_key_file: Option<PathBuf>,
    /// `replica`: this replica's name.
    pub replica: Option<String>,
    /// `drain_seconds`: how long to drain on SIGTERM.
    pub drain_seconds: Option<u64>,
}

/// The table, checked; the default when absent.
pub(super) fn read(ctx: &Ctx<'_>, value: Option<&Value>) -> Result<GatewayConfig, Error> {
    let table = match value {
        None => return Ok(GatewayConfig::default()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(ctx.err("'gateway' must be a table")),
    };
    if let Some(m) = keys::unknown(table, &[KEYS]) {
        return Err(ctx.err(format!("[gateway]: {m}")));
    }
    let string = |key: &str| -> Result<Option<String>, Error> {
        match table.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => {
                ctx.expand(s, "gateway", key)
                    .map(Some)
                    .map_err(|e| match e {
                        // `expand` names a server's field; this is a table's.
                        Error::ConfigInvalid(m) => Error::ConfigInvalid(m.replacen(
                            "server 'gateway': field '",
                            "[gateway]: field '",
                            1,
                        )),
                        other => other,
                    })
            }
            Some(_) => Err(ctx.err(format!("[gateway]: '{key}' must be a string"))),
        }
    };
    let drain_seconds = match table.get("drain_seconds") {
        None => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            ctx.err("[gateway]: 'drain_seconds' must be a whole number of seconds (0 or more)")
        })?),
    };
    Ok(GatewayConfig {
        session_key_file: string("session_key_file")?.map(PathBuf::from),
        replica: string("replica")?,
        drain_seconds,
    })
}
