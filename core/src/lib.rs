//! # mcpmux-core
//!
//! The mcpmux engine: connect a host application to many Model Context
//! Protocol servers, list their tools under one namespace, and call them.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpmux_core::Error> {
//! use mcpmux_core::{CallOptions, Config, Hub};
//!
//! let config = Config::load("mcpmux.toml")?;
//! let hub = Hub::connect(config).await?;
//! for tool in hub.list_tools() {
//!     println!("{} ({})", tool.name, tool.server);
//! }
//! let args = serde_json::json!({ "text": "hello" });
//! let result = hub.call_tool("mcp_demo_echo", Some(&args), &CallOptions::default()).await?;
//! println!("{}", result.json());
//! hub.close().await;
//! # Ok(()) }
//! ```
//!
//! Module map (`docs/ARCHITECTURE.md#core-modules`): [`jsonrpc`] (messages, in-flight table,
//! cancellation), [`protocol`] (MCP shapes, versions), `transport`
//! (stdio, Streamable HTTP, legacy SSE, WebSocket), [`auth`] (OAuth 2.1 and
//! other credentials for HTTP servers), [`client`] (one server), [`hub`] (many servers), [`config`],
//! [`llm`] (providers, tool formats), [`session`] (review sessions),
//! [`policy`] (what a session's model may call, redaction, audit),
//! `secrets` (config secrets kept out of errors, logs and session files),
//! [`error`]; [`fuzzing`] (entry points for the fuzz targets).

pub mod auth;
pub mod client;
pub mod config;
pub mod contract;
pub(crate) mod elicitation;
pub mod error;
pub mod events;
pub(crate) mod files;
pub mod fuzzing;
pub mod gateway;
pub mod hub;
pub mod jsonrpc;
pub mod llm;
pub(crate) mod net;
pub(crate) mod param_headers;
pub mod policy;
pub mod protocol;
pub mod runtime;
pub(crate) mod secrets;
#[cfg(feature = "sessions")]
pub mod session;
pub(crate) mod stateless;
pub mod tasks;
pub mod telemetry;
pub(crate) mod tool_names;
pub(crate) mod tool_search;
pub(crate) mod transport;

pub use auth::{
    AuthConfig, AuthOptions, AuthorizationHandler, AuthorizationRequest, FileTokenStore,
    MemoryTokenStore, TokenStore,
};
pub use client::{
    CallOptions, CallPolicy, Client, ClientHandlers, RequestHandler, ServerRequest, ToolResult,
    ToolRouter,
};
pub use config::{Config, ConfigSource, ServerConfig, TransportConfig};
pub use error::{Error, Result};
pub use events::{EventStream, HubEvent};
pub use hub::{Hub, HubOptions, HubTool, ServerState, ServerStatus};
pub use jsonrpc::{ProgressCallback, ProgressUpdate};
pub use llm::tool_format::ToolFormat;
#[cfg(feature = "sessions")]
pub use session::{Runner, SessionContext};
pub use tasks::{Task, TaskHandle, TaskStatus};
/// Most answers and notifications in flight to one server over Streamable
/// HTTP or legacy SSE (see `docs/ARCHITECTURE.md#transports`).
pub use transport::send_bound::MAX_NOTICES_IN_FLIGHT;

/// The version of this crate.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
