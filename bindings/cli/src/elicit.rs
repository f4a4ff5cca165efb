//! Elicitation at the terminal: a server's `elicitation/create` asks the
//! person field by field on stderr and reads the answers from stdin. When
//! stdin or stderr is not a terminal there is nobody to ask, and the request
//! is declined. Requests are asked one at a time (a lock holds the terminal).
//!
//! The form follows the specification's restricted schemas: flat
//! properties of type string (with `format`, `enum`, `oneOf` titles),
//! number, integer, boolean, and arrays of enum strings. A URL-mode request
//! shows its URL and asks whether to go on.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use mcpmux_core::client::{RequestHandler, ServerRequest};
use serde_json::{json, Map, Value};

/// Tries per field before the form is cancelled.
const MAX_TRIES: usize = 3;

/// Most fields a form may ask for (a server could send thousands).
const MAX_FIELDS: usize = 64;

/// The terminal, one form at a time.
static TERMINAL: Mutex<()> = Mutex::new(());

/// The CLI's `elicitation/create` handler: asks at the terminal, or
/// declines when there is none. Runs the dialogue on a blocking thread.
pub fn handler() -> RequestHandler {
    Arc::new(|request: ServerRequest| {
        Box::pin(async move {
            let answer = tokio::task::spawn_blocking(move || {
                if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
                    return json!({ "action": "decline" });
                }
                let _terminal = TERMINAL.lock().unwrap_or_else(|p| p.into_inner());
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut output = std::io::stderr();
                ask(&request.server, &request.params, &mut input, &mut output)
            })
            .await
            .unwrap_or_else(|_| json!({ "action": "cancel" }));
            Ok(answer)
        })
    })
}

/// The dialogue for one request, over any input and output: the
/// elicitation result. End of input cancels.
pub fn ask(server: &str, params: &Value, input: &mut impl BufRead, out: &mut impl Write) -> Value {
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    let _ = writeln!(out, "\nserver '{server}' asks: {message}");
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        let url = params.get("url").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(out, "  open: {url}");
        return match prompt(input, out, "go on? [y/N] ") {
            None => json!({ "action": "cancel" }),
            Some(a) if yes(&a) == Some(true) => json!({ "action": "accept" }),
            Some(_) => json!({ "action": "decline" }),
        };
    }
    let schema = params
        .get("requestedSchema")
        .cloned()
        .unwrap_or(Value::Null);
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if properties.len() > MAX_FIELDS {
        let _ = writeln!(out, "  (a form of {} fields: declined)", properties.len());
        return json!({ "action": "decline" });
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  (Enter keeps the default or skips an optional field; Ctrl-D cancels; \
         type 'decline' at any field to decline)"
    );
    let mut content = Map::new();
    for (name, field) in &properties {
        let needed = required.contains(&name.as_str());
        let label = label(name, field, needed);
        let mut tries = 0;
        loop {
            let Some(text) = prompt(input, out, &label) else {
                return json!({ "action": "cancel" });
            };
            if text.trim() == "decline" {
                return json!({ "action": "decline" });
            }
            match parse_field(field, &text) {
                Ok(Some(value)) => {
                    content.insert(name.clone(), value);
                    break;
                }
                Ok(None) if !needed || field.get("default").is_some() => break,
                Ok(None) => {
                    let _ = writeln!(out, "  {name} is required");
                }
                Err(why) => {
                    let _ = writeln!(out, "  {why}");
                }
            }
            tries += 1;
            if tries >= MAX_TRIES {
                let _ = writeln!(out, "  no valid answer for {name}: cancelled");
                return json!({ "action": "cancel" });
            }
        }
    }
    json!({ "action": "accept", "content": content })
}

/// One line of input, without its line end; `None` at end of input.
fn prompt(input: &mut impl BufRead, out: &mut impl Write, label: &str) -> Option<String> {
    let _ = write!(out, "{label}");
    let _ = out.flush();
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

fn label(name: &str, field: &Value, required: bool) -> String {
    let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
    let mut label = format!("  {title}");
    if let Some(d) = field.get("description").and_then(Value::as_str) {
        label.push_str(&format!(" ({d})"));
    }
    let choices = choices(field);
    if !choices.is_empty() {
        let list: Vec<String> = choices
            .iter()
            .enumerate()
            .map(|(i, (value, title))| match title {
                Some(t) => format!("{}={t} [{value}]", i + 1),
                None => format!("{}={value}", i + 1),
            })
            .collect();
        label.push_str(&format!(" {{{}}}", list.join(", ")));
    }
    match field.get("type").and_then(Value::as_str) {
        Some("boolean") => label.push_str(" [y/n]"),
        Some("array") => label.push_str(" (comma-separated)"),
        _ => {}
    }
    if let Some(default) = field.get("default") {
        label.push_str(&format!(" [default {default}]"));
    } else if !required {
        label.push_str(" [optional]");
    }
    label.push_str(": ");
    label
}

/// The values a field may take, with their titles: `enum` (titled by
/// `enumNames` or not), `oneOf` / `anyOf` of `{const, title}`, or an
/// array's `items` of either.
fn choices(field: &Value) -> Vec<(String, Option<String>)> {
    let field = match field.get("type").and_then(Value::as_str) {
        Some("array") => field.get("items").unwrap_or(&Value::Null),
        _ => field,
    };
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                v.as_str().map(|v| (v.to_owned(), title))
            })
            .collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = field.get(key).and_then(Value::as_array) {
            return options
                .iter()
                .filter_map(|o| {
                    let value = o.get("const")?.as_str()?.to_owned();
                    let title = o.get("title").and_then(Value::as_str).map(str::to_owned);
                    Some((value, title))
                })
                .collect();
        }
    }
    Vec::new()
}

