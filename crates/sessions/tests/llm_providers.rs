//! The `openai` and `anthropic` providers against `tests/servers/llm_mock.py`,
//! a real local HTTP server speaking both wire formats (streamed and not),
//! run as a process. Every test checks what the provider returned and what
//! the endpoint received (the mock's request log).
//!
//! Each test runs its four cases (two providers, streamed or not) at once
//! against one mock process, each case with its own script (selected by
//! model name), to keep the file fast.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use mcpmux_core::Error;
use mcpmux_sessions::llm::anthropic::{self, Anthropic};
use mcpmux_sessions::llm::api::ApiSettings;
use mcpmux_sessions::llm::openai::{self, OpenAi};
use mcpmux_sessions::llm::provider::{
    Completion, CompletionRequest, Message, Provider, ProviderEvent, Role, ToolCall,
    ToolCallResult, ToolSpec,
};
use serde_json::{json, Value};

mod llm_mock;

use llm_mock::Mock;

fn base_url(mock: &Mock, kind: Kind) -> String {
    match kind {
        Kind::OpenAi => mock.openai_base_url(),
        Kind::Anthropic => mock.anthropic_base_url(),
    }
}

fn endpoint(mock: &Mock, kind: Kind) -> String {
    match kind {
        Kind::OpenAi => format!("{}/chat/completions", mock.openai_base_url()),
        Kind::Anthropic => format!("{}/v1/messages", mock.anthropic_base_url()),
    }
}

// ----- providers and requests ----------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    OpenAi,
    Anthropic,
}

const CASES: [(Kind, bool); 4] = [
    (Kind::OpenAi, true),
    (Kind::OpenAi, false),
    (Kind::Anthropic, true),
    (Kind::Anthropic, false),
];

const STREAMED: [(Kind, bool); 2] = [(Kind::OpenAi, true), (Kind::Anthropic, true)];

const KEY: &str = "sk-mcpmux-test-SECRET-0123456789";

/// One provider × streaming case of a test. The cases of a test share one
/// mock process; each case has its own script, selected by its model name.
struct Case {
    kind: Kind,
    stream: bool,
    model: String,
    mock: Arc<Mock>,
}

impl Case {
    fn model_name(kind: Kind, stream: bool) -> String {
        format!("{kind:?}-{}", if stream { "stream" } else { "whole" }).to_lowercase()
    }

    /// The requests of this case, as the mock logged them.
    fn requests(&self) -> Vec<Value> {
        self.mock
            .requests()
            .into_iter()
            .filter(|r| r["model"] == self.model.as_str())
            .collect()
    }

    /// The requests of this case once there are `n` (the mock may log a
    /// moment after the client gave up on a request).
    async fn requests_eventually(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.requests();
            if log.len() >= n || Instant::now() > deadline {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn endpoint(&self, kind: Kind) -> String {
        endpoint(&self.mock, kind)
    }
}

fn settings(case: &Case, kind: Kind, stream: bool) -> ApiSettings {
    ApiSettings {
        base_url: Some(base_url(&case.mock, kind)),
        api_key: Some(KEY.into()),
        model: Some(case.model.clone()),
        stream,
        request_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    }
}

fn provider(kind: Kind, s: ApiSettings) -> Box<dyn Provider> {
    match kind {
        Kind::OpenAi => Box::new(OpenAi::new(s).unwrap()),
        Kind::Anthropic => Box::new(Anthropic::new(s).unwrap()),
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "mcp_demo_echo".into(),
            description: "Echo the text back".into(),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        },
        ToolSpec {
            name: "mcp_demo_add".into(),
            description: "Add two numbers".into(),
            input_schema: json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        },
    ]
}

fn request(messages: Vec<Message>) -> CompletionRequest {
    CompletionRequest {
        model: None,
        effort: None,
        system: "You review plans.".into(),
        messages,
        tools: tools(),
        max_tokens: 2048,
    }
}

/// Runs one completion, collecting the events it reported.
async fn complete(
    p: &dyn Provider,
    req: &CompletionRequest,
) -> (Result<Completion, Error>, Vec<ProviderEvent>) {
    let events = Mutex::new(Vec::new());
    let sink = |e: ProviderEvent| events.lock().unwrap().push(e);
    let result = p.complete(req, &sink).await;
    (result, events.into_inner().unwrap())
}

fn progress_count(events: &[ProviderEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, ProviderEvent::Progress))
        .count()
}

