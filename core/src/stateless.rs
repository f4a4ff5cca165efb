//! The stateless 2026-07-28 revision: `server/discover` instead of
//! `initialize`, per-request `_meta` (protocol version, client info and
//! capabilities), `resultType`, and input-required results (SEP-2322) that
//! the client answers by retrying the request with `inputResponses`.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::protocol::InitializeResult;

/// The stateless revision.
pub const VERSION: &str = "2026-07-28";
/// `_meta` key: the protocol revision of the request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of `server/discover`: the server's name and version.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// JSON-RPC error: the server does not support the requested revision
/// (`data.supported` lists what it does).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// Rounds of input-required answers before a request gives up.
pub const MAX_INPUT_ROUNDS: usize = 8;
/// Questions one input-required answer may ask at once; more is a
/// protocol error (each is a host handler's call, perhaps a user's prompt).
pub const MAX_INPUT_REQUESTS: usize = 16;

/// The `_meta` members every stateless request carries.
#[derive(Debug, Clone)]
pub struct RequestMeta {
    members: Map<String, Value>,
}

impl RequestMeta {
    /// The members for `version`, the client's capabilities and info.
    pub fn new(version: &str, capabilities: &Value, client_info: &Value) -> RequestMeta {
        let mut members = Map::new();
        members.insert(META_PROTOCOL_VERSION.into(), version.into());
        members.insert(META_CLIENT_CAPABILITIES.into(), capabilities.clone());
        members.insert(META_CLIENT_INFO.into(), client_info.clone());
        RequestMeta { members }
    }

