//! The pin store on disk: `tool-pins.json` beside the trust store
//! (`$XDG_CONFIG_HOME/mcpmux/`, or the file `$MCPMUX_PIN_STORE` names),
//! 0600 in a 0700 directory, written whole by atomic rename (core's
//! `config::private_file`), read up to [`MAX_STORE_BYTES`].
//!
//! Keyed by the config (its real path) and then the server, each tool's
//! SHA-256 and, when at most [`MAX_DEFINITION_BYTES`], its definition (for
//! the operator's diff). Bounded: at most [`MAX_CONFIGS`] configs (the
//! least recently written go first), [`MAX_SERVERS`] servers per config,
//! [`MAX_TOOLS`] tools per server (a tool past it is not pinned, so it
//! stays quarantined: the bound fails closed). Every call reads the file
//! anew: two processes see each other's approvals (the last writer wins).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use mcpmux_core::config::private_file;
use mcpmux_core::error::Error;

/// The store's file name in the user's mcpmux directory.
pub const STORE_FILE: &str = "tool-pins.json";
/// The environment variable naming another store file (tests, hosts).
pub const STORE_ENV: &str = "MCPMUX_PIN_STORE";
/// Largest store file read or written.
pub const MAX_STORE_BYTES: u64 = 8 * 1024 * 1024;
/// Largest definition kept beside its hash (larger ones keep the hash only).
pub const MAX_DEFINITION_BYTES: usize = 16 * 1024;
/// Most configs the store keeps.
pub const MAX_CONFIGS: usize = 64;
/// Most servers per config.
pub const MAX_SERVERS: usize = 256;
/// Most tools per server.
pub const MAX_TOOLS: usize = 1024;

/// One pinned tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pin {
    /// SHA-256 of the canonical definition.
    pub sha256: String,
    /// The canonical definition, when small enough to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<Value>,
    /// When it was approved (seconds since the Unix epoch).
    #[serde(default)]
    pub pinned_at: u64,
}

/// The pins of one server: tool name to pin.
pub type ServerPins = BTreeMap<String, Pin>;
/// The pins of one config: server name to its pins.
pub type ConfigPins = BTreeMap<String, ServerPins>;

#[derive(Debug, Default, Serialize, Deserialize)]
struct ConfigEntry {
    #[serde(default)]
    updated_at: u64,
    #[serde(default)]
    servers: ConfigPins,
}

#[derive(Debug, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    configs: BTreeMap<String, ConfigEntry>,
}

/// The pin store file (holds only its path).
#[derive(Debug, Clone, PartialEq)]
pub struct PinStore {
    path: PathBuf,
}

impl PinStore {
    /// The user's store: `$MCPMUX_PIN_STORE` when set (an absolute path),
    /// else `tool-pins.json` in the trust store's directory. `None` when
    /// there is no such directory (no `XDG_CONFIG_HOME` or `HOME`).
    pub fn for_user() -> Option<PinStore> {
        if let Some(p) = std::env::var_os(STORE_ENV)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
        {
            return Some(PinStore::at(p));
        }
        private_file::user_dir().map(|d| PinStore::at(d.join(STORE_FILE)))
    }

