//! The reviewer's keys of a config file's `[session]` table (`reviewer`,
//! `model`, `max_turns`, ...: [`SESSION_KEYS`]), checked when the config
//! loads as [`settings::resolve`](crate::settings::resolve) reads them.

use serde_json::{Map, Value};

use mcpmux_core::config::{register_layer, ConfigLayer};
use mcpmux_core::error::Error;

/// The `[session]` keys the session layer reads (the policy's are
/// `mcpmux_policy::settings::SESSION_KEYS`).
pub const SESSION_KEYS: &[&str] = &[
    "reviewer",
    "model",
    "effort",
    "base_url",
    "api_key_env",
    "stream",
    "max_turns",
    "stall_seconds",
    "timeout_seconds",
    "max_rounds",
    "command",
    "args",
    "resume_args",
];

/// The session layer's part of a config file.
struct SessionLayer;

impl ConfigLayer for SessionLayer {
    fn name(&self) -> &'static str {
        "sessions"
    }

    fn session_keys(&self) -> &'static [&'static str] {
        SESSION_KEYS
    }

    fn check_session(&self, origin: &str, session: &Map<String, Value>) -> Result<(), Error> {
        match crate::settings::resolve(session, &Default::default()) {
            Ok(_) => Ok(()),
            // The settings name the table but not the file.
            Err(Error::ConfigInvalid(m)) => Err(Error::ConfigInvalid(format!("{origin}: {m}"))),
            Err(e) => Err(Error::ConfigInvalid(format!("{origin}: [session]: {e}"))),
        }
    }
}

/// Registers the config keys of the policy and of the session layer with
/// the engine ([`mcpmux_core::config::register_layer`]), so every later
/// load in this process accepts and checks them. Idempotent; any thread.
/// Front ends call it once at start.
pub fn register_config_layers() {
    mcpmux_policy::register_config_layer();
    register_layer(&SessionLayer);
}
