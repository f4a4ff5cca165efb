//! MCP Apps through the gateway. Each server's `ui://` resources are served
//! under a name of the gateway's, `ui://<server>/<the server's URI without
//! "ui://">`, so that two servers' apps cannot collide and a URI still
//! starts with `ui://` as hosts require; every tool's `_meta` UI URI is
//! rewritten to that name, and `resources/read` of it reads the server's
//! own URI and answers its contents (HTML, MIME type, `_meta`) unchanged but
//! for their `uri`. A UI resource that only tools the policy refuses name is
//! neither listed nor served. The rules of what a tool's UI is live in core
//! (`mcpmux_core::apps`).

use mcpmux_core::apps::{self, SCHEME};
use mcpmux_core::error::Error;
use serde_json::Value;

use super::Gateway;

/// The name the gateway serves `uri` (a `ui://` URI of `server`) under.
pub(crate) fn served_uri(server: &str, uri: &str) -> String {
    format!("{SCHEME}{server}/{}", &uri[SCHEME.len()..])
}

/// The server and the server's own URI behind a served `ui://` name; `None`
/// when the name does not start with a configured server.
fn origin(gateway: &Gateway, uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (server, own) = rest.split_once('/')?;
    let config = gateway.hub().config();
    config
        .servers
        .iter()
        .any(|s| s.name == server)
        .then(|| (server.to_owned(), format!("{SCHEME}{own}")))
}

/// Where a URI a client names lives: a served `ui://` name is the
/// server's own URI on that server; any other URI is asked of whichever
/// server has it (`None`).
pub(crate) fn upstream(gateway: &Gateway, uri: &str) -> (String, Option<String>) {
    if uri.starts_with(SCHEME) {
        if let Some((server, own)) = origin(gateway, uri) {
            return (own, Some(server));
        }
    }
    (uri.to_owned(), None)
}

/// A URI of `server` as the gateway's clients know it: a `ui://` one under
/// its served name, any other as it is.
pub(crate) fn shown_uri(server: &str, uri: &str) -> String {
    if uri.starts_with(SCHEME) {
        served_uri(server, uri)
    } else {
        uri.to_owned()
    }
}

/// `resources/templates/list` items (each with the hub's `server` member)
/// as the gateway lists them: a `ui://` `uriTemplate` under the served
/// name (so what it expands to reads back through the gateway), the
/// `server` member removed.
pub(crate) fn listed_templates(items: Vec<Value>) -> Vec<Value> {
    items
        .into_iter()
        .map(|mut item| {
            let server = item.as_object_mut().and_then(|o| o.remove("server"));
            if let (Some(server), Some(template)) = (
                server.as_ref().and_then(Value::as_str),
                item.get("uriTemplate").and_then(Value::as_str),
            ) {
                if template.starts_with(SCHEME) {
                    item["uriTemplate"] = served_uri(server, template).into();
                }
            }
            item
        })
        .collect()
}

/// A tool result of `server` as the gateway answers it: every UI URI the
/// Apps text lets a result carry (`_meta.ui.resourceUri`, a
/// `resource_link` or embedded `resource` block's `ui://` URI) under its
/// served name. `server` is looked up only when there is one: most results
/// have none.
pub(crate) fn rename_in_result(result: &mut Value, server: impl FnOnce() -> Option<String>) {
    let mut server = Some(server);
    let mut known: Option<Option<String>> = None;
    apps::rename_result_uris(result, |uri| {
        let name = known.get_or_insert_with(|| server.take().and_then(|f| f()));
        match name {
            Some(name) => served_uri(name, uri),
            None => uri.to_owned(),
        }
    });
}

/// Whether the gateway serves `uri` of `server`: unless only tools the
/// policy refuses name it as their UI.
fn served(gateway: &Gateway, server: &str, uri: &str) -> bool {
    let naming: Vec<String> = gateway
        .hub()
        .list_tools()
        .into_iter()
        .filter(|t| t.server == server && t.ui_resource_uri() == Some(uri))
        .map(|t| t.name)
        .collect();
    naming.is_empty() || gateway.offered().iter().any(|t| naming.contains(&t.name))
}

/// A tool's `_meta` as the gateway lists it: its UI URIs under the served
/// names.
pub(crate) fn rename_in_meta(meta: &mut Value, server: &str) {
    apps::rename_resource_uris(meta, |uri| served_uri(server, uri));
}

/// `resources/list` items (each with the hub's `server` member) as the
/// gateway lists them: `ui://` ones renamed or left out when not served,
/// the `server` and `app_of` members removed.
pub(crate) fn listed_resources(gateway: &Gateway, items: Vec<Value>) -> Vec<Value> {
    items
        .into_iter()
        .filter_map(|mut item| {
            let server = item.as_object_mut().and_then(|o| {
                // The hub's names of the tools whose UI it is: not the
                // client's to see.
                o.remove("app_of");
                o.remove("server")
            });
            let server = server.and_then(|s| s.as_str().map(str::to_owned));
            let uri = item.get("uri").and_then(Value::as_str).map(str::to_owned);
            match (server, uri) {
                (Some(server), Some(uri)) if uri.starts_with(SCHEME) => {
                    if !served(gateway, &server, &uri) {
                        return None;
                    }
                    item["uri"] = served_uri(&server, &uri).into();
                    Some(item)
                }
                _ => Some(item),
            }
        })
        .collect()
}

/// `resources/read` of a `ui://` name: the server's resource, its contents'
/// `uri` the name read. A name that is not one the gateway serves is
/// `INVALID_INPUT` saying how apps are named.
pub(crate) async fn read(gateway: &Gateway, uri: &str) -> Result<Value, Error> {
    let Some((server, own)) = origin(gateway, uri) else {
        return Err(Error::InvalidInput(format!(
            "no app resource '{uri:.200}': the gateway serves apps as ui://<server>/<the server's URI>"
        )));
    };
    if !served(gateway, &server, &own) {
        return Err(Error::ToolNotAllowed(format!(
            "app resource '{uri:.200}' belongs to tools of server '{server}' that are not offered"
        )));
    }
    let mut result = Value::from(gateway.hub().read_resource(&own, Some(&server)).await?);
    if let Some(contents) = result.get_mut("contents").and_then(Value::as_array_mut) {
        for item in contents {
            if item.get("uri").and_then(Value::as_str) == Some(own.as_str()) {
                item["uri"] = uri.into();
            }
        }
    }
    Ok(result)
}
