//! The `openai` provider: the Chat Completions API (`POST
//! {base_url}/chat/completions`), which OpenAI-compatible servers (Ollama,
//! vLLM, llama.cpp, LM Studio) speak too, streamed (SSE) or not.
//!
//! Mapping of a [`CompletionRequest`]:
//! - `system` → a first `{"role":"system"}` message;
//! - assistant messages → `content` + `tool_calls` (`arguments` as a JSON
//!   string); tool results → `{"role":"tool","tool_call_id","content"}`
//!   messages (an `is_error` result's content starts with `Error: `, as
//!   the API has no error flag), before the user text of the same message;
//! - `tools` → `{"type":"function","function":{name,description,parameters}}`;
//! - `effort` → `reasoning_effort`, as given;
//! - `max_tokens` → `max_completion_tokens` for api.openai.com and Azure
//!   OpenAI (where `max_tokens` is deprecated and refused by reasoning
//!   models), and
//!   `max_tokens` for every other server (Ollama, llama.cpp and older
//!   vLLM only read that one); `0` sends neither.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde_json::{json, Map, Value};

use crate::llm::api::{self, parse_arguments, ApiSettings, Endpoint, HttpApi};
use crate::llm::provider::{
    Completion, CompletionFuture, CompletionRequest, EventSink, Provider, ProviderEvent, Role,
    ToolCall,
};
use mcpmux_core::error::Error;

/// The public API's base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The model used when neither the request nor the settings name one.
pub const DEFAULT_MODEL: &str = "gpt-4.1";

/// A Chat Completions client.
#[derive(Debug)]
pub struct OpenAi {
    endpoint: Endpoint,
    model: String,
    stream: bool,
    /// Whether the server wants `max_completion_tokens` (api.openai.com).
    completion_tokens_field: bool,
}

impl OpenAi {
    /// A client for `settings`; fails with CONFIG_INVALID on a bad
    /// `base_url` or an API key that cannot be sent in a header.
    pub fn new(settings: ApiSettings) -> Result<Self, Error> {
        let endpoint = Endpoint::new(
            "openai",
            &settings,
            DEFAULT_BASE_URL,
            |base| format!("{base}/chat/completions"),
            |key| (AUTHORIZATION, format!("Bearer {key}")),
            HeaderMap::new(),
        )?;
        let completion_tokens_field = endpoint
            .url
            .host_str()
            .is_some_and(|h| h == "api.openai.com" || h.ends_with(".openai.azure.com"));
        Ok(OpenAi {
            endpoint,
            model: settings
                .model
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            stream: settings.stream,
            completion_tokens_field,
        })
    }
}

/// The parts of this API the shared loop ([`api::complete`]) does not know.
impl HttpApi for OpenAi {
    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn streams(&self) -> bool {
        self.stream
    }

