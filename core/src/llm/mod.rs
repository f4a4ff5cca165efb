//! What mcpmux says to LLM APIs. For now: the hub's tool list rendered in
//! each provider's tool format.

pub mod tool_format;
