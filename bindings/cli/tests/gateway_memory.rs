//! The gateway's memory bound holds whatever the timing. A server answers
//! 100 calls of 15 MiB each as fast as its pipe takes them (it takes every
//! call first, then answers them one after the other), and the client that
//! sent them reads 4 KiB per 100 ms: over HTTP as one batch `POST`, over
//! stdio as one batch line and as 100 lines. The gateway runs with its
//! default budgets (64 MiB per client, 256 MiB in all): whatever the
//! server's answers meet on their way (read off the pipe, parsed,
//! re-encoded, queued), its peak RSS (`VmHWM`) stays under 512 MiB, each
//! call gets one answer (its whole result, or -32000 "gateway busy"), and
//! other clients are served meanwhile.
//!
//! Before the budget counted answers from the moment they are read, the
//! gateway passed 512 MiB here (and a quiet machine took it past 600 MB
//! with 200 such calls): answers read faster than they were handled piled
//! up uncounted, each copied as it was handled. Each case reads the
//! gateway's peak as it goes, and fails as soon as it passes the bound.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use common::raw_gateway::{Raw, HANG, SLOW_CHUNK, SLOW_PAUSE};
use common::*;
use serde_json::{json, Value};

/// Calls in each case (enough to pass the bound many times over; each
/// answer the budget refuses still costs a debug build a third of a second
/// to read).
const CALLS: usize = 100;
/// The text of each answer.
const ANSWER_BYTES: usize = 15 << 20;
/// The gateway's peak RSS stays under this, with the default budgets.
const RSS_LIMIT_MIB: u64 = 512;

/// The gateway's worker threads (the CLI runs 2 unless told): enough that
/// its reader gets one as soon as the server has written, and reads as fast
/// as the server writes, as on a quiet machine with a release build. With
/// 2, a debug build spends seconds on each 15 MiB answer, both workers are
/// mostly busy with them, and the reader reads no faster than answers are
/// handled: the timing the bound must not depend on would hide the pile-up.
const WORKERS: (&str, &str) = ("MCPMUX_WORKER_THREADS", "32");

/// One case at a time: each pushes 3 GiB through a gateway, and their
/// peaks are each their own.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A config with the `huge` server (answers of [`ANSWER_BYTES`], taken
/// [`CALLS`] at a time, each answer's id appended to `log`) and the demo
/// server.
fn config(log: &Path) -> String {
    let huge = python_entry(
        "huge",
        "huge_line.py",
        &format!(
            "allow_all = true\nallow_destructive = [\"flood\"]\nrestart = \"never\"\ntimeout_seconds = 600\n\
             env = {{ HUGE_LINE_BYTES = \"{ANSWER_BYTES}\", HUGE_LINE_BATCH = \"{CALLS}\", HUGE_LINE_LOG = {} }}",
            qp(log)
        ),
    );
    let demo = demo_entry("demo", "allow_all = true\nrestart = \"never\"");
    format!("{huge}{demo}")
}

/// [`CALLS`] calls of the huge tool, ids 1 to [`CALLS`].
fn calls() -> Vec<Value> {
    (1..=CALLS)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "mcp_huge_flood", "arguments": {}}})
        })
        .collect()
}