fn text_of(events: &[ProviderEvent]) -> (String, usize) {
    let mut text = String::new();
    let mut n = 0;
    for e in events {
        if let ProviderEvent::TextDelta { text: t } = e {
            text.push_str(t);
            n += 1;
        }
    }
    (text, n)
}

/// Runs `case` for each of `cases` at once, against one mock serving
/// `script(kind, stream)` to each case.
async fn each_case<S, F, Fut>(cases: &[(Kind, bool)], script: S, case: F)
where
    S: Fn(Kind, bool) -> Value,
    F: Fn(Case) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let scripts: serde_json::Map<String, Value> = cases
        .iter()
        .map(|&(k, s)| (Case::model_name(k, s), script(k, s)))
        .collect();
    let mock = Arc::new(Mock::start(json!({ "scripts": scripts })).await);
    join_all(cases.iter().map(|&(kind, stream)| {
        case(Case {
            kind,
            stream,
            model: Case::model_name(kind, stream),
            mock: mock.clone(),
        })
    }))
    .await;
}

/// The pauses the providers chose before their retries (the `pause` of
/// their "retrying LLM request" debug events), as `Debug` text ("1s",
/// "500ms"): what the retry tests check instead of how long a call took.
#[derive(Clone, Default)]
struct Pauses(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Pauses {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Pause(Option<String>);
        impl tracing::field::Visit for Pause {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "pause" {
                    self.0 = Some(format!("{v:?}"));
                }
            }
        }
        let mut pause = Pause(None);
        event.record(&mut pause);
        if let Some(p) = pause.0 {
            self.0.lock().unwrap().push(p);
        }
    }
}

impl Pauses {
    /// Records the pauses of this thread's providers until the guard drops
    /// (the cases of `each_case` run on the test's one thread).
    fn record(&self) -> tracing::subscriber::DefaultGuard {
        use tracing_subscriber::layer::SubscriberExt;
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    /// How many recorded pauses read `shown`.
    fn count(&self, shown: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == shown)
            .count()
    }
}

// ----- tests ----------------------------------------------------------------

#[tokio::test]
async fn plain_text_answer() {
    const ANSWER: &str = "The plan looks sound; two small remarks follow.";
    let script =
        // Streamed events 30 ms apart arrive as separate chunks of bytes.
        |_, stream| json!([{ "text": ANSWER, "expect": {"stream": stream, "auth": true}, "stream_chunk_delay_ms": if stream { 30 } else { 0 } }]);
    each_case(&CASES, script, |mock| async move {
        let (kind, stream, answer) = (mock.kind, mock.stream, ANSWER);
        let p = provider(kind, settings(&mock, kind, stream));
        let (result, events) =
            complete(p.as_ref(), &request(vec![Message::user("Review this.")])).await;
        let c = result.unwrap_or_else(|e| panic!("{kind:?} stream={stream}: {e}"));
        assert_eq!(c.text, answer);
        assert!(c.tool_calls.is_empty());
        let want_stop = if kind == Kind::OpenAi {
            "stop"
        } else {
            "end_turn"
        };
        assert_eq!(c.stop_reason.as_deref(), Some(want_stop));
        let (streamed, deltas) = text_of(&events);
        assert_eq!(streamed, answer, "TextDelta events add up to the text");
        if stream {
            assert!(deltas > 3, "{kind:?}: text arrived in {deltas} deltas");
            assert!(
                progress_count(&events) >= 3,
                "{kind:?}: progress while streaming"
            );
        } else {
            assert!(progress_count(&events) >= 1);
        }

        let log = mock.requests();
        assert_eq!(log.len(), 1);
        let r = &log[0];
        let body = &r["body"];
        assert_eq!(r["auth"], true);
        assert_eq!(body["stream"].as_bool().unwrap_or(false), stream);
        match kind {
            Kind::OpenAi => {
                assert_eq!(r["path"], "/v1/chat/completions");
                assert_eq!(r["auth_headers"]["authorization"], true);
                assert_eq!(r["headers"]["authorization"], "<redacted>");
                assert_eq!(body["model"], mock.model.as_str());
                assert_eq!(
                    body["messages"][0],
                    json!({"role": "system", "content": "You review plans."})
                );
                assert_eq!(
                    body["messages"][1],
                    json!({"role": "user", "content": "Review this."})
                );
                // A local server gets `max_tokens` (Ollama reads no other).
                assert_eq!(body["max_tokens"], 2048);
            }
            Kind::Anthropic => {
                assert_eq!(r["path"], "/v1/messages");
                assert_eq!(r["auth_headers"]["x-api-key"], true);
                assert_eq!(r["headers"]["anthropic-version"], anthropic::API_VERSION);
                assert_eq!(body["model"], mock.model.as_str());
                assert_eq!(body["system"], "You review plans.");
                assert_eq!(body["max_tokens"], 2048);
                assert_eq!(
                    body["messages"][0],
                    json!({"role": "user", "content": "Review this."})
                );
            }
        }
        assert!(!serde_json::to_string(&log).unwrap().contains("SECRET"));
    })
    .await;
}