    /// The JSON body sent for `request`.
    fn body(&self, request: &CompletionRequest) -> Value {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({ "role": "system", "content": request.system }));
        }
        for m in &request.messages {
            match m.role {
                Some(Role::Assistant) => {
                    let mut o = Map::new();
                    o.insert("role".into(), "assistant".into());
                    o.insert(
                        "content".into(),
                        if m.text.is_empty() && !m.tool_calls.is_empty() {
                            Value::Null
                        } else {
                            m.text.clone().into()
                        },
                    );
                    if !m.tool_calls.is_empty() {
                        let calls: Vec<Value> = m
                            .tool_calls
                            .iter()
                            .map(|c| {
                                json!({
                                    "id": c.id,
                                    "type": "function",
                                    "function": {
                                        "name": c.name,
                                        "arguments": c.arguments.to_string(),
                                    }
                                })
                            })
                            .collect();
                        o.insert("tool_calls".into(), calls.into());
                    }
                    messages.push(Value::Object(o));
                }
                Some(Role::User) | None => {
                    for r in &m.tool_results {
                        let content = if r.is_error {
                            format!("Error: {}", r.content)
                        } else {
                            r.content.clone()
                        };
                        messages.push(json!({
                            "role": "tool",
                            "tool_call_id": r.call_id,
                            "content": content,
                        }));
                    }
                    if !m.text.is_empty() || m.tool_results.is_empty() {
                        messages.push(json!({ "role": "user", "content": m.text }));
                    }
                }
            }
        }
        let mut body = Map::new();
        body.insert(
            "model".into(),
            request
                .model
                .clone()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| self.model.clone())
                .into(),
        );
        body.insert("messages".into(), messages.into());
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        }
                    })
                })
                .collect();
            body.insert("tools".into(), tools.into());
        }
        if request.max_tokens > 0 {
            let field = if self.completion_tokens_field {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(field.into(), request.max_tokens.into());
        }
        if let Some(effort) = request.effort.as_ref().filter(|e| !e.is_empty()) {
            body.insert("reasoning_effort".into(), effort.clone().into());
        }
        body.insert("stream".into(), self.stream.into());
        Value::Object(body)
    }

    /// A non-streamed `chat.completion` object.
    fn parse_whole(&self, v: &Value, events: EventSink<'_>) -> Result<Completion, Error> {
        self.check_error(v)?;
        let choice = v
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| self.malformed("has no choices"))?;
        let message = choice.get("message").unwrap_or(&Value::Null);
        let text = content_text(message.get("content"));
        if !text.is_empty() {
            events(ProviderEvent::TextDelta { text: text.clone() });
        }
        let mut tool_calls = Vec::new();
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for (i, c) in calls.iter().enumerate() {
                let function = c.get("function").unwrap_or(&Value::Null);
                let args = match function.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    // Some servers send the arguments as an object.
                    Some(v @ Value::Object(_)) => v.to_string(),
                    _ => String::new(),
                };
                tool_calls.push(tool_call(
                    i,
                    c.get("id").and_then(Value::as_str).unwrap_or(""),
                    function.get("name").and_then(Value::as_str).unwrap_or(""),
                    &args,
                ));
            }
        }
        Ok(Completion {
            text,
            tool_calls,
            stop_reason: choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// A streamed response: `chat.completion.chunk` events up to `[DONE]`.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        events: EventSink<'_>,
    ) -> Result<Completion, Error> {
        let mut sse = self.endpoint.events(response, events);
        let mut text = String::new();
        // Tool calls by their `index`: id, name, argument text.
        let mut calls: BTreeMap<u64, (String, String, String)> = BTreeMap::new();
        let mut stop_reason = None;
        let mut done = false;
        while let Some(event) = sse.next().await? {
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                done = true;
                break;
            }
            let chunk: Value = serde_json::from_str(data)
                .map_err(|e| self.malformed(format!("sent an event that is not JSON ({e})")))?;
            self.check_error(&chunk)?;
            let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
                continue;
            };
            for choice in choices {
                if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                    continue;
                }
                if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                    stop_reason = Some(reason.to_owned());
                }
                let Some(delta) = choice.get("delta") else {
                    continue;
                };
                let piece = content_text(delta.get("content"));
                if !piece.is_empty() {
                    text.push_str(&piece);
                    events(ProviderEvent::TextDelta { text: piece });
                }
                if let Some(deltas) = delta.get("tool_calls").and_then(Value::as_array) {
                    for (pos, d) in deltas.iter().enumerate() {
                        let index = d.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
                        let entry = calls.entry(index).or_default();
                        if let Some(id) = d.get("id").and_then(Value::as_str) {
                            if !id.is_empty() {
                                entry.0 = id.to_owned();
                            }
                        }
                        let function = d.get("function").unwrap_or(&Value::Null);
                        if let Some(name) = function.get("name").and_then(Value::as_str) {
                            // Names arrive whole in the first delta; some
                            // servers repeat them in later deltas.
                            if entry.1.is_empty() {
                                entry.1 = name.to_owned();
                            }
                        }
                        match function.get("arguments") {
                            Some(Value::String(s)) => entry.2.push_str(s),
                            Some(v @ Value::Object(_)) => entry.2.push_str(&v.to_string()),
                            _ => {}
                        }
                    }
                }
            }
        }
        // Servers that end the stream without `[DONE]` after the final
        // chunk are tolerated; a stream cut before the final chunk is not.
        if !done && stop_reason.is_none() {
            return Err(self.endpoint.error(format!(
                "the response stream from {} ended before the completion was complete",
                self.endpoint.shown_url()
            )));
        }
        let tool_calls = calls
            .into_values()
            .enumerate()
            .map(|(i, (id, name, args))| tool_call(i, &id, &name, &args))
            .collect();
        Ok(Completion {
            text,
            tool_calls,
            stop_reason,
        })
    }
}

