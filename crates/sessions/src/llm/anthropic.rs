//! The `anthropic` provider: the Messages API (`POST {base_url}/v1/messages`,
//! `x-api-key`, `anthropic-version: 2023-06-01`), streamed (SSE) or not.
//!
//! Mapping of a [`CompletionRequest`]:
//! - `system` → the top-level `system` string;
//! - assistant messages → `text` + `tool_use` blocks; tool results →
//!   `tool_result` blocks (`tool_use_id`, `content`, `is_error`) first in
//!   the user message, then its text;
//! - `tools` → `{"name","description","input_schema"}`;
//! - `max_tokens` → `max_tokens` (required by the API; `0` sends
//!   [`DEFAULT_MAX_TOKENS`]);
//! - `effort` → extended thinking, `{"type":"enabled","budget_tokens":N}`
//!   with N from [`thinking_budget`]: `minimal` 1024, `low` 2048, `medium`
//!   8192, `high` 16384, `xhigh`/`max` 32768 tokens, cut to half of
//!   `max_tokens` (at least 1024, the API's minimum); `none`, unknown values
//!   and `max_tokens` ≤ 1024 send no thinking. The transcript keeps no
//!   thinking blocks, and the API refuses a tool-use continuation whose
//!   assistant turn lacks them, so thinking is only asked for when the
//!   request does not continue a tool call (the first request of a turn);
//!   thinking blocks in answers are skipped.
//!
//! A `base_url` whose path already ends in `/v1` gets `/messages` only.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Map, Value};

use crate::llm::api::{self, parse_arguments, ApiSettings, Endpoint, HttpApi};
use crate::llm::provider::{
    Completion, CompletionFuture, CompletionRequest, EventSink, Provider, ProviderEvent, Role,
    ToolCall,
};
use mcpmux_core::error::Error;

/// The public API's base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The model used when neither the request nor the settings name one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` sent when the request says 0 (the API requires a value).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A Messages API client.
#[derive(Debug)]
pub struct Anthropic {
    endpoint: Endpoint,
    model: String,
    stream: bool,
}

impl Anthropic {
    /// A client for `settings`; fails with CONFIG_INVALID on a bad
    /// `base_url` or an API key that cannot be sent in a header.
    pub fn new(settings: ApiSettings) -> Result<Self, Error> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        let endpoint = Endpoint::new(
            "anthropic",
            &settings,
            DEFAULT_BASE_URL,
            |base| {
                if base.ends_with("/v1") {
                    format!("{base}/messages")
                } else {
                    format!("{base}/v1/messages")
                }
            },
            |key| (HeaderName::from_static("x-api-key"), key.to_owned()),
            headers,
        )?;
        Ok(Anthropic {
            endpoint,
            model: settings
                .model
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            stream: settings.stream,
        })
    }
}

/// The parts of this API the shared loop ([`api::complete`]) does not know.
impl HttpApi for Anthropic {
    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn streams(&self) -> bool {
        self.stream
    }

