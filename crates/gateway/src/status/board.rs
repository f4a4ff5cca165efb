//! What the status page shows of the calls: the latest calls (a bounded
//! ring) and, per tool, calls, errors and a latency histogram per minute
//! over the last minutes. Fed by the policy's audit listener, on the task
//! that made the call; read by the page's snapshots.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use mcpmux_policy::audit::{AuditEvent, AuditStatus};

/// Longest tool name kept (a client may name a tool that does not exist,
/// at any length); longer ones are cut at a character boundary.
const MAX_NAME_BYTES: usize = 256;
/// The name unknown tools' figures are kept under, all together (so that
/// made-up names cannot push real tools out).
const UNKNOWN_TOOLS: &str = "(unknown tools)";

/// `name` cut to [`MAX_NAME_BYTES`].
fn capped(name: &str) -> String {
    if name.len() <= MAX_NAME_BYTES {
        return name.to_owned();
    }
    let mut cut = MAX_NAME_BYTES;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &name[..cut])
}

/// Latest calls kept.
pub(crate) const MAX_CALLS: usize = 200;
/// Tools with statistics kept; past it, the tool idle longest makes room.
const MAX_TOOLS: usize = 512;
/// Minutes of statistics kept per tool.
pub(crate) const MINUTES: u64 = 10;
/// Upper bounds of the latency buckets, in milliseconds; the last bucket
/// takes everything slower.
pub(crate) const BUCKET_BOUNDS_MS: [u64; 7] = [10, 50, 100, 250, 1000, 5000, 30000];
const BUCKETS: usize = BUCKET_BOUNDS_MS.len() + 1;

/// One call as the page lists it: never arguments or output.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallRow {
    /// Rises by one per call recorded (the page's cursor).
    pub seq: u64,
    pub time: String,
    /// The client connection that made it (`c<n>`), when known.
    pub client: Option<String>,
    pub server: Option<String>,
    pub tool: String,
    pub status: &'static str,
    pub duration_ms: u64,
    pub bytes: u64,
    pub redactions: u64,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// One minute of one tool.
#[derive(Debug, Clone, Copy, Default)]
struct Minute {
    /// Minutes since the Unix epoch.
    at: u64,
    calls: u32,
    errors: u32,
    buckets: [u32; BUCKETS],
}

#[derive(Default)]
struct ToolMinutes {
    server: Option<String>,
    minutes: VecDeque<Minute>,
}

/// A tool's figures over the last [`MINUTES`] minutes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ToolFigures {
    pub server: Option<String>,
    pub tool: String,
    pub calls: u64,
    pub errors: u64,
    /// `errors / calls`, 0 without calls.
    pub error_rate: f64,
    /// Calls per latency bucket (bounds: [`BUCKET_BOUNDS_MS`], then slower).
    pub latency_buckets: Vec<u64>,
    /// Calls per minute, oldest first, the current minute last.
    pub calls_per_minute: Vec<u64>,
}

#[derive(Default)]
struct Inner {
    next_seq: u64,
    calls: VecDeque<CallRow>,
    tools: HashMap<(Option<String>, String), ToolMinutes>,
}

/// The calls' side of the status page. Shared (`Arc`) by the audit
/// listener and the page; every list in it is bounded.
#[derive(Default)]
pub(crate) struct Board {
    inner: Mutex<Inner>,
    /// Bumped on every call recorded: open pages wake on it.
    changed: tokio::sync::watch::Sender<u64>,
}

fn minute_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

fn bucket(duration_ms: u64) -> usize {
    BUCKET_BOUNDS_MS
        .iter()
        .position(|&bound| duration_ms < bound)
        .unwrap_or(BUCKETS - 1)
}

impl Board {
    /// Records one call (the policy's audit event), made by `client`.
    pub(crate) fn record(&self, event: &AuditEvent, client: Option<u64>) {
        let failed = !matches!(event.status, AuditStatus::Ok);
        let now = minute_now();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.next_seq += 1;
        let seq = inner.next_seq;
        if inner.calls.len() >= MAX_CALLS {
            inner.calls.pop_front();
        }
        inner.calls.push_back(CallRow {
            seq,
            time: event.time.clone(),
            client: client.map(|c| format!("c{c}")),
            server: event.server.clone(),
            tool: capped(&event.tool),
            status: event.status.as_str(),
            duration_ms: event.duration_ms,
            bytes: event.bytes,
            redactions: event.redactions,
            truncated: event.truncated,
            code: event.code.clone(),
        });
        let key = match &event.server {
            Some(_) => (event.server.clone(), capped(&event.tool)),
            None => (None, UNKNOWN_TOOLS.to_owned()),
        };
        if !inner.tools.contains_key(&key) && inner.tools.len() >= MAX_TOOLS {
            let idlest = inner
                .tools
                .iter()
                .min_by_key(|(_, t)| t.minutes.back().map_or(0, |m| m.at))
                .map(|(k, _)| k.clone());
            if let Some(idlest) = idlest {
                inner.tools.remove(&idlest);
            }
        }
        let tool = inner.tools.entry(key).or_default();
        tool.server = event.server.clone();
        if tool.minutes.back().is_none_or(|m| m.at != now) {
            tool.minutes.push_back(Minute {
                at: now,
                ..Minute::default()
            });
        }
        while tool.minutes.front().is_some_and(|m| m.at + MINUTES <= now) {
            tool.minutes.pop_front();
        }
        if let Some(minute) = tool.minutes.back_mut() {
            minute.calls += 1;
            minute.errors += u32::from(failed);
            minute.buckets[bucket(event.duration_ms)] += 1;
        }
        drop(inner);
        self.changed.send_modify(|n| *n += 1);
    }

