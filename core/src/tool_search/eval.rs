//! The ranking measured on the tool lists of nine public MCP servers
//! (`core/tests/fixtures/public_tools.json`, made by
//! `core/tests/fixtures/capture_public_tools.sh`): a fixed set of queries,
//! each with the tools a person asking it means, and the share found first
//! (top-1) and among the first three (top-3).
//!
//! `cargo test -p mcpmux-core --lib tool_search::eval -- --nocapture`
//! prints each query's first three.

use serde_json::Value;

use super::rank;
use crate::tool_names::HubTool;

/// `(query, tools it means)`: a hit when one of them ranks first (top-1),
/// or among the first three (top-3).
const CASES: &[(&str, &[&str])] = &[
    ("download a web page", &["mcp_fetch_fetch"]),
    (
        "remember that Alice likes tea",
        &["mcp_memory_create_entities", "mcp_memory_add_observations"],
    ),
    ("read a file", &["mcp_filesystem_read_text_file"]),
    ("what time is it in Tokyo", &["mcp_time_get_current_time"]),
    (
        "convert 3pm in New York to London time",
        &["mcp_time_convert_time"],
    ),
    (
        "list the files in a folder",
        &[
            "mcp_filesystem_list_directory",
            "mcp_filesystem_list_directory_with_sizes",
        ],
    ),
    ("commit my changes with a message", &["mcp_git_git_commit"]),
    ("show recent commit history", &["mcp_git_git_log"]),
    ("create a new git branch", &["mcp_git_git_create_branch"]),
    ("run a SQL select query", &["mcp_sqlite_read_query"]),
    (
        "insert a row into the database",
        &["mcp_sqlite_write_query"],
    ),
    ("evaluate a math expression", &["mcp_calculator_calculate"]),
    (
        "add two numbers",
        &["mcp_everything_get-sum", "mcp_calculator_calculate"],
    ),
    (
        "think through a hard problem step by step",
        &["mcp_sequential-thinking_sequentialthinking"],
    ),
    (
        "delete a relation from the knowledge graph",
        &["mcp_memory_delete_relations"],
    ),
    ("write text to a new file", &["mcp_filesystem_write_file"]),
    ("rename a file", &["mcp_filesystem_move_file"]),
    (
        "find files matching a glob pattern",
        &["mcp_filesystem_search_files"],
    ),
    (
        "compress a file with gzip",
        &["mcp_everything_gzip-file-as-resource"],
    ),
    ("echo a message back", &["mcp_everything_echo"]),
    (
        "which tables are in the database",
        &["mcp_sqlite_list_tables"],
    ),
    (
        "get the size and permissions of a file",
        &["mcp_filesystem_get_file_info"],
    ),
    (
        "what changed in my working directory",
        &["mcp_git_git_diff_unstaged", "mcp_git_git_status"],
    ),
    (
        "look up what I know about Alice",
        &[
            "mcp_memory_search_nodes",
            "mcp_memory_open_nodes",
            "mcp_memory_read_graph",
        ],
    ),
    ("switch to another branch", &["mcp_git_git_checkout"]),
    ("stage files for the next commit", &["mcp_git_git_add"]),
    (
        "describe the schema of a table",
        &["mcp_sqlite_describe_table"],
    ),
    ("make a folder", &["mcp_filesystem_create_directory"]),
    ("retrieve the current date", &["mcp_time_get_current_time"]),
    (
        "remove an entity from memory",
        &["mcp_memory_delete_entities"],
    ),
];

/// Least share of [`CASES`] with a meant tool among the first three.
const TOP3_AT_LEAST: f64 = 0.9;
/// Least share of [`CASES`] with a meant tool first.
const TOP1_AT_LEAST: f64 = 0.7;

/// A `tools --json` array (what `HubTool` serializes to) as hub tools.
fn hub_tools(json: &str) -> Vec<HubTool> {
    let tools: Vec<Value> = serde_json::from_str(json).expect("a JSON array of tools");
    tools
        .into_iter()
        .map(|t| {
            let text = |key: &str| t.get(key).and_then(Value::as_str).map(str::to_owned);
            let value = |key: &str| t.get(key).filter(|v| !v.is_null()).cloned();
            HubTool {
                name: text("name").expect("name"),
                server: text("server").expect("server"),
                tool: text("tool").expect("tool"),
                title: text("title"),
                description: text("description"),
                input_schema: t["input_schema"].clone(),
                output_schema: value("output_schema"),
                annotations: value("annotations"),
                execution: value("execution"),
                icons: value("icons"),
                meta: value("_meta"),
            }
        })
        .collect()
}