/// One choice from its number or its value.
fn choose(choices: &[(String, Option<String>)], text: &str) -> Result<String, String> {
    let text = text.trim();
    if let Ok(n) = text.parse::<usize>() {
        if (1..=choices.len()).contains(&n) {
            return Ok(choices[n - 1].0.clone());
        }
    }
    choices
        .iter()
        .find(|(value, title)| value == text || title.as_deref() == Some(text))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("'{text}' is not one of the choices"))
}

fn yes(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "true" | "1" => Some(true),
        "n" | "no" | "false" | "0" => Some(false),
        _ => None,
    }
}

/// The typed value of one answer: `Ok(None)` for an empty answer, `Err`
/// saying why a value does not fit the field.
pub fn parse_field(field: &Value, text: &str) -> Result<Option<Value>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let choices = choices(field);
    let value = match kind {
        "boolean" => Value::Bool(yes(trimmed).ok_or("answer y or n")?),
        "integer" => Value::from(
            trimmed
                .parse::<i64>()
                .map_err(|_| format!("'{trimmed}' is not a whole number"))?,
        ),
        "number" => {
            let n: f64 = trimmed
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite())
                .ok_or_else(|| format!("'{trimmed}' is not a number"))?;
            json!(n)
        }
        "array" => {
            let mut items = Vec::new();
            for part in trimmed.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                items.push(Value::String(if choices.is_empty() {
                    part.to_owned()
                } else {
                    choose(&choices, part)?
                }));
            }
            let (min, max) = (
                field.get("minItems").and_then(Value::as_u64),
                field.get("maxItems").and_then(Value::as_u64),
            );
            let n = items.len() as u64;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return Err(format!(
                    "choose {} to {} items",
                    min.unwrap_or(0),
                    max.map_or("any".into(), |m| m.to_string())
                ));
            }
            Value::Array(items)
        }
        _ if !choices.is_empty() => Value::String(choose(&choices, trimmed)?),
        _ => Value::String(text.to_owned()),
    };
    if let Some(n) = value.as_f64() {
        let below = field
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n < m);
        let above = field
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n > m);
        if below || above {
            return Err(format!("{n} is out of range"));
        }
    }
    if let Some(s) = value.as_str() {
        let chars = s.chars().count() as u64;
        let short = field
            .get("minLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| chars < m);
        let long = field
            .get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| chars > m);
        if short || long {
            return Err(format!("{chars} characters is too short or too long"));
        }
    }
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(params: Value, typed: &str) -> (Value, String) {
        let mut input = std::io::Cursor::new(typed.as_bytes().to_vec());
        let mut out = Vec::new();
        let answer = ask("s", &params, &mut input, &mut out);
        (answer, String::from_utf8(out).unwrap())
    }

    fn form() -> Value {
        json!({"message": "Who are you?", "requestedSchema": {"type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "age": {"type": "integer", "minimum": 1, "maximum": 150},
                "ok": {"type": "boolean", "default": false},
                "pet": {"type": "string", "enum": ["cat", "dog"]},
                "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2}
            },
            "required": ["name", "age"]}})
    }

    #[test]
    fn each_field_is_asked_and_typed() {
        let (answer, shown) = run(form(), "Ada\nx\n36\ny\n2\n1, c\n");
        assert_eq!(
            answer,
            json!({"action": "accept", "content":
                {"name": "Ada", "age": 36, "ok": true, "pet": "dog", "tags": ["a", "c"]}})
        );
        assert!(shown.contains("server 's' asks: Who are you?"), "{shown}");
        assert!(shown.contains("'x' is not a whole number"), "{shown}");
    }

    #[test]
    fn empty_answers_skip_optional_fields_and_keep_defaults() {
        let (answer, _) = run(form(), "Ada\n7\n\n\n\n");
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "Ada", "age": 7}})
        );
    }

    #[test]
    fn decline_end_of_input_and_repeated_bad_answers() {
        assert_eq!(run(form(), "decline\n").0["action"], "decline");
        assert_eq!(run(form(), "Ada\n").0["action"], "cancel");
        assert_eq!(run(form(), "Ada\n0\n999\n-1\n").0["action"], "cancel");
        assert_eq!(
            run(form(), "\n\n\n").0["action"],
            "cancel",
            "a required field"
        );
    }

    #[test]
    fn url_mode_asks_to_go_on() {
        let params = json!({"mode": "url", "message": "Sign in", "url": "https://example.com/x"});
        let (answer, shown) = run(params.clone(), "y\n");
        assert_eq!(answer, json!({"action": "accept"}));
        assert!(shown.contains("https://example.com/x"));
        assert_eq!(run(params, "\n").0, json!({"action": "decline"}));
    }

    #[test]
    fn a_huge_form_is_declined() {
        let properties: Map<String, Value> = (0..=MAX_FIELDS)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let params = json!({"message": "?", "requestedSchema": {"properties": properties}});
        assert_eq!(run(params, "").0["action"], "decline");
    }
}
