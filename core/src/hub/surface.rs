//! The rest of the MCP client surface on the hub: `ping`, `logging/setLevel`,
//! `completion/complete`, `resources/subscribe` and `unsubscribe`. Each picks
//! one server (named, or found from what the servers list) and sends one
//! request; answers come back as the server sent them.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Hub;
use crate::client::{CallOptions, Client};
use crate::error::Error;
use crate::protocol::LOG_LEVELS;
use crate::results::CompleteResult;

impl Hub {
    /// Pings `server` and returns the round-trip time. A server that does
    /// not answer within its `timeout_seconds` is `TIMEOUT`.
    pub async fn ping(&self, server: &str) -> Result<Duration, Error> {
        let client = self.started_client(server).await?;
        let start = Instant::now();
        client
            .request("ping", None, &CallOptions::default())
            .await?;
        Ok(start.elapsed())
    }

    /// Asks `server` to send log messages at `level` or above
    /// (`logging/setLevel`); they arrive as `log` events
    /// ([`Hub::events`](crate::Hub::events)). `level` is one of
    /// [`LOG_LEVELS`], else `INVALID_INPUT`; a server without the `logging`
    /// capability is `INVALID_INPUT` naming it.
    pub async fn set_log_level(&self, server: &str, level: &str) -> Result<(), Error> {
        check_log_level(level, "level")?;
        let client = self.started_client(server).await?;
        require(&client, "logging", "log levels")?;
        client
            .request(
                "logging/setLevel",
                Some(&json!({ "level": level })),
                &CallOptions::default(),
            )
            .await
            .map(|_| ())
    }

