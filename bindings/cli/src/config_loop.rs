//! Refusing an mcpmux that would start itself with its own config: a
//! trusted `.mcp.json` listing `{"command": "mcpmux", "args": ["gateway"]}`
//! made each gateway find the same file again (22 nested gateways in 4 s).
//!
//! Every `mcpmux` process adds its config's real path to
//! `MCPMUX_CONFIG_CHAIN` (a JSON array of paths) in its own environment,
//! which the servers it starts inherit. A process whose config is already
//! in the chain was started, directly or through other programs, by an
//! mcpmux running that same config: `CONFIG_INVALID` naming the loop,
//! before anything starts. A nested mcpmux with another config is fine,
//! up to [`MAX_DEPTH`] deep.

use std::path::Path;

use mcpmux_core::config::trust;
use mcpmux_core::Error;

/// The environment variable holding the configs of the mcpmux processes
/// this one was started under, outermost first.
pub const CHAIN_VAR: &str = "MCPMUX_CONFIG_CHAIN";

/// How many mcpmux processes may nest, each with its own config.
pub const MAX_DEPTH: usize = 16;

/// Checks the config `flag` (or discovery) would use against the chain and
/// adds it. Must run before any thread starts (it sets an environment
/// variable). A config that cannot be found or resolved is left to the
/// loading that reports it.
pub fn enter(flag: Option<&Path>) -> Result<(), Error> {
    let Some(located) = trust::locate(flag) else {
        return Ok(());
    };
    let Ok(real) = std::fs::canonicalize(&located.path) else {
        return Ok(());
    };
    let real = real.to_string_lossy().into_owned();
    // What another process wrote: read as data, bounded, never trusted to
    // be well formed (a malformed chain starts a new one).
    let mut chain: Vec<String> = std::env::var(CHAIN_VAR)
        .ok()
        .filter(|v| v.len() <= 64 * 1024)
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or_default();
    if chain.contains(&real) {
        let mut shown = chain.clone();
        shown.push(real.clone());
        return Err(Error::ConfigInvalid(format!(
            "{real}: mcpmux would start itself with this config, a loop ({}); give the \
             nested mcpmux another config with --config, or remove the server that runs mcpmux",
            shown.join(" -> ")
        )));
    }
    if chain.len() >= MAX_DEPTH {
        return Err(Error::ConfigInvalid(format!(
            "{real}: mcpmux is nested more than {MAX_DEPTH} deep ({})",
            chain.join(" -> ")
        )));
    }
    chain.push(real);
    let value = serde_json::to_string(&chain).map_err(|e| Error::Internal(e.to_string()))?;
    // SAFETY-free in this edition, but only sound while no other thread
    // reads the environment: called at the top of `main`.
    std::env::set_var(CHAIN_VAR, value);
    Ok(())
}
