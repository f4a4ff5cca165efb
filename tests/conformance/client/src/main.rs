//! `mcpmux-conformance-client`: the client that the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`, run by `tests/conformance/run.sh`)
//! starts once per client scenario as its `--command`.
//!
//! The suite appends the URL of its scenario server as the last argument and
//! sets `MCP_CONFORMANCE_SCENARIO` (the scenario name) and, for scenarios that
//! carry data, `MCP_CONFORMANCE_CONTEXT` (a JSON object). This program
//! connects to that URL through mcpmux's public engine API only — a
//! [`Config`] with one `conformance` server, [`Hub::connect_with`], the hub's
//! tool, resource and prompt calls — does what the scenario asks of a client,
//! and exits 0 when every step worked, 1 otherwise (2 for bad usage). The
//! suite judges the wire traffic; the exit code and the stderr log are for
//! people reading a failed run.
//!
//! Everything protocol-level (version negotiation, `_meta`, headers, SSE
//! resumption, elicitation defaults, input-required retries) is the engine's
//! job: this program deliberately does nothing the public API does not offer.
//!
//! `MCPMUX_CONFORMANCE_PIN=1` pins the server's `protocol_version` to
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` (set by the suite) instead of letting
//! the engine negotiate; the default is negotiation, which is what a user gets.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use mcpmux_core::{
    AuthOptions, AuthorizationHandler, AuthorizationRequest, CallOptions, ClientHandlers, Config,
    Error, Hub, HubOptions, HubTool, MemoryTokenStore, RequestHandler, ServerRequest,
};
use serde_json::{json, Map, Value};

/// The name of the one configured server; tools are routed by the server's
/// own tool names, so the hub's `mcp_conformance_` prefix never matters here.
const SERVER: &str = "conformance";
/// The whole scenario must end before the suite's own 30 s time-out.
const DEADLINE: Duration = Duration::from_secs(25);
/// Per-request time-out given to the engine.
const REQUEST_TIMEOUT_SECONDS: u64 = 20;
/// Time allowed for closing the hub (DELETE of a session, for instance).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// A thread outside the async runtime ends the process after this long, so a
/// runtime whose threads are all blocked still exits (the suite itself would
/// wait forever: it kills only the shell it started, not this process).
const WATCHDOG: Duration = Duration::from_secs(28);

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();

    let args: Vec<String> = std::env::args().collect();
    let Some(url) = args.get(1..).and_then(<[String]>::last).cloned() else {
        eprintln!("usage: mcpmux-conformance-client [ARGS...] SERVER_URL  (MCP_CONFORMANCE_SCENARIO names the scenario)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if scenario.is_empty() {
        eprintln!("MCP_CONFORMANCE_SCENARIO is not set");
        return ExitCode::from(2);
    }
    let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("MCP_CONFORMANCE_CONTEXT is not valid JSON: {e}");
                return ExitCode::from(2);
            }
        },
        Err(_) => Value::Null,
    };
    let pinned = match std::env::var("MCPMUX_CONFORMANCE_PIN").as_deref() {
        Ok("1") => std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok(),
        _ => None,
    };

    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        eprintln!(
            "watchdog: the scenario is still running after {WATCHDOG:?}; the engine's runtime is stuck (a blocked worker thread?)"
        );
        std::process::exit(1);
    });

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("scenario {scenario}: connecting to {url}");
    let outcome = runtime.block_on(async {
        match tokio::time::timeout(DEADLINE, run(&url, &scenario, &context, pinned)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("scenario did not finish within {DEADLINE:?}")),
        }
    });
    // Background tasks (a never-ending GET stream, say) must not hold the exit.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match outcome {
        Ok(()) => {
            eprintln!("scenario {scenario}: done");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("scenario {scenario}: FAILED: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Connects, runs the scenario, closes the hub.
async fn run(
    url: &str,
    scenario: &str,
    context: &Value,
    pinned: Option<String>,
) -> Result<(), String> {
    let mut entry = json!({ "url": url, "timeout_seconds": REQUEST_TIMEOUT_SECONDS });
    if let Some(version) = pinned {
        entry["protocol_version"] = Value::String(version);
    }
    if let Some(auth) = auth_config(scenario, context) {
        entry["auth"] = auth;
    }
    let config_text = json!({ "mcpServers": { SERVER: entry } }).to_string();
    let config = Config::parse(&config_text).map_err(|e| describe("config", &e))?;
    let options = HubOptions::default()
        .with_handlers(handlers())
        .with_auth(AuthOptions {
            handler: Some(Arc::new(Browser)),
            // Each run is a fresh client: nothing from an earlier scenario.
            store: Some(Arc::new(MemoryTokenStore::default())),
        });
    let hub = Hub::connect_with(config, options)
        .await
        .map_err(|e| describe("connect", &e))?;
    let outcome = match connected(&hub) {
        Ok(()) => {
            Scenario::new(hub.clone())
                .await
                .run(scenario, context)
                .await
        }
        Err(e) => Err(e),
    };
    if tokio::time::timeout(CLOSE_TIMEOUT, hub.close())
        .await
        .is_err()
    {
        eprintln!("closing the hub took longer than {CLOSE_TIMEOUT:?}");
    }
    outcome
}

/// Fails unless the one server is connected; logs what was negotiated.
fn connected(hub: &Hub) -> Result<(), String> {
    let statuses = hub.servers();
    let Some(status) = statuses.first() else {
        return Err("the hub has no server".into());
    };
    eprintln!(
        "server status: {}",
        serde_json::to_string(status).unwrap_or_default()
    );
    if status.state == "connected" {
        Ok(())
    } else {
        Err(format!(
            "server is {}: {} ({})",
            status.state,
            status.error.as_deref().unwrap_or("no error given"),
            status.error_code.unwrap_or("-")
        ))
    }
}

/// The Client ID Metadata Document URL the suite expects (SEP-991).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The redirect URI registered and sent; the suite's authorization
/// endpoint redirects there at once, and [`Browser`] reads the redirect
/// instead of following it.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The `auth` table of the server entry for an `auth/...` scenario: OAuth,
/// with what the suite's context carries (pre-registered credentials, a
/// private key, an IdP token, a workload JWT) and the grant it implies.
fn auth_config(scenario: &str, context: &Value) -> Option<Value> {
    if !scenario.starts_with("auth/") {
        return None;
    }
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut auth = json!({
        "type": "oauth",
        "client_metadata_url": CLIENT_METADATA_URL,
        "redirect_uri": REDIRECT_URI,
    });
    for key in ["client_id", "client_secret"] {
        if let Some(v) = text(key) {
            auth[key] = Value::String(v);
        }
    }
    if scenario.starts_with("auth/client-credentials") {
        auth["grant_type"] = json!("client_credentials");
        if let Some(pem) = text("private_key_pem") {
            auth["private_key"] = Value::String(pem);
            auth["signing_algorithm"] =
                json!(text("signing_algorithm").unwrap_or_else(|| "ES256".into()));
        }
    } else if scenario == "auth/enterprise-managed-authorization" {
        auth["grant_type"] = json!("enterprise");
        for key in ["idp_token_endpoint", "idp_id_token", "idp_client_id"] {
            if let Some(v) = text(key) {
                auth[key] = Value::String(v);
            }
        }
    } else if scenario.starts_with("auth/wif") {
        auth["grant_type"] = json!("jwt_bearer");
        if let Some(jwt) = text("valid_jwt") {
            auth["assertion"] = Value::String(jwt);
        }
    }
    Some(auth)
}

/// The person in the loop, automated: the suite's authorization endpoint
/// approves at once and redirects; this handler fetches the authorization
/// URL without following the redirect and returns where it points.
struct Browser;

impl AuthorizationHandler for Browser {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, Error>> {
        Box::pin(async move {
            let fail = |what: String| Error::AuthFailed(format!("authorization request: {what}"));
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| fail(e.to_string()))?;
            let response = http
                .get(&request.url)
                .send()
                .await
                .map_err(|e| fail(e.without_url().to_string()))?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| fail(format!("no redirect (HTTP {})", response.status())))?;
            let base = reqwest::Url::parse(&request.url).map_err(|e| fail(e.to_string()))?;
            let target = base.join(location).map_err(|e| fail(e.to_string()))?;
            eprintln!("authorization redirected to {}", target.path());
            Ok(target.to_string())
        })
    }

    fn redirect_uri(&self) -> Option<String> {
        Some(REDIRECT_URI.to_owned())
    }
}

/// The host's answers to server requests. Each is deliberately minimal: the
/// elicitation handler accepts with empty content, so the schema's defaults
/// (SEP-1034) must come from the engine.
fn handlers() -> ClientHandlers {
    fn handler(answer: fn(&ServerRequest) -> Value) -> RequestHandler {
        Arc::new(move |request: ServerRequest| {
            eprintln!(
                "server request {} from '{}': {}",
                request.method, request.server, request.params
            );
            let value = answer(&request);
            async move { Ok::<Value, Error>(value) }.boxed()
        })
    }
    ClientHandlers {
        elicitation: Some(handler(|_| json!({ "action": "accept", "content": {} }))),
        sampling: Some(handler(|_| {
            json!({
                "role": "assistant",
                "content": { "type": "text", "text": "mcpmux conformance client: sampled reply" },
                "model": "mcpmux-conformance",
                "stopReason": "endTurn"
            })
        })),
        roots: Some(handler(|_| json!({ "roots": [] }))),
    }
}

/// One connected hub and the tools it offers.
struct Scenario {
    hub: Hub,
    tools: Vec<HubTool>,
}

impl Scenario {
    async fn new(hub: Hub) -> Scenario {
        let tools = hub.list_tools();
        eprintln!(
            "tools: {}",
            tools
                .iter()
                .map(|t| format!("{} ({})", t.tool, t.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
        Scenario { hub, tools }
    }

    /// Does what scenario `name` expects of a client.
    async fn run(&self, name: &str, context: &Value) -> Result<(), String> {
        match name {
            // Connecting is the whole test (initialize / discover, the
            // version retry, the tool listing).
            "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Ok(()),
            "tools_call" => self.call_ok("add_numbers", json!({ "a": 5, "b": 3 })).await,
            "elicitation-sep1034-client-defaults" => {
                self.call_ok("test_client_elicitation_defaults", json!({}))
                    .await
            }
            "sse-retry" => self.call_ok("test_reconnection", json!({})).await,
            "sep-2322-client-request-state" => {
                for tool in [
                    "test_mrtr_echo_state",
                    "test_mrtr_no_state",
                    "test_mrtr_unrelated",
                    "test_mrtr_no_result_type",
                ] {
                    self.call_ok(tool, json!({})).await?;
                }
                Ok(())
            }
            "http-standard-headers" => self.everything().await,
            "http-custom-headers" => self.context_calls(context).await,
            "http-invalid-tool-headers" => self.call_every_tool().await,
            "json-schema-2020-12-preservation" => self.echo_schema().await,
            // Authorization scenarios: connected (authorized) and listed;
            // a call exercises what a later request meets (step-up scopes,
            // a changed authorization server).
            _ if name.starts_with("auth/") => {
                if self.tools.iter().any(|t| t.tool == "test-tool") {
                    self.call_ok("test-tool", json!({})).await?;
                }
                Ok(())
            }
            // Scenarios this client does not know yet: connect and list,
            // which is what any of them needs first.
            _ => {
                eprintln!("scenario '{name}' has no specific steps: connected and listed tools");
                Ok(())
            }
        }
    }

    /// The hub tool for the server's own tool name `tool`.
    fn find(&self, tool: &str) -> Result<&HubTool, String> {
        self.tools.iter().find(|t| t.tool == tool).ok_or_else(|| {
            format!(
                "the engine offers no tool '{tool}' (it offers: {})",
                self.tools
                    .iter()
                    .map(|t| t.tool.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// Calls `tool` and returns its result; a transport or protocol failure
    /// is an error, a tool's own `isError` result is returned as is.
    async fn call(&self, tool: &str, arguments: Value) -> Result<Value, String> {
        let hub_name = self.find(tool)?.name.clone();
        eprintln!("calling {tool} with {arguments}");
        let result = self
            .hub
            .call_tool(&hub_name, Some(&arguments), &CallOptions::default())
            .await
            .map_err(|e| describe(&format!("tools/call {tool}"), &e))?;
        eprintln!("{tool} returned {}", result.json());
        Ok(result.value())
    }

    /// [`Scenario::call`], with an `isError` result counted as a failure.
    async fn call_ok(&self, tool: &str, arguments: Value) -> Result<(), String> {
        let result = self.call(tool, arguments).await?;
        if result.get("isError") == Some(&Value::Bool(true)) {
            return Err(format!("tool {tool} reported an error: {result}"));
        }
        Ok(())
    }

    /// Every kind of request a host makes: each tool, each resource read,
    /// each prompt.
    async fn everything(&self) -> Result<(), String> {
        let mut failures = Vec::new();
        for tool in &self.tools {
            if let Err(e) = self.call_ok(&tool.tool, json!({})).await {
                failures.push(e);
            }
        }
        match self.hub.list_resources(Some(SERVER)).await {
            Ok(resources) => {
                for resource in resources {
                    let Some(uri) = resource.get("uri").and_then(Value::as_str) else {
                        failures.push(format!("resource without a uri: {resource}"));
                        continue;
                    };
                    match self.hub.read_resource(uri, Some(SERVER)).await {
                        Ok(v) => eprintln!("read {uri}: {v}"),
                        Err(e) => failures.push(describe(&format!("resources/read {uri}"), &e)),
                    }
                }
            }
            Err(e) => failures.push(describe("resources/list", &e)),
        }
        match self.hub.list_prompts(Some(SERVER)).await {
            Ok(prompts) => {
                for prompt in prompts {
                    let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                        failures.push(format!("prompt without a name: {prompt}"));
                        continue;
                    };
                    match self.hub.get_prompt(name, None, Some(SERVER)).await {
                        Ok(v) => eprintln!("prompt {name}: {v}"),
                        Err(e) => failures.push(describe(&format!("prompts/get {name}"), &e)),
                    }
                }
            }
            Err(e) => failures.push(describe("prompts/list", &e)),
        }
        all_ok(failures)
    }

    /// The calls listed in the context's `toolCalls` (`[{name, arguments}]`).
    async fn context_calls(&self, context: &Value) -> Result<(), String> {
        let Some(calls) = context.get("toolCalls").and_then(Value::as_array) else {
            return Err(format!(
                "MCP_CONFORMANCE_CONTEXT has no 'toolCalls' array: {context}"
            ));
        };
        let mut failures = Vec::new();
        for call in calls {
            let Some(name) = call.get("name").and_then(Value::as_str) else {
                failures.push(format!("a toolCalls entry has no name: {call}"));
                continue;
            };
            let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
            if let Err(e) = self.call_ok(name, arguments).await {
                failures.push(e);
            }
        }
        all_ok(failures)
    }

    /// Calls every tool the engine offers, with arguments made up from each
    /// tool's schema. The scenario checks which tools the engine let through.
    async fn call_every_tool(&self) -> Result<(), String> {
        let mut failures = Vec::new();
        for tool in &self.tools {
            let arguments = sample_arguments(&tool.input_schema);
            if let Err(e) = self.call_ok(&tool.tool, arguments).await {
                failures.push(e);
            }
        }
        all_ok(failures)
    }

    /// Sends the JSON Schema 2020-12 tool's input schema, as the engine
    /// offers it, back through the echo tool.
    async fn echo_schema(&self) -> Result<(), String> {
        let schema = self.find("json_schema_2020_12_tool")?.input_schema.clone();
        self.call_ok("json_schema_echo", json!({ "schema": schema }))
            .await
    }
}

/// Arguments for a tool: a plausible value for each required property.
fn sample_arguments(schema: &Value) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = Map::new();
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match kind {
            "integer" => json!(1),
            "number" => json!(1.5),
            "boolean" => json!(true),
            "object" => json!({}),
            "array" => json!([]),
            "null" => Value::Null,
            _ => json!("us-west1"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

fn all_ok(failures: Vec<String>) -> Result<(), String> {
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// An engine error with its stable code, for the log.
fn describe(what: &str, e: &Error) -> String {
    format!("{what}: {e} [{}]", e.code())
}
