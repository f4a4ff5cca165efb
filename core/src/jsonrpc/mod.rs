//! JSON-RPC 2.0: the messages on the wire, and [`Peer`], which correlates
//! requests with responses by id over any `Transport`.
//!
//! Payloads the engine only passes through stay as raw JSON
//! ([`RawValue`]); nothing here knows MCP beyond the two notifications that
//! drive timeouts and cancellation (`notifications/progress`,
//! `notifications/cancelled`).

mod answer_gate;
mod peer;

pub use answer_gate::{Admission, AnswerGate, Backpressure};
pub use peer::{
    Inbound, Peer, ProgressCallback, ProgressUpdate, RequestOptions, MAX_SERVER_REQUESTS,
};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::Error;

/// JSON-RPC error codes the engine sends or recognizes.
pub mod codes {
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A server request refused because too many of that server's requests
    /// are in flight (implementation-defined server error range).
    pub const SERVER_BUSY: i64 = -32000;
}

/// The error member of a JSON-RPC response, as sent or received.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl RpcError {
    /// An error with this code and message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl From<RpcError> for Error {
    /// A peer's error as [`Error::ServerError`], with known config secrets
    /// (`crate::secrets`) replaced: a server may echo them.
    fn from(e: RpcError) -> Self {
        crate::secrets::redact_error(Error::ServerError {
            code: e.code,
            message: e.message,
            data: e.data,
        })
    }
}

impl From<Error> for RpcError {
    /// How a host handler's error is reported to the server: a server error
    /// keeps its code, anything else becomes an internal error.
    fn from(e: Error) -> Self {
        match e {
            Error::ServerError {
                code,
                message,
                data,
            } => RpcError {
                code,
                message,
                data,
            },
            Error::InvalidInput(m) => RpcError::new(codes::INVALID_PARAMS, m),
            other => RpcError::new(codes::INTERNAL_ERROR, other.to_string()),
        }
    }
}

/// One message read from the wire, borrowing from the line it came from.
///
/// All members are optional so that one parse serves requests, responses and
/// notifications; [`Incoming::kind`] tells which it is.
#[derive(Debug, Deserialize)]
pub struct Incoming<'a> {
    /// Must be `"2.0"`.
    #[serde(default, borrow)]
    pub jsonrpc: Option<&'a str>,
    /// Present on requests and responses.
    #[serde(default, borrow)]
    pub id: Option<&'a RawValue>,
    /// Present on requests and notifications.
    #[serde(default, borrow)]
    pub method: Option<std::borrow::Cow<'a, str>>,
    /// Parameters of a request or notification.
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
    /// The result of a successful response.
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
    /// The error of a failed response.
    #[serde(default)]
    pub error: Option<RpcError>,
}

/// What an [`Incoming`] message is.
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    /// A request from the peer (has `method` and `id`).
    Request,
    /// A notification (has `method`, no `id`).
    Notification,
    /// A response to one of our requests (has `id` and `result` or `error`).
    Response,
    /// Not a JSON-RPC 2.0 message.
    Invalid,
}

impl Incoming<'_> {
    /// Classifies the message.
    pub fn kind(&self) -> Kind {
        if self.jsonrpc != Some("2.0") {
            return Kind::Invalid;
        }
        match (&self.method, self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, Some(_)) if self.result.is_some() || self.error.is_some() => Kind::Response,
            _ => Kind::Invalid,
        }
    }

    /// The id as one of our numeric request ids, when it is one.
    pub fn numeric_id(&self) -> Option<u64> {
        id_as_u64(self.id?)
    }
}

/// Reads a request id that we issued: a JSON number, or a string of digits
/// (some servers echo ids back as strings).
pub fn id_as_u64(id: &RawValue) -> Option<u64> {
    let s = id.get();
    let s = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s);
    s.parse().ok()
}

/// Serializes a request line (with the trailing newline).
pub fn encode_request<P: Serialize + ?Sized>(
    id: u64,
    method: &str,
    params: Option<&P>,
) -> Result<Vec<u8>, Error> {
    #[derive(Serialize)]
    struct Req<'a, P: Serialize + ?Sized> {
        jsonrpc: &'static str,
        id: u64,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }
    encode_line(&Req {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// Serializes a notification line (with the trailing newline).
pub fn encode_notification<P: Serialize + ?Sized>(
    method: &str,
    params: Option<&P>,
) -> Result<Vec<u8>, Error> {
    #[derive(Serialize)]
    struct Note<'a, P: Serialize + ?Sized> {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }
    encode_line(&Note {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// Serializes a response line to a peer's request (with the trailing newline).
pub fn encode_response(
    id: &RawValue,
    outcome: &Result<serde_json::Value, RpcError>,
) -> Result<Vec<u8>, Error> {
    #[derive(Serialize)]
    struct Resp<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a serde_json::Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a RpcError>,
    }
    encode_line(&Resp {
        jsonrpc: "2.0",
        id,
        result: outcome.as_ref().ok(),
        error: outcome.as_ref().err(),
    })
}

fn encode_line<T: Serialize>(msg: &T) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::with_capacity(128);
    serde_json::to_writer(&mut buf, msg)
        .map_err(|e| Error::InvalidInput(format!("cannot encode JSON-RPC message: {e}")))?;
    buf.push(b'\n');
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transport_written_initialized_note_is_what_the_encoder_makes() {
        let encoded = encode_notification::<()>("notifications/initialized", None).unwrap();
        assert_eq!(
            crate::transport::streamable_http::INITIALIZED_NOTE,
            encoded.as_slice()
        );
    }

    #[test]
    fn classifies_messages() {
        let parse = |s: &'static str| serde_json::from_str::<Incoming>(s).unwrap();
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).kind(),
            Kind::Response
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"7","error":{"code":-1,"message":"x"}}"#).kind(),
            Kind::Response
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).kind(),
            Kind::Request
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#).kind(),
            Kind::Notification
        );
        assert_eq!(parse(r#"{"id":1,"result":{}}"#).kind(), Kind::Invalid);
        assert_eq!(parse(r#"{"jsonrpc":"2.0","id":1}"#).kind(), Kind::Invalid);
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"7","result":1}"#).numeric_id(),
            Some(7)
        );
    }

    #[test]
    fn encodes_lines() {
        let line = encode_request(3, "tools/list", Some(&serde_json::json!({}))).unwrap();
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{}}\n"
        );
        let line = encode_notification::<()>("notifications/initialized", None).unwrap();
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        );
    }
}
