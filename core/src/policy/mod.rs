//! Policy for model-driven tool use (DESIGN §6): which hub tools a session's
//! model is offered, and how each call it asks for is run and shown to it.
//!
//! The session agent loop owns one [`SessionPolicy`] per round and sends
//! every tool call the model asks for through [`SessionPolicy::call`]; the
//! policy never panics and never fails the round: refusals, limits and tool
//! failures come back as error results the model sees.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::client::CallOptions;
use crate::config::Config;
use crate::error::Error;
use crate::hub::{Hub, HubTool};

/// Per-session settings (`[session]` in the config file, overridden per call).
#[derive(Debug, Clone, Default)]
pub struct PolicySettings {
    /// Most tool calls the model may ask for in one round (refused ones count).
    pub max_tool_calls: Option<u64>,
    /// Time allowed for one tool call.
    pub call_timeout: Option<Duration>,
    /// Largest tool output shown to the model, in bytes (after redaction).
    pub max_output_bytes: Option<usize>,
    /// The session's scope, matched against a server's `scopes`.
    pub scope: Option<String>,
}

/// What the model sees for one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelToolResult {
    /// Text shown to the model.
    pub content: String,
    /// The call failed or was refused.
    pub is_error: bool,
}

/// The policy of one session round. Shared by reference; `call` may run
/// concurrently from several tasks.
pub struct SessionPolicy {
    settings: PolicySettings,
    calls_made: AtomicU64,
    #[allow(dead_code)]
    audit_path: Option<PathBuf>,
}

impl SessionPolicy {
    /// Builds the policy from the config's per-server keys and the session
    /// settings; `audit_path` is where audit lines are appended
    /// (`<session_dir>/audit.jsonl`), none when `None`.
    pub fn new(
        _config: &Config,
        settings: PolicySettings,
        audit_path: Option<PathBuf>,
    ) -> Result<Self, Error> {
        Ok(SessionPolicy {
            settings,
            calls_made: AtomicU64::new(0),
            audit_path,
        })
    }

    /// Counts `n` calls already made in this round before a resume, so the
    /// limit holds across processes.
    pub fn set_calls_made(&self, n: u64) {
        self.calls_made.store(n, Ordering::SeqCst);
    }

    /// The tools the model may be offered, in hub order.
    pub fn offered(&self, tools: &[HubTool]) -> Vec<HubTool> {
        tools.to_vec()
    }

    /// Runs one tool call the model asked for through the hub, applying
    /// the policy; never fails.
    pub async fn call(&self, hub: &Hub, name: &str, arguments: &Value) -> ModelToolResult {
        let n = self.calls_made.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(max) = self.settings.max_tool_calls {
            if n > max {
                return ModelToolResult {
                    content: format!("LIMIT_EXCEEDED: at most {max} tool calls per round"),
                    is_error: true,
                };
            }
        }
        let opts = CallOptions {
            timeout: self.settings.call_timeout,
            ..Default::default()
        };
        match hub.call_tool(name, Some(arguments), &opts).await {
            Ok(result) => {
                let json: Value = serde_json::from_str(result.json()).unwrap_or(Value::Null);
                let is_error = json
                    .get("isError")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                ModelToolResult {
                    content: result.json().to_string(),
                    is_error,
                }
            }
            Err(e) => ModelToolResult {
                content: format!("{}: {e}", e.code()),
                is_error: true,
            },
        }
    }
}
