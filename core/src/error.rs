//! The one error type of the engine, with the stable string codes that every
//! front end (CLI, C, Python, Node) reports unchanged.

use std::fmt;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The one table of error variants and their codes.
///
/// Each row is `doc, Variant(payload) => "CODE", context: yes|no`: the
/// enum, [`Error::code`], [`ALL_CODES`] and [`Error::context`] are all
/// generated from it, so adding a code means adding one row here (and the
/// code to the bindings' generated lists, which `core/tests/error_codes.rs`
/// checks). `context: no` marks the codes whose message is a bare name that
/// hosts match on (an unknown tool, a session directory), left unprefixed.
macro_rules! error_table {
    (
        message: { $( $(#[doc = $doc:literal])+ $name:ident => $code:literal, context: $ctx:ident; )* }
        server_error: { $(#[doc = $sdoc:literal])+ ServerError => $scode:literal; }
        tail: { $( $(#[doc = $tdoc:literal])+ $tname:ident => $tcode:literal, context: $tctx:ident; )* }
    ) => {
        /// Every failure the engine can report.
        ///
        /// The variant decides the stable [`code`](Error::code); the message is for
        /// people and never carries secrets (tokens, header values, env values).
        /// New variants may be added in a minor release (`#[non_exhaustive]`):
        /// match on [`code`](Error::code) or keep a `_` arm.
        #[derive(Debug, Clone, thiserror::Error)]
        #[non_exhaustive]
        pub enum Error {
            $( $(#[doc = $doc])+ #[error("{0}")] $name(String), )*
            $(#[doc = $sdoc])+
            #[error("server error {code}: {message}")]
            ServerError {
                /// The JSON-RPC error code sent by the server.
                code: i64,
                /// The server's error message.
                message: String,
                /// The optional `data` member of the JSON-RPC error.
                data: Option<serde_json::Value>,
            },
            $( $(#[doc = $tdoc])+ #[error("{0}")] $tname(String), )*
        }

        /// The stable code strings, in one place so front ends can list them.
        pub const ALL_CODES: &[&str] = &[ $($code,)* $scode, $($tcode,)* ];

        impl Error {
            /// The stable code string of this error (one of [`ALL_CODES`]), e.g. `"TIMEOUT"`.
            pub fn code(&self) -> &'static str {
                match self {
                    $( Error::$name(_) => $code, )*
                    Error::ServerError { .. } => $scode,
                    $( Error::$tname(_) => $tcode, )*
                }
            }

            /// The same error with `context: ` put before its message (the code
            /// is kept; codes whose message is a bare name stay unchanged).
            pub fn context(self, context: impl fmt::Display) -> Error {
                let wrap = |m: String| format!("{context}: {m}");
                match self {
                    $( Error::$name(m) => error_table!(@wrap $ctx, $name, m, wrap), )*
                    Error::ServerError { code, message, data } => Error::ServerError {
                        code,
                        message: wrap(message),
                        data,
                    },
                    $( Error::$tname(m) => error_table!(@wrap $tctx, $tname, m, wrap), )*
                }
            }
        }
    };
    (@wrap yes, $name:ident, $m:ident, $wrap:ident) => { Error::$name($wrap($m)) };
    (@wrap no, $name:ident, $m:ident, $wrap:ident) => { Error::$name($m) };
}

error_table! {
    message: {
        /// The configuration is malformed or names something invalid.
        ConfigInvalid => "CONFIG_INVALID", context: yes;
        /// A caller passed bad arguments (bad JSON, bad option, bad format name).
        InvalidInput => "INVALID_INPUT", context: yes;
        /// No configured server has this name (the message names it).
        UnknownServer => "UNKNOWN_SERVER", context: no;
        /// No connected server offers a tool with this name (the message names it).
        UnknownTool => "UNKNOWN_TOOL", context: no;
        /// Policy refused the tool.
        ToolNotAllowed => "TOOL_NOT_ALLOWED", context: yes;
        /// A server could not be started or did not complete initialization.
        ConnectFailed => "CONNECT_FAILED", context: yes;
        /// The connection to the server is gone (process exited, pipe closed).
        TransportClosed => "TRANSPORT_CLOSED", context: yes;
        /// A request did not complete in time.
        Timeout => "TIMEOUT", context: yes;
        /// The caller cancelled the request.
        Cancelled => "CANCELLED", context: yes;
        /// The peer broke the protocol (not JSON-RPC, message too large, bad shape).
        ProtocolError => "PROTOCOL_ERROR", context: yes;
    }
    server_error: {
        /// The server answered with a JSON-RPC error.
        ServerError => "SERVER_ERROR";
    }
    tail: {
        /// A configured limit was reached.
        LimitExceeded => "LIMIT_EXCEEDED", context: yes;
        /// An LLM provider failed.
        ProviderError => "PROVIDER_ERROR", context: yes;
        /// A session skill name is not known.
        UnknownSkill => "UNKNOWN_SKILL", context: no;
        /// A session reviewer could not be found.
        ReviewerNotFound => "REVIEWER_NOT_FOUND", context: no;
        /// A directory is not a readable session.
        InvalidSession => "INVALID_SESSION", context: no;
        /// A reply was sent while the previous round still runs.
        RoundStillRunning => "ROUND_STILL_RUNNING", context: no;
        /// A bug or an unexpected condition inside mcpmux.
        Internal => "INTERNAL", context: yes;
        /// The server needs authorization and there is no usable token and no
        /// way to ask for one (no authorization handler, a revoked refresh token).
        AuthRequired => "AUTH_REQUIRED", context: yes;
        /// The server or its authorization server refused the authorization
        /// (bad metadata, a refused token request, a mismatched issuer).
        AuthFailed => "AUTH_FAILED", context: yes;
        /// A config found in the current directory (`./mcpmux.toml`,
        /// `./.mcp.json`) is not trusted, or changed since it was trusted:
        /// nothing was started (the message names the file and the command
        /// that trusts it).
        ConfigUntrusted => "CONFIG_UNTRUSTED", context: no;
        /// A tool's result does not satisfy the tool's `outputSchema` (its
        /// `structuredContent` fails the schema, or is missing): the message
        /// names the server, the tool and the first failing path.
        OutputInvalid => "OUTPUT_INVALID", context: yes;
        /// A pinned tool's definition changed since it was approved (or the
        /// tool is new on a server with pinned tools): it is quarantined, not
        /// offered, and a call is refused before the server is asked. The
        /// message names the server, the tool and the fields that changed,
        /// never the new text (`mcpmux policy approve` makes it callable).
        ToolChanged => "TOOL_CHANGED", context: yes;
    }
}

impl Error {
    /// The JSON-RPC error code for [`Error::ServerError`], else `None`.
    pub fn rpc_code(&self) -> Option<i64> {
        match self {
            Error::ServerError { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The `data` member of the JSON-RPC error for [`Error::ServerError`]
    /// when the server sent one, else `None`.
    pub fn data(&self) -> Option<&serde_json::Value> {
        match self {
            Error::ServerError { data, .. } => data.as_ref(),
            _ => None,
        }
    }

    /// A JSON object `{"error": message, "code": code}` (plus `rpc_code`
    /// for server errors, and `data` when the server sent it), the shape
    /// the CLI prints on stderr.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "error": self.to_string(), "code": self.code() });
        if let Some(code) = self.rpc_code() {
            v["rpc_code"] = code.into();
        }
        if let Some(data) = self.data() {
            v["data"] = data.clone();
        }
        v
    }
}

/// The end of a `CONFIG_INVALID` message for something that needs Cargo
/// feature `feature` of mcpmux-core, which this build was compiled without:
/// "needs the 'websocket' feature of mcpmux-core, ...".
pub(crate) fn needs_feature(feature: &str) -> String {
    format!(
        "needs the '{feature}' feature of mcpmux-core, which this build leaves out \
         (enable it in Cargo.toml: features = [\"{feature}\"])"
    )
}

/// How an error message names the kind of a JSON value a caller gave
/// (`a string`, `an object`, ...).
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
