//! The dependency rule of `core/src` (`docs/ARCHITECTURE.md#dependency-rule`):
//! modules are stacked in [`LAYERS`], and a module may use only modules in
//! layers below its own. This test reads every `crate::` and `super::` path
//! in `core/src` (imports, `pub use`, inline paths; comments left out), maps
//! each file to its module, and fails on any edge that points up or
//! sideways, or on a module the order does not place.
//!
//! It prints the picture it found (module -> modules it uses), so
//! `cargo test -p mcpmux-core --test layering -- --nocapture` shows it.
//! `LAYERING_SRC=<dir>` reads another tree (an older checkout's `core/src`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The order, top first. Each entry is one layer; a module may use the
/// modules of the layers after its own, never its own layer's others or
/// those before. `a::b` names a submodule placed on its own (a pure
/// reader of config keys that `config` runs at load time); every other
/// file belongs to its top-level module.
const LAYERS: &[&[&str]] = &[
    // Entry points for the fuzz targets: drive anything.
    &["fuzzing"],
    // The hub served as one MCP server (`mcpmux gateway`).
    &["gateway"],
    // Review sessions: the top; nothing in core uses them.
    &["session"],
    // What a model (or a host) may call.
    &["policy"],
    // Many servers behind one tool list.
    &["hub"],
    // LLM providers and the tool formats the hub renders.
    &["llm"],
    // One connected server.
    &["client"],
    // JSON-RPC messages and the in-flight table over a transport.
    &["jsonrpc"],
    // Moving bytes to and from one server.
    &["transport"],
    // The config shapes and their loading.
    &["config"],
    // Readers of config keys that `config` runs at load time.
    &["session::settings"],
    // The typed parameters of the session verbs (`session::settings` reads them).
    &["session::params"],
    &["policy::settings", "policy::rules"],
    &["policy::redact"],
    // Authorization of HTTP servers (the `auth` table's shape, OAuth).
    &["auth"],
    // The shared HTTP client and the SSE parser; the hub's event types.
    &["net", "events"],
    // Config secrets kept out of errors and logs.
    &["secrets"],
    // Ranking tools for a query (over `tool_names::HubTool`).
    &["tool_search"],
    // Leaves.
    &[
        "stateless",
        "tasks",
        "tool_names",
        "param_headers",
        "elicitation",
        "runtime",
        "files",
        "telemetry",
    ],
    &["protocol"],
    &["error"],
];

fn layer_of(node: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&node))
}

fn is_sub_node(path: &str) -> bool {
    path.contains("::") && layer_of(path).is_some()
}

/// The node a module path (segments from the crate root) belongs to.
fn node_of(segments: &[String]) -> Option<String> {
    let first = segments.first()?;
    if let Some(second) = segments.get(1) {
        let sub = format!("{first}::{second}");
        if is_sub_node(&sub) {
            return Some(sub);
        }
    }
    Some(first.clone())
}

/// The module path of a file under `src`: `policy/settings.rs` is
/// `policy::settings`, `jsonrpc/mod.rs` is `jsonrpc`; `lib.rs` is the root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut segments: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = segments.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        segments.push(stem.to_owned());
    }
    segments
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text without `//` and `/* */` comments (doc links are not uses).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                rest = &rest[l..];
                rest = rest.find('\n').map_or("", |n| &rest[n..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                rest = &rest[b + 2..];
                rest = rest.find("*/").map_or("", |n| &rest[n + 2..]);
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths that start at `start` (just after `crate::` or `super::`):
/// one per item of a `{...}` group, each as its leading segments.
fn paths_at(text: &str, start: usize) -> Vec<Vec<String>> {
    let rest = &text[start..];
    if let Some(group) = rest.strip_prefix('{') {
        // Split the group's top level by commas.
        let mut depth = 0usize;
        let mut items = Vec::new();
        let mut from = 0usize;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(&group[from..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[from..i]);
                    from = i + 1;
                }
                _ => {}
            }
        }
        return items
            .into_iter()
            .map(|item| segments(item.trim()))
            .filter(|s| !s.is_empty())
            .collect();
    }
    vec![segments(rest)]
}

/// The leading `a::b::c` segments of `text` (stops at anything else).
fn segments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !ident_char(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        out.push(rest[..end].to_owned());
        match rest[end..].strip_prefix("::") {
            Some(next) if next.starts_with(ident_char) => rest = next,
            _ => break,
        }
    }
    out
}

/// Names `lib.rs` re-exports at the root (`crate::Hub`), by module.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let text = strip_comments(lib);
    for stmt in text.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        let module = segments(path).first().cloned().unwrap_or_default();
        let names = path.split_once('{').map_or(path, |(_, names)| names);
        for name in names.split(|c: char| !ident_char(c)) {
            if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                map.insert(name.to_owned(), module.clone());
            }
        }
    }
    map
}

