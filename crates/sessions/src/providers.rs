//! Builds the provider of a round from its settings: the host callback, or
//! an API client with its key read from the environment at run time (the
//! key is never stored).

use std::time::Duration;

use super::settings::Settings;
use super::SessionContext;
use crate::llm::api::{http_provider, ApiSettings};
use crate::llm::provider::SharedProvider;
use mcpmux_core::error::Error;

/// How much longer than `stall_seconds` the HTTP client waits for a byte,
/// so that the runner's watchdog (which polls every 200 ms) reports a
/// silent reviewer as `stalled` rather than the client failing the turn.
const STALL_MARGIN_SECONDS: f64 = 2.0;

/// The API key of an API reviewer, from the variable `settings` names.
pub fn api_key(settings: &Settings) -> Result<String, Error> {
    let var = settings.key_env();
    match std::env::var(&var) {
        Ok(k) if !k.is_empty() => Ok(k),
        _ => Err(Error::ReviewerNotFound(format!(
            "reviewer '{}' needs an API key in the environment variable {var}, which is not set",
            settings.reviewer
        ))),
    }
}

/// The provider for `settings.reviewer` (`host`, `openai`, `anthropic`).
pub fn make(ctx: &SessionContext, settings: &Settings) -> Result<SharedProvider, Error> {
    match settings.reviewer.as_str() {
        "host" => ctx.host.clone().ok_or_else(|| {
            Error::ReviewerNotFound(
                "reviewer 'host' needs a host callback, and none was given".into(),
            )
        }),
        "openai" | "anthropic" => {
            let api = ApiSettings {
                base_url: settings.base_url.clone(),
                api_key: Some(api_key(settings)?),
                model: settings.model.clone(),
                stream: settings.stream,
                // The watchdog owns stalls (status `stalled`); the client
                // must not give up first, so it waits a little longer.
                request_timeout: Some(Duration::from_secs_f64(
                    settings
                        .stall_seconds
                        .clamp(0.0, super::settings::MAX_NUMBER)
                        + STALL_MARGIN_SECONDS,
                )),
                // The session config's `[network]`: the provider's URL is
                // under the same policy as its servers.
                network: ctx
                    .config
                    .as_ref()
                    .map(|c| c.network.clone())
                    .unwrap_or_default(),
            };
            http_provider(&settings.reviewer, api)
        }
        other => Err(Error::ReviewerNotFound(format!(
            "unknown reviewer '{other}'"
        ))),
    }
}
