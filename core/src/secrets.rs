//! Config secrets that come back: values mcpmux itself knows to be secret,
//! replaced literally with [`MARKER`] wherever text that came from a server
//! or a provider is printed or stored.
//!
//! Known secrets are every value of a server's `env` and `headers` (for a
//! header like `Bearer <token>` also the token on its own), every value a
//! `${VAR}` reference expanded to (defaults written in the file are not
//! secrets), the OAuth tokens mcpmux reads from or writes to its token
//! store, and the reviewer's API key. A server that echoes its
//! `Authorization` header in an HTTP 400 body, prints an env value on
//! stderr or returns one from a tool does not get it into an error, a log
//! line, a session file or a model's input.
//!
//! Variables that name where things are, not secrets ([`PLAIN_VARS`]:
//! `HOME`, `USER`, `PATH`, ...), are left out, as `${VAR}` references and as
//! `env` keys: a home directory would otherwise turn every path a tool shows
//! the model into `[REDACTED:config]/...`.
//!
//! Values shorter than [`MIN_SECRET_LEN`] characters are not matched: an
//! env value such as `1`, `true` or `debug` would otherwise shred ordinary
//! text. Matching is literal and case-sensitive; a secret that a server
//! re-encodes (base64, JSON escapes of quotes or control characters, a
//! different case) is not found by this pass (the pattern rules of
//! the policy's redaction rules (`mcpmux_policy::redact`) still apply to tool output).
//!
//! Where it applies (the choke points): a JSON-RPC error from a server
//! ([`crate::jsonrpc::RpcError`] into [`Error`]), the body quoted in an
//! HTTP error status, the stdio stderr lines kept for errors and logged,
//! a server's `notifications/message` log lines, the errors the hub keeps
//! for a server that failed to connect, tool results in the session policy
//! (model input and host calls with a policy), provider errors, and every
//! session file except `session.json` (which holds settings and `${VAR}`
//! references, never values). A plain [`crate::Hub::call_tool`] result is
//! *not* changed: the host owns its config and gets what its server sent.
//!
//! The set is process-wide ([`register`], [`known`]): secrets become known
//! at different places (a config is parsed, a token is refreshed, an API
//! key is read) and text to redact is made in as many, so one shared set
//! saves threading a handle through every transport. It holds at most
//! [`MAX_KNOWN`] values; past that the oldest are forgotten. Redacting with
//! secrets of another configuration in the same process only hides more.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, OnceLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

use crate::error::Error;

/// What a known secret is replaced with.
pub const MARKER: &str = "[REDACTED:config]";
/// Shortest value treated as a secret, in bytes.
pub const MIN_SECRET_LEN: usize = 6;
/// Most values the process-wide set holds.
pub const MAX_KNOWN: usize = 4096;
/// Environment variables whose values are not secrets (see the module docs).
pub const PLAIN_VARS: &[&str] = &[
    "HOME", "USER", "LOGNAME", "PWD", "PATH", "SHELL", "TMPDIR", "LANG",
];

/// Whether variable `name` is one of [`PLAIN_VARS`].
pub fn is_plain_var(name: &str) -> bool {
    PLAIN_VARS.contains(&name)
}

