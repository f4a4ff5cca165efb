//! Where a configuration comes from, and the one rule every front end uses
//! to tell a file path from config text when a host hands over a plain
//! string (Python `Hub.connect("...")`, Node `Hub.connect('...')`).
//!
//! The rule lives here so that the same string reaches the same config (or
//! the same error) from every front end; bindings only convert their
//! language's types (a dict or object becomes [`ConfigSource::Json`], a
//! `PathLike` or `file:` URL becomes [`ConfigSource::Path`], a string goes
//! to [`ConfigSource::from_str_guess`]). The rule, in order:
//!
//! 1. empty (or only white space): `INVALID_INPUT`;
//! 2. the name of an existing file: that file;
//! 3. starts with `{` (after white space): JSON text;
//! 4. holds a line break: TOML or JSON text (by content);
//! 5. parses as TOML (`mcp.servers = [...]` on one line): TOML text;
//! 6. anything else: a file path; a missing file is `CONFIG_INVALID`
//!    naming it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Config;
use crate::error::Error;

/// A configuration as a host gives it: a file, TOML or JSON text, or a JSON
/// object. [`Config::from_source`] reads any of them. Its `Debug` shows a
/// path but not text or values, which may hold secrets written inline.
#[derive(Clone)]
pub enum ConfigSource {
    /// A file: JSON for `.json`, TOML for `.toml`, else by content
    /// ([`Config::load`]).
    Path(PathBuf),
    /// TOML or JSON text: JSON when it starts with `{` ([`Config::parse`]).
    Text(String),
    /// A JSON value in either shape (`{"mcpServers": {...}}` or
    /// `{"mcp": {"servers": [...]}}`); anything but an object is
    /// `CONFIG_INVALID`.
    Json(Value),
}

impl std::fmt::Debug for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::Path(path) => f.debug_tuple("Path").field(path).finish(),
            ConfigSource::Text(text) => write!(f, "Text(<{} bytes>)", text.len()),
            ConfigSource::Json(_) => f.write_str("Json(<value>)"),
        }
    }
}

impl ConfigSource {
    /// Decides what a string a host passed is, by the rule in the module
    /// documentation. Looks at the file system (whether `text` names an
    /// existing file) and nothing else; an empty string is `INVALID_INPUT`.
    pub fn from_str_guess(text: &str) -> Result<ConfigSource, Error> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(Error::InvalidInput(
                "config is empty: expected a file path, TOML or JSON text".into(),
            ));
        }
        if Path::new(text).is_file() {
            return Ok(ConfigSource::Path(PathBuf::from(text)));
        }
        if trimmed.starts_with('{') || text.contains(['\n', '\r']) || is_toml(text) {
            return Ok(ConfigSource::Text(text.to_owned()));
        }
        Ok(ConfigSource::Path(PathBuf::from(text)))
    }
}

/// Whether one line of text is a TOML document (a path such as
/// `servers.toml` or `/etc/mcpmux` is not: a bare key needs `= value`).
fn is_toml(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).is_ok()
}

impl Config {
    /// Reads a configuration from any [`ConfigSource`]. An empty path or
    /// text (only white space) is `INVALID_INPUT`, as an empty string is for
    /// [`Config::from_str_guess`].
    pub fn from_source(source: ConfigSource) -> Result<Config, Error> {
        match source {
            ConfigSource::Path(path) if path.as_os_str().is_empty() => Err(Error::InvalidInput(
                "config is empty: expected a file path".into(),
            )),
            ConfigSource::Text(text) if text.trim().is_empty() => Err(Error::InvalidInput(
                "config is empty: expected TOML or JSON text".into(),
            )),
            ConfigSource::Path(path) => Config::load(path),
            ConfigSource::Text(text) => Config::parse(&text),
            ConfigSource::Json(value @ Value::Object(_)) => Config::parse(&value.to_string()),
            ConfigSource::Json(other) => Err(Error::ConfigInvalid(format!(
                "config: the top level must be an object, not {}",
                crate::error::json_kind(&other)
            ))),
        }
    }

    /// Reads the configuration a host gave as a plain string: decided by
    /// [`ConfigSource::from_str_guess`]. A string read as a path whose file
    /// does not exist is `CONFIG_INVALID` naming the file and saying how
    /// text would have been recognized.
    pub fn from_str_guess(text: &str) -> Result<Config, Error> {
        match ConfigSource::from_str_guess(text)? {
            ConfigSource::Path(path) if !path.exists() => Err(Error::ConfigInvalid(format!(
                "{}: cannot read config file: no such file (a one-line string is read \
                 as a file path unless it starts with '{{' or is valid TOML)",
                path.display()
            ))),
            source => Config::from_source(source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> &'static str {
        match ConfigSource::from_str_guess(s) {
            Ok(ConfigSource::Path(_)) => "path",
            Ok(ConfigSource::Text(_)) => "text",
            Ok(ConfigSource::Json(_)) => "json",
            Err(e) => e.code(),
        }
    }

    #[test]
    fn the_rule() {
        let dir = std::env::temp_dir().join(format!("mcpmux-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A file whose name would otherwise read as TOML: the file wins.
        let odd = dir.join("a = 1");
        std::fs::write(&odd, "[[mcp.servers]]\nname = \"x\"\ncommand = \"y\"\n").unwrap();
        assert_eq!(kind(odd.to_str().unwrap()), "path");
        assert_eq!(kind(""), "INVALID_INPUT");
        assert_eq!(kind("  \n "), "INVALID_INPUT");
        assert_eq!(kind(r#"{"mcpServers": {}}"#), "text");
        assert_eq!(kind("  {broken"), "text");
        assert_eq!(kind("[[mcp.servers]]\nname = 1"), "text");
        assert_eq!(
            kind(r#"mcp.servers = [{name = "a", command = "b"}]"#),
            "text"
        );
        assert_eq!(kind("servers.toml"), "path");
        assert_eq!(kind("/no/such/dir/mcpmux"), "path");
        assert_eq!(kind("/data/run=1/mcpmux.toml"), "path");
        assert_eq!(kind(dir.to_str().unwrap()), "path");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = Config::from_str_guess("/no/such/run=1/mcpmux.toml").unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        assert!(e.to_string().contains("/no/such/run=1/mcpmux.toml"), "{e}");
        assert!(
            e.to_string()
                .contains("cannot read config file: no such file"),
            "{e}"
        );
    }

    #[test]
    fn every_source_reads_the_same_config() {
        let toml = "mcp.servers = [{name = \"a\", command = \"x\", enabled = false}]";
        let json = serde_json::json!({"mcpServers": {"a": {"command": "x", "disabled": true}}});
        let from_text = Config::from_str_guess(toml).unwrap();
        let from_json = Config::from_source(ConfigSource::Json(json.clone())).unwrap();
        let from_json_text = Config::from_str_guess(&json.to_string()).unwrap();
        for c in [&from_text, &from_json, &from_json_text] {
            assert_eq!(c.servers.len(), 1);
            assert_eq!(c.servers[0].name, "a");
            assert!(!c.servers[0].enabled);
        }
        let e = Config::from_source(ConfigSource::Json(serde_json::json!([1]))).unwrap_err();
        assert_eq!(e.code(), "CONFIG_INVALID");
        assert!(e.to_string().contains("an array"), "{e}");
    }
}
