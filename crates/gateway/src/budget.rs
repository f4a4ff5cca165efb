//! The bytes of messages a gateway holds for its clients (answers waiting
//! to be written, or a batch's answers being assembled), counted against a
//! budget per client and a total one, with every copy the gateway makes of
//! them.
//!
//! A tool's result is counted from the moment a server's reader reads it
//! (`admission.rs`, through core's `AnswerGate`): once as the message it
//! becomes, and [`COPIES_WHILE_HANDLED`] − 1 more times while it is parsed,
//! redacted and re-encoded. Once it is the message waiting for its client
//! the further copies are given back ([`Held::settle`]); while it is
//! encoded for the transport, the encoding counts as one more. Other
//! messages are counted from the moment they are ready to go out
//! ([`ClientBudget::hold`]). Until the transport has written it (stdio) or
//! hyper has taken the last of it (HTTP): [`Held`] gives its bytes back
//! when dropped.
//!
//! An answer that does not fit is not kept: the client gets a -32000
//! "gateway busy" error in its place, and while a client is full its new
//! requests get the same error at once (see `connection.rs`). Whether it
//! fits counts the messages held (each once), so that what a client gets
//! does not depend on how fast the gateway handles answers; the copies of
//! answers being handled count towards backpressure instead: while they
//! take a client (or the gateway) past its budget, the servers' readers
//! read nothing more ([`ClientBudget::pressure`]), until they are handled,
//! which needs no reading. One answer larger than the client's budget still
//! goes out whole when the client holds nothing else and it fits the
//! total, so no answer is refused for ever.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use mcpmux_core::Backpressure;
use serde_json::Value;
use tokio::sync::Notify;

/// Default bytes held for one client (64 MiB).
pub const DEFAULT_CLIENT_BUDGET_BYTES: usize = 64 << 20;
/// Default bytes held for every client together (256 MiB).
pub const DEFAULT_TOTAL_BUDGET_BYTES: usize = 256 << 20;

/// Most copies of one tool result the gateway holds at once while it
/// handles it: the result as read; the result parsed; and the one the
/// policy's redaction, or the framing of its text, builds before the one
/// it replaces is dropped.
pub(crate) const COPIES_WHILE_HANDLED: usize = 3;

/// One count of bytes against a limit.
#[derive(Debug)]
struct Count {
    limit: usize,
    /// The messages held, each once.
    used: AtomicUsize,
    /// The further copies of messages being handled or encoded.
    copies: AtomicUsize,
    /// Something was refused since the last bytes were given back.
    full: AtomicBool,
    /// Woken when bytes are given back (see [`Count::pressed`]).
    relief: Notify,
}

impl Count {
    fn new(limit: usize) -> Count {
        Count {
            limit,
            used: AtomicUsize::new(0),
            copies: AtomicUsize::new(0),
            full: AtomicBool::new(false),
            relief: Notify::new(),
        }
    }

    /// Takes `bytes` when they fit (or, with `alone_with`, when that is all
    /// that is held: a message alone goes whatever its size); otherwise
    /// marks the count full.
    fn take(&self, bytes: usize, alone_with: Option<usize>) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let fits = used.checked_add(bytes).is_some_and(|sum| sum <= self.limit);
                (fits || alone_with == Some(used)).then(|| used + bytes)
            })
            .is_ok();
        if !taken {
            self.full.store(true, Ordering::Release);
        }
        taken
    }

    fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
        self.full.store(false, Ordering::Release);
        self.relief.notify_waiters();
    }

    /// Counts `bytes` of copies, fitting or not: they exist already (or are
    /// about to), and are given back once handled; they only hold readers
    /// off meanwhile.
    fn add_copies(&self, bytes: usize) {
        self.copies.fetch_add(bytes, Ordering::AcqRel);
    }

    fn give_back_copies(&self, bytes: usize) {
        if bytes > 0 {
            self.copies.fetch_sub(bytes, Ordering::AcqRel);
            self.relief.notify_waiters();
        }
    }

    /// Whether copies of messages being handled take this count past its
    /// limit: readers hold off until they are handled (which gives the
    /// copies back without any reading, so this always ends).
    fn pressed(&self) -> bool {
        let copies = self.copies.load(Ordering::Acquire);
        copies > 0 && self.used.load(Ordering::Acquire) + copies > self.limit
    }

    /// Ends once [`Count::pressed`] is false.
    async fn relieved(&self) {
        loop {
            let notified = self.relief.notified();
            tokio::pin!(notified);
            // Registered before the check: a relief in between wakes it.
            notified.as_mut().enable();
            if !self.pressed() {
                return;
            }
            notified.await;
        }
    }

    /// Everything counted: the messages held and their copies.
    fn all(&self) -> usize {
        self.used.load(Ordering::Acquire) + self.copies.load(Ordering::Acquire)
    }

    /// Whether a new request should wait: the limit is reached, or an
    /// answer was refused and nothing was given back since. Never while
    /// nothing is held (nothing would be given back to end it).
    fn is_full(&self) -> bool {
        let used = self.used.load(Ordering::Acquire);
        used > 0 && (used >= self.limit || self.full.load(Ordering::Acquire))
    }
}

