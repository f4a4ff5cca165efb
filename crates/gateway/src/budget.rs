//! The bytes of messages a gateway holds for its clients (answers waiting
//! to be written, or a batch's answers being assembled), counted against a
//! budget per client and a total one.
//!
//! A message is counted from the moment it is ready to go out until the
//! transport has written it (stdio) or hyper has taken the last of it
//! (HTTP): [`Held`] gives its bytes back when dropped. An answer that does
//! not fit is not kept: the client gets a -32000 "gateway busy" error in
//! its place, and while a client is full its new requests get the same
//! error at once (see `connection.rs`). One answer larger than the
//! client's budget still goes out whole when the client holds nothing
//! else and it fits the total, so no answer is refused for ever.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;

/// Default bytes held for one client (64 MiB).
pub const DEFAULT_CLIENT_BUDGET_BYTES: usize = 64 << 20;
/// Default bytes held for every client together (256 MiB).
pub const DEFAULT_TOTAL_BUDGET_BYTES: usize = 256 << 20;

/// One count of bytes against a limit.
#[derive(Debug)]
struct Count {
    limit: usize,
    used: AtomicUsize,
    /// Something was refused since the last bytes were given back.
    full: AtomicBool,
}

impl Count {
    fn new(limit: usize) -> Count {
        Count {
            limit,
            used: AtomicUsize::new(0),
            full: AtomicBool::new(false),
        }
    }

    /// Takes `bytes` when they fit (or, with `alone_ok`, when nothing is
    /// held); otherwise marks the count full.
    fn take(&self, bytes: usize, alone_ok: bool) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let fits = used.checked_add(bytes).is_some_and(|sum| sum <= self.limit);
                (fits || (alone_ok && used == 0)).then(|| used + bytes)
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

    /// Bytes held now for every client.
    pub(crate) fn held(&self) -> usize {
        self.0.used.load(Ordering::Acquire)
    }
}

/// One client's budget, inside the gateway's total. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ClientBudget {
    own: Arc<Count>,
    total: Total,
}

impl ClientBudget {
    pub(crate) fn new(limit: usize, total: Total) -> ClientBudget {
        ClientBudget {
            own: Arc::new(Count::new(limit)),
            total,
        }
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
        let bytes = json_len(msg);
        if !self.own.take(bytes, true) {
            return Err(format!(
                "gateway busy: a message of {bytes} bytes for this client does not fit its budget ({} bytes, {} held for it); it was dropped",
                self.own.limit,
                self.own.used.load(Ordering::Acquire)
            ));
        }
        if !self.total.0.take(bytes, false) {
            self.own.give_back(bytes);
            return Err(format!(
                "gateway busy: a message of {bytes} bytes does not fit the gateway's total budget ({} bytes, {} held); it was dropped",
                self.total.0.limit,
                self.total.held()
            ));
        }
        Ok(Held {
            bytes,
            own: self.own.clone(),
            total: self.total.clone(),
        })
    }
}

/// Bytes of one message counted against a client's budget, given back when
/// dropped.
#[derive(Debug)]
pub(crate) struct Held {
    bytes: usize,
    own: Arc<Count>,
    total: Total,
}

impl Held {
    /// The message's JSON size.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.total.0.give_back(self.bytes);
        self.own.give_back(self.bytes);
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
    /// `msg` serialized (in a buffer of the exact size, and room for a
    /// newline, when it is counted), the message itself dropped; and what
    /// it holds.
    pub(crate) fn into_bytes(self) -> (Vec<u8>, Option<Held>) {
        let size = self.held.as_ref().map_or(256, Held::bytes);
        let mut out = Vec::with_capacity(size + 1);
        // Writing a Value to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &self.msg);
        (out, self.held)
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
        assert_eq!(bytes.capacity(), 51);
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
