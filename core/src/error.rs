//! The one error type of the engine, with the stable string codes that every
//! front end (CLI, C, Python, Node) reports unchanged.

use std::fmt;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure the engine can report.
///
/// The variant decides the stable [`code`](Error::code); the message is for
/// people and never carries secrets (tokens, header values, env values).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The configuration is malformed or names something invalid.
    #[error("{0}")]
    ConfigInvalid(String),
    /// A caller passed bad arguments (bad JSON, bad option, bad format name).
    #[error("{0}")]
    InvalidInput(String),
    /// No configured server has this name (the message names it).
    #[error("{0}")]
    UnknownServer(String),
    /// No connected server offers a tool with this name (the message names it).
    #[error("{0}")]
    UnknownTool(String),
    /// Policy refused the tool.
    #[error("{0}")]
    ToolNotAllowed(String),
    /// A server could not be started or did not complete initialization.
    #[error("{0}")]
    ConnectFailed(String),
    /// The connection to the server is gone (process exited, pipe closed).
    #[error("{0}")]
    TransportClosed(String),
    /// A request did not complete in time.
    #[error("{0}")]
    Timeout(String),
    /// The caller cancelled the request.
    #[error("{0}")]
    Cancelled(String),
    /// The peer broke the protocol (not JSON-RPC, message too large, bad shape).
    #[error("{0}")]
    ProtocolError(String),
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    ServerError {
        /// The JSON-RPC error code sent by the server.
        code: i64,
        /// The server's error message.
        message: String,
        /// The optional `data` member of the JSON-RPC error.
        data: Option<serde_json::Value>,
    },
    /// A configured limit was reached.
    #[error("{0}")]
    LimitExceeded(String),
    /// An LLM provider failed.
    #[error("{0}")]
    ProviderError(String),
    /// A session skill name is not known.
    #[error("{0}")]
    UnknownSkill(String),
    /// A session reviewer could not be found.
    #[error("{0}")]
    ReviewerNotFound(String),
    /// A directory is not a readable session.
    #[error("{0}")]
    InvalidSession(String),
    /// A reply was sent while the previous round still runs.
    #[error("{0}")]
    RoundStillRunning(String),
    /// A bug or an unexpected condition inside mcpmux.
    #[error("{0}")]
    Internal(String),
    /// The server needs authorization and there is no usable token and no
    /// way to ask for one (no authorization handler, a revoked refresh token).
    #[error("{0}")]
    AuthRequired(String),
    /// The server or its authorization server refused the authorization
    /// (bad metadata, a refused token request, a mismatched issuer).
    #[error("{0}")]
    AuthFailed(String),
}

/// The stable code strings, in one place so front ends can list them.
pub const ALL_CODES: &[&str] = &[
    "CONFIG_INVALID",
    "INVALID_INPUT",
    "UNKNOWN_SERVER",
    "UNKNOWN_TOOL",
    "TOOL_NOT_ALLOWED",
    "CONNECT_FAILED",
    "TRANSPORT_CLOSED",
    "TIMEOUT",
    "CANCELLED",
    "PROTOCOL_ERROR",
    "SERVER_ERROR",
    "LIMIT_EXCEEDED",
    "PROVIDER_ERROR",
    "UNKNOWN_SKILL",
    "REVIEWER_NOT_FOUND",
    "INVALID_SESSION",
    "ROUND_STILL_RUNNING",
    "INTERNAL",
    "AUTH_REQUIRED",
    "AUTH_FAILED",
];

impl Error {
    /// The stable code string of this error (one of [`ALL_CODES`]), e.g. `"TIMEOUT"`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::ConfigInvalid(_) => "CONFIG_INVALID",
            Error::InvalidInput(_) => "INVALID_INPUT",
            Error::UnknownServer(_) => "UNKNOWN_SERVER",
            Error::UnknownTool(_) => "UNKNOWN_TOOL",
            Error::ToolNotAllowed(_) => "TOOL_NOT_ALLOWED",
            Error::ConnectFailed(_) => "CONNECT_FAILED",
            Error::TransportClosed(_) => "TRANSPORT_CLOSED",
            Error::Timeout(_) => "TIMEOUT",
            Error::Cancelled(_) => "CANCELLED",
            Error::ProtocolError(_) => "PROTOCOL_ERROR",
            Error::ServerError { .. } => "SERVER_ERROR",
            Error::LimitExceeded(_) => "LIMIT_EXCEEDED",
            Error::ProviderError(_) => "PROVIDER_ERROR",
            Error::UnknownSkill(_) => "UNKNOWN_SKILL",
            Error::ReviewerNotFound(_) => "REVIEWER_NOT_FOUND",
            Error::InvalidSession(_) => "INVALID_SESSION",
            Error::RoundStillRunning(_) => "ROUND_STILL_RUNNING",
            Error::Internal(_) => "INTERNAL",
            Error::AuthRequired(_) => "AUTH_REQUIRED",
            Error::AuthFailed(_) => "AUTH_FAILED",
        }
    }

    /// The JSON-RPC error code for [`Error::ServerError`], else `None`.
    pub fn rpc_code(&self) -> Option<i64> {
        match self {
            Error::ServerError { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The same error with `context: ` put before its message (the code is kept).
    pub fn context(self, context: impl fmt::Display) -> Error {
        let wrap = |m: String| format!("{context}: {m}");
        match self {
            Error::ConfigInvalid(m) => Error::ConfigInvalid(wrap(m)),
            Error::InvalidInput(m) => Error::InvalidInput(wrap(m)),
            Error::ToolNotAllowed(m) => Error::ToolNotAllowed(wrap(m)),
            Error::ConnectFailed(m) => Error::ConnectFailed(wrap(m)),
            Error::TransportClosed(m) => Error::TransportClosed(wrap(m)),
            Error::Timeout(m) => Error::Timeout(wrap(m)),
            Error::Cancelled(m) => Error::Cancelled(wrap(m)),
            Error::ProtocolError(m) => Error::ProtocolError(wrap(m)),
            Error::ServerError {
                code,
                message,
                data,
            } => Error::ServerError {
                code,
                message: wrap(message),
                data,
            },
            Error::LimitExceeded(m) => Error::LimitExceeded(wrap(m)),
            Error::ProviderError(m) => Error::ProviderError(wrap(m)),
            Error::Internal(m) => Error::Internal(wrap(m)),
            Error::AuthRequired(m) => Error::AuthRequired(wrap(m)),
            Error::AuthFailed(m) => Error::AuthFailed(wrap(m)),
            other => other,
        }
    }

    /// A JSON object `{"error": message, "code": code}` (plus `rpc_code` for
    /// server errors), the shape the CLI prints on stderr.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "error": self.to_string(), "code": self.code() });
        if let Some(code) = self.rpc_code() {
            v["rpc_code"] = code.into();
        }
        v
    }
}