#[tokio::test]
async fn tool_calls_and_results_round_trip() {
    each_case(&CASES, |_, _| json!([
            {"text": "Let me check.", "tool_calls": [
                {"name": "mcp_demo_echo", "arguments": {"text": "hi"}},
                {"name": "mcp_demo_add", "arguments": {"a": 1, "b": 2.5}}
            ]},
            {"text": "```json\n{\"verdict\":\"APPROVE\",\"blocks\":[]}\n```"}
        ]), |mock| async move {
        let (kind, stream) = (mock.kind, mock.stream);
        let p = provider(kind, settings(&mock, kind, stream));
        let mut messages = vec![Message::user("Review this.")];
        let (result, _) = complete(p.as_ref(), &request(messages.clone())).await;
        let c = result.unwrap_or_else(|e| panic!("{kind:?} stream={stream}: {e}"));
        assert_eq!(c.text, "Let me check.");
        let want_stop = if kind == Kind::OpenAi { "tool_calls" } else { "tool_use" };
        assert_eq!(c.stop_reason.as_deref(), Some(want_stop));
        assert_eq!(c.tool_calls.len(), 2, "{:?}", c.tool_calls);
        let prefix = if kind == Kind::OpenAi { "call_" } else { "toolu_" };
        for call in &c.tool_calls {
            assert!(call.id.starts_with(prefix), "{}", call.id);
            assert!(call.arguments_error.is_none());
        }
        assert_ne!(c.tool_calls[0].id, c.tool_calls[1].id);
        assert_eq!(c.tool_calls[0].name, "mcp_demo_echo");
        assert_eq!(c.tool_calls[0].arguments, json!({"text": "hi"}));
        assert_eq!(c.tool_calls[1].name, "mcp_demo_add");
        assert_eq!(c.tool_calls[1].arguments, json!({"a": 1, "b": 2.5}));

        let (id1, id2) = (c.tool_calls[0].id.clone(), c.tool_calls[1].id.clone());
        messages.push(Message {
            role: Some(Role::Assistant),
            text: c.text.clone(),
            tool_calls: c.tool_calls.clone(),
            ..Default::default()
        });
        messages.push(Message {
            role: Some(Role::User),
            tool_results: vec![
                ToolCallResult { call_id: id1.clone(), content: "hi".into(), is_error: false },
                ToolCallResult { call_id: id2.clone(), content: "add failed".into(), is_error: true },
            ],
            ..Default::default()
        });
        let (result, _) = complete(p.as_ref(), &request(messages)).await;
        let c = result.unwrap_or_else(|e| panic!("{kind:?} stream={stream}: {e}"));
        assert!(c.text.contains("APPROVE"));

        let log = mock.requests();
        assert_eq!(log.len(), 2);
        let first = &log[0]["body"];
        let second = &log[1]["body"];
        match kind {
            Kind::OpenAi => {
                assert_eq!(
                    first["tools"][0],
                    json!({"type": "function", "function": {
                        "name": "mcp_demo_echo",
                        "description": "Echo the text back",
                        "parameters": tools()[0].input_schema,
                    }})
                );
                assert_eq!(first["tools"][1]["function"]["name"], "mcp_demo_add");
                let m = second["messages"].as_array().unwrap();
                assert_eq!(m.len(), 5, "{m:?}");
                assert_eq!(m[2]["role"], "assistant");
                assert_eq!(m[2]["content"], "Let me check.");
                let calls = m[2]["tool_calls"].as_array().unwrap();
                assert_eq!(calls[0]["id"], id1.as_str());
                assert_eq!(calls[0]["type"], "function");
                assert_eq!(calls[0]["function"]["name"], "mcp_demo_echo");
                let args: Value =
                    serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
                assert_eq!(args, json!({"text": "hi"}));
                assert_eq!(calls[1]["id"], id2.as_str());
                assert_eq!(m[3], json!({"role": "tool", "tool_call_id": id1, "content": "hi"}));
                assert_eq!(m[4]["role"], "tool");
                assert_eq!(m[4]["tool_call_id"], id2.as_str());
                assert!(m[4]["content"].as_str().unwrap().contains("add failed"));
            }
            Kind::Anthropic => {
                assert_eq!(
                    first["tools"][0],
                    json!({"name": "mcp_demo_echo", "description": "Echo the text back",
                           "input_schema": tools()[0].input_schema})
                );
                let m = second["messages"].as_array().unwrap();
                assert_eq!(m.len(), 3, "{m:?}");
                assert_eq!(m[1]["role"], "assistant");
                assert_eq!(m[1]["content"][0], json!({"type": "text", "text": "Let me check."}));
                assert_eq!(
                    m[1]["content"][1],
                    json!({"type": "tool_use", "id": id1, "name": "mcp_demo_echo", "input": {"text": "hi"}})
                );
                assert_eq!(m[1]["content"][2]["id"], id2.as_str());
                assert_eq!(m[2]["role"], "user");
                assert_eq!(
                    m[2]["content"][0],
                    json!({"type": "tool_result", "tool_use_id": id1, "content": "hi", "is_error": false})
                );
                assert_eq!(
                    m[2]["content"][1],
                    json!({"type": "tool_result", "tool_use_id": id2, "content": "add failed", "is_error": true})
                );
            }
        }
    })
    .await;
}