/// The budget every client of one gateway shares.
#[derive(Debug, Clone)]
pub(crate) struct Total(Arc<Count>);

impl Total {
    pub(crate) fn new(limit: usize) -> Total {
        Total(Arc::new(Count::new(limit)))
    }

    /// Bytes held now for every client, with every copy.
    pub(crate) fn held(&self) -> usize {
        self.0.all()
    }
}

/// One client's budget, inside the gateway's total. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ClientBudget {
    own: Arc<Count>,
    total: Total,
    /// Its backpressure, one for all its answers (readers keep one of each).
    pressure: Arc<Pressure>,
}

impl ClientBudget {
    pub(crate) fn new(limit: usize, total: Total) -> ClientBudget {
        let own = Arc::new(Count::new(limit));
        let pressure = Arc::new(Pressure {
            own: own.clone(),
            total: total.0.clone(),
        });
        ClientBudget {
            own,
            total,
            pressure,
        }
    }

    /// Bytes of answers held for this client now.
    pub(crate) fn used(&self) -> usize {
        self.own.used.load(Ordering::Acquire)
    }

    /// The client's bound, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.own.limit
    }

    /// Why a new request of this client is refused now, if it is: it
    /// holds its budget or more, or the gateway holds its total.
    pub(crate) fn refuses_new(&self) -> Option<String> {
        if self.own.is_full() {
            Some(format!(
                "gateway busy: answers of {} bytes wait for this client to read them (its budget is {} bytes); retry once it has read them",
                self.own.used.load(Ordering::Acquire),
                self.own.limit
            ))
        } else if self.total.0.is_full() {
            Some(format!(
                "gateway busy: it holds {} bytes of answers for its clients (its total budget is {} bytes); retry later",
                self.total.held(),
                self.total.0.limit
            ))
        } else {
            None
        }
    }

    /// Counts `msg` (its JSON size) against the budgets; why not, when it
    /// does not fit.
    pub(crate) fn hold(&self, msg: &Value) -> Result<Held, String> {
        self.take(json_len(msg))
    }

    /// Counts an answer of `bytes` just read off a server, with the
    /// further copies it will have while it is handled (which hold readers
    /// off past the budget, see [`ClientBudget::pressure`]); why not, when
    /// it does not fit: then it is never copied.
    pub(crate) fn admit(&self, bytes: usize) -> Result<Held, String> {
        let mut held = self.take(bytes)?;
        let copies = bytes.saturating_mul(COPIES_WHILE_HANDLED - 1);
        self.own.add_copies(copies);
        self.total.0.add_copies(copies);
        held.copies = copies;
        Ok(held)
    }

    /// This client's backpressure: whether the copies of the answers being
    /// handled for it take it, or the gateway, past its budget (the same
    /// `Arc` every time).
    pub(crate) fn pressure(&self) -> Arc<Pressure> {
        self.pressure.clone()
    }

    /// Counts `bytes` of one message against both budgets.
    fn take(&self, bytes: usize) -> Result<Held, String> {
        if !self.own.take(bytes, Some(0)) {
            return Err(format!(
                "gateway busy: a message of {bytes} bytes for this client does not fit its budget ({} bytes, {} held for it); it was dropped",
                self.own.limit,
                self.own.used.load(Ordering::Acquire)
            ));
        }
        if !self.total.0.take(bytes, None) {
            self.own.give_back(bytes);
            return Err(format!(
                "gateway busy: a message of {bytes} bytes does not fit the gateway's total budget ({} bytes, {} held); it was dropped",
                self.total.0.limit,
                self.total.held()
            ));
        }
        Ok(Held {
            bytes,
            copies: 0,
            own: self.own.clone(),
            total: self.total.clone(),
        })
    }
}

