//! Builds the provider of a round from its settings: the host callback, or
//! an API client with its key read from the environment at run time (the
//! key is never stored).

use super::settings::Settings;
use super::SessionContext;
use crate::error::Error;
use crate::llm::provider::SharedProvider;

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
            let _key = api_key(settings)?;
            Err(Error::ReviewerNotFound(format!(
                "reviewer '{}' is not available in this build",
                settings.reviewer
            )))
        }
        other => Err(Error::ReviewerNotFound(format!(
            "unknown reviewer '{other}'"
        ))),
    }
}
