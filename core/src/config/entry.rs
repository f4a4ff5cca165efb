//! One server entry read into a [`ServerConfig`]: its transport (declared or
//! implied by `command`/`url`), process or URL, headers and auth, timeouts,
//! protocol version and supervision, with `${VAR}`s expanded and every
//! error naming the server and the field.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::raw::{self, Arg, RawDefaults, RawEntry, Scalar};
use super::{
    keys, supervision, Ctx, EntrySyntax, NetworkConfig, ServerConfig, StdioConfig, TransportConfig,
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_TOTAL_FACTOR, DEFAULT_TIMEOUT, MAX_SECONDS,
};
use crate::error::Error;

/// What `[mcp]` gives every server unless its entry says otherwise.
pub(super) struct Defaults {
    /// The `[mcp]` table (supervision keys default from it).
    pub mcp: Map<String, Value>,
    pub timeout: Duration,
    pub max_message_bytes: usize,
}

impl Defaults {
    /// The defaults of the `[mcp]` table `mcp`.
    pub fn read(ctx: &Ctx<'_>, mcp: Map<String, Value>) -> Result<Defaults, Error> {
        let raw: RawDefaults = raw::decode(&mcp).map_err(|w| {
            ctx.err(format!(
                "mcp: field '{}' {}",
                w.field,
                raw::entry_wrong_type(&w.key, w.nested)
            ))
        })?;
        let timeout = checked_seconds(ctx, "mcp", "timeout_seconds", raw.timeout_seconds)?;
        let max_message_bytes =
            checked_bytes(ctx, "mcp", "max_message_bytes", raw.max_message_bytes)?;
        Ok(Defaults {
            mcp,
            timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
            max_message_bytes: max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
        })
    }
}

