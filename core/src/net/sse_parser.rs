//! An incremental parser for `text/event-stream` bodies (the WHATWG HTML
//! "server-sent events" interpretation rules), linear in its input, with a
//! cap on the size of one event.
//!
//! Why our own: the crate used before re-parsed its whole buffer on every
//! chunk (a 4 MB event cost seconds, quadratic) and checked sizes only when
//! an event completed, so an endless event burned a core until the call
//! timed out. Here every input byte is looked at a bounded number of times:
//! new bytes are scanned for line ends once (`memchr`), a line is copied
//! at most twice (into the line buffer when it spans chunks, then into the
//! data buffer), and an event's data is validated as UTF-8 once.
//!
//! An event whose buffered size passes the cap is reported as
//! [`Item::Oversized`] as soon as that is known (mid-line included); the
//! rest of it is skipped without being buffered, and parsing goes on after
//! the blank line that ends it.

use std::collections::VecDeque;
use std::time::Duration;

/// The longest reconnection time a stream may ask for: a server's `retry`
/// of a day would otherwise leave a dead stream unnoticed, and its
/// reconnect task asleep, for that long.
pub const MAX_RETRY: Duration = Duration::from_secs(60);

/// How much of an oversized event's data is kept, to find its request id.
const HEAD: usize = 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event type (`event:` field); `"message"` when none was given.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The stream's last event id when the event was dispatched (ids
    /// persist across events until an `id:` field changes them).
    pub id: String,
}

/// What the parser hands out, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A complete event.
    Event(Event),
    /// An event grew past the cap and is being discarded.
    Oversized {
        /// Bytes of the event seen when the cap was passed (at least the cap).
        size: usize,
        /// The start of its data (up to 1 KiB), to find a request id in.
        head: Vec<u8>,
    },
}

/// The parser state of one event stream. Owned by whoever reads the stream;
/// feed it chunks with [`push`](SseParser::push), take what is ready with
/// [`next_item`](SseParser::next_item).
#[derive(Debug)]
pub struct SseParser {
    max: usize,
    /// The current line when it spans chunks (never holds a line end).
    line: Vec<u8>,
    /// The last byte seen was CR: an LF right after it ends nothing.
    after_cr: bool,
    /// No line completed yet: a leading byte order mark is still to strip.
    first_line: bool,
    /// The data buffer: every `data` value followed by `\n`.
    data: Vec<u8>,
    event_type: String,
    /// The last event id buffer (set by `id` fields).
    id_buffer: String,
    /// The last event id string (set from the buffer at each dispatch).
    last_event_id: String,
    retry: Option<Duration>,
    /// Discarding an oversized event until its blank line.
    skipping: bool,
    /// While skipping: the current line has bytes (its end is not a blank line).
    skip_partial: bool,
    ready: VecDeque<Item>,
}

impl SseParser {
    /// A parser whose events may hold at most `max_event_bytes` of data
    /// (other fields and lines are held to the same bound).
    pub fn new(max_event_bytes: usize) -> SseParser {
        SseParser {
            max: max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            data: Vec::new(),
            event_type: String::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            retry: None,
            skipping: false,
            skip_partial: false,
            ready: VecDeque::new(),
        }
    }