#[tokio::test]
async fn whole_json_answer_to_a_stream_request() {
    let script = |_, _| {
        json!([{"text": "not streamed", "ignore_stream": true,
                "tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "x"}}]}])
    };
    each_case(&STREAMED, script, |mock| async move {
        let kind = mock.kind;
        let p = provider(kind, settings(&mock, kind, true));
        let (result, events) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
        let c = result.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(c.text, "not streamed");
        assert_eq!(c.tool_calls[0].arguments, json!({"text": "x"}));
        assert_eq!(text_of(&events).0, "not streamed");
        assert_eq!(mock.requests()[0]["body"]["stream"], true);
    })
    .await;
}

#[tokio::test]
async fn rate_limit_is_retried_after_retry_after() {
    let pauses = Pauses::default();
    let _recording = pauses.record();
    each_case(
        &CASES,
        |_, _| json!([{"status": 429, "retry_after": 1}, {"text": "ok"}]),
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let p = provider(kind, settings(&mock, kind, stream));
            let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
            let c = result.unwrap_or_else(|e| panic!("{kind:?} stream={stream}: {e}"));
            assert_eq!(c.text, "ok");
            assert_eq!(mock.requests().len(), 2);
        },
    )
    .await;
    // Each case paused for the `retry-after: 1` of the 429, once.
    assert_eq!(pauses.count("1s"), CASES.len(), "{:?}", pauses.0);
}

#[tokio::test]
async fn server_errors_give_up_after_three_attempts() {
    let script = |_, _| {
        let fail = json!({"status": 500, "retry_after": 0, "error_message": "upstream exploded"});
        json!([fail, fail, fail, {"text": "never reached"}])
    };
    each_case(&CASES, script, |mock| async move {
        let (kind, stream) = (mock.kind, mock.stream);
        let p = provider(kind, settings(&mock, kind, stream));
        let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
        let e = result.expect_err("three 500s fail");
        assert_eq!(e.code(), "PROVIDER_ERROR");
        let label = if kind == Kind::OpenAi {
            "openai"
        } else {
            "anthropic"
        };
        let want = format!(
            "{label}: HTTP 500 from {}: upstream exploded",
            mock.endpoint(kind)
        );
        assert!(
            e.to_string().starts_with(&want),
            "{e} does not start with {want}"
        );
        assert_eq!(mock.requests().len(), 3, "three attempts in all");
    })
    .await;
}

#[tokio::test]
async fn default_backoff_then_success() {
    // No retry-after: the provider waits 0.5 s, then 1 s.
    let pauses = Pauses::default();
    let _recording = pauses.record();
    each_case(
        &CASES,
        |_, _| json!([{"status": 503}, {"status": 529}, {"text": "third time"}]),
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let p = provider(kind, settings(&mock, kind, stream));
            let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
            assert_eq!(result.unwrap().text, "third time");
            assert_eq!(mock.requests().len(), 3);
        },
    )
    .await;
    assert_eq!(pauses.count("500ms"), CASES.len(), "{:?}", pauses.0);
    assert_eq!(pauses.count("1s"), CASES.len(), "{:?}", pauses.0);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    each_case(
        &CASES,
        |_, _| {
            json!([
                {"status": 400, "error_message": "messages: roles must alternate"},
                {"text": "never reached"}
            ])
        },
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let p = provider(kind, settings(&mock, kind, stream));
            let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
            let e = result.expect_err("400 fails");
            assert_eq!(e.code(), "PROVIDER_ERROR");
            assert!(e.to_string().contains("HTTP 400 from"), "{e}");
            assert!(
                e.to_string().ends_with("messages: roles must alternate"),
                "{e}"
            );
            assert_eq!(mock.requests().len(), 1);
        },
    )
    .await;
}

