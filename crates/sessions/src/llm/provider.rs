//! The provider-neutral conversation the session agent loop keeps, and the
//! trait every API-style reviewer implements (`anthropic`, `openai`, `host`).
//!
//! The transcript is stored on disk as JSON in exactly these shapes
//! (snake_case, mcpmux's own envelope), so a round can resume in another
//! process from its last stored turn. Providers translate it to and from
//! their wire format on every request; nothing provider-specific is stored.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use mcpmux_core::error::Error;

/// Who said a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The host's prompt, or tool results sent back to the model.
    User,
    /// The model's answer: text and/or tool calls.
    Assistant,
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (echoed in the matching result).
    pub id: String,
    /// The tool name as offered to the model (hub name, or `submit_review`).
    pub name: String,
    /// The arguments the model gave (an object; `{}` when it gave none or
    /// gave text that is not JSON, in which case `arguments_error` says so).
    pub arguments: Value,
    /// Set when the model's argument text could not be parsed as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    /// What the model sees (already redacted, capped and framed by policy).
    pub content: String,
    /// The call failed (tool error, refusal, limit, transport failure).
    pub is_error: bool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Option<Role>,
    /// Plain text (may be empty when the message only carries tool calls
    /// or results).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Tool calls (assistant messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tool results (user messages only), answering the previous
    /// assistant message's calls in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolCallResult>,
}

impl Message {
    /// A user message with `text`.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Some(Role::User),
            text: text.into(),
            ..Default::default()
        }
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
}

/// One request to the model: everything needed to produce the next
/// assistant message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// The model name; the provider's default when `None`.
    pub model: Option<String>,
    /// Reasoning effort (`low`, `medium`, `high`, ...), passed through where
    /// the API has such a setting (OpenAI `reasoning_effort`, Anthropic
    /// thinking budget), ignored elsewhere.
    pub effort: Option<String>,
    /// System prompt.
    pub system: String,
    /// The conversation so far; the last message is a user message.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Upper bound on output tokens.
    pub max_tokens: u32,
}

/// The model's answer to a [`CompletionRequest`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Completion {
    /// Text of the answer (concatenated across text blocks / deltas).
    #[serde(default)]
    pub text: String,
    /// Tool calls the model asked for, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The provider's stop reason as it sent it (`end_turn`, `tool_use`,
    /// `stop`, `tool_calls`, `length`, ...), when known.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// Something a provider observed while a completion streams. Used to
/// detect progress (stall detection) and as session activities.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProviderEvent {
    /// Bytes of the response arrived (any part: text, tool-call
    /// arguments, thinking, keep-alive pings).
    Progress,
    /// A chunk of answer text.
    TextDelta {
        /// The text.
        text: String,
    },
}

/// Receives [`ProviderEvent`]s; called on the task that runs the request.
pub type EventSink<'a> = &'a (dyn Fn(ProviderEvent) + Send + Sync);

/// The future a [`Provider`] returns.
pub type CompletionFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Completion, Error>> + Send + 'a>>;

/// An LLM that can answer a [`CompletionRequest`]: the `anthropic` and
/// `openai` wire clients, and `host` callbacks.
///
/// Errors: [`Error::ProviderError`] with a message that names the provider,
/// the HTTP status and the API's own error message (never the API key or
/// request headers); [`Error::Timeout`] when the request timed out.
pub trait Provider: Send + Sync {
    /// A short name for messages: `anthropic`, `openai`, `host`.
    fn name(&self) -> &str;
    /// Runs one completion, reporting progress to `events` as it streams.
    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
        events: EventSink<'a>,
    ) -> CompletionFuture<'a>;
}

/// A shared provider.
pub type SharedProvider = Arc<dyn Provider>;
