//! The policy's keys in a config file, checked when the config loads: a
//! server entry's `allow_tools`, `deny_tools`, ... ([`SERVER_KEYS`]) and the
//! `[session]` table's limits, scope and redaction ([`SESSION_KEYS`]).

use serde_json::{Map, Value};

use mcpmux_core::config::{register_layer, ConfigLayer};
use mcpmux_core::error::Error;

use crate::rules::{ServerPolicy, SERVER_KEYS};
use crate::settings::{PolicySettings, SESSION_KEYS};

/// The policy's part of a config file.
struct PolicyLayer;

impl ConfigLayer for PolicyLayer {
    fn name(&self) -> &'static str {
        "policy"
    }

    fn server_keys(&self) -> &'static [&'static str] {
        SERVER_KEYS
    }

    fn session_keys(&self) -> &'static [&'static str] {
        SESSION_KEYS
    }

    fn check_server(
        &self,
        origin: &str,
        server: &str,
        extra: &Map<String, Value>,
    ) -> Result<(), Error> {
        ServerPolicy::from_map(extra, origin, server).map(drop)
    }

    fn check_session(&self, origin: &str, session: &Map<String, Value>) -> Result<(), Error> {
        PolicySettings::from_session_table(session, origin).map(drop)
    }
}

/// Registers the policy's config keys with the engine
/// ([`mcpmux_core::config::register_layer`]), so every later load in this
/// process accepts and checks them. Idempotent; any thread. Front ends
/// call it once at start.
pub fn register_config_layer() {
    register_layer(&PolicyLayer);
}
