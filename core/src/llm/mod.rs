//! What mcpmux says to LLM APIs: the provider-neutral conversation and
//! [`provider::Provider`] trait of the session agent loop, the HTTP
//! providers ([`openai::OpenAi`], [`anthropic::Anthropic`]) configured by
//! [`api::ApiSettings`], the `host` callback provider ([`host::HostProvider`]),
//! and the hub's tool list rendered in each provider's tool format.
//!
//! Only [`tool_format`] is built without the `sessions` feature (the hub
//! renders tool lists for any host); the providers serve review sessions.

#[cfg(feature = "sessions")]
pub mod anthropic;
#[cfg(feature = "sessions")]
pub mod api;
#[cfg(feature = "sessions")]
pub mod host;
#[cfg(feature = "sessions")]
pub mod openai;
#[cfg(feature = "sessions")]
pub mod provider;
pub mod tool_format;