/// Whether the copies of the answers being handled for one client take it,
/// or the gateway, past its budget: a server's reader then reads nothing
/// more until they are handled.
#[derive(Debug)]
pub(crate) struct Pressure {
    own: Arc<Count>,
    total: Arc<Count>,
}

impl Pressure {
    /// Whether a reader should hold off now.
    pub(crate) fn pressed(&self) -> bool {
        self.own.pressed() || self.total.pressed()
    }
}

impl Backpressure for Pressure {
    fn is_relieved(&self) -> bool {
        !self.pressed()
    }

    fn relieved(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            while self.pressed() {
                self.own.relieved().await;
                self.total.relieved().await;
            }
        })
    }
}

/// Bytes of one message counted against a client's budget (with the
/// further copies of an answer being handled), given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    bytes: usize,
    /// Further copies counted while the answer is handled (none once
    /// settled).
    copies: usize,
    own: Arc<Count>,
    total: Total,
}

impl Held {
    /// The message's JSON size.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The answer admitted when it was read is now `msg`, the message
    /// waiting for its client: counted at its size, once. Why not, when it
    /// grew past what fits (its bytes are then still held, until dropped).
    pub(crate) fn settle(&mut self, msg: &Value) -> Result<(), String> {
        let bytes = json_len(msg);
        if bytes > self.bytes {
            let more = bytes - self.bytes;
            // As a message of its own would: alone or within the budget.
            if !self.own.take(more, Some(self.bytes)) {
                return Err(format!(
                    "gateway busy: a message of {bytes} bytes for this client does not fit its budget ({} bytes); it was dropped",
                    self.own.limit
                ));
            }
            if !self.total.0.take(more, None) {
                self.own.give_back(more);
                return Err(format!(
                    "gateway busy: a message of {bytes} bytes does not fit the gateway's total budget ({} bytes); it was dropped",
                    self.total.0.limit
                ));
            }
        } else {
            self.own.give_back(self.bytes - bytes);
            self.total.0.give_back(self.bytes - bytes);
        }
        self.bytes = bytes;
        let copies = std::mem::take(&mut self.copies);
        self.own.give_back_copies(copies);
        self.total.0.give_back_copies(copies);
        Ok(())
    }

    /// Counts one more copy of `bytes` (an encoding being made) until the
    /// guard is dropped.
    fn copy(&self, bytes: usize) -> EncodingCopy {
        self.own.add_copies(bytes);
        self.total.0.add_copies(bytes);
        EncodingCopy {
            bytes,
            own: self.own.clone(),
            total: self.total.0.clone(),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.total.0.give_back_copies(self.copies);
        self.own.give_back_copies(self.copies);
        self.total.0.give_back(self.bytes);
        self.own.give_back(self.bytes);
    }
}

/// One more copy of a held message, counted until dropped.
struct EncodingCopy {
    bytes: usize,
    own: Arc<Count>,
    total: Arc<Count>,
}

impl Drop for EncodingCopy {
    fn drop(&mut self) {
        self.total.give_back_copies(self.bytes);
        self.own.give_back_copies(self.bytes);
    }
}

/// One message on its way to a client, with the bytes it holds of the
/// client's budget (none for the small messages the gateway makes itself,
/// whose number the bounded queues limit).
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) msg: Value,
    pub(crate) held: Option<Held>,
}

