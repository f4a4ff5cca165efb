//! Hub-wide tool names: `mcp_{server}_{tool}`, cut to the characters and
//! length every LLM API accepts, and made unique with a short suffix that
//! depends only on the server and tool, so a name never changes because
//! another server came or went. [`HubTool`], the tool as the hub offers it,
//! lives here too: a leaf that `hub`, `llm::tool_format` and `policy` all
//! read.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

/// One tool as the hub offers it (`tools --json` prints exactly this,
/// with `ui_resource_uri` and `app_only` (MCP Apps) when it has an app,
/// read from `_meta`).
#[derive(Debug, Clone, PartialEq)]
pub struct HubTool {
    /// Hub-wide name, `mcp_{server}_{tool}` (see `assign`).
    pub name: String,
    /// The configured name of the server that has it.
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    /// Display title.
    pub title: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
    /// JSON Schema of its `structuredContent`.
    pub output_schema: Option<Value>,
    /// The server's hints (`readOnlyHint`, `destructiveHint`, ...).
    pub annotations: Option<Value>,
    /// `execution` as the server sent it (e.g. `{"taskSupport": "required"}`).
    pub execution: Option<Value>,
    /// `icons` as the server sent them.
    pub icons: Option<Value>,
    /// `_meta` as the server sent it.
    pub meta: Option<Value>,
}

/// [`HubTool`] as every front end shows it: its fields, then what the
/// engine reads of its app, so that no binding reads `_meta` itself.
#[derive(Serialize)]
struct ShownTool<'a> {
    name: &'a str,
    server: &'a str,
    tool: &'a str,
    title: &'a Option<String>,
    description: &'a Option<String>,
    input_schema: &'a Value,
    output_schema: &'a Option<Value>,
    annotations: &'a Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: &'a Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    icons: &'a Option<Value>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: &'a Option<Value>,
    /// The `ui://` resource of its app.
    #[serde(skip_serializing_if = "Option::is_none")]
    ui_resource_uri: Option<&'a str>,
    /// Only its app may call it: never offered to a model.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    app_only: bool,
}

impl Serialize for HubTool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ShownTool {
            name: &self.name,
            server: &self.server,
            tool: &self.tool,
            title: &self.title,
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: &self.output_schema,
            annotations: &self.annotations,
            execution: &self.execution,
            icons: &self.icons,
            meta: &self.meta,
            ui_resource_uri: self.ui_resource_uri(),
            app_only: self.is_app_only(),
        }
        .serialize(serializer)
    }
}

impl HubTool {
    /// The `ui://` resource of this tool's app (MCP Apps), if it has one.
    pub fn ui_resource_uri(&self) -> Option<&str> {
        crate::apps::resource_uri(self.meta.as_ref())
    }

    /// Whether only its app may call it (MCP Apps `visibility` without
    /// `"model"`): never offered to a model.
    pub fn is_app_only(&self) -> bool {
        crate::apps::is_app_only(self.meta.as_ref())
    }
}

/// Longest tool name the LLM APIs accept.
pub const MAX_LEN: usize = 64;

/// The hub name of each `(server, tool)` pair, in the same order, with the
/// servers of the pairs taken as the configured ones ([`assign_in`]).
#[cfg(any(test, feature = "fuzzing"))]
pub fn assign(pairs: &[(&str, &str)]) -> Vec<String> {
    let mut servers: Vec<&str> = pairs.iter().map(|(server, _)| *server).collect();
    servers.sort_unstable();
    servers.dedup();
    assign_in(pairs, &servers)
}