    /// Parses one more chunk of the stream. Chunks may split the stream
    /// anywhere (inside a line, between CR and LF, inside a UTF-8 sequence).
    pub fn push(&mut self, mut chunk: &[u8]) {
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while let Some(at) = memchr::memchr2(b'\r', b'\n', chunk) {
            let segment = &chunk[..at];
            let mut next = at + 1;
            if chunk[at] == b'\r' {
                match chunk.get(at + 1) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.end_line(segment);
            chunk = &chunk[next..];
        }
        if chunk.is_empty() {
            return;
        }
        if self.skipping {
            self.skip_partial = true;
            return;
        }
        self.line.extend_from_slice(chunk);
        self.check_partial_line();
    }

    /// The next event (or oversized event) parsed so far, in stream order.
    pub fn next_item(&mut self) -> Option<Item> {
        self.ready.pop_front()
    }

    /// The stream's last event id as of the last dispatch (empty: none);
    /// what a reconnect sends as `Last-Event-ID`.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time the stream asked for (`retry` field), if any,
    /// at most [`MAX_RETRY`].
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// A line ended; `tail` is its part in the current chunk.
    fn end_line(&mut self, tail: &[u8]) {
        if self.skipping {
            let blank = !self.skip_partial && tail.is_empty();
            self.skip_partial = false;
            self.first_line = false;
            if blank {
                self.skipping = false;
                self.reset_event();
            }
            return;
        }
        if self.line.is_empty() {
            self.process_line(tail);
        } else {
            let mut line = std::mem::take(&mut self.line);
            line.extend_from_slice(tail);
            self.process_line(&line);
            line.clear();
            // Keep a small buffer around; give a large one back.
            if line.capacity() <= 64 * 1024 {
                self.line = line;
            }
        }
    }

    fn process_line(&mut self, mut line: &[u8]) {
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        // Other lines than data count whole, comments included: the same
        // bound as for a line still arriving (see `check_partial_line`).
        if field != b"data" && line.len() > self.max {
            return self.oversized(line.len(), b"");
        }
        if field.is_empty() {
            return; // a comment
        }
        match field {
            b"event" => self.event_type = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                if self.data.len() - 1 > self.max {
                    let data = std::mem::take(&mut self.data);
                    self.oversized(data.len() - 1, &data);
                }
            }
            b"id" if !value.contains(&0) => {
                self.id_buffer = String::from_utf8_lossy(value).into_owned()
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only; a value too large for u64 is ignored.
                if let Some(ms) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    self.retry = Some(Duration::from_millis(ms).min(MAX_RETRY));
                }
            }
            _ => {}
        }
    }

    /// After a chunk: whether the unfinished line already makes the event
    /// too large. Lower bounds only, so no event within the cap is refused.
    fn check_partial_line(&mut self) {
        let line = match self.first_line {
            true => self
                .line
                .strip_prefix(b"\xEF\xBB\xBF")
                .unwrap_or(&self.line),
            false => &self.line[..],
        };
        // "data:" plus at most one space come before the value.
        let size = match line.strip_prefix(b"data:") {
            Some(rest) => self.data.len() + rest.len().saturating_sub(1),
            // It may still become a data line ("dat" of "data: ...").
            None if b"data:".starts_with(line) => 0,
            None => line.len(),
        };
        if size > self.max {
            let mut head = self.data.clone();
            head.truncate(HEAD);
            if head.len() < HEAD {
                if let Some(rest) = line.strip_prefix(b"data:") {
                    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                    head.extend_from_slice(&rest[..rest.len().min(HEAD - head.len())]);
                }
            }
            self.line = Vec::new();
            self.oversized(size, &head);
            self.skip_partial = true;
        }
    }

    /// Reports the current event as oversized and skips the rest of it.
    fn oversized(&mut self, size: usize, head: &[u8]) {
        self.ready.push_back(Item::Oversized {
            size,
            head: head[..head.len().min(HEAD)].to_vec(),
        });
        self.reset_event();
        self.first_line = false;
        self.skipping = true;
        self.skip_partial = false;
    }

    fn reset_event(&mut self) {
        self.data = Vec::new();
        self.event_type.clear();
    }

    /// A blank line: the event is complete.
    fn dispatch(&mut self) {
        self.last_event_id.clone_from(&self.id_buffer);
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the last "\n"
        let data = match String::from_utf8(data) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let event = match std::mem::take(&mut self.event_type) {
            t if t.is_empty() => "message".to_owned(),
            t => t,
        };
        self.ready.push_back(Item::Event(Event {
            event,
            data,
            id: self.last_event_id.clone(),
        }));
    }
}

/// Parses a whole stream given in `chunks` (split wherever they are split)
/// and returns what it held. For tests and fuzzing.
pub fn parse_chunks<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
    max_event_bytes: usize,
) -> Vec<Item> {
    let mut parser = SseParser::new(max_event_bytes);
    let mut out = Vec::new();
    for chunk in chunks {
        parser.push(chunk);
        out.extend(std::iter::from_fn(|| parser.next_item()));
    }
    out
}

/// The events of a response body, read as they arrive. Owned by the task
/// that reads the body.
pub struct EventStream<'a, E> {
    body: futures::stream::BoxStream<'a, Result<bytes::Bytes, E>>,
    parser: SseParser,
    done: bool,
}

impl<'a, E> EventStream<'a, E> {
    /// Reads `body` with events of at most `max_event_bytes`.
    pub fn new(
        body: futures::stream::BoxStream<'a, Result<bytes::Bytes, E>>,
        max_event_bytes: usize,
    ) -> Self {
        EventStream {
            body,
            parser: SseParser::new(max_event_bytes),
            done: false,
        }
    }

    /// The next item; `None` when the body ended, an error when it failed
    /// (then `None` after it). An unfinished last event is dropped.
    pub async fn next(&mut self) -> Option<Result<Item, E>> {
        use futures::StreamExt;
        loop {
            if let Some(item) = self.parser.next_item() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.parser.push(&chunk),
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                None => self.done = true,
            }
        }
    }

    /// The parser, for its last event id and retry.
    pub fn parser(&self) -> &SseParser {
        &self.parser
    }
}

#[cfg(test)]
#[path = "sse_parser_tests.rs"]
mod tests;
