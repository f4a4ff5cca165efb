//! Splits a byte stream into newline-delimited messages under a size cap.
//!
//! The buffer starts small and grows only for large messages (then shrinks
//! back), so an idle connection costs a few KiB. A message that fits in the
//! buffer is handed over without a copy. A message over the cap is never
//! held whole: it is reported as soon as the cap is passed (a line that never
//! ends must not wait for a timeout), with the request id found at its start;
//! the rest is discarded, and reading goes on at the next line.

use std::collections::VecDeque;

#[cfg(any(test, feature = "fuzzing"))]
use tokio::io::{AsyncRead, AsyncReadExt};

/// What the reader hands out.
pub(crate) trait Lines {
    /// One complete message, without its newline. Returns `false` to stop reading.
    fn line(&mut self, line: &[u8]) -> bool;
    /// A message passed the cap and is being discarded. `size` is what was
    /// read of it so far (the whole message when its end was already read).
    /// Called once per message, as soon as the cap is passed.
    fn oversized(&mut self, id: Option<u64>, size: usize) -> bool;
}

/// Initial (and idle) buffer size.
const INITIAL: usize = 4 * 1024;
/// Above this, an emptied buffer is given back.
const SHRINK_ABOVE: usize = 256 * 1024;
/// How much of an oversized message is kept to find its request id.
const PEEK: usize = 1024;

/// Why reading stopped.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) enum End {
    /// End of stream.
    Eof,
    /// A read failed.
    Failed,
    /// The consumer asked to stop.
    Stopped,
}

/// Reads `input` until it ends, handing every message to `out`.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) async fn read_lines(
    mut input: impl AsyncRead + Unpin,
    max: usize,
    out: &mut impl Lines,
) -> End {
    let mut splitter = Splitter::new(max);
    loop {
        if !splitter.split(out) {
            return End::Stopped;
        }
        match input.read_buf(splitter.buffer()).await {
            Ok(0) => return End::Eof,
            Ok(_) => {}
            Err(_) => return End::Failed,
        }
    }
}

/// The state of [`read_lines`] between reads: what was read of the next
/// message. For readers that do their own reading (the stdio transport's,
/// shared by its reader task and a caller waiting for an answer).
pub(crate) struct Splitter {
    buf: Vec<u8>,
    max: usize,
    /// Inside a message over the cap (already reported): drop bytes up to
    /// its newline.
    discarding: bool,
    /// `buf[..scanned]` holds no newline.
    scanned: usize,
}

impl Splitter {
    /// An empty splitter for messages of at most `max` bytes.
    pub(crate) fn new(max: usize) -> Splitter {
        Splitter {
            buf: Vec::with_capacity(INITIAL),
            max,
            discarding: false,
            scanned: 0,
        }
    }

    /// Where the next read appends its bytes (it has spare capacity).
    pub(crate) fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Hands every complete message read so far to `out` and keeps the rest
    /// (reporting and dropping a message over the cap). Returns `false` when
    /// `out` asked to stop.
    pub(crate) fn split(&mut self, out: &mut impl Lines) -> bool {
        let max = self.max;
        let buf = &mut self.buf;
        let mut start = 0;
        while let Some(i) = memchr::memchr(b'\n', &buf[start + self.scanned..]) {
            let end = start + self.scanned + i;
            let line = &buf[start..end];
            let go_on = if std::mem::take(&mut self.discarding) {
                true
            } else if line.len() > max {
                // The whole message is here: both ends can name its id.
                let mut b = Oversized::default();
                b.push(line);
                out.oversized(b.request_id(), b.size)
            } else {
                out.line(line)
            };
            if !go_on {
                return false;
            }
            start = end + 1;
            self.scanned = 0;
        }
        let pending = buf.len() - start;
        if self.discarding {
            buf.clear();
            self.scanned = 0;
        } else if pending > max {
            // Past the cap without an end: report it now (it may never end),
            // naming the id when the message starts with it, and drop the bytes.
            let id = head_id(&buf[start..]);
            if !out.oversized(id, pending) {
                return false;
            }
            self.discarding = true;
            buf.clear();
            self.scanned = 0;
        } else if start > 0 {
            buf.drain(..start);
            self.scanned = buf.len();
        } else {
            self.scanned = buf.len();
        }
        if buf.is_empty() && buf.capacity() > SHRINK_ABOVE {
            *buf = Vec::with_capacity(INITIAL);
        }
        if buf.len() == buf.capacity() {
            buf.reserve(buf.capacity());
        }
        true
    }
}

/// The top-level `"id"` of a message whose start is `bytes`, when it comes
/// first (as most serializers put it). Deeper in an unfinished message an
/// `"id"` may belong to the content, so only the start is trusted.
fn head_id(bytes: &[u8]) -> Option<u64> {
    id_in_head(&bytes[..bytes.len().min(PEEK)])
}