/// The hub name of each `(server, tool)` pair, in the same order, when the
/// config declares the servers `configured`.
///
/// Whether a name needs a suffix is decided from the config alone, so that
/// a name reaches the same tool whichever servers are up: a name that falls
/// under another configured server's prefix (server `a`'s tool `b_c` and
/// server `a_b`: `mcp_a_b_c`), or whose server shares its prefix with
/// another (`my server`, `my_server`), always carries the suffix. Names that
/// still meet (one server's `x.y` and `x_y`, or two names cut at 64
/// characters) get a suffix, then a number.
pub fn assign_in(pairs: &[(&str, &str)], configured: &[&str]) -> Vec<String> {
    let prefixes: Vec<(&str, String)> = configured
        .iter()
        .map(|s| (*s, sanitize(&format!("mcp_{s}_"))))
        .collect();
    let bases: Vec<String> = pairs
        .iter()
        .map(|(server, tool)| sanitize(&format!("mcp_{server}_{tool}")))
        .collect();
    let shared_namespace = |server: &str, base: &str| {
        let own = sanitize(&format!("mcp_{server}_"));
        prefixes.iter().any(|(other, prefix)| {
            *other != server && prefix.len() >= own.len() && base.starts_with(prefix.as_str())
        })
    };
    let shared: Vec<bool> = pairs
        .iter()
        .zip(&bases)
        .map(|((server, _), base)| shared_namespace(server, base))
        .collect();
    // Same-server meetings (`x.y`, `x_y`): counted among the plain names.
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (b, _) in bases.iter().zip(&shared).filter(|(_, s)| !**s) {
        *count.entry(b.as_str()).or_default() += 1;
    }
    let mut names: Vec<String> = pairs
        .iter()
        .zip(&bases)
        .zip(&shared)
        .map(|(((server, tool), base), shared)| {
            if !shared && count[base.as_str()] == 1 {
                base.clone()
            } else {
                with_suffix(
                    base,
                    &format!("{:06x}", stable_hash(server, tool) & 0xff_ffff),
                )
            }
        })
        .collect();
    // A suffixed name may still meet another name; number what remains.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for name in &mut names {
        let n = seen.entry(name.clone()).or_default();
        *n += 1;
        if *n > 1 {
            *name = with_suffix(name, &n.to_string());
        }
    }
    names
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_` and cuts to [`MAX_LEN`].
pub fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_LEN)
        .collect()
}

fn with_suffix(base: &str, suffix: &str) -> String {
    let keep = MAX_LEN - suffix.len() - 1;
    let stem: String = base.chars().take(keep).collect();
    format!("{stem}_{suffix}")
}

/// FNV-1a: stable across runs and platforms, unlike `std`'s hasher.
fn stable_hash(server: &str, tool: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in server.bytes().chain([0]).chain(tool.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The end of an "unknown tool" message: ` (did you mean 'a'?)` or
/// ` (did you mean 'a' or 'b'?)`, else empty. `offered` yields each offered
/// tool's hub name and the server's own name for it. A server's own name
/// given alone (`get_current_time` for `mcp_time_get_current_time`) names
/// every tool it belongs to; else the closest names by edit distance (a
/// typo), at most three. Cold path: it compares against every tool.
pub fn did_you_mean<'a>(name: &str, offered: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let wanted = name.to_lowercase();
    let mut bare = Vec::new();
    let mut close: Vec<(f64, &str)> = Vec::new();
    for (hub_name, own) in offered {
        if own.to_lowercase() == wanted || sanitize(own).to_lowercase() == wanted {
            bare.push(hub_name);
            continue;
        }
        let score = strsim::normalized_damerau_levenshtein(&wanted, &hub_name.to_lowercase()).max(
            strsim::normalized_damerau_levenshtein(&wanted, &own.to_lowercase()),
        );
        if score >= 0.7 {
            close.push((score, hub_name));
        }
    }
    let picked: Vec<&str> = if bare.is_empty() {
        close.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        close.into_iter().map(|(_, n)| n).take(3).collect()
    } else {
        bare.sort_unstable();
        bare.into_iter().take(3).collect()
    };
    match picked.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean '{one}'?)"),
        [rest @ .., last] => format!(
            " (did you mean {} or '{last}'?)",
            rest.iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_shown_with_its_app_read_from_meta() {
        let mut tool = HubTool {
            name: "mcp_w_show".into(),
            server: "w".into(),
            tool: "show".into(),
            title: None,
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            annotations: None,
            execution: None,
            icons: None,
            meta: None,
        };
        let plain = serde_json::to_value(&tool).unwrap();
        let keys: Vec<&str> = plain
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "name",
                "server",
                "tool",
                "title",
                "description",
                "input_schema",
                "output_schema",
                "annotations"
            ]
        );
        tool.meta = Some(
            serde_json::json!({"ui": {"resourceUri": "ui://w/v.html", "visibility": ["app"]}}),
        );
        let shown = serde_json::to_value(&tool).unwrap();
        assert_eq!(shown["ui_resource_uri"], "ui://w/v.html");
        assert_eq!(shown["app_only"], true);
        assert_eq!(shown["_meta"]["ui"]["visibility"][0], "app");
    }

    #[test]
    fn prefixes_and_sanitizes() {
        assert_eq!(assign(&[("fs", "read_file")]), ["mcp_fs_read_file"]);
        assert_eq!(
            assign(&[("my server", "get.thing/x")]),
            ["mcp_my_server_get_thing_x"]
        );
        let long = "t".repeat(100);
        let names = assign(&[("s", &long)]);
        assert_eq!(names[0].len(), MAX_LEN);
    }

    #[test]
    fn collisions_get_stable_suffixes() {
        let a = assign(&[("a", "x.y"), ("a", "x_y"), ("b", "z")]);
        assert_ne!(a[0], a[1]);
        assert!(a[0].starts_with("mcp_a_x_y_") && a[1].starts_with("mcp_a_x_y_"));
        assert_eq!(a[2], "mcp_b_z");
        // The same pair gets the same name whatever else is listed.
        let b = assign(&[("c", "q"), ("a", "x_y"), ("a", "x.y")]);
        assert_eq!(b[1], a[1]);
        assert_eq!(b[2], a[0]);
        for n in a.iter().chain(&b) {
            assert!(n.len() <= MAX_LEN);
        }
        let long = "t".repeat(100);
        let l = assign(&[("s", &format!("{long}1")), ("s", &format!("{long}2"))]);
        assert_ne!(l[0], l[1]);
        assert!(l.iter().all(|n| n.len() <= MAX_LEN));
    }

    #[test]
    fn names_depend_on_the_config_not_on_which_servers_are_up() {
        let configured = ["a", "a_b", "my server", "my_server", "c"];
        let all = [
            ("a", "b_c"),
            ("a", "x"),
            ("a_b", "c"),
            ("my server", "t"),
            ("my_server", "t"),
            ("c", "d"),
        ];
        let full = assign_in(&all, &configured);
        // Every subset of servers being up gives each tool the same name.
        for mask in 0u32..(1 << configured.len()) {
            let up: Vec<(usize, (&str, &str))> = all
                .iter()
                .copied()
                .enumerate()
                .filter(|(_, (s, _))| {
                    let i = configured.iter().position(|c| c == s).unwrap();
                    mask & (1 << i) != 0
                })
                .collect();
            let pairs: Vec<(&str, &str)> = up.iter().map(|(_, p)| *p).collect();
            let names = assign_in(&pairs, &configured);
            for ((i, _), name) in up.iter().zip(&names) {
                assert_eq!(name, &full[*i], "mask {mask:b}");
            }
        }
        // Under another server's prefix: suffixed; the other keeps its name.
        assert!(full[0].starts_with("mcp_a_b_c_") && full[0] != "mcp_a_b_c");
        assert_eq!(full[2], "mcp_a_b_c");
        assert_eq!(full[1], "mcp_a_x");
        assert_ne!(full[3], full[4]);
        assert_eq!(full[5], "mcp_c_d");
    }

    #[test]
    fn unknown_names_suggest_the_hub_name_or_the_nearest() {
        let offered = [
            ("mcp_time_get_current_time", "get_current_time"),
            ("mcp_time_convert_time", "convert_time"),
            ("mcp_demo_echo", "echo"),
        ];
        let hint = |name: &str| did_you_mean(name, offered.iter().copied());
        assert_eq!(
            hint("get_current_time"),
            " (did you mean 'mcp_time_get_current_time'?)"
        );
        assert_eq!(
            hint("mcp_time_get_curent_time"),
            " (did you mean 'mcp_time_get_current_time'?)"
        );
        assert_eq!(hint("mcp_demo_ecko"), " (did you mean 'mcp_demo_echo'?)");
        assert_eq!(hint("frobnicate_everything"), "");
        let two = [("mcp_a_echo", "echo"), ("mcp_b_echo", "echo")];
        assert_eq!(
            did_you_mean("echo", two.iter().copied()),
            " (did you mean 'mcp_a_echo' or 'mcp_b_echo'?)"
        );
    }
}
