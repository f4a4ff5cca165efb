//! MCP Apps (ext-apps 2026-01-26) through `mcpmux gateway` and in the
//! tool formats, against `tests/servers/apps_server.py` (written from the
//! text): two servers with the same `ui://` URIs are served under names of
//! the gateway's that keep the scheme, every tool's UI URI points at them,
//! reading one gives the server's HTML with its MIME type and `_meta`, an
//! app-only tool is listed to the host and callable but never offered to a
//! model, and a denied tool's UI is not served.

mod common;

use common::raw_gateway::Raw;
use common::*;
use serde_json::{json, Value};

fn tool<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

#[test]
fn apps_keep_their_scheme_are_named_per_server_and_read_back_whole() {
    let sb = Sandbox::with_config(&format!(
        "{}{}",
        stdio_server(
            "north",
            &python(),
            &[fault_server("apps_server.py").to_str().unwrap(), "north"],
            "allow_all = true\nconfirm_read_only = [\"*\"]\ndeny_tools = [\"secret_panel\"]",
        ),
        stdio_server(
            "south",
            &python(),
            &[fault_server("apps_server.py").to_str().unwrap(), "south"],
            "allow_all = true\nconfirm_read_only = [\"*\"]\ndeny_tools = [\"secret_panel\"]",
        ),
    ));
    let mut gw = Raw::start(&sb, &[]);
    // The gateway implements apps for its clients and tells both sides.
    assert_eq!(
        gw.initialize_answer()["result"]["capabilities"]["extensions"]
            ["io.modelcontextprotocol/ui"],
        json!({}),
        "{}",
        gw.initialize_answer()
    );
    let declared = gw.request(
        "tools/call",
        json!({"name": "mcp_north_client_extensions", "arguments": {}}),
    );
    let declared: Value =
        serde_json::from_str(declared["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        declared["io.modelcontextprotocol/ui"]["mimeTypes"],
        json!(["text/html;profile=mcp-app"]),
        "{declared}"
    );
    let list = gw.request("tools/list", json!({}));
    let north = tool(&list, "mcp_north_show_weather").unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        north["_meta"]["ui"]["resourceUri"], "ui://north/widget/view.html",
        "{north}"
    );
    assert_eq!(north["_meta"]["ui"]["visibility"], json!(["model", "app"]));
    let south = tool(&list, "mcp_south_show_weather").unwrap();
    assert_eq!(
        south["_meta"]["ui"]["resourceUri"],
        "ui://south/widget/view.html"
    );
    let legacy = tool(&list, "mcp_north_legacy_view").unwrap();
    assert_eq!(
        legacy["_meta"]["ui/resourceUri"],
        "ui://north/widget/legacy.html"
    );
    // The app-only tool is the host's: listed, and callable.
    let app_only = tool(&list, "mcp_north_refresh_widget").unwrap_or_else(|| panic!("{list}"));
    assert_eq!(app_only["_meta"]["ui"]["visibility"], json!(["app"]));
    let called = gw.request(
        "tools/call",
        json!({"name": "mcp_north_refresh_widget", "arguments": {}}),
    );
    assert_eq!(
        called["result"]["content"][0]["text"], "north: refresh_widget done",
        "{called}"
    );
    assert!(tool(&list, "mcp_north_secret_panel").is_none());

    // resources/list: the gateway's names, the denied tool's UI left out.
    let resources = gw.request("resources/list", json!({}));
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    // The hub's own members (which server, which hub tools) stay inside.
    for r in resources["result"]["resources"].as_array().unwrap() {
        assert!(
            r.get("server").is_none() && r.get("app_of").is_none(),
            "{r}"
        );
    }
    for uri in [
        "ui://north/widget/view.html",
        "ui://south/widget/view.html",
        "ui://north/widget/legacy.html",
        "file:///north/readme.txt",
    ] {
        assert!(uris.contains(&uri), "{uri} listed: {uris:?}");
    }
    assert!(
        !uris.iter().any(|u| u.contains("secret")),
        "a denied tool's UI is not listed: {uris:?}"
    );
    assert!(!uris.contains(&"ui://widget/view.html"), "{uris:?}");

    // resources/read: each server's own HTML, MIME type and _meta as sent.
    for (label, uri) in [
        ("north", "ui://north/widget/view.html"),
        ("south", "ui://south/widget/view.html"),
    ] {
        let read = gw.request("resources/read", json!({"uri": uri}));
        let item = &read["result"]["contents"][0];
        assert_eq!(item["uri"], uri, "{read}");
        assert_eq!(item["mimeType"], "text/html;profile=mcp-app");
        assert!(
            item["text"]
                .as_str()
                .unwrap()
                .contains(&format!("<title>{label} weather</title>")),
            "{read}"
        );
        assert_eq!(
            item["_meta"]["ui"]["csp"]["connectDomains"],
            json!(["https://api.example.com"])
        );
    }
    let denied = gw.request(
        "resources/read",
        json!({"uri": "ui://north/secret/panel.html"}),
    );
    assert!(denied.get("error").is_some(), "{denied}");
    assert!(
        denied["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not offered"),
        "{denied}"
    );
    let plain = gw.request("resources/read", json!({"uri": "file:///south/readme.txt"}));
    assert_eq!(plain["result"]["contents"][0]["text"], "south", "{plain}");
}

