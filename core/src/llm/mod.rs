//! What mcpmux says to LLM APIs: the provider-neutral conversation and
//! [`provider::Provider`] trait of the session agent loop, the HTTP
//! providers ([`openai::OpenAi`], [`anthropic::Anthropic`]) configured by
//! [`api::ApiSettings`], the `host` callback provider ([`host::HostProvider`]),
//! and the hub's tool list rendered in each provider's tool format.

pub mod anthropic;
pub mod api;
pub mod host;
pub mod openai;
pub mod provider;
pub mod tool_format;
