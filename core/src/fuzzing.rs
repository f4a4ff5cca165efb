//! Entry points for the fuzz targets in `fuzz/` and for the replay of their
//! corpus in `crates/sessions/tests/fuzz_corpus_replay.rs`: each takes arbitrary bytes,
//! drives one parser of untrusted input through its public (or crate)
//! interface, and checks what must hold whatever the input was. They return
//! `Err` with a description when a property fails; a panic inside is a bug
//! of the code under test. Not part of the engine's API; stable only in
//! name (the fuzz targets and the replay test call them).
//!
//! Everything here runs on the calling thread; [`jsonrpc_stream`] runs its
//! own single-threaded Tokio runtime.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::value::RawValue;

use crate::config::Config;
use crate::jsonrpc::{Inbound, Peer, RequestOptions, RpcError};
use crate::net::sse_parser::{self, Item};
use crate::transport::line_reader::{read_lines, Lines};
use crate::transport::{FrameSink, Transport};

/// Splits fuzz input into a few control bytes and the rest.
fn take<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut head = [0u8; N];
    let n = data.len().min(N);
    head[..n].copy_from_slice(&data[..n]);
    (head, &data[n..])
}

// ----------------------------------------------------------- JSON-RPC lines

/// A reader that hands out its bytes in pieces of one size (the size at
/// which a socket or pipe delivers them does not matter to the framing).
struct Pieces<'a> {
    rest: &'a [u8],
    size: usize,
}

impl tokio::io::AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let n = self.rest.len().min(self.size).min(buf.remaining());
        buf.put_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        std::task::Poll::Ready(Ok(()))
    }
}

/// Hands lines to a peer's sink, checking the framing on the way.
struct Checked {
    sink: Weak<dyn FrameSink>,
    max: usize,
    /// Bytes of the lines handed over, with their newlines.
    line_bytes: usize,
    /// Messages reported as over the cap (once each).
    oversized: usize,
    problem: Option<String>,
}

impl Lines for Checked {
    fn line(&mut self, line: &[u8]) -> bool {
        if line.len() > self.max || line.contains(&b'\n') {
            self.problem = Some(format!("a line of {} bytes passed", line.len()));
        }
        self.line_bytes += line.len() + 1;
        if let Some(sink) = self.sink.upgrade() {
            sink.on_frame(line);
        }
        true
    }

    fn oversized(&mut self, id: Option<u64>, size: usize) -> bool {
        if size <= self.max {
            self.problem = Some(format!("{size} bytes reported as oversized"));
        }
        self.oversized += 1;
        if let Some(sink) = self.sink.upgrade() {
            sink.on_oversized(id, size, self.max);
        }
        true
    }
}

/// Answers every server request with an error, ignores notifications.
struct Refuse;

impl Inbound for Refuse {
    fn on_request(
        &self,
        _: &str,
        _: Option<&RawValue>,
    ) -> BoxFuture<'static, Result<serde_json::Value, RpcError>> {
        Box::pin(async { Err(RpcError::new(-32601, "fuzzing")) })
    }

    fn on_notification(&self, _: &str, _: Option<&RawValue>) {}
}

/// Takes what the peer sends and drops it.
struct Discard;

impl Transport for Discard {
    fn send(&self, _: Vec<u8>) -> Result<(), crate::Error> {
        Ok(())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// JSON-RPC over a byte stream: the stdio line framing (under a cap) and a
/// real [`Peer`] decoding every message, with three requests of ours in
/// flight so that responses, errors, progress and server requests reach
/// them. Bytes 0 and 1 choose the read size and the cap.
pub fn jsonrpc_stream(data: &[u8]) -> Result<(), String> {
    let ([size, cap], stream) = take::<2>(data);
    let size = usize::from(size) % 64 + 1;
    let max = 16 + usize::from(cap) * 8;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let peer = Peer::new("fuzz", Arc::new(Refuse));
        peer.attach(Arc::new(Discard));
        let options = RequestOptions {
            timeout: Duration::from_secs(3600),
            max_total: Duration::from_secs(3600),
            track_progress: true,
            on_progress: None,
            cancellable: true,
            headers: Vec::new(),
            answer_gate: None,
        };
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let (peer, options) = (peer.clone(), options.clone());
                tokio::spawn(async move {
                    let id = peer.next_id();
                    peer.request::<()>(id, "tools/call", None, &options).await
                })
            })
            .collect();
        tokio::task::yield_now().await;
        let mut checked = Checked {
            sink: peer.sink(),
            max,
            line_bytes: 0,
            oversized: 0,
            problem: None,
        };
        let reader = Pieces { rest: stream, size };
        read_lines(reader, max, &mut checked).await;
        tokio::task::yield_now().await;
        for call in calls {
            call.abort();
        }
        peer.close().await;
        if let Some(problem) = checked.problem {
            return Err(problem);
        }
        // Every line under the cap was handed over whole, and every message
        // over it (a trailing one without its newline too) reported once.
        let (body, tail) = match stream.iter().rposition(|&b| b == b'\n') {
            Some(i) => (&stream[..i], &stream[i + 1..]),
            None => (&stream[..0], stream),
        };
        let complete: Vec<&[u8]> = if stream.contains(&b'\n') {
            body.split(|&b| b == b'\n').collect()
        } else {
            Vec::new()
        };
        let line_bytes: usize = complete
            .iter()
            .filter(|l| l.len() <= max)
            .map(|l| l.len() + 1)
            .sum();
        let oversized =
            complete.iter().filter(|l| l.len() > max).count() + usize::from(tail.len() > max);
        if checked.line_bytes != line_bytes || checked.oversized != oversized {
            return Err(format!(
                "{line_bytes} bytes of lines and {oversized} oversized messages expected, \
                 {} and {} reported",
                checked.line_bytes, checked.oversized
            ));
        }
        Ok(())
    })
}