/// The server entry `entry`, named `name`, read and checked.
pub(super) fn read(
    ctx: &Ctx<'_>,
    defaults: &Defaults,
    name: String,
    entry: &Map<String, Value>,
) -> Result<ServerConfig, Error> {
    let n = name.as_str();
    let raw: RawEntry = raw::decode(entry)
        .map_err(|w| ctx.field_err(n, &w.field, raw::entry_wrong_type(&w.key, w.nested)))?;
    let reader = EntryReader { ctx, n };
    let command = reader.expand(raw.command.as_deref(), "command")?;
    let url = reader.expand(raw.url.as_deref(), "url")?;
    let kind = reader.kind(&raw, &command, &url)?;

    // A transport compiled out of this build fails the load, naming its feature.
    let compiled_out = match kind {
        "sse" => !cfg!(feature = "sse"),
        "websocket" => !cfg!(feature = "websocket"),
        _ => false,
    };
    if compiled_out {
        let needs = crate::error::needs_feature(kind);
        return Err(ctx.err(format!("server '{n}': type {kind} {needs}")));
    }
    let transport = if kind == "stdio" {
        reader.stdio(&raw, command)?
    } else {
        reader.network(&raw, kind, url)?
    };

    let enabled = raw.enabled.unwrap_or(!raw.disabled.unwrap_or(false));
    let at = format!("server '{n}'");
    let timeout = checked_seconds(ctx, &at, "timeout_seconds", raw.timeout_seconds)?
        .unwrap_or(defaults.timeout);
    let max_total_timeout = checked_seconds(
        ctx,
        &at,
        "max_total_timeout_seconds",
        raw.max_total_timeout_seconds,
    )?
    .unwrap_or(timeout * DEFAULT_MAX_TOTAL_FACTOR)
    .max(timeout);
    let max_message_bytes = checked_bytes(ctx, &at, "max_message_bytes", raw.max_message_bytes)?
        .unwrap_or(defaults.max_message_bytes);
    let protocol_version = reader.expand(raw.protocol_version.as_deref(), "protocol_version")?;
    if let Some(v) = &protocol_version {
        if !crate::protocol::is_known_version(v) {
            return Err(ctx.field_err(
                n,
                "protocol_version",
                format!(
                    "has unknown version '{v}' (known: {})",
                    crate::protocol::KNOWN_VERSIONS.join(", ")
                ),
            ));
        }
    }
    let supervision = supervision::read(entry, &defaults.mcp, kind, &|field, message| {
        ctx.field_err(n, field, message)
    })?;
    let extra: Map<String, Value> = entry
        .iter()
        .filter(|(k, _)| {
            !keys::SERVER.contains(&k.as_str()) && !supervision::KEYS.contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for key in extra.keys() {
        tracing::debug!(server = n, key = %key, "config key not used by the engine");
    }
    Ok(ServerConfig {
        name,
        transport,
        enabled,
        timeout,
        max_total_timeout,
        max_message_bytes,
        protocol_version,
        supervision,
        extra,
        written_as: EntrySyntax::default(),
    })
}

/// `value` as seconds, when given: positive and at most [`MAX_SECONDS`].
fn checked_seconds(
    ctx: &Ctx<'_>,
    at: &str,
    field: &str,
    value: Option<f64>,
) -> Result<Option<Duration>, Error> {
    value
        .map(|x| {
            super::seconds(x).ok_or_else(|| {
                ctx.err(format!(
                "{at}: field '{field}' must be a positive number of seconds (at most {MAX_SECONDS})"
            ))
            })
        })
        .transpose()
}

/// `value` as a byte count, when given: positive.
fn checked_bytes(
    ctx: &Ctx<'_>,
    at: &str,
    field: &str,
    value: Option<u64>,
) -> Result<Option<usize>, Error> {
    value
        .map(|v| match usize::try_from(v) {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(ctx.err(format!("{at}: field '{field}' must be a positive integer"))),
        })
        .transpose()
}

/// Whether the URL's path ends in `/sse` (the legacy transport's usual
/// endpoint), for an entry that does not say its type.
fn url_path_ends_with_sse(raw: &str) -> bool {
    url::Url::parse(raw).is_ok_and(|u| u.path().trim_end_matches('/').ends_with("/sse"))
}

/// One server entry being read: its name and the file's context for
/// `${VAR}` expansion and errors.
struct EntryReader<'a, 'c> {
    ctx: &'a Ctx<'c>,
    n: &'a str,
}

impl EntryReader<'_, '_> {
    /// An optional string `field`, `${VAR}`s expanded.
    fn expand(&self, value: Option<&str>, field: &str) -> Result<Option<String>, Error> {
        value.map(|s| self.ctx.expand(s, self.n, field)).transpose()
    }

    /// A table of strings (numbers and booleans as their text), `${VAR}`s
    /// expanded.
    fn string_map(
        &self,
        table: Option<&BTreeMap<String, Scalar>>,
        field: &str,
    ) -> Result<BTreeMap<String, String>, Error> {
        table
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                let text = match v {
                    Scalar::Text(s) => self.ctx.expand(s, self.n, &format!("{field}.{k}"))?,
                    Scalar::Number(x) => x.to_string(),
                    Scalar::Flag(b) => b.to_string(),
                };
                Ok((k.clone(), text))
            })
            .collect()
    }

    /// The transport kind the entry declares (`type`, `transport`, or
    /// another client's `transportType`), else the one its `command` or
    /// `url` implies.
    fn kind(
        &self,
        raw: &RawEntry,
        command: &Option<String>,
        url: &Option<String>,
    ) -> Result<&'static str, Error> {
        let n = self.n;
        let declared = match self.expand(raw.kind.as_deref(), "type")? {
            Some(kind) => Some(kind),
            None => match self.expand(raw.transport.as_deref(), "transport")? {
                Some(kind) => Some(kind),
                None => self.expand(raw.transport_type.as_deref(), "transportType")?,
            },
        };
        Ok(match declared.as_deref() {
            Some("stdio") => "stdio",
            Some("http" | "streamable-http" | "streamable_http" | "streamableHttp") => "http",
            Some("sse") => "sse",
            Some("websocket" | "ws") => "websocket",
            Some(other) => {
                return Err(self.ctx.field_err(
                    n,
                    "type",
                    format!("has unknown value '{other}' (expected stdio, http, streamable-http, sse, websocket or ws)"),
                ))
            }
            None => match (&command, &url) {
                (Some(_), None) => "stdio",
                (None, Some(u)) if url_path_ends_with_sse(u) => "sse",
                (None, Some(_)) => "http",
                (Some(_), Some(_)) => {
                    return Err(self.ctx.err(format!("server '{n}': has both 'command' and 'url'; set 'type'")))
                }
                (None, None) => {
                    return Err(self.ctx.err(format!("server '{n}': missing field 'command' (stdio) or 'url' (network)")))
                }
            },
        })
    }

    /// A stdio entry's process: `command`, `args`, `env`, `cwd`.
    fn stdio(&self, raw: &RawEntry, command: Option<String>) -> Result<TransportConfig, Error> {
        let n = self.n;
        let Some(command) = command.filter(|c| !c.trim().is_empty()) else {
            return Err(self.ctx.err(format!(
                "server '{n}': missing field 'command' (required for type stdio)"
            )));
        };
        let args = raw
            .args
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, arg)| match arg {
                Arg::Text(s) => self.ctx.expand(s, n, &format!("args[{i}]")),
                Arg::Number(x) => Ok(x.to_string()),
            })
            .collect::<Result<_, _>>()?;
        Ok(TransportConfig::Stdio(StdioConfig {
            command,
            args,
            env: self.string_map(raw.env.as_ref(), "env")?,
            cwd: self.expand(raw.cwd.as_deref(), "cwd")?.map(PathBuf::from),
        }))
    }

    /// A network entry's `url` (its scheme checked against the kind),
    /// `headers` and `auth`.
    fn network(
        &self,
        raw: &RawEntry,
        kind: &str,
        url: Option<String>,
    ) -> Result<TransportConfig, Error> {
        let n = self.n;
        let Some(url) = url else {
            return Err(self.ctx.err(format!(
                "server '{n}': missing field 'url' (required for type {kind})"
            )));
        };
        let parsed = url::Url::parse(&url).map_err(|e| {
            self.ctx
                .field_err(n, "url", format!("is not a valid URL ({e})"))
        })?;
        let schemes: &[&str] = if kind == "websocket" {
            &["ws", "wss"]
        } else {
            &["http", "https"]
        };
        if !schemes.contains(&parsed.scheme()) {
            return Err(self.ctx.field_err(
                n,
                "url",
                format!(
                    "has scheme '{}' but type {kind} needs {}",
                    parsed.scheme(),
                    schemes.join(" or ")
                ),
            ));
        }
        let mut headers = self.string_map(raw.headers.as_ref(), "headers")?;
        let auth = match &raw.auth {
            Some(table) => Some(self.auth(table, kind, &mut headers)?),
            None => None,
        };
        // A header that cannot be sent fails the load, not the connect.
        crate::net::header_map(&format!("{}: server '{n}'", self.ctx.origin), &headers)?;
        let net = NetworkConfig {
            url: parsed,
            headers,
            auth,
        };
        Ok(match kind {
            "http" => TransportConfig::Http(net),
            "sse" => TransportConfig::Sse(net),
            _ => TransportConfig::WebSocket(net),
        })
    }

    /// The entry's `auth` table, `${VAR}`s expanded; a bearer token or a
    /// header goes into `headers` too.
    fn auth(
        &self,
        table: &Map<String, Value>,
        kind: &str,
        headers: &mut BTreeMap<String, String>,
    ) -> Result<crate::auth::AuthConfig, Error> {
        use crate::auth::AuthConfig;
        let n = self.n;
        let expand = |text: &str, k: &str| self.ctx.expand(text, n, &format!("auth.{k}"));
        let mut expanded = Map::new();
        for (k, v) in table {
            let v = match v {
                Value::String(text) => Value::String(expand(text, k)?),
                Value::Array(items) => Value::Array(
                    items
                        .iter()
                        .map(|item| match item {
                            Value::String(text) => expand(text, k).map(Value::String),
                            other => Ok(other.clone()),
                        })
                        .collect::<Result<_, _>>()?,
                ),
                other => other.clone(),
            };
            expanded.insert(k.clone(), v);
        }
        let auth = AuthConfig::from_map(&expanded, &|field, message| {
            self.ctx.field_err(n, field, message)
        })?;
        match &auth {
            AuthConfig::Bearer { token } => {
                headers.insert("Authorization".into(), format!("Bearer {token}"));
            }
            AuthConfig::Header { name, value } => {
                headers.insert(name.clone(), value.clone());
            }
            AuthConfig::OAuth(_) if kind != "http" => {
                return Err(self.ctx.field_err(
                    n,
                    "auth.type",
                    format!("oauth is supported for type http (Streamable HTTP), not {kind}"),
                ))
            }
            AuthConfig::OAuth(_) => {}
        }
        Ok(auth)
    }
}
