//! Tasks through `mcpmux gateway` to a 2026-07-28 client (the tasks
//! extension, SEP-2663): the gateway advertises the extension, hands out
//! tasks of its own when a call becomes a task upstream (an rmcp server on
//! 2026-07-28, or server-everything's 2025-11-25 task tool: the gateway
//! bridges), serves tasks/get, tasks/update and tasks/cancel, and refuses
//! them to a request that did not declare the extension.

mod common;

use std::time::{Duration, Instant};

use common::http_gateway::HttpGateway;
use common::raw_gateway::Raw;
use common::*;
use serde_json::{json, Value};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn meta(declare: bool) -> Value {
    let caps = if declare {
        json!({"extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    })
}

fn request(gw: &mut Raw, method: &str, mut params: Value, declare: bool) -> Value {
    params["_meta"] = meta(declare);
    gw.request(method, params)
}

fn call(gw: &mut Raw, name: &str, arguments: Value, declare: bool) -> Value {
    request(
        gw,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
        declare,
    )
}

/// Polls tasks/get until `done` says so (or 30 s pass).
fn poll(gw: &mut Raw, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = request(gw, "tasks/get", json!({"taskId": id}), true);
        if done(&got["result"]) || Instant::now() > deadline {
            return got["result"].clone();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn terminal(task: &Value) -> bool {
    ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or(""))
}

fn sandbox(log: &std::path::Path) -> Sandbox {
    let js = everything_server();
    Sandbox::with_config(&format!(
        "{}{}",
        stdio_server(
            "tasks",
            std::path::Path::new(&mcpmux_test_support::rmcp_tasks_server()),
            &[],
            &format!(
                "protocol_version = \"2026-07-28\"\nallow_all = true\nconfirm_read_only = [\"*\"]\nenv = {{ RMCP_TASKS_LOG = {} }}",
                q(log.display().to_string())
            ),
        ),
        stdio_server(
            "every",
            std::path::Path::new("node"),
            &[js.to_str().unwrap(), "stdio"],
            "allow_all = true\nconfirm_read_only = [\"*\"]",
        ),
    ))
}

#[test]
fn a_2026_client_gets_the_gateways_tasks_for_servers_of_either_revision() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rmcp.log");
    let sb = sandbox(&log);
    let mut gw = Raw::start(&sb, &[]);

    let discovered = request(&mut gw, "server/discover", json!({}), false);
    assert!(
        discovered["result"]["capabilities"]["extensions"][TASKS].is_object(),
        "{discovered}"
    );
    assert!(discovered["result"]["capabilities"].get("tasks").is_none());

    // A call that becomes a task upstream: a task of the gateway's.
    let created = call(
        &mut gw,
        "mcp_tasks_slow_sum",
        json!({"a": 2, "b": 40, "ms": 300}),
        true,
    );
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert!(
        id.starts_with("mcpmux-tasks-"),
        "the gateway's own id, naming the server: {id}"
    );
    assert!(created.get("task").is_none() && created.get("result").is_none());
    assert!(created["ttlMs"].as_u64().is_some() && created["pollIntervalMs"].as_u64().is_some());
    let done = poll(&mut gw, &id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["result"]["content"][0]["text"], "sum: 42", "{done}");

    // A call that stays plain is answered plainly.
    let quick = call(&mut gw, "mcp_tasks_quick", json!({"text": "hi"}), true);
    assert_eq!(
        quick["result"]["content"][0]["text"], "quick: hi",
        "{quick}"
    );
    assert!(quick["result"].get("taskId").is_none());
    // Without the extension the gateway waits for the task itself.
    let plain = call(
        &mut gw,
        "mcp_tasks_slow_sum",
        json!({"a": 1, "b": 1, "ms": 100}),
        false,
    );
    assert_eq!(plain["result"]["content"][0]["text"], "sum: 2", "{plain}");

    // tasks/* need the extension; an unknown id is -32602.
    let refused = request(&mut gw, "tasks/get", json!({"taskId": id}), false);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    let unknown = request(&mut gw, "tasks/get", json!({"taskId": "mcpmux-nope"}), true);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // Input the server asks for reaches the client as inputRequests.
    let asking = call(&mut gw, "mcp_tasks_ask_name", json!({}), true);
    let ask_id = asking["result"]["taskId"].as_str().unwrap().to_owned();
    let waiting = poll(&mut gw, &ask_id, |t| {
        t["status"] == "input_required" || terminal(t)
    });
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let (key, question) = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["message"], "What is your name?");
    let ack = request(
        &mut gw,
        "tasks/update",
        json!({"taskId": ask_id, "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}),
        true,
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let answered = poll(&mut gw, &ask_id, terminal);
    assert_eq!(
        answered["result"]["content"][0]["text"], "Hello, Ada",
        "{answered}"
    );

    // A failing task is failed with the server's error.
    let failing = call(&mut gw, "mcp_tasks_fails", json!({}), true);
    let failed = poll(
        &mut gw,
        failing["result"]["taskId"].as_str().unwrap(),
        terminal,
    );
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["error"]["message"]
        .as_str()
        .unwrap()
        .contains("failed on purpose"));
    assert!(failed.get("result").is_none());

    // Cancelling one cancels the server's task too; cancelling again is the same ack.
    let endless = call(&mut gw, "mcp_tasks_never_ends", json!({}), true);
    let endless_id = endless["result"]["taskId"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let ack = request(&mut gw, "tasks/cancel", json!({"taskId": endless_id}), true);
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    }
    let cancelled = poll(&mut gw, &endless_id, terminal);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("cancel ")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        std::fs::read_to_string(&log).unwrap().contains("cancel "),
        "the server's task was cancelled"
    );

    // Bridged: a 2025-11-25 server's task tool, to this 2026-07-28 client.
    let research = call(
        &mut gw,
        "mcp_every_simulate-research-query",
        json!({"topic": "gateways", "ambiguous": false}),
        true,
    );
    assert_eq!(research["result"]["resultType"], "task", "{research}");
    let researched = poll(
        &mut gw,
        research["result"]["taskId"].as_str().unwrap(),
        terminal,
    );
    assert_eq!(researched["status"], "completed", "{researched}");
    assert!(
        researched["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("gateways"),
        "{researched}"
    );
}

/// A 2025-11-25 server's question inside its task (server-everything's
/// research asks which interpretation is meant, as a request naming its
/// task) reaches a 2026-07-28 client as the gateway task's inputRequests,
/// and the answer goes back.
#[test]
fn a_2025_servers_question_inside_its_task_reaches_a_2026_client() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    // The hub declares elicitation (its stdio client did), so the server asks.
    let mut gw = Raw::start_with(&sb, &[], json!({"elicitation": {}}));
    let research = call(
        &mut gw,
        "mcp_every_simulate-research-query",
        json!({"topic": "python", "ambiguous": true}),
        true,
    );
    let id = research["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{research}"))
        .to_owned();
    let waiting = poll(&mut gw, &id, |t| {
        t["status"] == "input_required" || terminal(t)
    });
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let (key, question) = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let choice = question["params"]["requestedSchema"]["properties"]["interpretation"]["oneOf"][0]
        ["const"]
        .clone();
    assert!(choice.is_string(), "{question}");
    request(
        &mut gw,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"interpretation": choice}}}}),
        true,
    );
    let done = poll(&mut gw, &id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(choice.as_str().unwrap()),
        "the answer reached the server: {text}"
    );
}