impl OpenAi {
    /// An `error` member in a 200 response or stream chunk.
    fn check_error(&self, v: &Value) -> Result<(), Error> {
        match v.get("error") {
            None | Some(Value::Null) => Ok(()),
            Some(e) => {
                let message = e
                    .get("message")
                    .and_then(Value::as_str)
                    .or_else(|| e.as_str())
                    .unwrap_or("unknown error");
                Err(self.endpoint.error(format!(
                    "error from {}: {message}",
                    self.endpoint.shown_url()
                )))
            }
        }
    }

    fn malformed(&self, what: impl std::fmt::Display) -> Error {
        self.endpoint.error(format!(
            "the response from {} {what}",
            self.endpoint.shown_url()
        ))
    }
}

/// Message content as text: a string, or the text parts of an array.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// A finished tool call; servers that send no id get `call_{i}`.
fn tool_call(i: usize, id: &str, name: &str, args: &str) -> ToolCall {
    let (arguments, arguments_error) = parse_arguments(args);
    ToolCall {
        id: if id.is_empty() {
            format!("call_{i}")
        } else {
            id.to_owned()
        },
        name: name.to_owned(),
        arguments,
        arguments_error,
    }
}

impl Provider for OpenAi {
    fn name(&self) -> &str {
        "openai"
    }

    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
        events: EventSink<'a>,
    ) -> CompletionFuture<'a> {
        Box::pin(api::complete(self, request, events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::provider::{Message, ToolCallResult, ToolSpec};

    fn request() -> CompletionRequest {
        CompletionRequest {
            model: None,
            effort: Some("high".into()),
            system: "be brief".into(),
            messages: vec![
                Message::user("hi"),
                Message {
                    role: Some(Role::Assistant),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "echo".into(),
                        arguments: json!({"text": "x"}),
                        arguments_error: None,
                    }],
                    ..Default::default()
                },
                Message {
                    role: Some(Role::User),
                    tool_results: vec![ToolCallResult {
                        call_id: "call_1".into(),
                        content: "boom".into(),
                        is_error: true,
                    }],
                    ..Default::default()
                },
            ],
            tools: vec![ToolSpec {
                name: "echo".into(),
                description: "Echo".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 100,
        }
    }

    #[test]
    fn wire_shape() {
        let p = OpenAi::new(ApiSettings::default()).unwrap();
        let b = p.body(&request());
        assert_eq!(b["model"], DEFAULT_MODEL);
        assert_eq!(b["max_completion_tokens"], 100);
        assert!(b.get("max_tokens").is_none());
        assert_eq!(b["reasoning_effort"], "high");
        assert_eq!(b["stream"], true);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(m[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            r#"{"text":"x"}"#
        );
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "Error: boom"})
        );
        assert_eq!(m.len(), 4);
        assert_eq!(b["tools"][0]["function"]["parameters"]["type"], "object");

        let local = OpenAi::new(ApiSettings {
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            model: Some("llama3".into()),
            stream: false,
            ..Default::default()
        })
        .unwrap();
        let b = local.body(&request());
        assert_eq!(b["max_tokens"], 100);
        assert_eq!(b["model"], "llama3");
        assert_eq!(b["stream"], false);
        assert_eq!(
            local.endpoint.shown_url(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
    }
}
