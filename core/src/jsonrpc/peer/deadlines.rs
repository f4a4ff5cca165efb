//! Request time-outs without a timer per request.
//!
//! A timer per request costs a clock read, a timer-wheel insert and a
//! removal (each under the timer driver's lock) on the caller's thread for
//! every call, although nearly every request is answered long before its
//! deadline. Instead each pending request keeps its [`Deadline`], and one
//! task per peer (the sweeper) sleeps until the earliest deadline it knows
//! of, fails the requests that are due, and sleeps again until the next
//! one. A new request only wakes the sweeper when it is due before that
//! (the first request after an idle spell, or a shorter time-out), so with
//! the usual equal time-outs a call costs one clock read.
//!
//! The sweeper holds its peer weakly: it ends when the connection closes or
//! the peer is dropped (both wake it).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{Answer, Pending, ProgressState, Shared};
use crate::runtime::capped;

/// When one request times out.
pub(super) struct Deadline {
    /// When it was sent.
    pub(super) start: Instant,
    /// Time allowed without a response, counted again from each progress
    /// notification.
    pub(super) timeout: Duration,
    /// The latest it may run, however much progress arrives.
    pub(super) hard_stop: Instant,
}

/// `start + wait`, with `wait` capped (a Rust caller may ask for any
/// timeout).
pub(super) fn after(start: Instant, wait: Duration) -> Instant {
    start + capped(wait)
}

impl Deadline {
    /// The deadline of a request sent at `start`.
    pub(super) fn new(start: Instant, timeout: Duration, max_total: Duration) -> Deadline {
        Deadline {
            start,
            timeout,
            hard_stop: after(start, max_total.max(timeout)),
        }
    }

    /// When the request is due if no progress comes.
    pub(super) fn first(&self) -> Instant {
        after(self.start, self.timeout)
    }

    /// When the request is due, given its progress (milliseconds since
    /// `epoch` of the last notification, 0 for none).
    fn due(&self, epoch: Instant, progress: Option<&ProgressState>) -> Instant {
        let first = self.first();
        let last = progress.map_or(0, |p| p.last_ms.load(Ordering::Relaxed));
        if last == 0 {
            return first;
        }
        let extended = after(epoch + Duration::from_millis(last), self.timeout).min(self.hard_stop);
        first.max(extended)
    }
}

/// The sweeper's side of a peer's table (kept under the table's lock).
#[derive(Default)]
pub(super) struct Sweep {
    /// When the sweeper wakes next; `None` while it waits for a request.
    next: Option<Instant>,
    /// Whether its task was started.
    started: bool,
}

/// What a new request must do for the sweeper (outside the table's lock).
pub(super) enum Arm {
    /// Nothing: it wakes in time.
    Nothing,
    /// Wake it: the new request is due before its next wake-up.
    Wake,
    /// Start it (the peer's first request).
    Start,
}

impl Sweep {
    /// Notes a new request due at `at`.
    pub(super) fn arm(&mut self, at: Instant) -> Arm {
        if self.next.is_some_and(|next| next <= at) {
            return Arm::Nothing;
        }
        self.next = Some(at);
        if self.started {
            Arm::Wake
        } else {
            self.started = true;
            Arm::Start
        }
    }
}

/// Starts the sweeper of `shared` on the current runtime.
pub(super) fn start(shared: &Arc<Shared>) {
    tokio::spawn(run(Arc::downgrade(shared), shared.sweep_wake.clone()));
}

/// The sweeper task: sleeps until the next deadline (or a wake-up), then
/// times out what is due. Never holds its peer across an `await`.
async fn run(shared: Weak<Shared>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let table = shared.table.lock().unwrap();
            if table.closed.is_some() {
                return;
            }
            table.sweep.next
        };
        match next {
            None => {
                wake.notified().await;
                continue;
            }
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at.into()) => {}
                    // An earlier deadline, the connection closed or the
                    // peer dropped: look again.
                    () = wake.notified() => continue,
                }
            }
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        expire(&shared);
    }
}

