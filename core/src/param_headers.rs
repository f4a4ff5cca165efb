//! `x-mcp-header` (SEP-2243): tool parameters that a server wants mirrored
//! into `Mcp-Param-<Name>` HTTP headers, and the rules that make a tool's
//! annotations valid. A tool with invalid annotations must never be called,
//! so the engine leaves it out of the tool list.

use serde_json::Value;

/// The schema keyword naming a parameter's header.
const KEYWORD: &str = "x-mcp-header";

/// Why a tool's `x-mcp-header` annotations are invalid, if they are.
pub fn invalid_annotations(input_schema: &Value) -> Option<String> {
    let properties = input_schema.get("properties")?.as_object()?;
    let mut seen: Vec<String> = Vec::new();
    for (param, schema) in properties {
        let Some(name) = schema.get(KEYWORD) else {
            continue;
        };
        let Some(name) = name.as_str() else {
            return Some(format!("'{param}': {KEYWORD} is not a string"));
        };
        if name.is_empty() {
            return Some(format!("'{param}': {KEYWORD} is empty"));
        }
        if !name.bytes().all(is_token_char) {
            return Some(format!(
                "'{param}': {KEYWORD} '{name}' has characters not allowed in a header name"
            ));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => {
                return Some(format!(
                    "'{param}': {KEYWORD} needs a string, integer or boolean, not {}",
                    other.unwrap_or("an untyped value")
                ))
            }
        }
        let lower = name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Some(format!("{KEYWORD} '{name}' is used twice"));
        }
        seen.push(lower);
    }
    None
}

/// RFC 9110 token characters.
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers for calling a tool with `arguments`.
pub fn headers(input_schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (param, schema) in properties {
        let Some(name) = schema.get(KEYWORD).and_then(Value::as_str) else {
            continue;
        };
        let value = match arguments.get(param) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => encode_text(s),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => continue,
        };
        out.push((format!("Mcp-Param-{name}"), value));
    }
    out
}

/// A string as a header value: as is when it is plain visible ASCII without
/// surrounding whitespace, else `=?base64?...?=` (the `Mcp-Name` and
/// `Mcp-Param-*` rule of the 2026-07-28 revision).
pub(crate) fn encode_text(s: &str) -> String {
    let plain = s.bytes().all(|b| (0x20..=0x7e).contains(&b)) && s.trim() == s;
    if plain {
        s.to_owned()
    } else {
        format!("=?base64?{}?=", base64(s.as_bytes()))
    }
}

/// A header value as the text it stands for: `=?base64?...?=` decoded
/// (`None` when that is not valid base64 of UTF-8), anything else as is.
pub fn decode_text(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(unbase64(encoded)?).ok(),
        None => Some(value.to_owned()),
    }
}

/// Standard base64 (padding optional) to bytes; `None` when it is not.
fn unbase64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = u32::from(chunk[0]) << 16
            | u32::from(*chunk.get(1).unwrap_or(&0)) << 8
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_values() {
        assert_eq!(
            base64(b"Hello, \xe4\xb8\x96\xe7\x95\x8c"),
            "SGVsbG8sIOS4lueVjA=="
        );
        assert_eq!(base64(b"ab"), "YWI=");
        for text in ["", "a", "ab", "abc", "Hello, \u{4e16}\u{754c}", " padded "] {
            assert_eq!(decode_text(&encode_text(text)).as_deref(), Some(text));
        }
        assert_eq!(decode_text("=?base64?!!?="), None);
        assert_eq!(decode_text("plain").as_deref(), Some("plain"));
        assert_eq!(base64(b"abc"), "YWJj");
        let schema = json!({"properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "priority":{"type":"integer","x-mcp-header":"Priority"},
            "verbose":{"type":"boolean","x-mcp-header":"Verbose"},
            "pad":{"type":"string","x-mcp-header":"Pad"},
            "query":{"type":"string"}}});
        let h = headers(
            &schema,
            &json!({"region":"us-west1","priority":42,"verbose":null,"pad":" x","query":"q"}),
        );
        assert!(h.contains(&("Mcp-Param-Region".into(), "us-west1".into())));
        assert!(h.contains(&("Mcp-Param-Priority".into(), "42".into())));
        assert!(h.contains(&("Mcp-Param-Pad".into(), "=?base64?IHg=?=".into())));
        assert_eq!(h.len(), 3, "{h:?}");
    }

    #[test]
    fn validates_annotations() {
        let ok = json!({"properties":{"region":{"type":"string","x-mcp-header":"Region"}}});
        assert!(invalid_annotations(&ok).is_none());
        for bad in [
            json!({"properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"properties":{"a":{"type":"object","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"Région"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}),
        ] {
            assert!(invalid_annotations(&bad).is_some(), "{bad}");
        }
    }
}
