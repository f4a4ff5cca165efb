//! The status page: one self-contained HTML document rendered on the
//! server from the status JSON (readable with scripts off), with its style
//! and a small script inline, allowed by hash in a strict
//! `Content-Security-Policy` (nothing external: no script, font, style or
//! image from elsewhere). The script follows `/status/events` and, on each
//! notice, reads `/status.json` and redraws the sections with DOM calls
//! (text, never markup, from the document).

use std::sync::LazyLock;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::snapshot::query_escape;
use super::svg;

/// `text` escaped for HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's style (inline, allowed by hash).
const STYLE: &str = include_str!("page.css");

/// The page's script (inline, allowed by hash): follows `/status/events`,
/// reads `/status.json`, redraws.
const SCRIPT: &str = include_str!("page.js");

/// `'sha256-…'` of an inline element's text, for the CSP.
fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The `Content-Security-Policy` of the page: its own inline script and
/// style by hash, fetches to itself only, nothing else.
pub(crate) static CSP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; img-src 'self'; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        csp_hash(SCRIPT),
        csp_hash(STYLE)
    )
});

fn s(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn badge(class: &str) -> String {
    let class = escape(class);
    format!("<span class=\"badge {class}\">{class}</span>")
}

fn uptime(seconds: Option<u64>) -> String {
    let Some(s) = seconds else {
        return String::new();
    };
    let (d, h, m, x) = (s / 86400, s % 86400 / 3600, s % 3600 / 60, s % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {x}s")
    } else {
        format!("{x}s")
    }
}

fn empty_row(cols: usize, text: &str) -> String {
    format!(
        "<tr class=\"empty\"><td colspan=\"{cols}\">{}</td></tr>",
        escape(text)
    )
}

fn table(
    id: &str,
    title: &str,
    head: &[&str],
    rows: Vec<String>,
    empty: &str,
    before: &str,
) -> String {
    let mut out = format!(
        "<section id=\"{id}\"><h2>{}</h2>{before}<div class=\"scroll\"><table><thead><tr>",
        escape(title)
    );
    for h in head {
        out.push_str(&format!("<th scope=\"col\">{}</th>", escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        out.push_str(&empty_row(head.len(), empty));
    }
    for r in rows {
        out.push_str(&r);
    }
    out.push_str("</tbody></table></div></section>");
    out
}

fn servers(doc: &Value) -> String {
    let rows = doc["servers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|v| {
            let state = s(&v["state"]);
            let mut state_cell = badge(&state);
            if state == "restarting" && !v["next_try_at"].is_null() {
                state_cell.push_str(&format!(" next try {}", escape(&s(&v["next_try_at"]))));
            }
            let error = match (&v["error_code"], &v["error"]) {
                (_, Value::Null) => String::new(),
                (Value::Null, e) => s(e),
                (c, e) => format!("{}: {}", s(c), s(e)),
            };
            let stderr: Vec<String> = v["stderr"]
                .as_array()
                .map(|a| a.iter().map(s).collect())
                .unwrap_or_default();
            let log = if stderr.is_empty() {
                String::new()
            } else {
                format!("<pre>{}</pre>", escape(&stderr.join("\n")))
            };
            format!(
                "<tr data-server=\"{name}\" data-state=\"{st}\"><td>{name}</td><td>{ty}</td><td>{state_cell}</td><td>{pv}</td><td class=\"num\">{restarts}</td><td>{up}</td><td>{err}</td><td>{log}</td></tr>",
                name = escape(&s(&v["name"])),
                st = escape(&state),
                ty = escape(&s(&v["type"])),
                pv = escape(&s(&v["protocol_version"])),
                restarts = escape(&s(&v["restarts"])),
                up = uptime(v["uptime_s"].as_u64()),
                err = escape(&error),
            )
        })
        .collect();
    table(
        "servers",
        "Servers",
        &[
            "Server",
            "Transport",
            "State",
            "Revision",
            "Restarts",
            "Uptime",
            "Error",
            "Last stderr lines",
        ],
        rows,
        "no servers",
        "",
    )
}

fn tools(doc: &Value, can_approve: bool) -> String {
    let rows = doc["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let decision = s(&t["decision"]);
            let mut why = if decision == "quarantined" {
                let changes: Vec<String> = t["changes"]
                    .as_array()
                    .map(|a| a.iter().map(s).collect())
                    .unwrap_or_default();
                escape(&format!("changed: {}", changes.join(", ")))
            } else {
                escape(&s(&t["reason"]))
            };
            if decision == "quarantined" && can_approve {
                why.push_str(&format!(
                    "<form method=\"post\" action=\"/status/approve\"><input type=\"hidden\" name=\"server\" value=\"{}\"><input type=\"hidden\" name=\"tool\" value=\"{}\"><button type=\"submit\">Approve</button></form>",
                    escape(&s(&t["server"])),
                    escape(&s(&t["tool"]))
                ));
            }
            let annotations = t["annotations"]
                .as_object()
                .map(|a| {
                    a.iter()
                        .filter(|(_, v)| **v == Value::Bool(true))
                        .map(|(k, _)| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            format!(
                "<tr data-tool=\"{name}\" data-decision=\"{d}\"><td>{shown}</td><td>{server}</td><td>{badge}</td><td class=\"reason\">{why}</td><td>{ann}</td><td><a href=\"{url}\">schema</a></td></tr>",
                name = escape(&s(&t["name"])),
                d = escape(&decision),
                shown = escape(&s(&t["shown_as"])),
                server = escape(&s(&t["server"])),
                badge = badge(&decision),
                ann = escape(&annotations),
                url = escape(&s(&t["schema_url"])),
            )
        })
        .collect();
    table(
        "tools",
        "Tools",
        &["Tool", "Server", "Decision", "Why", "Annotations", "Schema"],
        rows,
        "no tools",
        "",
    )
}

fn calls(doc: &Value) -> String {
    let rows = doc["calls"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .take(50)
        .map(|c| {
            let tool = match &c["server"] {
                Value::Null => s(&c["tool"]),
                server => format!("{} / {}", s(server), s(&c["tool"])),
            };
            format!(
                "<tr data-seq=\"{seq}\" data-tool=\"{t}\"><td>{time}</td><td>{client}</td><td>{tool}</td><td>{st}</td><td class=\"num\">{ms} ms</td><td class=\"num\">{bytes}</td><td class=\"num\">{red}</td></tr>",
                seq = escape(&s(&c["seq"])),
                t = escape(&s(&c["tool"])),
                time = escape(&s(&c["time"])),
                client = escape(&s(&c["client"])),
                tool = escape(&tool),
                st = badge(&s(&c["status"])),
                ms = escape(&s(&c["duration_ms"])),
                bytes = escape(&s(&c["bytes"])),
                red = escape(&s(&c["redactions"])),
            )
        })
        .collect();
    table(
        "calls",
        "Latest calls",
        &[
            "Time",
            "Client",
            "Tool",
            "Status",
            "Duration",
            "Bytes",
            "Redactions",
        ],
        rows,
        "no calls yet",
        "",
    )
}

fn stats(doc: &Value) -> String {
    let stats = &doc["tool_stats"];
    let minutes = s(&stats["minutes"]);
    let rows = stats["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let buckets: Vec<u64> = t["latency_buckets"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            let tool = s(&t["tool"]);
            let name = match &t["server"] {
                Value::Null => tool.clone(),
                server => format!("{} / {tool}", s(server)),
            };
            format!(
                "<tr data-tool=\"{t}\"><td>{name}</td><td class=\"num\">{calls}</td><td class=\"num\">{errors}</td><td class=\"num\">{rate:.1} %</td><td>{svg}</td></tr>",
                t = escape(&tool),
                name = escape(&name),
                calls = escape(&s(&t["calls"])),
                errors = escape(&s(&t["errors"])),
                rate = t["error_rate"].as_f64().unwrap_or(0.0) * 100.0,
                svg = svg::histogram(&tool, &buckets),
            )
        })
        .collect();
    table(
        "stats",
        &format!("Per tool, last {minutes} minutes"),
        &["Tool", "Calls", "Errors", "Error rate", "Latency"],
        rows,
        &format!("no calls in the last {minutes} minutes"),
        "",
    )
}

fn clients(doc: &Value) -> String {
    let c = &doc["clients"];
    let by: Vec<String> = c["by_revision"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| format!("{k}: {}", s(v))).collect())
        .unwrap_or_default();
    let summary = format!(
        "{} open{}; answers held {} of {} bytes",
        s(&c["open"]),
        if by.is_empty() {
            String::new()
        } else {
            format!(" ({})", by.join(", "))
        },
        s(&c["held_bytes"]),
        s(&c["total_budget_bytes"])
    );
    let rows = c["list"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|x| {
            let revision = match s(&x["revision"]) {
                r if r.is_empty() => "(initializing)".to_owned(),
                r => r,
            };
            format!(
                "<tr data-client=\"{id}\"><td>{id}</td><td>{rev}</td><td class=\"num\">{held}</td><td class=\"num\">{bound}</td></tr>",
                id = escape(&s(&x["id"])),
                rev = escape(&revision),
                held = escape(&s(&x["held_bytes"])),
                bound = escape(&s(&x["budget_bytes"])),
            )
        })
        .collect();
    table(
        "clients",
        "Clients",
        &["Client", "Revision", "Bytes held", "Budget"],
        rows,
        "no clients",
        &format!("<p id=\"clients-summary\">{}</p>", escape(&summary)),
    )
}

/// The whole page for the status document `doc`; `can_approve`: the
/// approve buttons of quarantined tools are shown.
pub(crate) fn render(doc: &Value, can_approve: bool) -> String {
    let fleet = &doc["fleet"];
    let ready = fleet["ready"].as_bool().unwrap_or(false);
    let mut ready_html = if ready {
        "<span class=\"badge ok\">ready</span>".to_owned()
    } else {
        "<span class=\"badge failed\">not ready</span>".to_owned()
    };
    if !ready {
        ready_html.push_str(&format!(" {}", escape(&s(&fleet["reason"]))));
    }
    let replica = match &fleet["replica"] {
        Value::Null => String::new(),
        r => format!("replica <code>{}</code> · ", escape(&s(r))),
    };
    let labels: Vec<String> = (0..=super::board::BUCKET_BOUNDS_MS.len())
        .map(svg::bucket_label)
        .collect();
    // JSON in a non-executed script element: `<` escaped so that no text
    // can close it.
    let labels = serde_json::to_string(&labels)
        .unwrap_or_else(|_| "[]".into())
        .replace('<', "\\u003c");
    let generated = escape(&s(&doc["generated_at"]));
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>mcpmux gateway status</title><style>{STYLE}</style></head>\
         <body data-approve=\"{approve}\" data-generated=\"{generated}\">\
         <header><h1>mcpmux gateway</h1><p class=\"meta\">{replica}<span id=\"ready\">{ready_html}</span> · \
         {transport} · as of <time id=\"generated\" datetime=\"{generated}\">{generated}</time> \
         <span id=\"live\">static</span> · <a href=\"/status.json\">JSON</a></p></header><main>\
         {servers}{tools}{calls}{stats}{clients}</main>\
         <script type=\"application/json\" id=\"labels\">{labels}</script>\
         <script>{SCRIPT}</script></body></html>",
        approve = u8::from(can_approve),
        transport = escape(&s(&doc["gateway"]["transport"])),
        servers = servers(doc),
        tools = tools(doc, can_approve),
        calls = calls(doc),
        stats = stats(doc),
        clients = clients(doc),
    )
}

/// A page showing one tool's definition (pretty JSON, escaped).
pub(crate) fn tool_page(name: &str, definition: &Value) -> String {
    let pretty = serde_json::to_string_pretty(definition).unwrap_or_default();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{n} · mcpmux gateway status</title><style>{STYLE}</style></head><body>\
         <header><h1>{n}</h1><p class=\"meta\"><a href=\"/status\">back to the status</a> · \
         <a href=\"/status/tool.json?name={q}\">JSON</a></p></header><main><pre class=\"schema\">{p}</pre></main></body></html>",
        n = escape(name),
        q = query_escape(name),
        p = escape(&pretty),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_from_servers_is_escaped_everywhere() {
        let doc = json!({
            "generated_at": "t",
            "gateway": {"transport": "http"},
            "fleet": {"replica": "<r>", "ready": false, "reason": "<why>"},
            "servers": [{"name": "<img src=x>", "type": "stdio", "state": "failed",
                         "error": "\"><script>", "error_code": "X", "stderr": ["</pre><b>"]}],
            "tools": [{"name": "n", "shown_as": "<t>", "server": "s", "tool": "t'",
                       "decision": "quarantined", "changes": ["description<"], "schema_url": "/status/tool?name=n"}],
            "calls": [], "tool_stats": {"minutes": 10, "tools": []},
            "clients": {"open": 0, "by_revision": {}, "list": [], "held_bytes": 0, "total_budget_bytes": 1}
        });
        let html = render(&doc, true);
        for raw in [
            "<img src=x>",
            "\"><script>",
            "</pre><b>",
            "<t>",
            "<r>",
            "<why>",
            "t'",
        ] {
            assert!(!html.contains(raw), "{raw} reached the page unescaped");
        }
        assert!(html.contains("&lt;img src=x&gt;"));
        assert!(html.contains("value=\"t&#39;\""));
        assert!(html.contains("changed: description&lt;"));
        // One script and one style, both allowed by hash, nothing else.
        assert_eq!(html.matches("<script>").count(), 1);
        assert!(CSP.contains(&csp_hash(SCRIPT)) && CSP.contains(&csp_hash(STYLE)));
        assert!(!CSP.contains("unsafe"));
    }

    #[test]
    fn the_page_stays_small() {
        let doc = json!({"servers": [], "tools": [], "calls": [], "tool_stats": {"tools": []}, "clients": {}});
        assert!(render(&doc, false).len() < 30 * 1024);
    }
}
