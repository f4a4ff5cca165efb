//! How the hub keeps one server running: restarts after a failure, keep-alive
//! pings for remote servers, the log level asked of it. Read from a server entry, with `[mcp]` giving the defaults.

use std::time::Duration;

use serde_json::{Map, Value};

/// Keys of this module, in a server entry and in `[mcp]`.
pub(super) const KEYS: &[&str] = &[
    "restart",
    "max_restarts",
    "restart_window_seconds",
    "ping_interval_seconds",
    "log_level",
    "lazy",
];

/// Default `restart`.
pub const DEFAULT_RESTART: Restart = Restart::OnFailure;
/// Default `max_restarts`.
pub const DEFAULT_MAX_RESTARTS: u32 = 5;
/// Default `restart_window_seconds`.
pub const DEFAULT_RESTART_WINDOW: Duration = Duration::from_secs(300);
/// Default `ping_interval_seconds` of a remote (http, sse, websocket) server.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);
/// Most restarts one window may allow.
const MAX_MAX_RESTARTS: u64 = 1000;

/// What the hub does when a server fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Start it again, with backoff, up to `max_restarts` per window
    /// (`"on-failure"`, the default).
    OnFailure,
    /// Leave it failed until `refresh` (`"never"`).
    Never,
}

/// A server's supervision settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Supervision {
    /// `restart`.
    pub restart: Restart,
    /// `max_restarts`: restarts allowed within `restart_window`; past them
    /// the server stays failed until `refresh`.
    pub max_restarts: u32,
    /// `restart_window_seconds`: restarts are counted over this long, and a
    /// server healthy for this long starts counting from zero again.
    pub restart_window: Duration,
    /// `ping_interval_seconds`: a keep-alive ping this often; one that gets
    /// no answer within the server's timeout ends the connection (and
    /// supervision reconnects it). `None` = no pings (`0`, and the default
    /// for stdio).
    pub ping_interval: Option<Duration>,
    /// `log_level`: sent as `logging/setLevel` after each connect when the
    /// server has the `logging` capability.
    pub log_level: Option<String>,
    /// `lazy`: not started by connect (nor by a reload that adds it), but
    /// on first use: a call to one of its tools (`mcp_<server>_...`), or a
    /// read, prompt, completion, subscription, ping, log level or refresh
    /// aimed at it. Until then its state is `idle` and it lists no tools.
    pub lazy: bool,
}

impl Supervision {
    /// The defaults for a server of transport `kind` (`stdio` has no pings).
    pub fn defaults(kind: &str) -> Supervision {
        Supervision {
            restart: DEFAULT_RESTART,
            max_restarts: DEFAULT_MAX_RESTARTS,
            restart_window: DEFAULT_RESTART_WINDOW,
            ping_interval: (kind != "stdio").then_some(DEFAULT_PING_INTERVAL),
            log_level: None,
            lazy: false,
        }
    }
}

/// The supervision keys as written; `null` is the same as a key left out.
#[derive(serde::Deserialize)]
struct RawSupervision {
    restart: Option<String>,
    max_restarts: Option<u64>,
    restart_window_seconds: Option<f64>,
    ping_interval_seconds: Option<f64>,
    log_level: Option<String>,
    lazy: Option<bool>,
}

/// What a value of `key` must be, in the words of the message for a bad
/// value.
fn wrong_type(key: &str) -> String {
    match key {
        "restart" => "must be \"on-failure\" or \"never\"".into(),
        "max_restarts" => format!("must be an integer from 0 to {MAX_MAX_RESTARTS}"),
        "restart_window_seconds" => "must be a positive number of seconds".into(),
        "ping_interval_seconds" => "must be a number of seconds (0 = no pings)".into(),
        "log_level" => log_levels(),
        _ => "must be true or false".into(),
    }
}

/// The message for a `log_level` that is not one.
fn log_levels() -> String {
    format!("must be one of {}", crate::protocol::LOG_LEVELS.join(", "))
}