// ------------------------------------------------------------------ config

/// Variables the config fuzzers can expand: one set, one empty.
fn lookup(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("s3cr3t-value".to_owned()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

/// A config text (TOML, or JSON when it starts with `{`): parsing returns
/// a config or `CONFIG_INVALID`, never another error.
pub fn config(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    match Config::parse_with_vars(&text, &lookup) {
        Ok(_) => Ok(()),
        Err(e) if e.code() == "CONFIG_INVALID" => Ok(()),
        Err(e) => Err(format!("{}: {e}", e.code())),
    }
}

/// A JSON `mcpServers` config: [`config`] on the input, made to start
/// with `{` so that it is read as JSON.
pub fn config_json(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let text = text.trim_start();
    match text.starts_with('{') {
        true => config(text.as_bytes()),
        false => config(format!("{{{text}").as_bytes()),
    }
}

// --------------------------------------------------------------------- SSE

/// An event stream: parsed whole and in pieces (cut where bytes 1..4 say)
/// it gives the same items (an oversized event is reported when the cap is
/// passed, so its size and head depend on the pieces); no event is over
/// the cap (byte 0); every oversized report is over it.
pub fn sse(data: &[u8]) -> Result<(), String> {
    let ([cap, a, b, c], stream) = take::<4>(data);
    let max = usize::from(cap) * 4;
    let parse = |pieces: &[&[u8]]| -> Result<Vec<Item>, String> {
        let mut items = sse_parser::parse_chunks(pieces.iter().copied(), max);
        for item in &mut items {
            if let Item::Oversized { size, head } = item {
                if *size <= max || head.len() > 1024 {
                    return Err(format!(
                        "oversized report of {size} bytes, head {}",
                        head.len()
                    ));
                }
                (*size, *head) = (0, Vec::new());
            }
        }
        Ok(items)
    };
    let whole = parse(&[stream])?;
    let mut cuts = [a, b, c].map(|x| usize::from(x) * stream.len() / 255);
    cuts.sort_unstable();
    let pieces = [
        &stream[..cuts[0]],
        &stream[cuts[0]..cuts[1]],
        &stream[cuts[1]..cuts[2]],
        &stream[cuts[2]..],
    ];
    let cut = parse(&pieces)?;
    if whole != cut {
        return Err(format!("whole: {whole:?}\ncut at {cuts:?}: {cut:?}"));
    }
    let bytewise = parse(&stream.chunks(1).collect::<Vec<_>>())?;
    if whole != bytewise {
        return Err(format!("whole: {whole:?}\nbyte by byte: {bytewise:?}"));
    }
    // Lossy decoding may grow invalid bytes into U+FFFD: check valid UTF-8 only.
    let valid = std::str::from_utf8(stream).is_ok();
    for item in &whole {
        if let Item::Event(e) = item {
            if valid && e.data.len() > max {
                return Err(format!("an event of {} bytes passed", e.data.len()));
            }
        }
    }
    Ok(())
}

// -------------------------------------------------------------- tool names

/// `(server, tool)` pairs, one a line, split at the first TAB: the hub
/// names are one per pair, distinct, at most `MAX_LEN` characters of
/// `[A-Za-z0-9_-]`, and the same when assigned again.
pub fn tool_names(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let pairs: Vec<(&str, &str)> = text
        .lines()
        .map(|l| l.split_once('\t').unwrap_or((l, "")))
        .collect();
    let names = crate::tool_names::assign(&pairs);
    if names.len() != pairs.len() {
        return Err(format!("{} pairs, {} names", pairs.len(), names.len()));
    }
    let mut seen = HashSet::new();
    for name in &names {
        if name.chars().count() > crate::tool_names::MAX_LEN
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!("bad name {name:?}"));
        }
        if !seen.insert(name) {
            return Err(format!("{name:?} assigned twice"));
        }
    }
    if crate::tool_names::assign(&pairs) != names {
        return Err("assigned differently the second time".to_owned());
    }
    Ok(())
}