/// Waits until the server has written an answer to every call; fails as
/// soon as the gateway's peak RSS (`peak`, in MiB) passes the limit.
fn wait_for_every_answer(log: &Path, peak: impl Fn() -> u64, case: &str) {
    let deadline = Instant::now() + 3 * HANG;
    loop {
        let answered = std::fs::read_to_string(log)
            .map(|s| s.lines().count())
            .unwrap_or(0);
        if answered >= CALLS {
            return;
        }
        let mib = peak();
        assert!(
            mib < RSS_LIMIT_MIB,
            "{case}: gateway peak RSS {mib} MiB passed {RSS_LIMIT_MIB} MiB \
             with {answered} of {CALLS} calls answered by the server"
        );
        assert!(
            Instant::now() < deadline,
            "{case}: the server answered {answered} of {CALLS} calls within {:?} \
             (gateway peak RSS {mib} MiB)",
            3 * HANG
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Checks one answer to a huge call: its whole result, or a busy refusal;
/// whether it was a result.
fn check_answer(answer: &Value) -> bool {
    if let Some(text) = answer["result"]["content"][0]["text"].as_str() {
        assert_eq!(text.len(), ANSWER_BYTES, "a result was not whole");
        return true;
    }
    let short: String = answer.to_string().chars().take(300).collect();
    assert_eq!(answer["error"]["code"], -32000, "{short}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("busy"), "{short}");
    false
}

/// Checks that `answers` answer every call once; how many were results.
fn check_answers(answers: &[Value]) -> usize {
    let mut ids: Vec<u64> = answers
        .iter()
        .map(|a| a["id"].as_u64().expect("an answer with a call's id"))
        .collect();
    ids.sort_unstable();
    let expected: Vec<u64> = (1..=CALLS as u64).collect();
    assert_eq!(ids, expected, "not one answer per call");
    answers.iter().filter(|a| check_answer(a)).count()
}

fn assert_peak_under_limit(peak: u64, case: &str) {
    eprintln!("{case}: gateway peak RSS {peak} MiB");
    assert!(
        peak < RSS_LIMIT_MIB,
        "{case}: gateway peak RSS {peak} MiB passed {RSS_LIMIT_MIB} MiB"
    );
}

/// One stdio case: the calls sent as `text`, the answers read slowly until
/// the server has answered every call, then read whole.
fn stdio_case(text: String, case: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sb = Sandbox::new();
    let log = sb.path().join("answered.log");
    sb.write("mcpmux.toml", &config(&log));
    let mut gw = Raw::start_slow(&sb, &[], &[WORKERS]);
    gw.stdin().write_all(text.as_bytes()).unwrap();
    gw.stdin().flush().unwrap();
    wait_for_every_answer(&log, || gw.peak_rss_mib(), case);
    gw.read_fast();
    let mut answers = Vec::new();
    while answers.len() < CALLS {
        let msg = gw.next_message(HANG).unwrap_or_else(|| {
            panic!(
                "{} of {CALLS} calls answered within {HANG:?}",
                answers.len()
            )
        });
        if msg.get("method").is_none() {
            answers.push(msg);
        }
    }
    let results = check_answers(&answers);
    assert!(results >= 1, "no call got its result");
    // Read, the answers gave the budget back: the client is served again.
    let echo = gw.request(
        "tools/call",
        json!({"name": "mcp_demo_echo", "arguments": {"text": "still here"}}),
    );
    assert_eq!(echo["result"]["content"][0]["text"], "still here", "{echo}");
    eprintln!("{case}: {results} results, {} busy", CALLS - results);
    assert_peak_under_limit(gw.peak_rss_mib(), case);
}

#[test]
fn stdio_a_batch_of_huge_answers_read_slowly_keeps_the_gateway_under_its_bound() {
    let text = format!("{}\n", Value::Array(calls()));
    stdio_case(text, "stdio batch");
}

#[test]
fn stdio_lines_of_huge_answers_read_slowly_keep_the_gateway_under_its_bound() {
    let text: String = calls().iter().map(|c| format!("{c}\n")).collect();
    stdio_case(text, "stdio lines");
}

/// `mcpmux gateway --http 127.0.0.1:0` (killed on drop) and the address
/// it serves at.
struct HttpGateway {
    child: Child,
    addr: String,
}

impl HttpGateway {
    fn start(sb: &Sandbox) -> HttpGateway {
        let mut child = Command::new(mcpmux_bin())
            .arg("--config")
            .arg(sb.path().join("mcpmux.toml"))
            .args(["gateway", "--http", "127.0.0.1:0"])
            .env(WORKERS.0, WORKERS.1)
            .current_dir(sb.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        let addr = loop {
            let line = rx
                .recv_timeout(HANG)
                .expect("the gateway never said where it serves");
            if let Some(url) = line.split("serving MCP at ").nth(1) {
                let url = url.trim();
                let host = url.trim_start_matches("http://");
                break host.split('/').next().unwrap_or_default().to_owned();
            }
        };
        HttpGateway { child, addr }
    }

    /// The gateway's peak resident memory so far (`VmHWM`), in MiB.
    fn peak_rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read the gateway's /proc status");
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc status");
        kib / 1024
    }

    /// Sends one `POST` of `body` (in `session`) on a connection of its own.
    fn send_post(&self, session: Option<&str>, body: &Value) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(HANG)).unwrap();
        let body = body.to_string();
        let session = session
            .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\
             Connection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        stream
    }

    /// One `POST`, its response read at once: its session header and body.
    fn post(&self, session: Option<&str>, body: &Value) -> (Option<String>, Value) {
        let mut stream = self.send_post(session, body);
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        parse_response(&response)
    }

    /// A new session's id.
    fn session(&self) -> String {
        let (id, answer) = self.post(
            None,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "memory", "version": "0"}
            }}),
        );
        assert!(answer["result"].is_object(), "{answer}");
        let id = id.expect("a session id");
        self.post(
            Some(&id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        id
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A whole HTTP/1.1 response (closed after it): its `Mcp-Session-Id` and
/// its body as JSON (`Null` when empty or not JSON).
fn parse_response(response: &[u8]) -> (Option<String>, Value) {
    let end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole response head");
    let head = String::from_utf8_lossy(&response[..end]);
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.1 202"),
        "{head}"
    );
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding"),
        "a JSON answer of known length was expected: {head}"
    );
    let session = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    let body = serde_json::from_slice(&response[end + 4..]).unwrap_or(Value::Null);
    (session, body)
}