/// Times out every request of `shared` that is due, and sets the next
/// wake-up to the earliest deadline left.
fn expire(shared: &Shared) {
    let now = Instant::now();
    let due: Vec<(u64, Pending)> = {
        let mut table = shared.table.lock().unwrap();
        let mut next: Option<Instant> = None;
        let mut due_ids = Vec::new();
        for (id, p) in &table.pending {
            let at = p.deadline.due(shared.epoch, p.progress.as_deref());
            if at <= now {
                due_ids.push(*id);
            } else if next.is_none_or(|n| at < n) {
                next = Some(at);
            }
        }
        table.sweep.next = next;
        due_ids
            .into_iter()
            .filter_map(|id| table.pending.remove(&id).map(|p| (id, p)))
            .collect()
    };
    for (id, p) in due {
        if p.cancellable {
            shared.send_cancelled(id, "timeout");
        }
        let _ = p.tx.send(Answer::TimedOut);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;
    use serde_json::Value;

    use super::super::Silent;
    use super::*;
    use crate::error::Error;
    use crate::jsonrpc::{Peer, RequestOptions};

    fn peer() -> (Peer, Arc<Silent>) {
        let peer = Peer::new("test", Arc::new(super::super::NoInbound));
        let transport = Arc::new(Silent::default());
        peer.attach(transport.clone());
        (peer, transport)
    }

    fn opts(timeout_ms: u64) -> RequestOptions {
        RequestOptions {
            timeout: Duration::from_millis(timeout_ms),
            ..RequestOptions::default()
        }
    }

    async fn request(peer: &Peer, o: &RequestOptions) -> Result<Box<RawValue>, Error> {
        let id = peer.next_id();
        peer.request::<Value>(id, "tools/call", None, o).await
    }

    fn cancelled_ids(t: &Silent) -> Vec<(u64, String)> {
        t.sent
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .map(|m| {
                (
                    m["params"]["requestId"].as_u64().unwrap(),
                    m["params"]["reason"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn a_shorter_timeout_made_later_fires_first_and_each_is_cancelled() {
        let (peer, transport) = peer();
        let long = opts(2_000);
        let short = opts(150);
        let (peer2, long2) = (peer.clone(), long.clone());
        // The long request arms the sweeper for 2 s; the short one, made
        // after it, must wake it to fire at 150 ms.
        let slow = tokio::spawn(async move { request(&peer2, &long2).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let r = request(&peer, &short).await;
        let err = r.unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{err:?}");
        assert!(
            err.to_string()
                .contains("test: no response to 'tools/call' within 0."),
            "{err}"
        );
        // The order of events, not their times: the short one was cancelled
        // while the long one was still waiting, which was cancelled after.
        assert_eq!(cancelled_ids(&transport), vec![(2, "timeout".to_owned())]);
        assert!(!slow.is_finished(), "the long request timed out too early");
        let r = slow.await.unwrap();
        assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
        assert_eq!(
            cancelled_ids(&transport),
            vec![(2, "timeout".to_owned()), (1, "timeout".to_owned())]
        );
    }

    #[tokio::test]
    async fn progress_extends_the_deadline_up_to_the_hard_stop() {
        let (peer, transport) = peer();
        let mut o = opts(200);
        o.track_progress = true;
        o.max_total = Duration::from_millis(700);
        let p = peer.clone();
        let call = tokio::spawn(async move { request(&p, &o).await });
        let sink = peer.sink().upgrade().unwrap();
        // Progress every 100 ms keeps it alive past 200 ms, until 700 ms:
        // counted in progress sent, the call outlives two (its own
        // timeout) and ends while more still come (the hard stop).
        let mut ended_after = None;
        for sent in 0..12 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if call.is_finished() {
                ended_after.get_or_insert(sent);
            }
            sink.on_frame(
                br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
            );
        }
        let ended_after = ended_after.expect("progress kept the call alive past its hard stop");
        assert!(
            ended_after > 3,
            "progress did not extend the timeout: ended after {ended_after} progress"
        );
        let r = call.await.unwrap();
        assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
        assert_eq!(cancelled_ids(&transport), vec![(1, "timeout".to_owned())]);
    }

    #[tokio::test]
    async fn a_timeout_past_what_the_clock_can_hold_does_not_panic() {
        let (peer, _transport) = peer();
        let mut o = opts(0);
        o.timeout = Duration::MAX;
        o.max_total = Duration::MAX;
        o.track_progress = true;
        let p = peer.clone();
        let call = tokio::spawn(async move { request(&p, &o).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let sink = peer.sink().upgrade().unwrap();
        sink.on_frame(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
        );
        sink.on_frame(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let r = call.await.expect("the request panicked");
        assert_eq!(r.unwrap().get(), "{}");
    }

    #[tokio::test]
    async fn an_answer_in_time_is_not_timed_out_and_the_sweeper_ends_with_the_peer() {
        let (peer, transport) = peer();
        let p = peer.clone();
        let call = tokio::spawn(async move { request(&p, &opts(200)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let sink = peer.sink().upgrade().unwrap();
        sink.on_frame(br#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#);
        let r = call.await.unwrap();
        assert_eq!(r.unwrap().get(), r#"{"ok":true}"#);
        // Past the old deadline nothing is cancelled.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(cancelled_ids(&transport).is_empty());
        let wake = peer.shared.sweep_wake.clone();
        drop(sink);
        drop(peer);
        // The sweeper held the only other reference to its wake-up; once it
        // has ended, ours is the last.
        for _ in 0..100 {
            if Arc::strong_count(&wake) == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the sweeper outlived its peer");
    }
}