/// A model is never offered an app-only tool: absent from every LLM format
/// (the MCP form keeps it, for hosts).
#[test]
fn app_only_tools_are_absent_from_the_llm_formats() {
    let sb = Sandbox::with_config(&stdio_server(
        "north",
        &python(),
        &[fault_server("apps_server.py").to_str().unwrap(), "north"],
        "",
    ));
    for format in ["anthropic", "openai", "openai-responses"] {
        let out = sb.mcpmux(&["--json", "tools", "--format", format]).run();
        out.ok();
        assert!(
            out.stdout.contains("mcp_north_show_weather"),
            "{format}: {out}"
        );
        assert!(
            !out.stdout.contains("refresh_widget"),
            "{format} offers the app-only tool: {out}"
        );
    }
    let mcp = sb.mcpmux(&["--json", "tools", "--format", "mcp"]).run();
    mcp.ok();
    assert!(mcp.stdout.contains("mcp_north_refresh_widget"), "{mcp}");
    // `tools --json` shows each tool's UI resource in its `_meta`.
    let tools = sb.mcpmux(&["--json", "tools"]).run();
    tools.ok();
    let list = tools.json();
    let weather = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp_north_show_weather")
        .unwrap();
    assert_eq!(
        weather["_meta"]["ui"]["resourceUri"],
        "ui://widget/view.html"
    );
    // ... and as what the engine read of it, in every front end's JSON.
    assert_eq!(
        weather["ui_resource_uri"], "ui://widget/view.html",
        "{weather}"
    );
    assert!(weather.get("app_only").is_none(), "{weather}");
    let refresh = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp_north_refresh_widget")
        .unwrap();
    assert_eq!(refresh["app_only"], true, "{refresh}");
    let named = |name: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {list}"))
            .clone()
    };
    let legacy = named("mcp_north_legacy_view");
    assert_eq!(
        legacy["ui_resource_uri"], "ui://widget/legacy.html",
        "{legacy}"
    );
    let plain = named("mcp_north_client_extensions");
    assert!(plain.get("ui_resource_uri").is_none(), "{plain}");
    let listed = sb.mcpmux(&["--json", "resources"]).run();
    listed.ok();
    let listed = listed.json();
    let view = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "ui://widget/view.html")
        .unwrap_or_else(|| panic!("{listed}"));
    let app_of = view["app_of"].as_array().unwrap();
    assert!(app_of.contains(&json!("mcp_north_show_weather")), "{view}");
    // `resources` names the tools whose app each UI resource is.
    let resources = sb.mcpmux(&["resources"]).run();
    resources.ok();
    assert!(
        resources
            .stdout
            .lines()
            .any(|l| l.contains("ui://widget/view.html") && l.contains("mcp_north_show_weather")),
        "{resources}"
    );
}

