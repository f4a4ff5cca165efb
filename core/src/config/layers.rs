//! Parts of a config file that belong to the crates above the engine.
//!
//! A server entry's policy keys (`allow_tools`, ...) and the `[session]`
//! table are read by `mcpmux-policy` and `mcpmux-sessions`, which the engine
//! does not depend on. Each of those crates registers a [`ConfigLayer`]
//! naming the keys it owns and checking their values, so that a typo or a
//! wrong type still fails the load in every front end, with the owner's
//! own message, while the engine never names a layer above it.
//!
//! Registration is process-wide and idempotent: a front end registers its
//! layers once at start (the bindings and the CLI do), then every
//! [`Config`](super::Config) load uses them. Without a registered owner, a
//! server entry's key is unknown (`CONFIG_INVALID`), and the `[session]`
//! table, which nothing would read, is kept as written.

use std::sync::RwLock;

use serde_json::{Map, Value};

use crate::error::Error;

/// A crate above the engine that owns keys of a config file. Implemented
/// by `mcpmux-policy` and `mcpmux-sessions`. The checks run on the thread
/// that loads the config, in registration order, after the engine's own
/// checks of the same part.
pub trait ConfigLayer: Send + Sync + 'static {
    /// A short name for the layer (`"policy"`, `"sessions"`); registering a
    /// second layer of the same name does nothing.
    fn name(&self) -> &'static str;

    /// Keys of a server entry this layer reads.
    fn server_keys(&self) -> &'static [&'static str] {
        &[]
    }

    /// Keys of the `[session]` table this layer reads.
    fn session_keys(&self) -> &'static [&'static str] {
        &[]
    }

    /// Checks the keys this layer owns in one server entry. `extra` holds
    /// the entry's keys the engine does not read, as written; `origin` names
    /// the file (or `config`). The error is returned as the load's error.
    fn check_server(
        &self,
        origin: &str,
        server: &str,
        extra: &Map<String, Value>,
    ) -> Result<(), Error> {
        let _ = (origin, server, extra);
        Ok(())
    }

    /// Checks the `[session]` table (after `${VAR}` expansion; not called
    /// when the table is empty). The error is returned as the load's error.
    fn check_session(&self, origin: &str, session: &Map<String, Value>) -> Result<(), Error> {
        let _ = (origin, session);
        Ok(())
    }
}

/// At most this many layers (the workspace has two; a bound all the same).
const MAX_LAYERS: usize = 16;

static LAYERS: RwLock<Vec<&'static dyn ConfigLayer>> = RwLock::new(Vec::new());

/// Registers `layer` for every later config load in this process. A layer
/// whose [`ConfigLayer::name`] is already registered is ignored, and so is
/// any layer past the sixteenth. Safe from any thread.
pub fn register_layer(layer: &'static dyn ConfigLayer) {
    let mut layers = LAYERS.write().unwrap_or_else(|e| e.into_inner());
    if layers.len() < MAX_LAYERS && !layers.iter().any(|l| l.name() == layer.name()) {
        layers.push(layer);
    }
}

/// The layers registered so far, in registration order.
pub(super) fn registered() -> Vec<&'static dyn ConfigLayer> {
    LAYERS.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The server-entry keys of every registered layer.
pub(super) fn server_keys(layers: &[&'static dyn ConfigLayer]) -> Vec<&'static str> {
    layers
        .iter()
        .flat_map(|l| l.server_keys().iter().copied())
        .collect()
}

/// The `[session]` keys of every registered layer.
pub(super) fn session_keys(layers: &[&'static dyn ConfigLayer]) -> Vec<&'static str> {
    layers
        .iter()
        .flat_map(|l| l.session_keys().iter().copied())
        .collect()
}