/// A tools/call of a 2026-07-28 client declaring `capabilities` (and,
/// with `extra`, the retry's members).
fn call_as(gw: &mut Raw, name: &str, capabilities: Value, extra: Value) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    params["_meta"] = meta(false);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    gw.request("tools/call", params)
}

/// The one question of an input-required result: its key and itself.
fn only_question(result: &Value) -> (String, Value) {
    let asked = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{result}"));
    assert_eq!(asked.len(), 1, "{result}");
    let (key, question) = asked.iter().next().unwrap();
    (key.clone(), question.clone())
}

/// A server's question within a plain call of a 2026-07-28 client (an
/// rmcp server's input-required result, SEP-2322) goes back to the client
/// that made the call, as an input-required result of the gateway's, and
/// never to another client (this stdio client also declared elicitation
/// at `initialize`, as a 2025-11-25 client: before, the question went to
/// it); the retry with the answer finishes the call. A call that asks
/// first and becomes a task afterwards works the same way with the tasks
/// extension.
#[test]
fn a_servers_question_in_a_plain_call_goes_back_to_the_2026_client_that_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    let mut gw = Raw::start_with(&sb, &[], json!({"elicitation": {}}));
    let asks = json!({"elicitation": {}});

    let first = call_as(&mut gw, "mcp_tasks_ask_plain", asks.clone(), json!({}));
    let first = &first["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    let state = first["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"));
    assert!(
        state.starts_with("mcpmux-rs-"),
        "the gateway's own state: {state}"
    );
    assert!(first.get("content").is_none() && first.get("taskId").is_none());
    let (key, question) = only_question(first);
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "What is your name?");
    assert!(
        !gw.seen.iter().any(|m| m["method"] == "elicitation/create"),
        "asked of the connection's 2025-11-25 side instead: {:?}",
        gw.seen
    );

    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    let retry = json!({"inputResponses": answer, "requestState": state});
    let done = call_as(&mut gw, "mcp_tasks_ask_plain", asks.clone(), retry.clone());
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada", "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");

    // A requestState is good for one retry; another tool's is refused.
    let again = call_as(&mut gw, "mcp_tasks_ask_plain", asks.clone(), retry);
    assert_eq!(again["result"]["isError"], true, "{again}");
    assert!(again["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("requestState"));
    let other = call_as(&mut gw, "mcp_tasks_ask_plain", asks.clone(), json!({}));
    let other_state = other["result"]["requestState"].as_str().unwrap().to_owned();
    let wrong = call_as(
        &mut gw,
        "mcp_tasks_quick",
        asks.clone(),
        json!({"inputResponses": {}, "requestState": other_state}),
    );
    assert!(
        wrong["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("belongs to a call of 'mcp_tasks_ask_plain'"),
        "{wrong}"
    );
    // Still parked for its own retry; unanswered keys are asked again.
    let unanswered = call_as(
        &mut gw,
        "mcp_tasks_ask_plain",
        asks.clone(),
        json!({"inputResponses": {}, "requestState": other_state}),
    );
    assert_eq!(
        unanswered["result"]["resultType"], "input_required",
        "{unanswered}"
    );

    // A client that cannot answer is not asked: the call fails.
    let mute = call_as(&mut gw, "mcp_tasks_ask_plain", json!({}), json!({}));
    assert_eq!(mute["result"]["isError"], true, "{mute}");

    // Asked first, a task afterwards (the tasks extension).
    let both = json!({"elicitation": {}, "extensions": {TASKS: {}}});
    let first = call_as(
        &mut gw,
        "mcp_tasks_test_tool_with_task",
        both.clone(),
        json!({}),
    );
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let (key, _) = only_question(&first["result"]);
    let created = call_as(
        &mut gw,
        "mcp_tasks_test_tool_with_task",
        both,
        json!({
            "inputResponses": {key: {"action": "accept", "content": {"name": "Bea"}}},
            "requestState": first["result"]["requestState"],
        }),
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert!(created["result"].get("requestState").is_none());
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let done = poll(&mut gw, &id, terminal);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Bea", "{done}");
}

/// A 2025-11-25 server's request within a plain call of a 2026-07-28
/// client (server-everything's elicitation, sent on its own while the call
/// runs) goes back to that client as an input-required result too, not to
/// the connection's 2025-11-25 side.
#[test]
fn a_2025_servers_request_in_a_2026_clients_call_goes_back_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    let mut gw = Raw::start_with(&sb, &[], json!({"elicitation": {}}));
    let asks = json!({"elicitation": {}});
    let tool = "mcp_every_trigger-elicitation-request";
    let first = call_as(&mut gw, tool, asks.clone(), json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert!(
        !gw.seen.iter().any(|m| m["method"] == "elicitation/create"),
        "asked of the connection's 2025-11-25 side instead: {:?}",
        gw.seen
    );
    let (key, question) = only_question(&first["result"]);
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let done = call_as(
        &mut gw,
        tool,
        asks,
        json!({
            "inputResponses": {key: {"action": "accept", "content": {"name": "Zed"}}},
            "requestState": first["result"]["requestState"],
        }),
    );
    assert!(done["result"].to_string().contains("Zed"), "{done}");
    assert_ne!(done["result"]["isError"], true, "{done}");
}

/// A 2025-11-25 client's request (no 2026-07-28 `_meta`).
fn request_2025(gw: &mut Raw, method: &str, params: Value) -> Value {
    gw.request(method, params)
}

#[test]
fn a_2025_client_runs_its_own_tasks_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    let mut gw = Raw::start_with(&sb, &[], json!({"elicitation": {}}));
    let caps = &gw.initialize_answer()["result"]["capabilities"];
    assert_eq!(
        caps["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{caps}"
    );

    // Augmented with params.task: a CreateTaskResult at once.
    let created = request_2025(
        &mut gw,
        "tools/call",
        json!({"name": "mcp_tasks_slow_sum", "arguments": {"a": 2, "b": 40, "ms": 300}, "task": {"ttl": 60000}}),
    );
    let task = &created["result"]["task"];
    let id = task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    assert!(id.starts_with("mcpmux-tasks-"), "{created}");
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000, "{created}");
    assert!(task["pollInterval"].as_u64().is_some() && task["createdAt"].is_string());
    assert!(created["result"].get("content").is_none(), "{created}");

    // tasks/result waits for the end and answers the call's result.
    let result = request_2025(&mut gw, "tasks/result", json!({"taskId": id}));
    assert_eq!(
        result["result"]["content"][0]["text"], "sum: 42",
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let got = request_2025(&mut gw, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert!(got["result"].get("result").is_none(), "{got}");
    let listed = request_2025(&mut gw, "tasks/list", json!({}));
    assert!(
        listed["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == id.as_str()),
        "{listed}"
    );
    // An ended task cannot be cancelled.
    let late = request_2025(&mut gw, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(late["error"]["code"], -32602, "{late}");

    // Cancelled while running: the task says so, and so does its result.
    let long = request_2025(
        &mut gw,
        "tools/call",
        json!({"name": "mcp_tasks_slow_sum", "arguments": {"a": 1, "b": 1, "ms": 20000}, "task": {}}),
    );
    let long_id = long["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancelled = request_2025(&mut gw, "tasks/cancel", json!({"taskId": long_id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let after = request_2025(&mut gw, "tasks/result", json!({"taskId": long_id}));
    assert!(
        after["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cancelled")),
        "{after}"
    );

    // Another connection's tasks do not exist for this one; a 2026-07-28
    // request cannot reach them either.
    let mut other = Raw::start_with(&sb, &[], json!({}));
    let foreign = request_2025(&mut other, "tasks/get", json!({"taskId": id}));
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    let none = request_2025(&mut other, "tasks/list", json!({}));
    assert_eq!(none["result"]["tasks"], json!([]), "{none}");
    let stateless = request(&mut gw, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(stateless["error"]["code"], -32602, "{stateless}");
}

#[test]
fn a_servers_question_in_a_2025_clients_task_is_asked_naming_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    let mut gw = Raw::start_with(&sb, &[], json!({"elicitation": {}}));
    let created = request_2025(
        &mut gw,
        "tools/call",
        json!({"name": "mcp_every_simulate-research-query", "arguments": {"topic": "python", "ambiguous": true}, "task": {"ttl": 60000}}),
    );
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    // The server's question comes to this client, naming the gateway's task.
    let asked = gw.notification("elicitation/create");
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "{asked}"
    );
    let waiting = request_2025(&mut gw, "tasks/get", json!({"taskId": id}));
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    let choice = asked["params"]["requestedSchema"]["properties"]["interpretation"]["oneOf"][0]
        ["const"]
        .clone();
    assert!(choice.is_string(), "{asked}");
    gw.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"interpretation": choice}}}));
    let result = request_2025(&mut gw, "tasks/result", json!({"taskId": id}));
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(choice.as_str().unwrap()),
        "the answer reached the server: {result}"
    );
}