/// Everywhere else the Apps text puts a UI URI, the gateway's clients see
/// the served name: a resource template's `ui://` `uriTemplate` (whose
/// expansions read back through the gateway), a tool result's
/// `_meta.ui.resourceUri`, `resource_link` and embedded `resource` blocks,
/// and a subscription to a served name (the server is subscribed to its own
/// URI; its update reaches the client under the served name).
#[test]
fn templates_results_and_subscriptions_use_the_served_names() {
    let sb = Sandbox::with_config(&stdio_server(
        "north",
        &python(),
        &[fault_server("apps_server.py").to_str().unwrap(), "north"],
        "allow_all = true\nconfirm_read_only = [\"*\"]",
    ));
    let mut gw = Raw::start(&sb, &[]);
    let templates = gw.request("resources/templates/list", json!({}));
    let listed = &templates["result"]["resourceTemplates"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{templates}");
    assert_eq!(
        listed[0]["uriTemplate"], "ui://north/widget/{name}.html",
        "{templates}"
    );
    assert!(listed[0].get("server").is_none(), "{templates}");
    let page = gw.request(
        "resources/read",
        json!({"uri": "ui://north/widget/p7.html"}),
    );
    let content = &page["result"]["contents"][0];
    assert_eq!(content["text"], "<p>north page p7</p>", "{page}");
    assert_eq!(content["uri"], "ui://north/widget/p7.html", "{page}");
    assert_eq!(content["mimeType"], "text/html;profile=mcp-app", "{page}");

    let rendered = gw.request(
        "tools/call",
        json!({"name": "mcp_north_render_view", "arguments": {}}),
    );
    let result = &rendered["result"];
    assert_eq!(
        result["_meta"]["ui"]["resourceUri"], "ui://north/widget/view.html",
        "{rendered}"
    );
    assert_eq!(result["content"][0]["text"], "north rendered", "{rendered}");
    assert_eq!(
        result["content"][1]["uri"], "ui://north/widget/view.html",
        "{rendered}"
    );
    assert_eq!(
        result["content"][2]["resource"]["uri"], "ui://north/widget/inline.html",
        "{rendered}"
    );
    assert_eq!(
        result["content"][3]["uri"], "file:///north/readme.txt",
        "{rendered}"
    );
    // What the result names reads back through the gateway.
    let inline = gw.request(
        "resources/read",
        json!({"uri": "ui://north/widget/inline.html"}),
    );
    assert_eq!(
        inline["result"]["contents"][0]["text"], "<p>north page inline</p>",
        "{inline}"
    );

    let subscribed = gw.request(
        "resources/subscribe",
        json!({"uri": "ui://north/widget/view.html"}),
    );
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let upstream = gw.request(
        "tools/call",
        json!({"name": "mcp_north_subscribed", "arguments": {}}),
    );
    assert_eq!(
        upstream["result"]["content"][0]["text"], r#"["ui://widget/view.html"]"#,
        "the server is subscribed to its own URI: {upstream}"
    );
    gw.request(
        "tools/call",
        json!({"name": "mcp_north_touch_view", "arguments": {}}),
    );
    let updated = gw.notification("notifications/resources/updated");
    assert_eq!(
        updated["params"]["uri"], "ui://north/widget/view.html",
        "{updated}"
    );
    let unsubscribed = gw.request(
        "resources/unsubscribe",
        json!({"uri": "ui://north/widget/view.html"}),
    );
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed}");
    let upstream = gw.request(
        "tools/call",
        json!({"name": "mcp_north_subscribed", "arguments": {}}),
    );
    assert_eq!(upstream["result"]["content"][0]["text"], "[]", "{upstream}");
}