#[tokio::test]
async fn dropped_connection_is_retried() {
    each_case(
        &CASES,
        |_, _| json!([{"disconnect": true}, {"text": "after a reconnect"}]),
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let p = provider(kind, settings(&mock, kind, stream));
            let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
            let c = result.unwrap_or_else(|e| panic!("{kind:?} stream={stream}: {e}"));
            assert_eq!(c.text, "after a reconnect");
            assert_eq!(mock.requests().len(), 2);
        },
    )
    .await;
}

#[tokio::test]
async fn unreachable_endpoint_fails_after_retries() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = ApiSettings {
        base_url: Some(format!("http://127.0.0.1:{port}/v1?token={KEY}")),
        api_key: Some(KEY.into()),
        ..Default::default()
    };
    let p = OpenAi::new(s).unwrap();
    let (result, _) = complete(&p, &request(vec![Message::user("hi")])).await;
    let e = result.expect_err("nobody listens");
    assert_eq!(e.code(), "PROVIDER_ERROR");
    let text = e.to_string();
    assert!(
        text.contains(&format!(
            "cannot reach http://127.0.0.1:{port}/v1/chat/completions"
        )),
        "{text}"
    );
    assert!(text.contains("after 3 attempts"), "{text}");
    assert!(!text.contains("SECRET"), "{text}");
}

#[tokio::test]
async fn broken_tool_arguments_are_reported_not_fatal() {
    each_case(
        &CASES,
        |_, _| {
            json!([{
                "tool_calls": [{"name": "mcp_demo_add", "arguments": {"a": 1}}],
                "raw_arguments": "{\"text\": \"unterminated",
                "tool_name": "mcp_demo_echo"
            }])
        },
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let p = provider(kind, settings(&mock, kind, stream));
            let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
            let c = result.unwrap_or_else(|e| panic!("{kind:?} stream={stream}: {e}"));
            assert_eq!(c.tool_calls.len(), 2);
            assert_eq!(c.tool_calls[0].arguments, json!({"a": 1}));
            assert!(c.tool_calls[0].arguments_error.is_none());
            let broken: &ToolCall = &c.tool_calls[1];
            assert_eq!(broken.name, "mcp_demo_echo");
            assert_eq!(broken.arguments, json!({}));
            let why = broken
                .arguments_error
                .as_deref()
                .expect("arguments_error set");
            assert!(why.contains("JSON"), "{why}");
        },
    )
    .await;
}

