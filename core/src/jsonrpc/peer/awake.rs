//! How a task waits for the answer to the only request in flight on its
//! connection: asleep (its worker parks in `epoll_wait` until the answer's
//! wake-up), or awake (it reads the transport itself between turns given to
//! the worker's other tasks, for up to [`stay_awake`]).
//!
//! Which is faster depends on the machine, not on mcpmux. Where the kernel
//! lets client and server take turns on one CPU, sleeping costs nothing
//! (the server runs on the CPU the client gave up, and its answer wakes the
//! client there): a few microseconds per call. Where every wake-up crosses
//! CPUs (an idle vCPU halted under a hypervisor, a core in a deep idle
//! state), sleeping costs two such wake-ups per call and staying awake one.
//! So each connection measures both: it uses the one whose recent calls
//! were faster, and tries the other every [`PROBE_EVERY`] calls so that a
//! change of the machine's behaviour is noticed.
//!
//! Only a task on an engine thread chooses: a thread in
//! [`block_on`](crate::runtime::block_on) and an event loop (Python's
//! `AsyncHub`, Node) already read their answers themselves while they wait.
//!
//! [`stay_awake`]: crate::runtime::stay_awake

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// One call in this many uses the way that is not currently the faster one.
pub(super) const PROBE_EVERY: u32 = 32;

/// Staying awake must be this much faster (numerator / denominator) to be
/// chosen: it costs CPU, sleeping does not.
const AWAKE_GAIN: (u64, u64) = (5, 4);

/// The recent latency of each way of waiting on one connection (an
/// exponentially weighted mean in nanoseconds, `0` until measured) and a
/// call counter for the probes. Relaxed atomics: an estimate read while
/// another call updates it is still an estimate.
#[derive(Default)]
pub(super) struct WaitChoice {
    asleep_ns: AtomicU32,
    awake_ns: AtomicU32,
    calls: AtomicU32,
}

/// A way of waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    Asleep,
    Awake,
}

impl WaitChoice {
    /// The way the next lone call waits.
    pub(super) fn next(&self) -> Wait {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let asleep = u64::from(self.asleep_ns.load(Ordering::Relaxed));
        let awake = u64::from(self.awake_ns.load(Ordering::Relaxed));
        let best = if asleep == 0 {
            // Unmeasured first.
            Wait::Asleep
        } else if awake == 0 || awake * AWAKE_GAIN.0 < asleep * AWAKE_GAIN.1 {
            Wait::Awake
        } else {
            Wait::Asleep
        };
        if n % PROBE_EVERY == PROBE_EVERY - 1 {
            match best {
                Wait::Asleep => Wait::Awake,
                Wait::Awake => Wait::Asleep,
            }
        } else {
            best
        }
    }

    /// Records how long a call that waited `how` took, from its request
    /// going out to its answer. Samples are capped at `cap` (the stay-awake
    /// time, a few times over): a slow server says nothing about waking up,
    /// and must not swamp the estimate for the calls after it.
    pub(super) fn record(&self, how: Wait, took: Duration, cap: Duration) {
        let slot = match how {
            Wait::Asleep => &self.asleep_ns,
            Wait::Awake => &self.awake_ns,
        };
        let sample = took.min(cap).as_nanos().clamp(1, u128::from(u32::MAX)) as u32;
        let old = slot.load(Ordering::Relaxed);
        // A mean over about the last eight calls.
        let new = if old == 0 {
            sample
        } else {
            (i64::from(old) + (i64::from(sample) - i64::from(old)) / 8) as u32
        };
        slot.store(new.max(1), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, OnceLock, Weak};

    use futures::future::BoxFuture;
    use serde_json::Value;

    use super::*;
    use crate::error::Error;
    use crate::jsonrpc::{Peer, RequestOptions};
    use crate::transport::{FrameSink, Transport};

    /// A stdio-like transport: a request sent is answered by the first
    /// `read_now` after it, else by a task 20 ms later (the reader task of
    /// a transport whose caller sleeps).
    #[derive(Default)]
    struct Answering {
        sink: OnceLock<Weak<dyn FrameSink>>,
        unanswered: Arc<Mutex<Vec<u64>>>,
        /// The ids answered by `read_now`, in order.
        by_read_now: Mutex<Vec<u64>>,
        /// Says it cannot be read by its caller (like HTTP, SSE, WebSocket).
        unreadable: bool,
    }

    fn answer(sink: &Weak<dyn FrameSink>, id: u64) {
        if let Some(sink) = sink.upgrade() {
            sink.on_frame(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).as_bytes());
        }
    }