    /// Completes an argument (`completion/complete`): `reference` is
    /// `{"type": "ref/prompt", "name": ...}` or `{"type": "ref/resource",
    /// "uri": <template>}`, `argument` is `{"name": ..., "value": ...}`,
    /// `context` the optional `{"arguments": {...}}` already chosen. Without
    /// `server`, the one server offering that prompt or template answers.
    /// Returns the server's `completion` object (`values`, `total`?,
    /// `hasMore`?).
    pub async fn complete(
        &self,
        reference: &Value,
        argument: &Value,
        context: Option<&Value>,
        server: Option<&str>,
    ) -> Result<CompleteResult, Error> {
        let (kind, key, field) = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => ("prompt", "name", "name"),
            Some("ref/resource") => ("resource template", "uri", "uriTemplate"),
            _ => {
                return Err(Error::InvalidInput(
                    "reference must be {\"type\": \"ref/prompt\", \"name\": ...} or \
                     {\"type\": \"ref/resource\", \"uri\": ...}"
                        .into(),
                ))
            }
        };
        let Some(wanted) = reference.get(key).and_then(Value::as_str) else {
            return Err(Error::InvalidInput(format!(
                "reference of a {kind} needs a string '{key}'"
            )));
        };
        if !argument.get("name").is_some_and(Value::is_string)
            || !argument.get("value").is_some_and(Value::is_string)
        {
            return Err(Error::InvalidInput(
                "argument must be {\"name\": <string>, \"value\": <string>}".into(),
            ));
        }
        let client = match server {
            Some(s) => self.started_client(s).await?,
            None => {
                let listed = if kind == "prompt" {
                    self.list_prompts(None).await?
                } else {
                    self.list_resource_templates(None).await?
                };
                self.client(&single_owner(&listed, field, wanted, kind)?)?
            }
        };
        require(&client, "completions", "completions")?;
        let mut params = json!({ "ref": reference, "argument": argument });
        if let Some(context) = context {
            params["context"] = context.clone();
        }
        let answer = client
            .request(
                "completion/complete",
                Some(&params),
                &CallOptions::default(),
            )
            .await?;
        answer
            .get("completion")
            .cloned()
            .map(CompleteResult::from_json)
            .ok_or_else(|| {
                Error::ProtocolError(format!(
                    "server '{}': completion/complete result has no 'completion'",
                    client.name()
                ))
            })
    }

    /// Subscribes to changes of resource `uri` (`resources/subscribe`) on
    /// `server`, or on the server that lists it; when no listing names it
    /// (a resource made on the fly), on the only server with resources,
    /// else on the servers one of whose resource templates matches it, else
    /// on every server that can subscribe (succeeding when one accepts).
    /// Changes arrive as `resource_updated` events. A server that cannot
    /// subscribe is `INVALID_INPUT` naming it. On the 2026-07-28 revision
    /// the URI joins the connection's `subscriptions/listen` stream, and the
    /// call returns once the server acknowledged it.
    pub async fn subscribe(&self, uri: &str, server: Option<&str>) -> Result<(), Error> {
        self.subscription("resources/subscribe", uri, server).await
    }

    /// Ends a subscription made with [`Hub::subscribe`] (sent to the same
    /// servers).
    pub async fn unsubscribe(&self, uri: &str, server: Option<&str>) -> Result<(), Error> {
        self.subscription("resources/unsubscribe", uri, server)
            .await
    }

    async fn subscription(
        &self,
        method: &str,
        uri: &str,
        server: Option<&str>,
    ) -> Result<(), Error> {
        let clients = match server {
            Some(s) => vec![self.started_client(s).await?],
            None => self.subscription_targets(uri).await?,
        };
        let mut last = None;
        let mut accepted = false;
        for client in clients {
            if !can_subscribe(&client) {
                last = Some(Error::InvalidInput(format!(
                    "server '{}' does not offer resource subscriptions",
                    client.name()
                )));
                continue;
            }
            // 2026-07-28 has no resources/subscribe: the URI joins the
            // connection's subscriptions/listen stream.
            let answer = if client.is_stateless() {
                client
                    .listen_resource(uri, method == "resources/subscribe")
                    .await
            } else {
                client
                    .request(
                        method,
                        Some(&json!({ "uri": uri })),
                        &CallOptions::default(),
                    )
                    .await
                    .map(|_| ())
            };
            match answer {
                Ok(_) => accepted = true,
                Err(e) => last = Some(e),
            }
        }
        match (accepted, last) {
            (true, _) => Ok(()),
            (false, Some(e)) => Err(e),
            (false, None) => Err(Error::InvalidInput(format!(
                "no connected server can subscribe to '{uri}'"
            ))),
        }
    }

    /// The servers a subscription to `uri` goes to (see [`Hub::subscribe`]).
    async fn subscription_targets(&self, uri: &str) -> Result<Vec<Client>, Error> {
        let (claimed, all) = self.resource_claimants(uri).await?;
        if !claimed.is_empty() {
            return Ok(claimed);
        }
        if all.is_empty() {
            return Err(Error::InvalidInput(format!(
                "no connected server has a resource named '{uri}'"
            )));
        }
        let subscribing: Vec<Client> = all.into_iter().filter(can_subscribe).collect();
        if subscribing.is_empty() {
            return Err(Error::InvalidInput(format!(
                "no connected server has a resource named '{uri}', and none offers subscriptions"
            )));
        }
        Ok(subscribing)
    }

    /// The servers that claim resource `uri`, in the order to ask them:
    /// those whose listing names it; else the only server with resources;
    /// else those one of whose resource templates matches it. Empty when
    /// none does. Also returns every connected server with resources.
    pub(super) async fn resource_claimants(
        &self,
        uri: &str,
    ) -> Result<(Vec<Client>, Vec<Client>), Error> {
        let listed = self.list_resources(None).await?;
        let clients = self.clients_with("resources", None).await?;
        let owners: Vec<&str> = listed
            .iter()
            .filter(|r| r["uri"] == uri)
            .filter_map(|r| r["server"].as_str())
            .collect();
        if !owners.is_empty() {
            // Every server that lists it, in config order.
            let listing = clients
                .iter()
                .filter(|c| owners.contains(&c.name()))
                .cloned()
                .collect();
            return Ok((listing, clients));
        }
        if clients.len() == 1 {
            return Ok((clients.clone(), clients));
        }
        let templates = self.list_resource_templates(None).await.unwrap_or_default();
        let matching: Vec<&str> = templates
            .iter()
            .filter(|t| {
                t["uriTemplate"]
                    .as_str()
                    .is_some_and(|template| template_matches(template, uri))
            })
            .filter_map(|t| t["server"].as_str())
            .collect();
        let by_template: Vec<Client> = clients
            .iter()
            .filter(|c| matching.contains(&c.name()))
            .cloned()
            .collect();
        Ok((by_template, clients))
    }
}