/// Every edge `node -> node` found in `src`, with the files it comes from.
fn edges(src: &Path) -> BTreeMap<(String, String), BTreeSet<String>> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let root = root_reexports(&lib);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let module = module_of(src, &file);
        let Some(from) = node_of(&module) else {
            continue; // lib.rs: the root re-exports everything.
        };
        let text = strip_comments(&std::fs::read_to_string(&file).unwrap());
        for (prefix, base) in [
            ("crate::", Vec::new()),
            ("super::", {
                let mut parent = module.clone();
                parent.pop();
                parent
            }),
        ] {
            for (at, _) in text.match_indices(prefix) {
                if text[..at].ends_with(ident_char) {
                    continue;
                }
                for path in paths_at(&text, at + prefix.len()) {
                    if path.is_empty() {
                        // `super::*`: a unit-test module's glob import of
                        // the file it is in.
                        continue;
                    }
                    let mut full = base.clone();
                    full.extend(path);
                    if let Some(first) = full.first() {
                        if let Some(module) = root.get(first) {
                            full = vec![module.clone()];
                        }
                    }
                    let Some(to) = node_of(&full) else { continue };
                    if to == from || to == "self" || to == "super" {
                        continue;
                    }
                    let rel = file.strip_prefix(src).unwrap().display().to_string();
                    found.entry((from.clone(), to)).or_default().insert(rel);
                }
            }
        }
    }
    found
}

#[test]
fn core_modules_depend_only_downward() {
    let src = std::env::var_os("LAYERING_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let found = edges(&src);
    assert!(
        found.len() > 20,
        "expected the crate's edges, found {}",
        found.len()
    );

    let mut picture: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in found.keys() {
        picture.entry(from).or_default().insert(to);
    }
    let mut nodes: Vec<&str> = picture.keys().copied().collect();
    nodes.sort_by_key(|n| (layer_of(n).unwrap_or(usize::MAX), n.to_string()));
    println!(
        "dependency picture of {} (module -> modules it uses), top first:",
        src.display()
    );
    for node in &nodes {
        let uses: Vec<&str> = picture[node].iter().copied().collect();
        println!("  {node:18} -> {}", uses.join(", "));
    }

    let mut bad = Vec::new();
    for ((from, to), files) in &found {
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        match (layer_of(from), layer_of(to)) {
            (Some(f), Some(t)) if t > f => {}
            (Some(_), Some(_)) => bad.push(format!(
                "{from} -> {to} goes up or sideways (in {})",
                files.join(", ")
            )),
            (None, _) => bad.push(format!("module '{from}' is not placed in LAYERS")),
            (_, None) => bad.push(format!(
                "module '{to}' (used by {from} in {}) is not placed in LAYERS",
                files.join(", ")
            )),
        }
    }
    bad.sort();
    bad.dedup();
    for line in &bad {
        println!("VIOLATION: {line}");
    }
    assert!(
        bad.is_empty(),
        "{} edge(s) outside the order (docs/ARCHITECTURE.md#dependency-rule):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_order_in_the_architecture_doc_is_this_one() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ARCHITECTURE.md"),
    )
    .unwrap();
    let section = doc
        .split("## Dependency rule")
        .nth(1)
        .and_then(|s| s.split("```text").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("docs/ARCHITECTURE.md: a ```text block under ## Dependency rule");
    let written: Vec<Vec<&str>> = section
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::trim).collect())
        .collect();
    let ours: Vec<Vec<&str>> = LAYERS.iter().map(|l| l.to_vec()).collect();
    assert_eq!(
        written, ours,
        "the layers in docs/ARCHITECTURE.md and in this test differ"
    );
}

#[test]
fn the_parser_sees_grouped_super_and_root_paths() {
    let text = strip_comments(
        "use crate::{llm, tool_names::{A, B}};\n// crate::hub::X\nlet x = super::redact::R;\n",
    );
    let at = text.find("crate::").unwrap() + "crate::".len();
    assert_eq!(
        paths_at(&text, at),
        vec![vec!["llm".to_owned()], vec!["tool_names".to_owned()]]
    );
    assert!(!text.contains("hub"));
    let at = text.find("super::").unwrap() + "super::".len();
    assert_eq!(
        paths_at(&text, at),
        vec![vec!["redact".to_owned(), "R".to_owned()]]
    );
    let root = root_reexports("pub use hub::{Hub, HubTool};\npub use error::{Error, Result};");
    assert_eq!(root["Hub"], "hub");
    assert_eq!(root["Result"], "error");
    assert_eq!(
        node_of(&["policy".into(), "rules".into(), "X".into()]).as_deref(),
        Some("policy::rules")
    );
    assert_eq!(
        node_of(&["policy".into(), "SessionPolicy".into()]).as_deref(),
        Some("policy")
    );
}
