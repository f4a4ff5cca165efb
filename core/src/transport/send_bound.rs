//! Bounds on what waits to reach a server over the network transports.
//!
//! A hostile server can make us owe it messages without end: every `ping`
//! it sends is answered, and it may never accept the answers (hold each
//! POST open, or stop reading its WebSocket). Without a bound each answer
//! would hold memory, a task and, over HTTP/1.1, a connection of its own.
//!
//! - Streamable HTTP and legacy SSE send one POST per message. Answers and
//!   notifications whose POST has not completed are counted, and past
//!   [`MAX_NOTICES_IN_FLIGHT`] the next one is refused (dropped, with
//!   `LIMIT_EXCEEDED`). Requests we send are not counted: the host decides
//!   how many calls it makes, and each one ends by its own timeout.
//! - WebSocket queues every message for one writer task. The bytes queued
//!   are counted (the limit is the stdio stdin queue's, 2 × the message
//!   cap), and a message past it is refused; a `ping` is then simply not
//!   answered.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::Error;

/// Most answers and notifications in flight to one server over a
/// POST-per-message transport.
pub const MAX_NOTICES_IN_FLIGHT: usize = 256;

/// A counter of units in flight (messages or bytes), shared by a transport
/// and the slots it hands out.
#[derive(Clone, Default)]
pub(crate) struct InFlight(Arc<AtomicUsize>);

/// `n` units counted in an [`InFlight`] until this is dropped (when the
/// message has been delivered, or given up).
pub(crate) struct Slot {
    count: Arc<AtomicUsize>,
    n: usize,
}

impl InFlight {
    /// Counts `n` more units unless that would pass `limit`. One message is
    /// always taken when nothing is in flight, however large.
    pub(crate) fn take(&self, n: usize, limit: usize) -> Option<Slot> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now == 0 || now.saturating_add(n) <= limit).then(|| now.saturating_add(n))
            })
            .ok()
            .map(|_| Slot {
                count: self.0.clone(),
                n,
            })
    }

    /// A slot for one answer or notification to server `label` over a
    /// POST-per-message transport: `LIMIT_EXCEEDED` past
    /// [`MAX_NOTICES_IN_FLIGHT`] (logged at debug level only: a flood of
    /// refusals must not flood the log too).
    pub(crate) fn take_notice(&self, label: &str) -> Result<Slot, Error> {
        self.take(1, MAX_NOTICES_IN_FLIGHT).ok_or_else(|| {
            let e = Error::LimitExceeded(format!(
                "{label}: {} answers and notifications to the server wait for it to accept \
                 them (at most {MAX_NOTICES_IN_FLIGHT}); this one is dropped",
                self.now()
            ));
            tracing::debug!(server = %label, "{e}");
            e
        })
    }

    /// Units in flight now.
    pub(crate) fn now(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.count.fetch_sub(self.n, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_up_to_the_limit_and_gives_back_on_drop() {
        let in_flight = InFlight::default();
        let a = in_flight.take(3, 4).unwrap();
        assert!(in_flight.take(2, 4).is_none());
        let b = in_flight.take(1, 4).unwrap();
        assert_eq!(in_flight.now(), 4);
        drop(a);
        assert_eq!(in_flight.now(), 1);
        drop(b);
        // One message larger than the limit still goes when nothing waits.
        let big = in_flight.take(10, 4).unwrap();
        assert!(in_flight.take(1, 4).is_none());
        drop(big);
        assert_eq!(in_flight.now(), 0);
    }
}