    /// The JSON body sent for `request`.
    fn body(&self, request: &CompletionRequest) -> Value {
        let mut messages = Vec::new();
        for m in &request.messages {
            match m.role {
                Some(Role::Assistant) => {
                    let mut blocks = Vec::new();
                    if !m.text.is_empty() {
                        blocks.push(json!({ "type": "text", "text": m.text }));
                    }
                    for c in &m.tool_calls {
                        blocks.push(json!({
                            "type": "tool_use",
                            "id": c.id,
                            "name": c.name,
                            "input": if c.arguments.is_object() { c.arguments.clone() } else { json!({}) },
                        }));
                    }
                    if blocks.is_empty() {
                        // An empty assistant turn (nothing said) still
                        // keeps the roles alternating.
                        blocks.push(json!({ "type": "text", "text": "(no answer)" }));
                    }
                    messages.push(json!({ "role": "assistant", "content": blocks }));
                }
                Some(Role::User) | None => {
                    if m.tool_results.is_empty() {
                        messages.push(json!({ "role": "user", "content": m.text }));
                        continue;
                    }
                    let mut blocks: Vec<Value> = m
                        .tool_results
                        .iter()
                        .map(|r| {
                            json!({
                                "type": "tool_result",
                                "tool_use_id": r.call_id,
                                "content": r.content,
                                "is_error": r.is_error,
                            })
                        })
                        .collect();
                    if !m.text.is_empty() {
                        blocks.push(json!({ "type": "text", "text": m.text }));
                    }
                    messages.push(json!({ "role": "user", "content": blocks }));
                }
            }
        }
        let max_tokens = if request.max_tokens == 0 {
            DEFAULT_MAX_TOKENS
        } else {
            request.max_tokens
        };
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
        body.insert("max_tokens".into(), max_tokens.into());
        if !request.system.is_empty() {
            body.insert("system".into(), request.system.clone().into());
        }
        body.insert("messages".into(), messages.into());
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut o = Map::new();
                    o.insert("name".into(), t.name.clone().into());
                    if !t.description.is_empty() {
                        o.insert("description".into(), t.description.clone().into());
                    }
                    o.insert("input_schema".into(), t.input_schema.clone());
                    Value::Object(o)
                })
                .collect();
            body.insert("tools".into(), tools.into());
        }
        let continues_tool_use = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Some(Role::Assistant))
            .is_some_and(|m| !m.tool_calls.is_empty());
        if !continues_tool_use {
            if let Some(budget) = request
                .effort
                .as_deref()
                .and_then(|e| thinking_budget(e, max_tokens))
            {
                body.insert(
                    "thinking".into(),
                    json!({ "type": "enabled", "budget_tokens": budget }),
                );
            }
        }
        if self.stream {
            body.insert("stream".into(), true.into());
        }
        Value::Object(body)
    }

    /// A non-streamed `message` object.
    fn parse_whole(&self, v: &Value, events: EventSink<'_>) -> Result<Completion, Error> {
        if v.get("type").and_then(Value::as_str) == Some("error") {
            return Err(self.api_error(v));
        }
        let blocks = v
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.malformed("has no content"))?;
        let mut completion = Completion {
            stop_reason: v
                .get("stop_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ..Default::default()
        };
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                    if !t.is_empty() {
                        completion.text.push_str(t);
                        events(ProviderEvent::TextDelta { text: t.to_owned() });
                    }
                }
                Some("tool_use") => {
                    let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                    let (arguments, arguments_error) = match input {
                        Value::Object(_) => (input, None),
                        // Some proxies pass the model's argument text on
                        // as a string.
                        Value::String(text) => parse_arguments(&text),
                        other => parse_arguments(&other.to_string()),
                    };
                    completion.tool_calls.push(ToolCall {
                        id: str_field(b, "id"),
                        name: str_field(b, "name"),
                        arguments,
                        arguments_error,
                    });
                }
                // thinking, redacted_thinking, server tool blocks: not
                // part of the neutral transcript.
                _ => {}
            }
        }
        Ok(completion)
    }

    /// A streamed response, `message_start` to `message_stop`.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        events: EventSink<'_>,
    ) -> Result<Completion, Error> {
        let mut sse = self.endpoint.events(response, events);
        let mut completion = Completion::default();
        // Open and closed tool_use blocks by index: id, name, input JSON
        // text, and the input given whole in `content_block_start`.
        let mut tools: BTreeMap<u64, (String, String, String, Option<Value>)> = BTreeMap::new();
        let mut stopped = false;
        while let Some(event) = sse.next().await? {
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(data)
                .map_err(|e| self.malformed(format!("sent an event that is not JSON ({e})")))?;
            let kind = v
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or(event.event.as_str());
            let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
            match kind {
                "error" => return Err(self.api_error(&v)),
                "content_block_start" => {
                    let block = v.get("content_block").unwrap_or(&Value::Null);
                    match block.get("type").and_then(Value::as_str) {
                        Some("tool_use") => {
                            let input = block
                                .get("input")
                                .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                                .cloned();
                            tools.insert(
                                index,
                                (
                                    str_field(block, "id"),
                                    str_field(block, "name"),
                                    String::new(),
                                    input,
                                ),
                            );
                        }
                        Some("text") => {
                            let t = block.get("text").and_then(Value::as_str).unwrap_or("");
                            if !t.is_empty() {
                                completion.text.push_str(t);
                                events(ProviderEvent::TextDelta { text: t.to_owned() });
                            }
                        }
                        _ => {}
                    }
                }
                "content_block_delta" => {
                    let delta = v.get("delta").unwrap_or(&Value::Null);
                    match delta.get("type").and_then(Value::as_str) {
                        Some("text_delta") => {
                            let t = delta.get("text").and_then(Value::as_str).unwrap_or("");
                            if !t.is_empty() {
                                completion.text.push_str(t);
                                events(ProviderEvent::TextDelta { text: t.to_owned() });
                            }
                        }
                        Some("input_json_delta") => {
                            if let Some(tool) = tools.get_mut(&index) {
                                tool.2.push_str(
                                    delta
                                        .get("partial_json")
                                        .and_then(Value::as_str)
                                        .unwrap_or(""),
                                );
                            }
                        }
                        // thinking_delta, signature_delta, citations: skipped.
                        _ => {}
                    }
                }
                "message_delta" => {
                    if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                        completion.stop_reason = Some(r.to_owned());
                    }
                }
                "message_stop" => {
                    stopped = true;
                    break;
                }
                // message_start, content_block_stop, ping and event types
                // added later carry nothing the completion needs.
                _ => {}
            }
        }
        if !stopped {
            return Err(self.endpoint.error(format!(
                "the response stream from {} ended before message_stop",
                self.endpoint.shown_url()
            )));
        }
        completion.tool_calls = tools
            .into_values()
            .map(|(id, name, text, whole)| {
                let (arguments, arguments_error) = match whole {
                    Some(input) if text.trim().is_empty() => (input, None),
                    _ => parse_arguments(&text),
                };
                ToolCall {
                    id,
                    name,
                    arguments,
                    arguments_error,
                }
            })
            .collect();
        Ok(completion)
    }
}

