use super::text::{split, stem, synonyms, terms};
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

fn names(tools: &[HubTool], query: &str, limit: usize) -> Vec<String> {
    rank(tools, query, limit)
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

#[test]
fn words_split_names_the_way_people_read_them() {
    assert_eq!(
        split("mcp_github_createIssue HTTPServer v2-beta"),
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
fn stemming_makes_the_forms_of_a_word_meet() {
    for group in [
        &["read", "reads", "reading"][..],
        &["file", "files"],
        &["create", "creates", "created", "creating"],
        &["fetch", "fetches", "fetching", "fetched"],
        &["entity", "entities"],
        &["directory", "directories"],
        &["run", "running", "runs"],
        &["commit", "commits", "committed"],
        &["branch", "branches"],
        &["size", "sizes"],
    ] {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        assert!(stems.iter().all(|s| *s == stems[0]), "{group:?}: {stems:?}");
    }
    // Short words, words with digits and non-ASCII words are kept.
    for word in ["get", "ids", "v2s", "größes", "status", "class"] {
        assert_eq!(stem(word), word);
    }
}

#[test]
fn stop_words_are_left_out_and_synonyms_are_stemmed() {
    assert_eq!(terms("What is the time in a city?"), ["tim", "city"]);
    assert!(synonyms(&stem("download")).contains(&"fetch".to_owned()));
    assert!(synonyms(&stem("pages")).contains(&"url".to_owned()));
    assert!(synonyms("kubernetes").is_empty());
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
    assert_eq!(names(&tools, "create issue", 10)[0], "mcp_gh_createIssue");
    assert_eq!(
        names(&tools, "weather in a city", 10),
        ["mcp_weather_forecast"]
    );
    assert_eq!(names(&tools, "issues", 1).len(), 1);
    assert!(names(&tools, "issue", 0).is_empty());
    assert!(rank(&[], "issue", 10).is_empty());
}

#[test]
fn descriptions_parameters_and_synonyms_count() {
    let tools = [
        tool("fs", "read_file", "Read a file from disk", &["path"]),
        tool(
            "web",
            "fetch",
            "Fetches a URL from the internet",
            &["url", "max_length"],
        ),
        tool(
            "kv",
            "put",
            "Stores a value under a key for later",
            &["key", "value"],
        ),
    ];
    assert_eq!(names(&tools, "download a web page", 10)[0], "mcp_web_fetch");
    assert_eq!(names(&tools, "remember this value", 10)[0], "mcp_kv_put");
    assert_eq!(
        names(&tools, "what is at this path", 10)[0],
        "mcp_fs_read_file"
    );
    assert_eq!(names(&tools, "max length", 10)[0], "mcp_web_fetch");
}

#[test]
fn a_deprecated_tool_ranks_below_its_replacement_unless_asked_for() {
    let mut old = tool(
        "fs",
        "read_file",
        "Read a file. DEPRECATED: use read_text_file.",
        &["path"],
    );
    old.title = Some("Read File (Deprecated)".into());
    let tools = [
        old,
        tool(
            "fs",
            "read_text_file",
            "Read a file from the file system as text",
            &["path"],
        ),
    ];
    assert_eq!(
        names(&tools, "read a file", 10),
        ["mcp_fs_read_text_file", "mcp_fs_read_file"]
    );
    assert_eq!(
        names(&tools, "deprecated read file", 10)[0],
        "mcp_fs_read_file"
    );
}

/// Before: a query sharing no word with any tool answered `[]`.
#[test]
fn a_search_never_answers_nothing_while_there_are_tools() {
    let tools = [
        tool(
            "k8s",
            "scale_deployment",
            "Scale a kubernetes deployment",
            &["replicas"],
        ),
        tool(
            "gh",
            "list_issues",
            "List issues of a repository",
            &["state"],
        ),
        tool("gh", "get_issue", "One issue of a repository", &["number"]),
    ];
    // A near word: a shared prefix, a typo.
    assert_eq!(names(&tools, "kube", 10), ["mcp_k8s_scale_deployment"]);
    assert_eq!(
        names(&tools, "kubernetse", 10),
        ["mcp_k8s_scale_deployment"]
    );
    // Nothing alike, or no word at all: the first tools, in list order.
    assert_eq!(
        names(&tools, "zzz qqq", 2),
        ["mcp_k8s_scale_deployment", "mcp_gh_list_issues"]
    );
    assert_eq!(names(&tools, "", 10).len(), 3);
    assert_eq!(names(&tools, "the of a", 1).len(), 1);
}
