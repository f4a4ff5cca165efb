//! What mcpmux says to LLM APIs: the provider-neutral conversation and
//! [`provider::Provider`] trait of the session agent loop, the HTTP
//! providers ([`openai::OpenAi`], [`anthropic::Anthropic`]) configured by
//! [`api::ApiSettings`], and the `host` callback provider
//! ([`host::HostProvider`]). The hub's tool list in each provider's tool
//! format is the engine's (`mcpmux_core::tool_format`).

pub mod anthropic;
pub mod api;
pub mod host;
pub mod openai;
pub mod provider;