/// The start and end of a message too large to keep, and its size.
#[derive(Default)]
struct Oversized {
    size: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
}

impl Oversized {
    fn push(&mut self, bytes: &[u8]) {
        self.size += bytes.len();
        let room = PEEK.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.tail.extend(&bytes[bytes.len().saturating_sub(PEEK)..]);
        while self.tail.len() > PEEK {
            self.tail.pop_front();
        }
    }

    /// The top-level `"id"` of the message: serializers put it either first
    /// or last, so look at the end, then at the start.
    fn request_id(&self) -> Option<u64> {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let last = memchr::memmem::rfind(&tail, b"\"id\":").and_then(|at| id_after(&tail, at));
        last.or_else(|| {
            memchr::memmem::find(&self.head, b"\"id\":").and_then(|at| id_after(&self.head, at))
        })
    }
}

/// The first `"id":` number in `head`, the start of a message too large to
/// keep (serializers usually put a response's id before its result).
pub(crate) fn id_in_head(head: &[u8]) -> Option<u64> {
    memchr::memmem::find(head, b"\"id\":").and_then(|at| id_after(head, at))
}

fn id_after(bytes: &[u8], at: usize) -> Option<u64> {
    let rest = &bytes[at + 5..];
    let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        lines: Vec<String>,
        oversized: Vec<(Option<u64>, usize)>,
    }

    impl Lines for Collect {
        fn line(&mut self, line: &[u8]) -> bool {
            self.lines.push(String::from_utf8_lossy(line).into_owned());
            true
        }
        fn oversized(&mut self, id: Option<u64>, size: usize) -> bool {
            self.oversized.push((id, size));
            true
        }
    }

    async fn run(input: Vec<u8>, max: usize) -> Collect {
        let mut out = Collect::default();
        let end = read_lines(&input[..], max, &mut out).await;
        assert!(matches!(end, End::Eof));
        out
    }

    #[tokio::test]
    async fn splits_lines_across_reads_and_sizes() {
        let long = "y".repeat(100_000);
        let input = format!("a\n\nbc\n{long}\nlast-without-newline");
        let out = run(input.into_bytes(), 1 << 20).await;
        assert_eq!(out.lines.len(), 4);
        assert_eq!(out.lines[0], "a");
        assert_eq!(out.lines[1], "");
        assert_eq!(out.lines[3].len(), 100_000);
    }

    #[tokio::test]
    async fn discards_oversized_lines_and_resynchronizes() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":\"{}\"}}",
            "x".repeat(50_000)
        );
        let input = format!("small\n{big}\nafter\n");
        let out = run(input.into_bytes(), 10_000).await;
        assert_eq!(out.lines, ["small", "after"]);
        assert_eq!(out.oversized.len(), 1);
        assert_eq!(out.oversized[0].0, Some(42));
        assert!(out.oversized[0].1 > 10_000 && out.oversized[0].1 <= big.len());
    }

    /// Stops at the first message over the cap, as a connection that gives up would.
    struct StopOnOversized(Vec<(Option<u64>, usize)>);

    impl Lines for StopOnOversized {
        fn line(&mut self, _: &[u8]) -> bool {
            true
        }
        fn oversized(&mut self, id: Option<u64>, size: usize) -> bool {
            self.0.push((id, size));
            false
        }
    }

    #[tokio::test]
    async fn reports_a_line_that_never_ends_once_it_passes_the_cap() {
        let start = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":""#;
        let endless = (&start[..]).chain(tokio::io::repeat(b'x'));
        let mut out = StopOnOversized(Vec::new());
        let end = read_lines(endless, 100_000, &mut out).await;
        assert!(matches!(end, End::Stopped));
        assert_eq!(out.0.len(), 1);
        assert_eq!(out.0[0].0, Some(7));
        assert!(out.0[0].1 > 100_000, "{:?}", out.0);
    }

    #[tokio::test]
    async fn whole_oversized_lines_name_the_id_at_their_end() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":\"{}\",\"id\":9}}",
            "x".repeat(3_000)
        );
        let out = run(format!("{big}\nafter\n").into_bytes(), 2_000).await;
        assert_eq!(out.lines, ["after"]);
        assert_eq!(out.oversized, [(Some(9), big.len())]);
    }

    #[test]
    fn finds_ids_at_either_end() {
        let mut first = Oversized::default();
        first.push(br#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"xxxx"#);
        first.push(&vec![b'x'; 5000]);
        first.push(br#""}]}}"#);
        assert_eq!(first.request_id(), Some(42));

        let mut last = Oversized::default();
        last.push(br#"{"result":{"content":[{"id":1,"text":""#);
        last.push(&vec![b'x'; 5000]);
        last.push(br#""}]},"jsonrpc":"2.0","id": 7}"#);
        assert_eq!(last.request_id(), Some(7));
    }
}