    /// The latest calls, newest first.
    pub(crate) fn calls(&self) -> Vec<CallRow> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.calls.iter().rev().cloned().collect()
    }

    /// Each tool called in the last [`MINUTES`] minutes, by name.
    pub(crate) fn figures(&self) -> Vec<ToolFigures> {
        let now = minute_now();
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<ToolFigures> = inner
            .tools
            .iter()
            .filter_map(|((server, tool), t)| {
                let recent: Vec<&Minute> =
                    t.minutes.iter().filter(|m| m.at + MINUTES > now).collect();
                if recent.is_empty() {
                    return None;
                }
                let calls: u64 = recent.iter().map(|m| u64::from(m.calls)).sum();
                let errors: u64 = recent.iter().map(|m| u64::from(m.errors)).sum();
                let mut latency_buckets = vec![0u64; BUCKETS];
                for m in &recent {
                    for (sum, n) in latency_buckets.iter_mut().zip(m.buckets) {
                        *sum += u64::from(n);
                    }
                }
                let calls_per_minute = (now.saturating_sub(MINUTES - 1)..=now)
                    .map(|at| {
                        recent
                            .iter()
                            .find(|m| m.at == at)
                            .map_or(0, |m| u64::from(m.calls))
                    })
                    .collect();
                Some(ToolFigures {
                    server: server.clone(),
                    tool: tool.clone(),
                    calls,
                    errors,
                    error_rate: if calls == 0 {
                        0.0
                    } else {
                        errors as f64 / calls as f64
                    },
                    latency_buckets,
                    calls_per_minute,
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        out
    }

    /// Wakes on every call recorded.
    pub(crate) fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The bucket bounds as the JSON documents them.
pub(crate) fn bucket_bounds() -> Value {
    serde_json::json!(BUCKET_BOUNDS_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(tool: &str, status: AuditStatus, duration_ms: u64) -> AuditEvent {
        AuditEvent {
            time: "2026-12-04T00:00:00.000Z".into(),
            server: Some("s".into()),
            tool: tool.into(),
            status,
            bytes: 10,
            duration_ms,
            redactions: 0,
            truncated: false,
            code: None,
        }
    }

    #[test]
    fn the_ring_keeps_the_latest_calls_newest_first() {
        let board = Board::default();
        for i in 0..(MAX_CALLS + 5) {
            board.record(&event(&format!("t{i}"), AuditStatus::Ok, 1), Some(3));
        }
        let calls = board.calls();
        assert_eq!(calls.len(), MAX_CALLS);
        assert_eq!(calls[0].tool, format!("t{}", MAX_CALLS + 4));
        assert_eq!(calls[0].client.as_deref(), Some("c3"));
        assert!(calls[0].seq > calls[1].seq);
    }

    #[test]
    fn figures_count_errors_and_bucket_latencies() {
        let board = Board::default();
        board.record(&event("a", AuditStatus::Ok, 5), None);
        board.record(&event("a", AuditStatus::Error, 120), None);
        board.record(&event("a", AuditStatus::Timeout, 60_000), None);
        let figures = board.figures();
        assert_eq!(figures.len(), 1);
        let a = &figures[0];
        assert_eq!((a.calls, a.errors), (3, 2));
        assert!((a.error_rate - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(a.latency_buckets, [1, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(a.calls_per_minute.len() as u64, MINUTES);
        assert_eq!(*a.calls_per_minute.last().unwrap(), 3);
    }

    #[test]
    fn the_tools_kept_are_bounded() {
        let board = Board::default();
        for i in 0..(MAX_TOOLS + 10) {
            board.record(&event(&format!("t{i}"), AuditStatus::Ok, 1), None);
        }
        assert_eq!(board.figures().len(), MAX_TOOLS);
    }

    #[test]
    fn made_up_names_are_cut_and_counted_together() {
        let board = Board::default();
        for i in 0..50 {
            let mut e = event(
                &format!("{i}{}", "é".repeat(10_000)),
                AuditStatus::NotAllowed,
                1,
            );
            e.server = None;
            board.record(&e, None);
        }
        let calls = board.calls();
        assert!(calls.iter().all(|c| c.tool.len() <= MAX_NAME_BYTES + 3));
        let figures = board.figures();
        assert_eq!(figures.len(), 1);
        assert_eq!(
            (figures[0].tool.as_str(), figures[0].calls),
            (UNKNOWN_TOOLS, 50)
        );
    }
}
