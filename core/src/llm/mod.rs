//! What mcpmux says to LLM APIs: the provider-neutral conversation and
//! [`provider::Provider`] trait of the session agent loop, the `host`
//! callback provider, and the hub's tool list rendered in each provider's
//! tool format.

pub mod host;
pub mod provider;
pub mod tool_format;
