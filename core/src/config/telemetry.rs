//! The `[telemetry]` table (JSON: a top-level `"telemetry"` object): the
//! same settings as the standard `OTEL_*` variables, which win over it.
//! Checked at load (unknown keys, types); read by `crate::telemetry` when
//! a hub connects.

use serde_json::{Map, Value};

use super::keys;
use super::Ctx;
use crate::error::Error;

/// Keys of the `[telemetry]` table.
pub(super) const KEYS: &[&str] = &[
    "endpoint",
    "traces_endpoint",
    "metrics_endpoint",
    "protocol",
    "headers",
    "service_name",
    "resource_attributes",
    "disabled",
];

/// The table with `${VAR}` expanded in its strings, checked.
pub(super) fn read(ctx: &Ctx<'_>, value: Option<&Value>) -> Result<Map<String, Value>, Error> {
    let table = match value {
        None => return Ok(Map::new()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(ctx.err("'telemetry' must be a table")),
    };
    if let Some(m) = keys::unknown(table, &[KEYS]) {
        return Err(ctx.err(format!("[telemetry]: {m}")));
    }
    let expand = |s: &str, field: &str| {
        ctx.expand(s, "telemetry", field).map_err(|e| match e {
            Error::ConfigInvalid(m) => Error::ConfigInvalid(m.replacen(
                "server 'telemetry': field '",
                "[telemetry]: field '",
                1,
            )),
            other => other,
        })
    };
    let mut out = Map::new();
    for (key, value) in table {
        let checked = match (key.as_str(), value) {
            ("disabled", Value::Bool(b)) => Value::Bool(*b),
            ("disabled", _) => return Err(ctx.err("[telemetry]: 'disabled' must be true or false")),
            ("headers" | "resource_attributes", Value::Object(pairs)) => {
                let mut expanded = Map::new();
                for (name, v) in pairs {
                    let Value::String(s) = v else {
                        return Err(
                            ctx.err(format!("[telemetry]: '{key}.{name}' must be a string"))
                        );
                    };
                    expanded.insert(
                        name.clone(),
                        Value::String(expand(s, &format!("{key}.{name}"))?),
                    );
                }
                Value::Object(expanded)
            }
            ("headers" | "resource_attributes", _) => {
                return Err(ctx.err(format!("[telemetry]: '{key}' must be a table of strings")))
            }
            (_, Value::String(s)) => Value::String(expand(s, key)?),
            (_, _) => return Err(ctx.err(format!("[telemetry]: '{key}' must be a string"))),
        };
        out.insert(key.clone(), checked);
    }
    if let Some(Value::String(p)) = out.get("protocol") {
        if p != "http/protobuf" {
            return Err(ctx.err(format!(
                "[telemetry]: protocol '{p}' is not supported (only \"http/protobuf\")"
            )));
        }
    }
    Ok(out)
}
