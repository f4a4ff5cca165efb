//! Ranking tools for a query: Okapi BM25 over each tool's name, title,
//! description and parameter names, for hosts and gateways with hundreds
//! of tools that show a model a search instead of the whole list.
//!
//! Written here rather than taken from a crate: the ranking is the one
//! formula below, and the part that matters for tools is the tokenizer
//! (snake_case, camelCase and `mcp_server_tool` names split into words),
//! which the general-purpose BM25 crates do not do.

use std::collections::HashMap;

use serde_json::Value;

use crate::tool_names::HubTool;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalization.
const B: f64 = 0.75;
/// Results a front end returns when the host gives no limit.
pub const DEFAULT_LIMIT: usize = 10;
/// Longest query considered, in characters (the rest is ignored).
pub const MAX_QUERY_CHARS: usize = 1000;
/// Query words that say nothing about a tool ("a tool to get the weather
/// in a city"): left out of the query, or every description matches.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "by", "can", "do", "for", "from", "how", "i", "in", "is", "it", "me",
    "my", "of", "on", "or", "that", "the", "this", "to", "tool", "tools", "what", "which", "with",
];
/// Most parameter names read from one tool's schema.
const MAX_PARAMETERS: usize = 256;

/// The tools that match `query`, best first, at most `limit`; tools with
/// no query word score nothing and are left out. Ties keep list order.
pub fn rank<'a>(tools: &'a [HubTool], query: &str, limit: usize) -> Vec<&'a HubTool> {
    let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
    let mut terms = words(&query);
    terms.retain(|t| !STOP_WORDS.contains(&t.as_str()));
    terms.sort_unstable();
    terms.dedup();
    if terms.is_empty() || limit == 0 {
        return Vec::new();
    }
    let docs: Vec<Vec<String>> = tools.iter().map(document).collect();
    let n = docs.len() as f64;
    let average = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let mut containing: HashMap<&str, usize> = HashMap::new();
    for doc in &docs {
        let mut seen: Vec<&str> = doc.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for term in seen {
            *containing.entry(term).or_default() += 1;
        }
    }
    let mut scored: Vec<(f64, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, doc)| {
            let len = doc.len() as f64;
            let score = terms
                .iter()
                .map(|term| {
                    let tf = doc.iter().filter(|w| *w == term).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let df = containing.get(term.as_str()).copied().unwrap_or(0) as f64;
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / average.max(1.0)))
                })
                .sum::<f64>();
            (score, i)
        })
        .filter(|(score, _)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, i)| &tools[i])
        .collect()
}

/// The words of one tool: its hub name, own name, title, description and
/// the names of its parameters.
fn document(tool: &HubTool) -> Vec<String> {
    let mut text = format!("{} {}", tool.name, tool.tool);
    for part in [&tool.title, &tool.description].into_iter().flatten() {
        text.push(' ');
        text.push_str(part);
    }
    if let Some(Value::Object(properties)) = tool.input_schema.get("properties") {
        for name in properties.keys().take(MAX_PARAMETERS) {
            text.push(' ');
            text.push_str(name);
        }
    }
    words(&text)
}

/// Lower-case words of `text`: split at anything not alphanumeric, at `_`
/// and `-`, and where a lower-case letter meets an upper-case one
/// (`getWeather` → `get`, `weather`).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(server: &str, name: &str, description: &str, params: &[&str]) -> HubTool {
        let properties: serde_json::Map<String, Value> =
            params.iter().map(|p| (p.to_string(), json!({}))).collect();
        HubTool {
            name: format!("mcp_{server}_{name}"),
            server: server.into(),
            tool: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: json!({"type": "object", "properties": properties}),
            output_schema: None,
            annotations: None,
            execution: None,
            icons: None,
            meta: None,
        }
    }

    #[test]
    fn words_split_names_the_way_people_read_them() {
        assert_eq!(
            words("mcp_github_createIssue HTTPServer v2-beta"),
            [
                "mcp",
                "github",
                "create",
                "issue",
                "httpserver",
                "v2",
                "beta"
            ]
        );
    }

    #[test]
    fn the_tool_about_the_query_ranks_first_and_unrelated_ones_are_left_out() {
        let tools = [
            tool("fs", "read_file", "Read a file from disk", &["path"]),
            tool(
                "gh",
                "createIssue",
                "Open an issue in a repository",
                &["title", "body"],
            ),
            tool(
                "gh",
                "list_issues",
                "List issues of a repository",
                &["state"],
            ),
            tool(
                "weather",
                "forecast",
                "Weather forecast for a city",
                &["city"],
            ),
        ];
        let names = |query: &str, limit: usize| -> Vec<String> {
            rank(&tools, query, limit)
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        assert_eq!(names("create issue", 10)[0], "mcp_gh_createIssue");
        assert_eq!(names("weather in a city", 10), ["mcp_weather_forecast"]);
        assert_eq!(names("issues", 1).len(), 1);
        assert!(names("kubernetes", 10).is_empty());
        assert!(names("", 10).is_empty());
        assert!(names("issue", 0).is_empty());
    }
}