#[tokio::test]
async fn silent_endpoint_times_out() {
    each_case(
        &CASES,
        |_, _| json!([{"hang": true, "hang_seconds": 30}, {"text": "never reached"}]),
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let mut s = settings(&mock, kind, stream);
            s.request_timeout = Some(Duration::from_millis(500));
            let p = provider(kind, s);
            // TIMEOUT naming request_timeout: the 0.5 s fired, long before
            // the endpoint's 30 s hang ends.
            let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
            let e = result.expect_err("hang times out");
            assert_eq!(e.code(), "TIMEOUT", "{e}");
            assert!(e.to_string().contains("request_timeout"), "{e}");
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(
                mock.requests_eventually(1).await.len(),
                1,
                "a timeout is not retried"
            );
        },
    )
    .await;
}

#[tokio::test]
async fn stalled_stream_times_out_after_progress() {
    each_case(&STREAMED, |_, _| json!([
            {"text": "a long answer that stops halfway", "stall_after_chunks": 6, "hang_seconds": 30}
        ]), |mock| async move {
        let kind = mock.kind;
        let mut s = settings(&mock, kind, true);
        s.request_timeout = Some(Duration::from_secs(1));
        let p = provider(kind, s);
        let (result, events) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
        let e = result.expect_err("stall times out");
        assert_eq!(e.code(), "TIMEOUT", "{e}");
        assert!(progress_count(&events) >= 2, "{events:?}");
        assert!(!text_of(&events).0.is_empty(), "{events:?}");
    })
    .await;
}

#[tokio::test]
async fn stream_error_event_and_cut_stream_fail() {
    each_case(&STREAMED, |_, _| json!([
            {"text": "partial", "stream_error": {"type": "overloaded_error", "message": "Overloaded right now"}},
            {"text": "cut short", "truncate": true},
            {"text": "never reached"}
        ]), |mock| async move {
        let kind = mock.kind;
        let p = provider(kind, settings(&mock, kind, true));
        let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
        let e = result.expect_err("error event fails");
        assert_eq!(e.code(), "PROVIDER_ERROR");
        assert!(e.to_string().contains("Overloaded right now"), "{e}");
        let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
        let e = result.expect_err("a cut stream fails");
        assert!(e.to_string().contains("ended before"), "{e}");
        assert_eq!(mock.requests().len(), 2, "neither is retried");
    })
    .await;
}

#[tokio::test]
async fn api_key_never_reaches_errors() {
    each_case(
        &CASES,
        |_, _| json!([{"status": 401, "echo_auth": true}]),
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let s = settings(&mock, kind, stream);
            assert!(!format!("{s:?}").contains("SECRET"));
            let p = provider(kind, s);
            let (result, _) = complete(p.as_ref(), &request(vec![Message::user("hi")])).await;
            let e = result.expect_err("401 fails");
            let text = e.to_string();
            assert!(text.contains("HTTP 401"), "{text}");
            assert!(text.contains("Incorrect API key provided: ***"), "{text}");
            assert!(!text.contains("SECRET"), "{text}");
            assert!(!format!("{e:?}").contains("SECRET"));
            assert!(!e.to_json().to_string().contains("SECRET"));
            assert_eq!(mock.requests().len(), 1);
        },
    )
    .await;
}