/// Runs `gateway_ts_tasks_client.cjs` (the official TypeScript SDK
/// client's task API) with `args`, and checks its summary.
fn check_ts_tasks_client(args: &[&std::ffi::OsStr]) {
    let out = std::process::Command::new("node")
        .arg(workspace_root().join("bindings/cli/tests/gateway_ts_tasks_client.cjs"))
        .arg(workspace_root().join("tests/peers"))
        .args(args)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(s["tasks"]["requests"]["tools"]["call"], json!({}), "{s:#}");
    let sum = s["sum"].as_array().unwrap();
    assert_eq!(sum[0][0], "taskCreated", "{s:#}");
    let id = sum[0][1].as_str().unwrap();
    assert!(id.starts_with("mcpmux-"), "{s:#}");
    let last = sum.last().unwrap();
    assert_eq!(last[0], "result", "{s:#}");
    assert_eq!(last[1], "sum: 42", "{s:#}");
    let research = s["research"].as_array().unwrap();
    let research_id = research[0][1].as_str().unwrap();
    assert_eq!(research.last().unwrap()[0], "result", "{s:#}");
    // The question was asked of this client, naming the gateway's task.
    assert_eq!(s["asked"], json!([{"taskId": research_id}]), "{s:#}");
    let listed: Vec<&str> = s["listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[0].as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&id) && listed.contains(&research_id),
        "{s:#}"
    );
}