    /// A store kept in the file `path`.
    pub fn at(path: impl Into<PathBuf>) -> PinStore {
        PinStore { path: path.into() }
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pins kept for config `key` (empty when none).
    pub fn load(&self, key: &str) -> Result<ConfigPins, Error> {
        Ok(self
            .read()?
            .configs
            .remove(key)
            .map(|e| e.servers)
            .unwrap_or_default())
    }

    /// Changes the pins of config `key` with `edit` and writes the store
    /// (read anew first, so another process's other keys are kept).
    /// Returns the pins as written.
    pub fn update(
        &self,
        key: &str,
        edit: impl FnOnce(&mut ConfigPins),
    ) -> Result<ConfigPins, Error> {
        // Two processes editing the store (two gateways, a gateway and
        // `mcpmux policy approve`) would otherwise lose each other's edits,
        // and a lost pin is pinned again as first seen.
        let _locked = private_file::lock(&self.path).map_err(|e| self.invalid(e))?;
        let mut store = self.read()?;
        let entry = store.configs.entry(key.to_owned()).or_default();
        edit(&mut entry.servers);
        bound(&mut entry.servers);
        entry.updated_at = now();
        if entry.servers.is_empty() {
            store.configs.remove(key);
        }
        while store.configs.len() > MAX_CONFIGS {
            let oldest = store
                .configs
                .iter()
                .filter(|(k, _)| k.as_str() != key)
                .min_by_key(|(_, e)| e.updated_at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => store.configs.remove(&k),
                None => break,
            };
        }
        let pins = store
            .configs
            .get(key)
            .map(|e| e.servers.clone())
            .unwrap_or_default();
        let text = serde_json::to_vec_pretty(&store)
            .map_err(|e| self.invalid(format!("cannot be written: {e}")))?;
        if text.len() as u64 > MAX_STORE_BYTES {
            return Err(Error::LimitExceeded(format!(
                "{}: pin store would be larger than {MAX_STORE_BYTES} bytes; revoke pins \
                 you no longer need (mcpmux policy approve --revoke)",
                self.path.display()
            )));
        }
        private_file::write_private(&self.path, &text).map_err(|e| self.invalid(e))?;
        Ok(pins)
    }

    /// The file's length and modification time, to tell whether it
    /// changed since it was last read (`None`: it does not exist).
    pub fn stamp(&self) -> Option<(u64, std::time::SystemTime)> {
        let meta = std::fs::symlink_metadata(&self.path).ok()?;
        Some((meta.len(), meta.modified().ok()?))
    }

    fn invalid(&self, message: impl std::fmt::Display) -> Error {
        Error::ConfigInvalid(format!(
            "{}: pin store {message} (remove the file to start afresh: every server's \
             tools are then pinned again when next seen)",
            self.path.display()
        ))
    }

    fn read(&self) -> Result<StoreFile, Error> {
        let Some(bytes) =
            private_file::read_capped(&self.path, MAX_STORE_BYTES).map_err(|e| self.invalid(e))?
        else {
            return Ok(StoreFile {
                version: 1,
                configs: BTreeMap::new(),
            });
        };
        let mut store: StoreFile = serde_json::from_slice(&bytes)
            .map_err(|e| self.invalid(format!("is not valid: {e}")))?;
        if store.version != 1 {
            return Err(self.invalid(format!("has unknown version {}", store.version)));
        }
        for entry in store.configs.values_mut() {
            bound(&mut entry.servers);
        }
        Ok(store)
    }
}

/// A new pin of `definition` with its hash, keeping the definition only
/// when it is small.
pub fn pin(definition: &Value) -> Pin {
    let keep = serde_json::to_string(definition).map_or(0, |s| s.len()) <= MAX_DEFINITION_BYTES;
    Pin {
        sha256: super::definition::hash(definition),
        definition: keep.then(|| definition.clone()),
        pinned_at: now(),
    }
}

/// Cuts a config's pins to the bounds (servers, then tools per server).
fn bound(servers: &mut ConfigPins) {
    while servers.len() > MAX_SERVERS {
        servers.pop_last();
    }
    for tools in servers.values_mut() {
        while tools.len() > MAX_TOOLS {
            tools.pop_last();
        }
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_edits_of_different_configs_all_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tool-pins.json");
        let writers: Vec<_> = (0..6)
            .map(|i| {
                let path = path.clone();
                // Each its own store handle, as separate processes have.
                std::thread::spawn(move || {
                    let store = PinStore::at(path);
                    for j in 0..15 {
                        store
                            .update(&format!("config-{i}"), |pins| {
                                pins.insert(format!("server-{j}"), ServerPins::new());
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let store = PinStore::at(&path);
        for i in 0..6 {
            let pins = store.load(&format!("config-{i}")).unwrap();
            assert_eq!(pins.len(), 15, "config-{i} lost edits: {pins:?}");
        }
    }
}