#[tokio::test]
async fn effort_reaches_the_wire() {
    each_case(
        &CASES,
        |_, _| {
            json!([
                {"thinking": "Let me think about the plan.", "text": "Checking.",
                 "tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "x"}}]},
                {"text": "Done."}
            ])
        },
        |mock| async move {
            let (kind, stream) = (mock.kind, mock.stream);
            let p = provider(kind, settings(&mock, kind, stream));
            let mut req = request(vec![Message::user("hi")]);
            req.effort = Some("high".into());
            req.max_tokens = 64000;
            let (result, _) = complete(p.as_ref(), &req).await;
            let c = result.unwrap_or_else(|e| panic!("{kind:?} stream={stream}: {e}"));
            assert_eq!(c.text, "Checking.", "thinking is not answer text");
            req.messages.push(Message {
                role: Some(Role::Assistant),
                text: c.text,
                tool_calls: c.tool_calls.clone(),
                ..Default::default()
            });
            req.messages.push(Message {
                role: Some(Role::User),
                tool_results: vec![ToolCallResult {
                    call_id: c.tool_calls[0].id.clone(),
                    content: "x".into(),
                    is_error: false,
                }],
                ..Default::default()
            });
            let (result, _) = complete(p.as_ref(), &req).await;
            assert_eq!(result.unwrap().text, "Done.");
            let log = mock.requests();
            match kind {
                Kind::OpenAi => {
                    assert_eq!(log[0]["body"]["reasoning_effort"], "high");
                    assert_eq!(log[1]["body"]["reasoning_effort"], "high");
                }
                Kind::Anthropic => {
                    assert_eq!(
                        log[0]["body"]["thinking"],
                        json!({"type": "enabled", "budget_tokens": 16384})
                    );
                    assert!(
                        log[1]["body"].get("thinking").is_none(),
                        "not inside a tool loop"
                    );
                }
            }
        },
    )
    .await;
}

#[tokio::test]
async fn default_models_named_scripts_expectations_and_reload() {
    let mock = Mock::start_with(
        json!({"scripts": {
            "model-a": [{"text": "A1"}, {"text": "A2"}],
            "model-b": [{"text": "B1", "expect": {"contains": ["needle"]}}],
            "*": [
                {"text": "D1", "expect": {"model": openai::DEFAULT_MODEL, "provider": "openai"}},
                {"text": "D2", "expect": {"model": anthropic::DEFAULT_MODEL, "provider": "anthropic"}}
            ]
        }}),
        &["--reload"],
    )
    .await;
    let at = |kind| ApiSettings {
        base_url: Some(base_url(&mock, kind)),
        ..Default::default()
    };
    let p = provider(Kind::OpenAi, at(Kind::OpenAi));
    let a = provider(Kind::Anthropic, at(Kind::Anthropic));
    // No model in the request nor the settings: the provider's default.
    let mut req = request(vec![Message::user("hi")]);
    assert_eq!(complete(&*p, &req).await.0.unwrap().text, "D1");
    assert_eq!(complete(&*a, &req).await.0.unwrap().text, "D2");

    req.model = Some("model-a".into());
    assert_eq!(complete(&*p, &req).await.0.unwrap().text, "A1");
    req.model = Some("model-b".into());
    let e = complete(&*p, &req).await.0.expect_err("expectation fails");
    assert!(e.to_string().contains("HTTP 400"), "{e}");
    assert!(e.to_string().contains("does not contain 'needle'"), "{e}");
    req.model = Some("model-a".into());
    assert_eq!(complete(&*a, &req).await.0.unwrap().text, "A2");

    // A rewritten script starts over (--reload).
    mock.rewrite(json!({"scripts": {"model-a": [{"text": "round two"}]}}));
    assert_eq!(complete(&*p, &req).await.0.unwrap().text, "round two");
    let e = complete(&*p, &req).await.0.expect_err("exhausted");
    assert!(e.to_string().contains("HTTP 500"), "{e}");
    assert!(
        e.to_string().contains("script 'model-a' is exhausted"),
        "{e}"
    );
    req.model = Some("model-c".into());
    let e = complete(&*p, &req).await.0.expect_err("no script");
    assert!(e.to_string().contains("HTTP 404"), "{e}");
    assert!(
        e.to_string().contains("no script for model 'model-c'"),
        "{e}"
    );
    let log = mock.requests();
    assert_eq!(log.len(), 10, "the exhausted request was tried 3 times");
    assert_eq!(log[0]["script"], "*");
    assert_eq!(log[0]["auth"], false, "no key, no auth header");
    assert_eq!(log[2]["script"], "model-a");
    assert_eq!(log[3]["script"], "model-b");
    assert_eq!(log[6]["step"], Value::Null);
    assert_eq!(log[9]["step"], Value::Null);
}