#[test]
fn the_official_typescript_sdks_task_api_runs_tasks_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    let (bin, config) = (mcpmux_bin(), sb.path().join("mcpmux.toml"));
    check_ts_tasks_client(&["stdio".as_ref(), bin.as_os_str(), config.as_os_str()]);
    let gw = HttpGateway::start(&sb, "tok-tasks-secret");
    check_ts_tasks_client(&[
        "http".as_ref(),
        gw.url.as_ref(),
        "tok-tasks-secret".as_ref(),
    ]);
}

/// A 2026-07-28 server's question reaches a 2025-11-25 client as that
/// revision's `elicitation/create`, and the answer goes back: within a task
/// of the server's (`inputRequests`, `ask_name`) and within a plain call
/// (an input-required result, `ask_plain`).
#[test]
fn a_2026_servers_question_reaches_a_2025_client_as_elicitation() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    let mut gw = Raw::start_with(&sb, &[], json!({"elicitation": {}}));
    for (id, tool) in [(71, "mcp_tasks_ask_name"), (72, "mcp_tasks_ask_plain")] {
        gw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}}));
        let asked = gw.notification("elicitation/create");
        assert!(
            asked["id"].is_number() || asked["id"].is_string(),
            "{asked}"
        );
        let schema = &asked["params"]["requestedSchema"];
        let field = schema["properties"]
            .as_object()
            .and_then(|p| p.keys().next().cloned())
            .unwrap_or_else(|| panic!("{tool}: {asked}"));
        gw.send(json!({"jsonrpc": "2.0", "id": asked["id"],
            "result": {"action": "accept", "content": {field: "Ada"}}}));
        let done = gw.next_such("the call's answer", |m| m["id"] == id);
        let text = done["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("Ada"), "{tool}: {done}");
    }
}