impl From<Value> for Outgoing {
    fn from(msg: Value) -> Outgoing {
        Outgoing { msg, held: None }
    }
}

impl Outgoing {
    /// `msg` serialized (in a buffer of the exact size when it is counted),
    /// the message itself dropped; and what it holds.
    pub(crate) fn into_bytes(self) -> (Vec<u8>, Option<Held>) {
        self.into_framed(b"", b"")
    }

    /// [`Outgoing::into_bytes`] between `prefix` and `suffix` (a line's
    /// newline, an SSE event's fields), in the same buffer. While both the
    /// message and its encoding exist, the encoding counts as a copy.
    pub(crate) fn into_framed(self, prefix: &[u8], suffix: &[u8]) -> (Vec<u8>, Option<Held>) {
        let Outgoing { msg, held } = self;
        let size = held.as_ref().map_or(256, Held::bytes);
        let copy = held.as_ref().map(|held| held.copy(size));
        let mut out = Vec::with_capacity(prefix.len() + size + suffix.len());
        out.extend_from_slice(prefix);
        // Writing a Value to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &msg);
        out.extend_from_slice(suffix);
        drop(msg);
        drop(copy);
        (out, held)
    }
}

/// The length of `msg` as JSON, without writing it anywhere.
pub(crate) fn json_len(msg: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, msg);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg_of(bytes: usize) -> Value {
        // `"` + text + `"`
        Value::String("x".repeat(bytes - 2))
    }

    #[test]
    fn json_len_is_the_serialized_length() {
        let v = json!({"a": [1, "two", null], "b": "é\n"});
        assert_eq!(json_len(&v), v.to_string().len());
        let (bytes, held) = Outgoing::from(v.clone()).into_bytes();
        assert_eq!(bytes, v.to_string().into_bytes());
        assert!(held.is_none());
    }

    #[test]
    fn a_client_holds_at_most_its_budget_and_gets_it_back() {
        let total = Total::new(1000);
        let client = ClientBudget::new(100, total.clone());
        assert!(client.refuses_new().is_none());
        let a = client.hold(&msg_of(60)).unwrap();
        let b = client.hold(&msg_of(40)).unwrap();
        assert_eq!(total.held(), 100);
        assert!(client.refuses_new().unwrap().contains("busy"));
        let e = client.hold(&msg_of(10)).unwrap_err();
        assert!(e.contains("busy"), "{e}");
        drop(a);
        assert_eq!(total.held(), 40);
        assert!(client.refuses_new().is_none());
        let (bytes, held) = Outgoing {
            msg: msg_of(50),
            held: Some(client.hold(&msg_of(50)).unwrap()),
        }
        .into_bytes();
        assert_eq!(bytes.len(), 50);
        assert_eq!(bytes.capacity(), 50);
        drop((b, held));
        assert_eq!(total.held(), 0);
    }

    #[test]
    fn an_answer_larger_than_the_client_budget_goes_alone_within_the_total() {
        let total = Total::new(1000);
        let client = ClientBudget::new(100, total.clone());
        let big = client.hold(&msg_of(500)).unwrap();
        assert!(client.refuses_new().is_some());
        assert!(client.hold(&msg_of(2)).is_err());
        drop(big);
        assert!(client.hold(&msg_of(1001)).is_err(), "larger than the total");
        assert_eq!(total.held(), 0);
    }

    #[test]
    fn the_total_bounds_every_client_together() {
        let total = Total::new(150);
        let one = ClientBudget::new(100, total.clone());
        let two = ClientBudget::new(100, total.clone());
        let a = one.hold(&msg_of(100)).unwrap();
        let e = two.hold(&msg_of(60)).unwrap_err();
        assert!(e.contains("total"), "{e}");
        // The refusal marks the total full until something is given back.
        assert!(two.refuses_new().unwrap().contains("total"));
        let small = two.hold(&msg_of(50)).unwrap();
        drop(a);
        assert!(two.refuses_new().is_none());
        drop(small);
        assert_eq!(total.held(), 0);
    }
}
