//! `mcpmux watch`: the hub's events, one per line, until interrupted; and
//! `mcpmux complete`'s reference and output.

use std::io::Write;

use mcpmux_core::{Error, EventStream, HubEvent};
use serde_json::{json, Value};

/// Prints every event of `events` (JSON Lines with `json`, else one human
/// line each) until the hub is gone. Runs on the CLI's runtime; the caller
/// races it against Ctrl-C.
pub async fn print_events(mut events: EventStream, json: bool) -> Result<(), Error> {
    while let Some(event) = events.recv().await {
        let line = if json {
            event.to_json().to_string()
        } else {
            human(&event)
        };
        let mut out = std::io::stdout().lock();
        // A closed stdout (`| head`) ends the watch.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// One event as a line for people.
fn human(event: &HubEvent) -> String {
    let v = event.to_json();
    let s = |key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let list = |key: &str| {
        v[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    match s("type").as_str() {
        "server_state" => {
            let mut line = format!("{}: {}", s("server"), s("state"));
            if v["attempt"].as_u64().unwrap_or(0) > 0 {
                line.push_str(&format!(" (attempt {})", v["attempt"]));
            }
            if !s("error").is_empty() {
                line.push_str(&format!(" - {} {}", s("code"), s("error")));
            }
            line
        }
        "tools_changed" => {
            let mut line = format!("{}: tools changed", s("server"));
            if !list("added").is_empty() {
                line.push_str(&format!("; added {}", list("added")));
            }
            if !list("removed").is_empty() {
                line.push_str(&format!("; removed {}", list("removed")));
            }
            line
        }
        "resources_changed" => format!("{}: resource list changed", s("server")),
        "prompts_changed" => format!("{}: prompt list changed", s("server")),
        "events_changed" => format!("{}: event types changed", s("server")),
        "resource_updated" => format!("{}: resource updated {}", s("server"), s("uri")),
        "log" => {
            let data = match &v["data"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let logger = s("logger");
            if logger.is_empty() {
                format!("{}: [{}] {data}", s("server"), s("level"))
            } else {
                format!("{}: [{}] {logger}: {data}", s("server"), s("level"))
            }
        }
        "task_status" => format!(
            "{}: task {} {} {}",
            s("server"),
            s("task_id"),
            s("status"),
            s("message")
        )
        .trim_end()
        .to_owned(),
        "lagged" => format!("({} events lost: the output fell behind)", v["count"]),
        _ => v.to_string(),
    }
}

/// The `ref` of `mcpmux complete`: a prompt by name or a resource template.
pub fn reference(prompt: Option<&str>, resource: Option<&str>) -> Result<Value, Error> {
    match (prompt, resource) {
        (Some(name), None) => Ok(json!({"type": "ref/prompt", "name": name})),
        (None, Some(uri)) => Ok(json!({"type": "ref/resource", "uri": uri})),
        _ => Err(Error::InvalidInput(
            "give exactly one of --prompt NAME or --resource URI_TEMPLATE".into(),
        )),
    }
}

/// `--context` of `mcpmux complete`: a JSON object of the arguments already
/// chosen, sent as `{"arguments": {...}}`.
pub fn context(text: Option<&str>) -> Result<Option<Value>, Error> {
    let Some(text) = text else { return Ok(None) };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(arguments)) => Ok(Some(json!({ "arguments": arguments }))),
        _ => Err(Error::InvalidInput(
            "--context must be a JSON object of argument names to values".into(),
        )),
    }
}