/// Whether the server declared `resources.subscribe`.
fn can_subscribe(client: &Client) -> bool {
    client
        .init()
        .capabilities
        .get("resources")
        .and_then(|r| r.get("subscribe"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Whether `uri` is one of the URIs RFC 6570 `template` expands to (each
/// expression matched loosely by its operator: a simple one is one path
/// segment or more of text, `+` and `#` anything, `/`, `.`, `;`, `?` and
/// `&` their optional parts).
pub(super) fn template_matches(template: &str, uri: &str) -> bool {
    let mut pattern = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        pattern.push_str(&regex::escape(&rest[..open]));
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        let expression = &rest[open + 1..open + close];
        pattern.push_str(match expression.chars().next() {
            Some('+') => ".*",
            Some('#') => "(#.*)?",
            Some('/') => "(/[^/?#]*)*",
            Some('.') => r"(\.[^/?#.]*)*",
            Some(';') => "(;[^/?#]*)*",
            Some('?') => r"(\?[^#]*)?",
            Some('&') => "(&[^#]*)?",
            _ => "[^/?#]+",
        });
        rest = &rest[open + close + 1..];
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    regex::Regex::new(&pattern).is_ok_and(|re| re.is_match(uri))
}

/// INVALID_INPUT unless `level` is an MCP log level.
pub(crate) fn check_log_level(level: &str, field: &str) -> Result<(), Error> {
    if LOG_LEVELS.contains(&level) {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "{field} '{level:.40}' is not a log level (one of: {})",
            LOG_LEVELS.join(", ")
        )))
    }
}

/// INVALID_INPUT unless the server declared `capability`.
fn require(client: &Client, capability: &str, what: &str) -> Result<(), Error> {
    if client.init().has_capability(capability) {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "server '{}' does not offer {what} (no '{capability}' capability)",
            client.name()
        )))
    }
}

/// The one server whose listed item has `field` = `wanted` (the lists carry
/// a `server` member); INVALID_INPUT when none or several do.
pub(super) fn single_owner(
    listed: &[Value],
    field: &str,
    wanted: &str,
    kind: &str,
) -> Result<String, Error> {
    let mut owners: Vec<&str> = listed
        .iter()
        .filter(|item| item[field] == wanted)
        .filter_map(|item| item["server"].as_str())
        .collect();
    owners.dedup();
    match owners.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(Error::InvalidInput(format!(
            "no connected server has a {kind} named '{wanted}'"
        ))),
        many => Err(Error::InvalidInput(format!(
            "{kind} '{wanted}' is offered by several servers ({}); name the server",
            many.join(", ")
        ))),
    }
}

/// Sends the server's configured `log_level` (`logging/setLevel`) after a
/// connect, when it has one and the server offers logging. A refusal is
/// logged, not fatal: the server works without it.
pub(super) async fn apply_log_level(client: &Client) {
    let Some(level) = client.config().supervision.log_level.as_deref() else {
        return;
    };
    if !client.init().has_capability("logging") {
        tracing::debug!(server = %client.name(), "log_level set but the server has no logging capability");
        return;
    }
    let params = json!({ "level": level });
    if let Err(e) = client
        .request("logging/setLevel", Some(&params), &CallOptions::default())
        .await
    {
        tracing::warn!(server = %client.name(), error = %e, "logging/setLevel failed");
    }
}

/// Starts `config`'s server and applies its `log_level`.
pub(super) async fn connect(
    config: &crate::config::ServerConfig,
    options: &crate::client::ClientOptions,
) -> Result<Client, Error> {
    let client = Client::connect(config, options).await?;
    apply_log_level(&client).await;
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_the_uris_they_expand_to() {
        assert!(template_matches(
            "test://static/resource/{id}",
            "test://static/resource/7"
        ));
        assert!(!template_matches(
            "test://static/resource/{id}",
            "test://static/resource/"
        ));
        assert!(!template_matches(
            "test://static/resource/{id}",
            "test://static/resource/7/x"
        ));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("api://x{?q,page}", "api://x?q=1&page=2"));
        assert!(template_matches("api://x{?q,page}", "api://x"));
        assert!(!template_matches(
            "test://other/{id}",
            "test://watched-resource"
        ));
        assert!(!template_matches("a.b://{x}", "aXb://1"));
        assert!(!template_matches("broken://{x", "broken://1"));
    }
}