/// A fixed set of secret values and a matcher for all of them at once.
/// Immutable; share it with an [`Arc`] ([`known`] hands one out).
#[derive(Default)]
pub struct KnownSecrets {
    values: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl KnownSecrets {
    /// A set of `values`; those shorter than [`MIN_SECRET_LEN`] and
    /// repeats are left out.
    pub fn new<I, S>(values: I) -> KnownSecrets
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut seen = HashSet::new();
        let values: Vec<String> = values
            .into_iter()
            .map(Into::into)
            .filter(|v| v.len() >= MIN_SECRET_LEN && seen.insert(v.clone()))
            .collect();
        // Leftmost-longest: of two secrets where one contains the other,
        // the whole longer one goes.
        let matcher = (!values.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&values)
                    .ok()
            })
            .flatten();
        KnownSecrets { values, matcher }
    }

    /// How many values are matched.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether `text` holds one of the secrets.
    pub fn contains_secret(&self, text: &str) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    /// Where the secrets are in `text`: byte ranges, leftmost-longest,
    /// not overlapping.
    pub fn find(&self, text: &str) -> Vec<(usize, usize)> {
        self.matcher.as_ref().map_or_else(Vec::new, |m| {
            m.find_iter(text).map(|m| (m.start(), m.end())).collect()
        })
    }

    /// `text` with every secret replaced by [`MARKER`], and how many were.
    pub fn redact_count<'a>(&self, text: &'a str) -> (Cow<'a, str>, usize) {
        let Some(matcher) = &self.matcher else {
            return (Cow::Borrowed(text), 0);
        };
        let mut out = String::new();
        let mut at = 0;
        let mut n = 0;
        for m in matcher.find_iter(text) {
            out.push_str(&text[at..m.start()]);
            out.push_str(MARKER);
            at = m.end();
            n += 1;
        }
        if n == 0 {
            return (Cow::Borrowed(text), 0);
        }
        out.push_str(&text[at..]);
        (Cow::Owned(out), n)
    }

    /// `text` with every secret replaced by [`MARKER`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_count(text).0
    }

    /// Redacts every string (and object key) inside `value` in place;
    /// returns how many secrets were replaced.
    pub fn redact_value(&self, value: &mut Value) -> usize {
        if self.matcher.is_none() {
            return 0;
        }
        match value {
            Value::String(s) => self.redact_string(s),
            Value::Array(items) => items.iter_mut().map(|v| self.redact_value(v)).sum(),
            Value::Object(map) => {
                let mut n = 0;
                if map.keys().any(|k| self.contains_secret(k)) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        let (k, m) = self.redact_count(&k);
                        n += m;
                        map.insert(k.into_owned(), v);
                    }
                }
                n + map
                    .values_mut()
                    .map(|v| self.redact_value(v))
                    .sum::<usize>()
            }
            _ => 0,
        }
    }

    /// Redacts one owned string in place; returns how many were replaced.
    pub fn redact_string(&self, text: &mut String) -> usize {
        let (out, n) = self.redact_count(text);
        if let Cow::Owned(out) = out {
            *text = out;
        }
        n
    }

    /// The same error with its message (and a server error's `data`)
    /// redacted; the code is kept.
    pub fn redact_error(&self, error: Error) -> Error {
        if self.matcher.is_none() {
            return error;
        }
        let r = |mut m: String| {
            self.redact_string(&mut m);
            m
        };
        match error {
            Error::ConfigInvalid(m) => Error::ConfigInvalid(r(m)),
            Error::InvalidInput(m) => Error::InvalidInput(r(m)),
            Error::UnknownServer(m) => Error::UnknownServer(r(m)),
            Error::UnknownTool(m) => Error::UnknownTool(r(m)),
            Error::ToolNotAllowed(m) => Error::ToolNotAllowed(r(m)),
            Error::ConnectFailed(m) => Error::ConnectFailed(r(m)),
            Error::TransportClosed(m) => Error::TransportClosed(r(m)),
            Error::Timeout(m) => Error::Timeout(r(m)),
            Error::Cancelled(m) => Error::Cancelled(r(m)),
            Error::ProtocolError(m) => Error::ProtocolError(r(m)),
            Error::ServerError {
                code,
                message,
                mut data,
            } => {
                if let Some(d) = &mut data {
                    self.redact_value(d);
                }
                Error::ServerError {
                    code,
                    message: r(message),
                    data,
                }
            }
            Error::LimitExceeded(m) => Error::LimitExceeded(r(m)),
            Error::ProviderError(m) => Error::ProviderError(r(m)),
            Error::UnknownSkill(m) => Error::UnknownSkill(r(m)),
            Error::ReviewerNotFound(m) => Error::ReviewerNotFound(r(m)),
            Error::InvalidSession(m) => Error::InvalidSession(r(m)),
            Error::RoundStillRunning(m) => Error::RoundStillRunning(r(m)),
            Error::Internal(m) => Error::Internal(r(m)),
            Error::AuthRequired(m) => Error::AuthRequired(r(m)),
            Error::AuthFailed(m) => Error::AuthFailed(r(m)),
            Error::ConfigUntrusted(m) => Error::ConfigUntrusted(r(m)),
            Error::OutputInvalid(m) => Error::OutputInvalid(r(m)),
            Error::ToolChanged(m) => Error::ToolChanged(r(m)),
        }
    }
}

impl std::fmt::Debug for KnownSecrets {
    // Never the values themselves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownSecrets")
            .field("len", &self.values.len())
            .finish()
    }
}

/// The process-wide set: insertion order (to forget the oldest), the
/// values for dedup, and the matcher built from them.
#[derive(Default)]
struct Registry {
    order: VecDeque<String>,
    set: HashSet<String>,
    current: Arc<KnownSecrets>,
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Adds `values` to the process-wide set (short ones and repeats are
/// ignored); texts redacted afterwards hide them.
pub fn register<I, S>(values: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut reg = registry().write().unwrap_or_else(|e| e.into_inner());
    let mut changed = false;
    for v in values {
        let v: String = v.into();
        if v.len() < MIN_SECRET_LEN || reg.set.contains(&v) {
            continue;
        }
        reg.set.insert(v.clone());
        reg.order.push_back(v);
        changed = true;
    }
    while reg.order.len() > MAX_KNOWN {
        if let Some(old) = reg.order.pop_front() {
            reg.set.remove(&old);
        }
    }
    if changed {
        reg.current = Arc::new(KnownSecrets::new(reg.order.iter().cloned()));
    }
}

/// The process-wide set as it is now.
pub fn known() -> Arc<KnownSecrets> {
    registry()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .current
        .clone()
}

/// `text` with every known secret replaced by `[REDACTED:config]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let known = known();
    match known.redact(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// [`KnownSecrets::redact_error`] with the process-wide set.
pub fn redact_error(error: Error) -> Error {
    known().redact_error(error)
}

/// `KnownSecrets::redact_value` with the process-wide set.
pub fn redact_value(value: &mut Value) -> usize {
    known().redact_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_longest_and_short_values_ignored() {
        let s = KnownSecrets::new(["abcdef", "abcdefghij", "xyz", "tok-123456"]);
        assert_eq!(s.len(), 3);
        assert_eq!(
            s.redact("a abcdefghij b abcdef c xyz"),
            format!("a {MARKER} b {MARKER} c xyz")
        );
        let (out, n) = s.redact_count("nothing here");
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(n, 0);
        let mut v = serde_json::json!({"k tok-123456": ["x tok-123456 y", 1]});
        assert_eq!(s.redact_value(&mut v), 2);
        assert_eq!(
            v,
            serde_json::json!({ format!("k {MARKER}"): [format!("x {MARKER} y"), 1] })
        );
        let e = s.redact_error(Error::ServerError {
            code: 1,
            message: "echo abcdef".into(),
            data: Some(serde_json::json!("abcdef")),
        });
        assert_eq!(e.code(), "SERVER_ERROR");
        assert!(!e.to_string().contains("abcdef"), "{e}");
        assert!(!format!("{s:?}").contains("abcdef"));
    }
}
