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
//! Module map (`docs/ARCHITECTURE.md#mcpmux-core`): `jsonrpc` (messages, in-flight table,
//! cancellation), [`protocol`] (MCP shapes, versions), `transport`
//! (stdio, Streamable HTTP, legacy SSE, WebSocket), [`auth`] (OAuth 2.1 and
//! other credentials for HTTP servers), [`client`] (one server), [`hub`] (many servers), [`config`],
//! [`tool_format`] (the hub's tools in each LLM API's format),
//! `secrets` (config secrets kept out of errors, logs and session files),
//! [`error`]; `fuzzing` (entry points for the fuzz targets, feature
//! `fuzzing`).
//!
//! The layers above the engine are crates of their own: `mcpmux-policy`
//! (what a model may call), `mcpmux-sessions` (review sessions and their
//! LLM providers) and `mcpmux-gateway` (mcpmux as one MCP server). They
//! register the config keys they own with [`config::register_layer`].

pub mod apps;
pub mod auth;
pub mod client;
pub mod config;
pub mod contract;
pub(crate) mod elicitation;
pub mod error;
pub mod events;
pub mod events_ext;
pub(crate) mod files;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod hub;
pub(crate) mod jsonrpc;
pub(crate) mod listen;
pub(crate) mod net;
pub mod output_check;
pub(crate) mod param_headers;
pub mod protocol;
pub(crate) mod raw_table;
pub mod results;
pub mod roots;
pub mod runtime;
pub(crate) mod secrets;
pub(crate) mod spelling;
pub(crate) mod stateless;
pub mod tasks;
pub mod telemetry;
pub mod tool_format;
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
pub use config::{Config, ConfigSource, ServerConfig, TransportConfig, TransportKind};
pub use error::{Error, Result};
pub use events::{EventStream, HubEvent};
pub use hub::{Hub, HubOptions, HubTool, ServerHistory, ServerState, ServerStatus};
pub use jsonrpc::{
    Admission, AnswerGate, Backpressure, ProgressCallback, ProgressUpdate, MAX_SERVER_REQUESTS,
};
pub use net::policy::NetworkPolicy;
pub use net::ranges::IpNetwork;
pub use output_check::ValidateOutput;
pub use results::{CompleteResult, GetPromptResult, ReadResourceResult};
pub use roots::{Root, Roots};
pub use tasks::{Task, TaskHandle, TaskStatus};
pub use tool_format::ToolFormat;
/// Most answers and notifications in flight to one server over Streamable
/// HTTP or legacy SSE (see `docs/configuration.md#transports`).
pub use transport::send_bound::MAX_NOTICES_IN_FLIGHT;

/// What the crates built on the engine in this workspace (`mcpmux-policy`,
/// `mcpmux-sessions`, `mcpmux-gateway`) share with it. Not part of the
/// stable API: hidden from the docs, it may change in any release.
#[doc(hidden)]
pub mod internal {
    /// Reading files that may be hostile (regular files only, capped).
    pub mod files {
        pub use crate::files::{open_regular, read_capped};
    }
    /// The process-wide set of secret values kept out of output.
    pub mod secrets {
        pub use crate::secrets::{known, redact, redact_value, register};
    }
    /// The HTTP client builder, the SSE parser, and the network policy
    /// for clients outside the engine (the LLM providers).
    pub mod net {
        pub use crate::net::guard::{checked_builder, kept_client, refusing_client};
        pub use crate::net::{builder, check_url, refusal_message, sse_parser};
    }
    /// The stateless protocol revision's constants and completion result.
    /// The 2026-07-28 revision's header values (`=?base64?...?=`).
    pub mod param_headers {
        pub use crate::param_headers::decode_text;
    }
    pub mod stateless {
        pub use crate::stateless::{
            complete_result, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, VERSION,
        };
    }
    /// Hub-wide tool names and their suggestions.
    pub mod tool_names {
        pub use crate::tool_names::{did_you_mean, HubTool};
    }
    /// Spans of the layers above (review rounds, model turns, the
    /// gateway's answers); each just runs its future without telemetry.
    pub mod telemetry {
        pub use crate::telemetry::{serve, serve_via, span, ServedVia};
    }
    /// The ranking of tools against a search query.
    pub mod tool_search {
        pub use crate::tool_search::rank;
    }
}

/// The version of this crate.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
