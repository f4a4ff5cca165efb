//! Elicitation answers: SEP-1034 defaults. When the host accepts a form
//! without a value for a field whose schema has a `default`, the engine
//! fills the default in, so servers get what the user was shown.

use serde_json::{Map, Value};

/// Fills defaults from `params.requestedSchema` into an accepting `result`.
pub fn fill_defaults(params: &Value, result: &mut Value) {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return;
    }
    let Some(properties) = params
        .get("requestedSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return;
    };
    let Value::Object(result) = result else {
        return;
    };
    let content = result
        .entry("content")
        .or_insert_with(|| Value::Object(Map::new()));
    if content.is_null() {
        *content = Value::Object(Map::new());
    }
    let Value::Object(content) = content else {
        return;
    };
    for (name, schema) in properties {
        if let Some(default) = schema.get("default") {
            content
                .entry(name.clone())
                .or_insert_with(|| default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fills_only_missing_fields_of_accepted_forms() {
        let params = json!({"requestedSchema":{"type":"object","properties":{
            "name":{"type":"string","default":"John"},"age":{"type":"integer","default":30},"x":{"type":"string"}}}});
        let mut accepted = json!({"action":"accept","content":{"age":41}});
        fill_defaults(&params, &mut accepted);
        assert_eq!(accepted["content"], json!({"name":"John","age":41}));
        let mut bare = json!({"action":"accept"});
        fill_defaults(&params, &mut bare);
        assert_eq!(bare["content"]["age"], 30);
        let mut declined = json!({"action":"decline"});
        fill_defaults(&params, &mut declined);
        assert!(declined.get("content").is_none());
    }
}