fn public_tools() -> Vec<HubTool> {
    hub_tools(include_str!("../../tests/fixtures/public_tools.json"))
}

fn top<'a>(tools: &'a [HubTool], query: &str, n: usize) -> Vec<&'a str> {
    rank(tools, query, n)
        .into_iter()
        .map(|t| t.name.as_str())
        .collect()
}

#[test]
fn the_fixture_holds_the_nine_public_servers() {
    let tools = public_tools();
    let mut servers: Vec<&str> = tools.iter().map(|t| t.server.as_str()).collect();
    servers.dedup();
    assert_eq!(
        servers,
        [
            "filesystem",
            "memory",
            "sequential-thinking",
            "everything",
            "time",
            "git",
            "fetch",
            "sqlite",
            "calculator"
        ]
    );
    for (_, meant) in CASES {
        for name in *meant {
            assert!(tools.iter().any(|t| t.name == *name), "{name}");
        }
    }
}

#[test]
fn the_queries_of_issue_29_find_their_tools() {
    let tools = public_tools();
    let found = top(&tools, "download a web page", 3);
    assert!(found.contains(&"mcp_fetch_fetch"), "{found:?}");
    let found = top(&tools, "remember that Alice likes tea", 3);
    assert!(
        found.contains(&"mcp_memory_create_entities")
            || found.contains(&"mcp_memory_add_observations"),
        "{found:?}"
    );
    // Both read one file as text; the one marked deprecated ranks lower.
    let found = top(&tools, "read a file", tools.len());
    let at = |name: &str| found.iter().position(|n| *n == name);
    let text = at("mcp_filesystem_read_text_file").expect("read_text_file is found");
    assert!(text < 3, "{found:?}");
    assert!(
        at("mcp_filesystem_read_file").is_none_or(|deprecated| text < deprecated),
        "{found:?}"
    );
}

#[test]
fn the_query_set_finds_its_tools_in_the_first_three() {
    let tools = public_tools();
    let (mut top1, mut top3) = (0usize, 0usize);
    let mut misses = Vec::new();
    for (query, meant) in CASES {
        let found = top(&tools, query, 3);
        let first = found.first().is_some_and(|n| meant.contains(n));
        let in_three = found.iter().any(|n| meant.contains(n));
        top1 += usize::from(first);
        top3 += usize::from(in_three);
        let mark = if first {
            "1"
        } else if in_three {
            "3"
        } else {
            "-"
        };
        println!("[{mark}] {query:?} -> {found:?}");
        if !in_three {
            misses.push(format!("{query:?} -> {found:?}, meant {meant:?}"));
        }
    }
    let cases = CASES.len() as f64;
    let (rate1, rate3) = (top1 as f64 / cases, top3 as f64 / cases);
    println!(
        "tool search over {} public tools, {} queries: top-1 {:.0}% ({top1}), top-3 {:.0}% ({top3})",
        tools.len(),
        CASES.len(),
        rate1 * 100.0,
        rate3 * 100.0
    );
    assert!(CASES.len() >= 15);
    assert!(
        rate3 >= TOP3_AT_LEAST && rate1 >= TOP1_AT_LEAST,
        "top-1 {rate1:.2} (at least {TOP1_AT_LEAST}), top-3 {rate3:.2} (at least {TOP3_AT_LEAST}); missed: {misses:#?}"
    );
}

/// The queries the bindings' tests ask of the demo server beside
/// server-everything keep their answers.
#[test]
fn the_demo_servers_tools_keep_ranking_first() {
    let catalog: Value = serde_json::from_str(include_str!(
        "../../../examples/demo-server/src/catalog.json"
    ))
    .expect("the demo catalog");
    let mut tools: Vec<HubTool> = catalog["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            let name = t["name"].as_str().expect("name");
            HubTool {
                name: format!("mcp_demo_{name}"),
                server: "demo".into(),
                tool: name.into(),
                title: t["title"].as_str().map(str::to_owned),
                description: t["description"].as_str().map(str::to_owned),
                input_schema: t["inputSchema"].clone(),
                output_schema: None,
                annotations: None,
                execution: None,
                icons: None,
                meta: None,
            }
        })
        .collect();
    tools.extend(
        public_tools()
            .into_iter()
            .filter(|t| t.server == "everything"),
    );
    assert_eq!(top(&tools, "add two numbers", 10)[0], "mcp_demo_add");
    assert_eq!(top(&tools, "echo text back", 3)[0], "mcp_demo_echo");
    assert_eq!(top(&tools, "echo", 1).len(), 1);
}