/// Reads the supervision keys of `entry` (a server, `at` names it in
/// errors), falling back to `mcp` (the `[mcp]` table) and then to the
/// defaults for transport `kind`. Errors are the message after the field
/// name; `err(field, message)` makes the caller's error.
pub(super) fn read(
    entry: &Map<String, Value>,
    mcp: &Map<String, Value>,
    kind: &str,
    err: &dyn Fn(&str, String) -> crate::error::Error,
) -> Result<Supervision, crate::error::Error> {
    // Each key from the entry, else from `[mcp]`: one table to read.
    let table: Map<String, Value> = KEYS
        .iter()
        .filter_map(|key| {
            let value = entry.get(*key).or_else(|| mcp.get(*key))?;
            Some(((*key).to_owned(), value.clone()))
        })
        .collect();
    let raw: RawSupervision =
        super::raw::decode(&table).map_err(|w| err(&w.field, wrong_type(&w.key)))?;
    let mut s = Supervision::defaults(kind);
    if let Some(restart) = raw.restart {
        s.restart = match restart.as_str() {
            "on-failure" => Restart::OnFailure,
            "never" => Restart::Never,
            _ => return Err(err("restart", wrong_type("restart"))),
        };
    }
    if let Some(n) = raw.max_restarts {
        s.max_restarts = Some(n)
            .filter(|n| *n <= MAX_MAX_RESTARTS)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| err("max_restarts", wrong_type("max_restarts")))?;
    }
    if let Some(x) = raw.restart_window_seconds {
        s.restart_window = super::seconds(x).ok_or_else(|| {
            err(
                "restart_window_seconds",
                wrong_type("restart_window_seconds"),
            )
        })?;
    }
    if let Some(x) = raw.ping_interval_seconds {
        s.ping_interval = if x == 0.0 {
            None
        } else {
            Some(super::seconds(x).ok_or_else(|| {
                err(
                    "ping_interval_seconds",
                    "must be a positive number of seconds, or 0 for none".into(),
                )
            })?)
        };
    }
    if let Some(lazy) = raw.lazy {
        s.lazy = lazy;
    }
    if let Some(level) = raw.log_level {
        if !crate::protocol::LOG_LEVELS.contains(&level.as_str()) {
            return Err(err("log_level", log_levels()));
        }
        s.log_level = Some(level);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, Restart};
    use std::time::Duration;

    fn server(text: &str) -> Result<crate::config::ServerConfig, crate::error::Error> {
        Config::parse(text).map(|c| c.servers[0].clone())
    }

    #[test]
    fn keys_per_server_over_mcp_defaults() {
        let s = server(
            "[mcp]\nrestart = \"on-failure\"\nmax_restarts = 7\n\
             [[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nrestart_window_seconds = 60\nlog_level = \"warning\"\n",
        )
        .unwrap()
        .supervision;
        assert_eq!(s.restart, Restart::OnFailure);
        assert_eq!(s.max_restarts, 7);
        assert_eq!(s.restart_window, Duration::from_secs(60));
        assert_eq!(s.ping_interval, None, "no pings for stdio by default");
        assert_eq!(s.log_level.as_deref(), Some("warning"));
        assert!(!s.lazy, "eager by default");
        let lazy = server("[mcp]\nlazy = true\n[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n")
            .unwrap()
            .supervision;
        assert!(lazy.lazy, "[mcp] lazy is the default");
        let eager = server(
            "[mcp]\nlazy = true\n[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nlazy = false\n",
        )
        .unwrap()
        .supervision;
        assert!(!eager.lazy, "a server's own lazy wins");
        let remote = server("[[mcp.servers]]\nname = \"r\"\nurl = \"http://127.0.0.1:1/mcp\"\n")
            .unwrap()
            .supervision;
        assert_eq!(remote.ping_interval, Some(super::DEFAULT_PING_INTERVAL));
        let off = server(
            "[[mcp.servers]]\nname = \"r\"\nurl = \"http://127.0.0.1:1/mcp\"\nping_interval_seconds = 0\n",
        )
        .unwrap()
        .supervision;
        assert_eq!(off.ping_interval, None);
    }

    #[test]
    fn bad_values_name_the_field() {
        for (entry, field) in [
            ("restart = \"always\"", "restart"),
            ("max_restarts = -1", "max_restarts"),
            ("restart_window_seconds = 0", "restart_window_seconds"),
            ("ping_interval_seconds = \"x\"", "ping_interval_seconds"),
            ("log_level = \"loud\"", "log_level"),
            ("lazy = \"yes\"", "lazy"),
        ] {
            let e = server(&format!(
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n{entry}\n"
            ))
            .unwrap_err();
            assert_eq!(e.code(), "CONFIG_INVALID");
            assert!(e.to_string().contains(field), "{e}");
        }
    }
}