    impl Transport for Answering {
        fn send(&self, message: Vec<u8>) -> Result<(), Error> {
            let id = serde_json::from_slice::<Value>(&message).unwrap()["id"]
                .as_u64()
                .unwrap();
            self.unanswered.lock().unwrap().push(id);
            let (unanswered, sink) = (self.unanswered.clone(), self.sink.get().unwrap().clone());
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                let waiting = {
                    let mut list = unanswered.lock().unwrap();
                    let before = list.len();
                    list.retain(|&i| i != id);
                    list.len() < before
                };
                if waiting {
                    answer(&sink, id);
                }
            });
            Ok(())
        }
        fn close(&self) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
        fn can_read_now(&self) -> bool {
            !self.unreadable
        }
        fn read_now(&self) {
            let ids = std::mem::take(&mut *self.unanswered.lock().unwrap());
            for id in ids {
                self.by_read_now.lock().unwrap().push(id);
                answer(self.sink.get().unwrap(), id);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connections_second_lone_call_waits_awake_and_reads_its_own_answer() {
        let peer = Peer::new("test", Arc::new(super::super::NoInbound));
        let transport = Arc::new(Answering::default());
        let _ = transport.sink.set(peer.sink());
        peer.attach(transport.clone());
        let calls = 40;
        let p = peer.clone();
        let ids = tokio::spawn(async move {
            let opts = RequestOptions::default();
            let mut ids = Vec::new();
            for _ in 0..calls {
                let id = p.next_id();
                p.request::<Value>(id, "tools/call", None, &opts)
                    .await
                    .unwrap();
                ids.push(id);
            }
            ids
        })
        .await
        .unwrap();
        // The first lone call on a connection sleeps, the second stays
        // awake and reads its own answer. (Which way wins after that is a
        // matter of time measured on a loaded machine: the choice itself
        // is tested with given times by this module's other tests.)
        let read = transport.by_read_now.lock().unwrap().clone();
        assert!(!read.contains(&ids[0]), "the first call slept: {read:?}");
        assert!(read.contains(&ids[1]), "the second call read: {read:?}");
        assert!(read.len() < calls, "{} of {calls} read", read.len());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transport_its_caller_cannot_read_is_never_read_nor_measured() {
        let peer = Peer::new("test", Arc::new(super::super::NoInbound));
        let transport = Arc::new(Answering {
            unreadable: true,
            ..Answering::default()
        });
        let _ = transport.sink.set(peer.sink());
        peer.attach(transport.clone());
        let p = peer.clone();
        tokio::spawn(async move {
            let opts = RequestOptions::default();
            for _ in 0..4 {
                let id = p.next_id();
                p.request::<Value>(id, "tools/call", None, &opts)
                    .await
                    .unwrap();
            }
        })
        .await
        .unwrap();
        assert!(transport.by_read_now.lock().unwrap().is_empty());
        let choice = &peer.shared.wait_choice;
        assert_eq!(choice.calls.load(Ordering::Relaxed), 0, "no choice made");
        assert_eq!(choice.asleep_ns.load(Ordering::Relaxed), 0, "no sample");
    }

    const CAP: Duration = Duration::from_micros(240);

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// Feeds `rounds` calls, each taking what `took` says for its way;
    /// returns how many of the last 64 waited awake.
    fn run(choice: &WaitChoice, rounds: usize, took: impl Fn(Wait) -> Duration) -> usize {
        let mut awake = 0;
        for i in 0..rounds {
            let how = choice.next();
            if i + 64 >= rounds && how == Wait::Awake {
                awake += 1;
            }
            choice.record(how, took(how), CAP);
        }
        awake
    }

    #[test]
    fn sleeps_where_sleeping_is_fast_and_stays_awake_where_wake_ups_are_slow() {
        // Client and server share a CPU: sleeping wins; only probes wake.
        let choice = WaitChoice::default();
        let awake = run(&choice, 640, |how| match how {
            Wait::Asleep => us(7),
            Wait::Awake => us(20),
        });
        assert_eq!(awake, 64 / PROBE_EVERY as usize);

        // Every wake-up crosses CPUs: staying awake wins; only probes sleep.
        let choice = WaitChoice::default();
        let awake = run(&choice, 640, |how| match how {
            Wait::Asleep => us(55),
            Wait::Awake => us(22),
        });
        assert_eq!(awake, 64 - 64 / PROBE_EVERY as usize);
    }

    #[test]
    fn follows_the_machine_when_it_changes() {
        let choice = WaitChoice::default();
        run(&choice, 640, |how| match how {
            Wait::Asleep => us(55),
            Wait::Awake => us(22),
        });
        // Now sleeping is fast: the probes notice within a few of them.
        let awake = run(&choice, 640, |how| match how {
            Wait::Asleep => us(6),
            Wait::Awake => us(22),
        });
        assert_eq!(awake, 64 / PROBE_EVERY as usize);
    }

    #[test]
    fn a_slow_server_or_a_small_gain_keeps_the_task_asleep() {
        // Both ways hit the cap: no gain, no CPU spent on staying awake.
        let choice = WaitChoice::default();
        let awake = run(&choice, 640, |_| Duration::from_millis(3));
        assert_eq!(awake, 64 / PROBE_EVERY as usize);
        // Awake 10% faster: not worth it.
        let choice = WaitChoice::default();
        let awake = run(&choice, 640, |how| match how {
            Wait::Asleep => us(22),
            Wait::Awake => us(20),
        });
        assert_eq!(awake, 64 / PROBE_EVERY as usize);
    }
}
