//! MCP Apps (`io.modelcontextprotocol/ui`, the ext-apps specification
//! 2026-01-26): what the engine reads of a tool's UI. A tool names its UI
//! with `_meta.ui.resourceUri` (or the older flat `_meta["ui/resourceUri"]`),
//! a `ui://` resource of the same server served as
//! `text/html;profile=mcp-app`; `_meta.ui.visibility` lists who may call
//! it: `"model"` (the agent), `"app"` (the UI, from the same server). A
//! tool whose visibility leaves out `"model"` is the app's only: it is
//! never offered to a model, but a host (and through it the app) may call
//! it. A pure leaf: the tool formats, the policy and the gateway read it.

use serde_json::Value;

/// The extension's name: a key of `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an app's HTML.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The scheme every UI resource has.
pub const SCHEME: &str = "ui://";

/// The older, flat `_meta` key of a tool's UI resource.
pub const FLAT_RESOURCE_URI_KEY: &str = "ui/resourceUri";

/// The `ui://` resource a tool's `_meta` names, if any (`ui.resourceUri`
/// first, then the flat key); a value that is not a `ui://` URI is none.
pub fn resource_uri(meta: Option<&Value>) -> Option<&str> {
    let meta = meta?;
    meta.get("ui")
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta.get(FLAT_RESOURCE_URI_KEY))
        .and_then(Value::as_str)
        .filter(|uri| uri.starts_with(SCHEME))
}

/// Whether a tool with this `_meta` is for its app only: its
/// `ui.visibility` is a list without `"model"`. Absent means both.
pub fn is_app_only(meta: Option<&Value>) -> bool {
    meta.and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get("visibility"))
        .and_then(Value::as_array)
        .is_some_and(|who| !who.iter().any(|w| w == "model"))
}

/// Rewrites every UI URI a tool's `_meta` holds with `rename` (the gateway
/// serves apps under names of its own).
pub fn rename_resource_uris(meta: &mut Value, rename: impl Fn(&str) -> String) {
    if let Some(uri) = meta
        .get_mut("ui")
        .and_then(|ui| ui.get_mut("resourceUri"))
        .filter(|u| u.as_str().is_some_and(|u| u.starts_with(SCHEME)))
    {
        *uri = rename(uri.as_str().unwrap_or_default()).into();
    }
    if let Some(uri) = meta
        .get_mut(FLAT_RESOURCE_URI_KEY)
        .filter(|u| u.as_str().is_some_and(|u| u.starts_with(SCHEME)))
    {
        *uri = rename(uri.as_str().unwrap_or_default()).into();
    }
}

/// Rewrites every UI URI a tool result holds with `rename`: its `_meta`
/// (as a tool's), and the `ui://` URI of each `resource_link` block and
/// each embedded `resource` block's resource. `rename` is called only for
/// URIs found, in order.
pub fn rename_result_uris(result: &mut Value, mut rename: impl FnMut(&str) -> String) {
    let mut apply = |uri: &mut Value| {
        if let Some(old) = uri.as_str().filter(|u| u.starts_with(SCHEME)) {
            *uri = rename(old).into();
        }
    };
    if let Some(meta) = result.get_mut("_meta") {
        if let Some(uri) = meta.get_mut("ui").and_then(|ui| ui.get_mut("resourceUri")) {
            apply(uri);
        }
        if let Some(uri) = meta.get_mut(FLAT_RESOURCE_URI_KEY) {
            apply(uri);
        }
    }
    if let Some(Value::Array(blocks)) = result.get_mut("content") {
        for block in blocks {
            let uri = match block.get("type").and_then(Value::as_str) {
                Some("resource_link") => block.get_mut("uri"),
                Some("resource") => block.get_mut("resource").and_then(|r| r.get_mut("uri")),
                _ => None,
            };
            if let Some(uri) = uri {
                apply(uri);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_results_ui_uris_are_renamed_and_nothing_else() {
        let mut result = json!({
            "content": [
                {"type": "text", "text": "ui://w/not-a-uri-here.html"},
                {"type": "resource_link", "uri": "ui://w/view.html", "name": "v"},
                {"type": "resource", "resource": {"uri": "ui://w/inline.html", "text": "<p>"}},
                {"type": "resource_link", "uri": "file:///x", "name": "x"}
            ],
            "_meta": {"ui": {"resourceUri": "ui://w/view.html"}, "ui/resourceUri": "https://x"}
        });
        let mut seen = Vec::new();
        rename_result_uris(&mut result, |uri| {
            seen.push(uri.to_owned());
            format!("ui://s/{}", &uri[SCHEME.len()..])
        });
        assert_eq!(
            seen,
            ["ui://w/view.html", "ui://w/view.html", "ui://w/inline.html"]
        );
        assert_eq!(result["_meta"]["ui"]["resourceUri"], "ui://s/w/view.html");
        assert_eq!(result["_meta"]["ui/resourceUri"], "https://x");
        assert_eq!(result["content"][0]["text"], "ui://w/not-a-uri-here.html");
        assert_eq!(result["content"][1]["uri"], "ui://s/w/view.html");
        assert_eq!(
            result["content"][2]["resource"]["uri"],
            "ui://s/w/inline.html"
        );
        assert_eq!(result["content"][3]["uri"], "file:///x");
        let mut plain = json!({"content": [{"type": "text", "text": "hi"}]});
        rename_result_uris(&mut plain, |_| unreachable!("no UI URI in it"));
    }

    #[test]
    fn reads_the_resource_and_the_visibility() {
        let meta = json!({"ui": {"resourceUri": "ui://w/view.html", "visibility": ["app"]}});
        assert_eq!(resource_uri(Some(&meta)), Some("ui://w/view.html"));
        assert!(is_app_only(Some(&meta)));
        let flat = json!({"ui/resourceUri": "ui://w/old.html"});
        assert_eq!(resource_uri(Some(&flat)), Some("ui://w/old.html"));
        assert!(!is_app_only(Some(&flat)));
        let both = json!({"ui": {"visibility": ["model", "app"]}});
        assert!(!is_app_only(Some(&both)));
        assert_eq!(
            resource_uri(Some(&json!({"ui": {"resourceUri": "https://x"}}))),
            None
        );
        assert!(!is_app_only(None));
    }

    #[test]
    fn renames_both_keys() {
        let mut meta = json!({"ui": {"resourceUri": "ui://a"}, "ui/resourceUri": "ui://a", "x": 1});
        rename_resource_uris(&mut meta, |u| format!("ui://s/{}", &u[5..]));
        assert_eq!(
            meta,
            json!({"ui": {"resourceUri": "ui://s/a"}, "ui/resourceUri": "ui://s/a", "x": 1})
        );
    }
}