    /// Params with these members added to their `_meta` (params are created
    /// when absent; members already there are kept).
    pub fn apply(&self, params: Option<Value>) -> Value {
        let mut params = match params {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            for (k, v) in &self.members {
                meta.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        Value::Object(params)
    }
}

/// Reads a `server/discover` result: the server speaks the stateless
/// revision when `supportedVersions` lists it. `None` otherwise (an older
/// server answering with an empty result, say).
pub fn discovered(raw: &RawValue) -> Option<InitializeResult> {
    let v: Value = serde_json::from_str(raw.get()).ok()?;
    let speaks = v
        .get("supportedVersions")?
        .as_array()?
        .iter()
        .any(|s| s == VERSION);
    if !speaks {
        return None;
    }
    let server_info = v
        .get("serverInfo")
        .or_else(|| v.get("_meta").and_then(|m| m.get(META_SERVER_INFO)))
        .cloned()
        .unwrap_or(Value::Null);
    Some(InitializeResult {
        protocol_version: VERSION.into(),
        capabilities: v
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        server_info,
        instructions: v
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// The versions an UnsupportedProtocolVersion error says the server supports.
pub fn supported_versions(error: &Error) -> Option<Vec<String>> {
    match error {
        Error::ServerError {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            data: Some(data),
            ..
        } => Some(
            data.get("supported")?
                .as_array()?
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => None,
    }
}

/// An input-required result: what the server asks, and its opaque state.
#[derive(Debug)]
pub struct InputRequired {
    /// The questions by key: `{method, params}` each.
    pub requests: Map<String, Value>,
    /// Opaque state to send back verbatim, when the server gave one.
    pub request_state: Option<Value>,
}

/// Reads `resultType`; `Some` only for `input_required` (absent means complete).
pub fn input_required(raw: &RawValue) -> Option<InputRequired> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "resultType", borrow)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    let probe: Probe = serde_json::from_str(raw.get()).ok()?;
    if probe.result_type.as_deref() != Some("input_required") {
        return None;
    }
    let v: Value = serde_json::from_str(raw.get()).ok()?;
    Some(InputRequired {
        requests: v
            .get("inputRequests")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        request_state: v.get("requestState").cloned(),
    })
}

/// Params for the retry: the original ones with `inputResponses` and, when
/// the server sent one, `requestState` (never carried over otherwise).
pub fn retry_params(
    original: &Value,
    responses: Map<String, Value>,
    request_state: Option<Value>,
) -> Value {
    let mut params = original.as_object().cloned().unwrap_or_default();
    params.insert("inputResponses".into(), Value::Object(responses));
    match request_state {
        Some(state) => params.insert("requestState".into(), state),
        None => params.remove("requestState"),
    };
    Value::Object(params)
}

/// Methods whose results are cacheable in this revision (SEP-2549): they
/// carry `ttlMs` and `cacheScope`.
pub const CACHEABLE_METHODS: [&str; 6] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// A result of `method` as this revision requires it of a server:
/// `resultType` (`"complete"` unless already set) and, for a cacheable
/// method, `ttlMs` (0: not to be reused) and `cacheScope` (`"private"`)
/// unless already set. The gateway's answers come from older revisions'
/// shapes (its servers' results, its own lists), which have none of them.
pub fn complete_result(method: &str, result: &mut Value) {
    let Value::Object(members) = result else {
        return;
    };
    members
        .entry("resultType")
        .or_insert_with(|| "complete".into());
    if CACHEABLE_METHODS.contains(&method) {
        members.entry("ttlMs").or_insert_with(|| 0.into());
        members
            .entry("cacheScope")
            .or_insert_with(|| "private".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_get_the_revision_members_without_overwriting() {
        let mut list = serde_json::json!({"tools": [], "ttlMs": 5});
        complete_result("tools/list", &mut list);
        assert_eq!(list["resultType"], "complete");
        assert_eq!(list["ttlMs"], 5);
        assert_eq!(list["cacheScope"], "private");
        let mut call = serde_json::json!({"resultType": "input_required"});
        complete_result("tools/call", &mut call);
        assert_eq!(call["resultType"], "input_required");
        assert!(call.get("ttlMs").is_none() && call.get("cacheScope").is_none());
    }

    #[test]
    fn meta_is_added_without_overwriting() {
        let meta = RequestMeta::new(
            VERSION,
            &serde_json::json!({}),
            &serde_json::json!({"name":"t","version":"1"}),
        );
        let p = meta.apply(Some(
            serde_json::json!({"name":"x","_meta":{"progressToken":3}}),
        ));
        assert_eq!(p["_meta"]["progressToken"], 3);
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], VERSION);
        assert_eq!(p["_meta"][META_CLIENT_INFO]["name"], "t");
        let empty = meta.apply(None);
        assert!(empty["_meta"][META_CLIENT_CAPABILITIES].is_object());
    }

    #[test]
    fn discovery_and_errors() {
        let raw = RawValue::from_string(r#"{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"resultType":"complete"}"#.into()).unwrap();
        let init = discovered(&raw).unwrap();
        assert_eq!(init.server_info["name"], "s");
        assert!(init.has_capability("tools"));
        let old = RawValue::from_string("{}".into()).unwrap();
        assert!(discovered(&old).is_none());
        let e = Error::ServerError {
            code: -32022,
            message: "x".into(),
            data: Some(serde_json::json!({"supported":["2026-07-28"],"requested":"1"})),
        };
        assert_eq!(supported_versions(&e).unwrap(), ["2026-07-28"]);
    }

    #[test]
    fn input_required_round_trip() {
        let raw = RawValue::from_string(r#"{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{}}},"requestState":"abc"}"#.into()).unwrap();
        let ask = input_required(&raw).unwrap();
        assert!(ask.requests.contains_key("confirm"));
        let mut answers = Map::new();
        answers.insert("confirm".into(), serde_json::json!({"action":"accept"}));
        let p = retry_params(
            &serde_json::json!({"name":"t","requestState":"old"}),
            answers,
            ask.request_state,
        );
        assert_eq!(p["requestState"], "abc");
        assert_eq!(p["inputResponses"]["confirm"]["action"], "accept");
        let done = RawValue::from_string(r#"{"content":[]}"#.into()).unwrap();
        assert!(input_required(&done).is_none());
        let p = retry_params(
            &serde_json::json!({"name":"t","requestState":"old"}),
            Map::new(),
            None,
        );
        assert!(p.get("requestState").is_none());
    }
}