impl Anthropic {
    /// An `{"type":"error","error":{"type","message"}}` sent with status 200
    /// or as a stream event.
    fn api_error(&self, v: &Value) -> Error {
        let kind = v
            .pointer("/error/type")
            .and_then(Value::as_str)
            .unwrap_or("error");
        let message = v
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("unknown error");
        self.endpoint.error(format!(
            "{kind} from {}: {message}",
            self.endpoint.shown_url()
        ))
    }

    fn malformed(&self, what: impl std::fmt::Display) -> Error {
        self.endpoint.error(format!(
            "the response from {} {what}",
            self.endpoint.shown_url()
        ))
    }
}

fn str_field(v: &Value, name: &str) -> String {
    v.get(name).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// The extended-thinking budget for an `effort` (see the module
/// documentation), or `None` for no thinking.
pub fn thinking_budget(effort: &str, max_tokens: u32) -> Option<u32> {
    let wanted: u32 = match effort.trim().to_ascii_lowercase().as_str() {
        "minimal" => 1024,
        "low" => 2048,
        "medium" => 8192,
        "high" => 16384,
        "xhigh" | "max" => 32768,
        _ => return None,
    };
    if max_tokens <= 1024 {
        return None;
    }
    Some(wanted.min(max_tokens / 2).max(1024))
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
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

    fn request(messages: Vec<Message>) -> CompletionRequest {
        CompletionRequest {
            model: Some("claude-x".into()),
            effort: Some("medium".into()),
            system: "be brief".into(),
            messages,
            tools: vec![ToolSpec {
                name: "echo".into(),
                description: String::new(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 10000,
        }
    }

    #[test]
    fn wire_shape() {
        let p = Anthropic::new(ApiSettings {
            base_url: Some("http://127.0.0.1:9/v1/".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.endpoint.shown_url(), "http://127.0.0.1:9/v1/messages");
        let b = p.body(&request(vec![Message::user("hi")]));
        assert_eq!(b["model"], "claude-x");
        assert_eq!(b["system"], "be brief");
        assert_eq!(b["max_tokens"], 10000);
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 5000})
        );
        assert_eq!(
            b["tools"][0],
            json!({"name": "echo", "input_schema": {"type": "object"}})
        );
        assert_eq!(b["messages"][0], json!({"role": "user", "content": "hi"}));

        let b = p.body(&request(vec![
            Message::user("hi"),
            Message {
                role: Some(Role::Assistant),
                text: "let me see".into(),
                tool_calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "echo".into(),
                    arguments: json!({"text": "x"}),
                    arguments_error: None,
                }],
                ..Default::default()
            },
            Message {
                role: Some(Role::User),
                tool_results: vec![ToolCallResult {
                    call_id: "toolu_1".into(),
                    content: "x".into(),
                    is_error: false,
                }],
                ..Default::default()
            },
        ]));
        assert!(
            b.get("thinking").is_none(),
            "no thinking inside a tool loop"
        );
        assert_eq!(b["messages"][1]["content"][1]["type"], "tool_use");
        assert_eq!(b["messages"][1]["content"][1]["input"]["text"], "x");
        assert_eq!(
            b["messages"][2]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "x", "is_error": false})
        );
        let d = Anthropic::new(ApiSettings::default()).unwrap();
        assert_eq!(
            d.endpoint.shown_url(),
            "https://api.anthropic.com/v1/messages"
        );
    }

    #[test]
    fn budgets() {
        assert_eq!(thinking_budget("high", 64000), Some(16384));
        assert_eq!(thinking_budget("high", 4000), Some(2000));
        assert_eq!(thinking_budget("low", 1500), Some(1024));
        assert_eq!(thinking_budget("low", 1024), None);
        assert_eq!(thinking_budget("none", 64000), None);
        assert_eq!(thinking_budget("bogus", 64000), None);
    }
}
