//! Typed results of `resources/read`, `prompts/get` and
//! `completion/complete`, as [`Hub::read_resource`](crate::Hub::read_resource),
//! [`Hub::get_prompt`](crate::Hub::get_prompt) and
//! [`Hub::complete`](crate::Hub::complete) return them.
//!
//! Each keeps the server's answer as sent ([`json`](ReadResourceResult::json),
//! [`into_json`](ReadResourceResult::into_json)): front ends hand that on
//! unchanged, so a field this engine does not model still reaches the host.
//! The typed fields are read from it leniently, because the answer comes
//! from a server: a missing or mistyped field is its default, never an
//! error (the JSON is still there to look at).

use serde::Deserialize;
use serde_json::Value;

/// Reads `T` from `raw`, the default when it does not fit.
fn lenient<T: for<'de> Deserialize<'de> + Default>(raw: &Value) -> T {
    T::deserialize(raw).unwrap_or_default()
}

/// One item of a resource's contents: text or base64 `blob`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceContents {
    /// The URI of this item (a resource may answer with several).
    pub uri: String,
    /// Its MIME type, when the server gave one.
    pub mime_type: Option<String>,
    /// The text, for a text item.
    pub text: Option<String>,
    /// The base64-encoded bytes, for a binary item.
    pub blob: Option<String>,
}

/// The answer to `resources/read`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResourceResult {
    /// The items of the resource, in the server's order.
    pub contents: Vec<ResourceContents>,
    raw: Value,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct ReadShape {
    contents: Vec<Lenient<ResourceContents>>,
}

/// One list item that may be malformed: its default then.
#[derive(Default)]
struct Lenient<T>(T);

impl<'de, T: for<'a> Deserialize<'a> + Default> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Lenient(lenient(&v)))
    }
}

impl ReadResourceResult {
    /// The typed view of `raw`, the server's `result` object.
    pub fn from_json(raw: Value) -> Self {
        let shape: ReadShape = lenient(&raw);
        ReadResourceResult {
            contents: shape.contents.into_iter().map(|c| c.0).collect(),
            raw,
        }
    }

    /// The answer as the server sent it.
    pub fn json(&self) -> &Value {
        &self.raw
    }

    /// The answer as the server sent it, taken.
    pub fn into_json(self) -> Value {
        self.raw
    }

    /// The text items joined by newlines (binary items left out).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .contents
            .iter()
            .filter_map(|c| c.text.as_deref())
            .collect();
        texts.join("\n")
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The content block as sent (`{"type": "text", "text": ...}`, an
    /// image, a resource, ...).
    pub content: Value,
}

impl PromptMessage {
    /// The text of a text content block.
    pub fn text(&self) -> Option<&str> {
        match self.content.get("type").and_then(Value::as_str) {
            Some("text") => self.content.get("text").and_then(Value::as_str),
            _ => None,
        }
    }
}

/// The answer to `prompts/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetPromptResult {
    /// The prompt's description, when the server gave one.
    pub description: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<PromptMessage>,
    raw: Value,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct PromptShape {
    description: Lenient<Option<String>>,
    messages: Vec<Lenient<PromptMessage>>,
}

impl GetPromptResult {
    /// The typed view of `raw`, the server's `result` object.
    pub fn from_json(raw: Value) -> Self {
        let shape: PromptShape = lenient(&raw);
        GetPromptResult {
            description: shape.description.0,
            messages: shape.messages.into_iter().map(|m| m.0).collect(),
            raw,
        }
    }

    /// The answer as the server sent it.
    pub fn json(&self) -> &Value {
        &self.raw
    }

    /// The answer as the server sent it, taken.
    pub fn into_json(self) -> Value {
        self.raw
    }
}

/// The answer to `completion/complete`: its `completion` object.
#[derive(Debug, Clone, PartialEq)]
pub struct CompleteResult {
    /// The suggested values, best first.
    pub values: Vec<String>,
    /// How many values there are in all, when the server said.
    pub total: Option<u64>,
    /// Whether there are more than `values`, when the server said.
    pub has_more: Option<bool>,
    raw: Value,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CompletionShape {
    values: Vec<Lenient<String>>,
    total: Lenient<Option<u64>>,
    has_more: Lenient<Option<bool>>,
}

impl CompleteResult {
    /// The typed view of `raw`, the `completion` object of the server's
    /// result (`{"values": [...], "total": n, "hasMore": b}`).
    pub fn from_json(raw: Value) -> Self {
        let shape: CompletionShape = lenient(&raw);
        CompleteResult {
            values: shape.values.into_iter().map(|v| v.0).collect(),
            total: shape.total.0,
            has_more: shape.has_more.0,
            raw,
        }
    }

    /// The answer as the server sent it.
    pub fn json(&self) -> &Value {
        &self.raw
    }

    /// The answer as the server sent it, taken.
    pub fn into_json(self) -> Value {
        self.raw
    }
}

/// The JSON side every result shares: serialized as the server sent it,
/// shown as that JSON, indexed like it (`result["contents"]`), equal to it.
macro_rules! json_result {
    ($($ty:ty),*) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.raw.serialize(s)
            }
        }

        impl<I: serde_json::value::Index> std::ops::Index<I> for $ty {
            type Output = Value;
            fn index(&self, index: I) -> &Value {
                &self.raw[index]
            }
        }

        impl PartialEq<Value> for $ty {
            fn eq(&self, other: &Value) -> bool {
                &self.raw == other
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.raw.fmt(f)
            }
        }

        impl From<$ty> for Value {
            fn from(result: $ty) -> Value {
                result.raw
            }
        }
    )*};
}

json_result!(ReadResourceResult, GetPromptResult, CompleteResult);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_read_typed_and_kept() {
        let raw = json!({"contents": [
            {"uri": "file:///a", "mimeType": "text/plain", "text": "one"},
            {"uri": "file:///b", "blob": "AAE="},
            "not an object",
            {"uri": "file:///c", "text": "two", "extra": 1}
        ], "_meta": {"x": 1}});
        let r = ReadResourceResult::from_json(raw.clone());
        assert_eq!(r.contents.len(), 4);
        assert_eq!(r.contents[0].mime_type.as_deref(), Some("text/plain"));
        assert_eq!(r.contents[1].blob.as_deref(), Some("AAE="));
        assert_eq!(r.contents[2], ResourceContents::default());
        assert_eq!(r.text(), "one\ntwo");
        assert_eq!(r.json(), &raw);
        assert_eq!(ReadResourceResult::from_json(json!(5)).contents, vec![]);
    }

    #[test]
    fn prompts_and_completions_typed_and_kept() {
        let raw = json!({"description": "d", "messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}},
            {"role": "assistant", "content": {"type": "image", "data": "x"}}
        ]});
        let p = GetPromptResult::from_json(raw.clone());
        assert_eq!(p.description.as_deref(), Some("d"));
        assert_eq!(p.messages[0].text(), Some("hi"));
        assert_eq!(p.messages[1].text(), None);
        assert_eq!(p.into_json(), raw);
        let odd = GetPromptResult::from_json(json!({"description": 3, "messages": [1]}));
        assert_eq!(odd.description, None);
        assert_eq!(odd.messages, vec![PromptMessage::default()]);

        let c =
            CompleteResult::from_json(json!({"values": ["a", "b"], "total": 9, "hasMore": true}));
        assert_eq!(c.values, ["a", "b"]);
        assert_eq!((c.total, c.has_more), (Some(9), Some(true)));
        let bad = CompleteResult::from_json(json!({"values": "a", "total": -1}));
        assert!(bad.values.is_empty() && bad.total.is_none());
    }
}
