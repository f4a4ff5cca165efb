//! The `host` reviewer: completions answered by a callback of the host
//! application (a Rust closure here; C function pointers, Python callables
//! and JS functions in the bindings, which wrap them into this callback).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::provider::{Completion, CompletionFuture, CompletionRequest, EventSink, Provider};
use mcpmux_core::error::Error;

/// The host's completion callback: takes a [`CompletionRequest`] as JSON and
/// answers a [`Completion`] as JSON (`{"text": ..., "tool_calls": [...]}`)
/// or a bare JSON string (the answer text).
pub type HostCallback =
    Arc<dyn Fn(Value) -> Pin<Box<dyn Future<Output = Result<Value, Error>> + Send>> + Send + Sync>;

/// A [`Provider`] backed by a [`HostCallback`].
pub struct HostProvider {
    callback: HostCallback,
}

impl HostProvider {
    /// Wraps `callback`.
    pub fn new(callback: HostCallback) -> Self {
        HostProvider { callback }
    }
}

impl Provider for HostProvider {
    fn name(&self) -> &str {
        "host"
    }

    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
        events: EventSink<'a>,
    ) -> CompletionFuture<'a> {
        Box::pin(async move {
            let json = serde_json::to_value(request)
                .map_err(|e| Error::Internal(format!("cannot encode the request: {e}")))?;
            let answer = (self.callback)(json).await?;
            events(super::provider::ProviderEvent::Progress);
            parse_answer(answer)
        })
    }
}

/// Reads the callback's answer: a string is the text; an object is a
/// [`Completion`] whose tool-call `arguments` may also be a JSON string.
fn parse_answer(answer: Value) -> Result<Completion, Error> {
    match answer {
        Value::String(text) => Ok(Completion {
            text,
            ..Default::default()
        }),
        Value::Object(mut map) => {
            if let Some(Value::Array(calls)) = map.get_mut("tool_calls") {
                for call in calls.iter_mut() {
                    if let Some(Value::String(s)) = call.get("arguments").cloned() {
                        call["arguments"] =
                            serde_json::from_str(&s).unwrap_or_else(|_| serde_json::json!({}));
                    }
                    if call.get("arguments").is_none() {
                        call["arguments"] = serde_json::json!({});
                    }
                }
            }
            serde_json::from_value(Value::Object(map)).map_err(|e| {
                Error::ProviderError(format!(
                    "host: the callback's answer is not a completion ({{text, tool_calls}}): {e}"
                ))
            })
        }
        other => Err(Error::ProviderError(format!(
            "host: the callback must answer a string or a {{text, tool_calls}} object, not {}",
            match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                _ => "an array",
            }
        ))),
    }
}