/// Task status notifications (SEP-2663) from the gateway: a client that
/// declared the extension and listens for its task ids is acknowledged
/// with those it holds (another's, or an unknown one, left out) and hears
/// each task whole (`notifications/tasks`, as `tasks/get` answers it) on
/// its changes until it ends, its result inline, without a poll. A listen
/// that asks for tasks without declaring the extension is -32021.
#[test]
fn a_listening_client_is_pushed_its_tasks_status_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rmcp.log");
    let sb = sandbox(&log);
    let mut gw = Raw::start(&sb, &[]);
    let created = call(
        &mut gw,
        "mcp_tasks_slow_sum",
        json!({"a": 2, "b": 40, "ms": 800}),
        true,
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();

    let refused = request(
        &mut gw,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}}),
        false,
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");

    let mut params = json!({"notifications": {"taskIds": [id, "mcpmux-nosuch-0000"]}});
    params["_meta"] = meta(true);
    gw.send(
        json!({"jsonrpc": "2.0", "id": 900, "method": "subscriptions/listen", "params": params}),
    );
    let ack = gw.next_such("the acknowledgment", |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    });
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 900,
        "{ack}"
    );
    let done = gw.next_such("the task's end pushed", |m| {
        m["method"] == "notifications/tasks" && terminal(&m["params"])
    });
    let task = &done["params"];
    assert_eq!(task["taskId"], id.as_str(), "{done}");
    assert_eq!(task["status"], "completed", "{done}");
    assert_eq!(task["result"]["content"][0]["text"], "sum: 42", "{done}");
    assert_eq!(
        task["_meta"]["io.modelcontextprotocol/subscriptionId"], 900,
        "{done}"
    );
    assert!(
        task["lastUpdatedAt"].is_string() && task["ttlMs"].is_u64(),
        "{done}"
    );
}