/// Reads `stream` to its end, [`SLOW_CHUNK`] bytes per [`SLOW_PAUSE`]
/// until `fast` is set.
fn read_slowly(mut stream: TcpStream, fast: &AtomicBool) -> Vec<u8> {
    // The body comes once every call is answered: the wait for the server
    // to answer them bounds this one.
    stream.set_read_timeout(None).unwrap();
    let mut response = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let fast_now = fast.load(Ordering::Relaxed);
        let want = if fast_now { chunk.len() } else { SLOW_CHUNK };
        match stream.read(&mut chunk[..want]) {
            Ok(0) => return response,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("reading the batch's response: {e}"),
        }
        if !fast_now {
            std::thread::sleep(SLOW_PAUSE);
        }
    }
}

#[test]
fn http_a_batch_of_huge_answers_read_slowly_keeps_the_gateway_under_its_bound_and_others_are_served(
) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sb = Sandbox::new();
    let log = sb.path().join("answered.log");
    sb.write("mcpmux.toml", &config(&log));
    let gw = HttpGateway::start(&sb);
    let slow = gw.session();
    let stream = gw.send_post(Some(&slow), &Value::Array(calls()));
    let fast = Arc::new(AtomicBool::new(false));
    let reader = {
        let fast = fast.clone();
        std::thread::spawn(move || read_slowly(stream, &fast))
    };
    wait_for_every_answer(&log, || gw.peak_rss_mib(), "http batch");
    // Another session is served meanwhile, its call to another server too.
    let other = gw.session();
    let (_, listed) = gw.post(
        Some(&other),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let tools = listed["result"]["tools"].as_array().expect("a tool list");
    assert!(
        tools.iter().any(|t| t["name"] == "mcp_demo_echo"),
        "{listed}"
    );
    let (_, echo) = gw.post(
        Some(&other),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "mcp_demo_echo", "arguments": {"text": "served"}}}),
    );
    assert_eq!(echo["result"]["content"][0]["text"], "served", "{echo}");
    fast.store(true, Ordering::Relaxed);
    let response = reader.join().expect("the slow reader panicked");
    let (_, answers) = parse_response(&response);
    let answers = answers.as_array().expect("a batch's answers");
    let results = check_answers(answers);
    assert!(results >= 1, "no call got its result");
    eprintln!("http batch: {results} results, {} busy", CALLS - results);
    assert_peak_under_limit(gw.peak_rss_mib(), "http batch");
}