/// mcpmux as the gateway's client over Streamable HTTP on 2026-07-28: its
/// call that becomes a task listens for it, the gateway acknowledges and
/// pushes its end, and the call takes the pushed result (the gateway is
/// asked `tasks/get` only once after the acknowledgment, then every 30 s:
/// a call of 1.5 s that ends well before 30 s was told by the push).
#[test]
fn mcpmux_through_the_gateway_takes_the_pushed_end_of_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rmcp.log");
    let sb = sandbox(&log);
    let gw = HttpGateway::start_with(&sb, "tok-task-push", &["--no-pin-tools"]);
    let counting = CountingProxy::start(&gw.addr(), "tasks/get");
    let client = Sandbox::with_config(&format!(
        "[[mcp.servers]]\nname = \"gw\"\nurl = {}\nprotocol_version = \"2026-07-28\"\n\
         headers = {{ Authorization = \"Bearer tok-task-push\" }}\n",
        q(gw.url.replace(&gw.addr(), &counting.addr))
    ));
    let out = client
        .mcpmux(&[
            "call",
            "mcp_gw_mcp_tasks_slow_sum",
            r#"{"a": 40, "b": 2, "ms": 1500}"#,
        ])
        .run();
    out.expect_exit(0);
    assert_eq!(out.stdout.trim(), "sum: 42", "{out}");
    assert!(
        out.elapsed < Duration::from_secs(20),
        "the call waited for a poll, not the push: {out}"
    );
    // Polled at the gateway's 250 ms, it would have been asked about 6
    // times.
    let gets = counting.count();
    assert!(gets <= 2, "{gets} polls: {out}");
}

/// A TCP proxy in front of `upstream` that counts the requests whose
/// `Mcp-Method` header is `method` (what a 2026-07-28 client sends).
struct CountingProxy {
    addr: String,
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl CountingProxy {
    fn start(upstream: &str, method: &str) -> CountingProxy {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let needle = format!("mcp-method: {method}\r\n");
        let (upstream, counter) = (upstream.to_owned(), seen.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = std::net::TcpStream::connect(&upstream) else {
                    continue;
                };
                let (mut c_in, mut s_out) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (needle, counter) = (needle.clone(), counter.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n) = c_in.read(&mut buf) {
                        if n == 0 || s_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        let text = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                        counter.fetch_add(text.matches(&needle).count(), Ordering::SeqCst);
                    }
                    let _ = s_out.shutdown(std::net::Shutdown::Write);
                });
                let (mut s_in, mut c_out) = (server, client);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut s_in, &mut c_out);
                    let _ = c_out.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        CountingProxy { addr, seen }
    }

    fn count(&self) -> usize {
        self.seen.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A 2025-11-25 client is told of its task's changes
/// (`notifications/tasks/status`, the task as `tasks/get` shows it) up to
/// its end, without polling.
#[test]
fn a_2025_client_is_told_its_tasks_status_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(&dir.path().join("rmcp.log"));
    let mut gw = Raw::start_with(&sb, &[], json!({}));
    let created = request_2025(
        &mut gw,
        "tools/call",
        json!({"name": "mcp_tasks_slow_sum", "arguments": {"a": 2, "b": 40, "ms": 300}, "task": {}}),
    );
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let mut done = gw.notification("notifications/tasks/status");
    for _ in 0..10 {
        if terminal(&done["params"]) {
            break;
        }
        done = gw.notification("notifications/tasks/status");
    }
    let task = &done["params"];
    assert_eq!(task["taskId"], id.as_str(), "{done}");
    assert_eq!(task["status"], "completed", "{done}");
    assert!(
        task["lastUpdatedAt"].is_string() && task["ttl"].is_u64(),
        "{done}"
    );
    // The result is where the revision keeps it.
    let result = request_2025(&mut gw, "tasks/result", json!({"taskId": id}));
    assert_eq!(
        result["result"]["content"][0]["text"], "sum: 42",
        "{result}"
    );
}
