//! The tokio runtime every front end builds (the CLI, the Python and Node
//! modules, each C engine): one builder and one thread-count rule, so that
//! `MCPMUX_WORKER_THREADS` means the same everywhere. Core itself has no
//! runtime; the front end owns the one it builds here.
//!
//! Worker threads, first that is set: the front end's explicit option (C
//! `{"worker_threads": N}`), `$MCPMUX_WORKER_THREADS`, its older names
//! [`WORKER_THREADS_ALIASES`] (`MCPMUX_ENGINE_THREADS`, once Python's;
//! `MCPMUX_NODE_WORKER_THREADS`, once Node's), the front end's default
//! (tokio's one per CPU when it has none). A value that is not an integer
//! from 1 to [`MAX_WORKER_THREADS`] is `INVALID_INPUT` naming the variable,
//! never silently ignored; an empty variable counts as unset.
//!
//! Waiting: [`block_on`] is how the blocking front ends wait for the
//! engine, and [`stay_awake`] (`$MCPMUX_STAY_AWAKE_US`) how long any front
//! end's waiting thread stays awake before it sleeps.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::error::Error;

/// The environment variable that sets the number of worker threads.
pub const WORKER_THREADS_ENV: &str = "MCPMUX_WORKER_THREADS";

/// Older names of [`WORKER_THREADS_ENV`], read (in this order) when it is
/// unset; every front end honours them.
pub const WORKER_THREADS_ALIASES: &[&str] =
    &["MCPMUX_ENGINE_THREADS", "MCPMUX_NODE_WORKER_THREADS"];

/// Most worker threads a runtime may be given.
pub const MAX_WORKER_THREADS: usize = 1024;

/// A multi-thread runtime builder with every driver enabled, threads named
/// `thread_name`, and the worker count decided by [`worker_threads`]. The
/// caller may add its own hooks (`on_thread_start`) before `build()`.
pub fn builder(
    thread_name: &str,
    explicit: Option<usize>,
    default: Option<usize>,
) -> Result<tokio::runtime::Builder, Error> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().thread_name(thread_name);
    if let Some(n) = worker_threads(explicit, default)? {
        builder.worker_threads(n);
    }
    // A bad `MCPMUX_STAY_AWAKE_US` is raised where a bad worker count is.
    stay_awake_from(&|name| std::env::var(name).ok())?;
    Ok(builder)
}

/// The worker count to use: `explicit`, else the environment
/// ([`WORKER_THREADS_ENV`], then its aliases), else `default`; `None`
/// leaves tokio's default (one per CPU).
pub fn worker_threads(
    explicit: Option<usize>,
    default: Option<usize>,
) -> Result<Option<usize>, Error> {
    decide(explicit, default, &|name| std::env::var(name).ok())
}

/// [`worker_threads`] with variables read through `lookup`.
fn decide(
    explicit: Option<usize>,
    default: Option<usize>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<usize>, Error> {
    if let Some(n) = explicit {
        return Ok(Some(n));
    }
    let names = std::iter::once(WORKER_THREADS_ENV).chain(WORKER_THREADS_ALIASES.iter().copied());
    for name in names {
        let Some(value) = lookup(name).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        return match value.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_WORKER_THREADS).contains(&n) => Ok(Some(n)),
            _ => Err(Error::InvalidInput(format!(
                "environment variable {name} must be an integer from 1 to \
                 {MAX_WORKER_THREADS} (worker threads), not '{}'",
                value.chars().take(40).collect::<String>()
            ))),
        };
    }
    Ok(default)
}

/// The environment variable that sets how long a thread waiting for an
/// answer stays awake before it sleeps, in microseconds ([`stay_awake`]).
pub const STAY_AWAKE_ENV: &str = "MCPMUX_STAY_AWAKE_US";

/// The furthest a deadline is put (about 30 years on). A Rust caller may
/// ask for any [`Duration`] as a timeout, and adding one that the clock
/// cannot hold to an `Instant` panics.
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 86_400);

/// `wait`, capped at [`FAR_FUTURE`]: safe to add to any `Instant`.
pub(crate) fn capped(wait: Duration) -> Duration {
    wait.min(FAR_FUTURE)
}

/// Now plus `wait` (capped), on tokio's clock.
pub(crate) fn deadline_after(wait: Duration) -> tokio::time::Instant {
    tokio::time::Instant::now() + capped(wait)
}

/// [`stay_awake`] when [`STAY_AWAKE_ENV`] is unset.
///
/// A fast server answers a call within tens of microseconds. Letting the
/// waiting thread sleep for that long costs two extra context switches and
/// a wake-up issued by the engine thread that read the answer (measured on
/// a 2-vCPU VM: about a third of the caller's CPU per call, and most of the
/// gap to the blocking floor). Staying awake that long costs at most this
/// much CPU per call, and only for calls that are slower than it.
pub const DEFAULT_STAY_AWAKE: Duration = Duration::from_micros(60);

/// The longest [`STAY_AWAKE_ENV`] accepted: 10 ms.
pub const MAX_STAY_AWAKE_US: u64 = 10_000;

/// How long a thread that waits for an answer stays awake (yielding its CPU,
/// or keeping its event loop turning) before it sleeps: `$MCPMUX_STAY_AWAKE_US`
/// microseconds, `0` to sleep at once, else [`DEFAULT_STAY_AWAKE`].
///
/// Every front end follows it: [`block_on`] (Python's blocking `Hub`, C's
/// synchronous functions, the CLI's commands), Node's `callTool`, Python's
/// `AsyncHub.call_tool`, and a task on an engine thread (the Rust API)
/// whose stdio call is alone in flight, when its connection has measured
/// staying awake to be faster than sleeping. Read once per process. A bad value is
/// `INVALID_INPUT` from [`builder`] (so from the first call that needs the
/// runtime); here it counts as unset.
pub fn stay_awake() -> Duration {
    static VALUE: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *VALUE.get_or_init(|| {
        stay_awake_from(&|name| std::env::var(name).ok()).unwrap_or(DEFAULT_STAY_AWAKE)
    })
}

/// [`stay_awake`] with the variable read through `lookup`.
fn stay_awake_from(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Duration, Error> {
    let Some(value) = lookup(STAY_AWAKE_ENV).filter(|v| !v.trim().is_empty()) else {
        return Ok(DEFAULT_STAY_AWAKE);
    };
    match value.trim().parse::<u64>() {
        Ok(us) if us <= MAX_STAY_AWAKE_US => Ok(Duration::from_micros(us)),
        _ => Err(Error::InvalidInput(format!(
            "environment variable {STAY_AWAKE_ENV} must be an integer from 0 to \
             {MAX_STAY_AWAKE_US} (microseconds), not '{}'",
            value.chars().take(40).collect::<String>()
        ))),
    }
}

/// Runs `fut` to completion on the calling thread, inside `handle`'s
/// context, for the front ends' blocking calls (Python's `Hub`, the C
/// ABI's synchronous functions, the CLI's main future).
///
/// Unlike [`tokio::runtime::Handle::block_on`], the thread does not park
/// at once when `fut` is pending: it yields its CPU for up to
/// [`stay_awake`] while it waits for the wake-up, so an answer that an
/// engine thread reads soon after the request went out reaches the caller
/// without a `futex` wake-up (the engine thread's waker then only sets a
/// flag). Past that, it parks until woken, as tokio's would.
///
/// While it waits, it also reads the answer itself when it can (leader /
/// follower): a stdio transport that this thread sent a request on offers
/// its stdout (`offer_reader`), and each round of the wait reads what is
/// there, so the answer does not have to wake an engine thread first.
///
/// The engine's I/O is driven by the runtime's worker threads, as with
/// tokio's `block_on`; must not be called on one of them.
pub fn block_on<F: Future>(handle: &tokio::runtime::Handle, fut: F) -> F::Output {
    let _enter = handle.enter();
    let _following = Following::start();
    let waiter = Arc::new(Waiter {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
    });
    let waker = Waker::from(waiter.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    let awake = stay_awake();
    loop {
        waiter.woken.store(false, Ordering::Release);
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        waiter.wait(awake);
    }
}

/// A reader that a thread waiting in [`block_on`] may drive: reads what is
/// there without blocking and hands it out (the stdio transport's stdout).
pub(crate) trait ReadNow: Send + Sync {
    /// Reads what is available now, if no one else is reading; never blocks.
    fn read_now(&self);
}

thread_local! {
    /// Whether this thread is inside [`block_on`].
    static IN_BLOCK_ON: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread is an event loop that reads answers itself
    /// ([`follow_on_this_thread`]).
    static EVENT_LOOP: Cell<bool> = const { Cell::new(false) };
    /// The reader of the last request this thread sent inside [`block_on`]
    /// or as an event loop. Weak: an event loop's lasts for as long as the
    /// thread, and must not keep a closed server's pipe open.
    static FOLLOWED: RefCell<Option<Weak<dyn ReadNow>>> = const { RefCell::new(None) };
}

/// Called by a transport after this thread sent a request on it: inside
/// [`block_on`] or on an event loop ([`follow_on_this_thread`]), the thread
/// reads the answer itself while it waits. Elsewhere (an engine thread) it
/// does nothing.
pub(crate) fn offer_reader(reader: impl FnOnce() -> Weak<dyn ReadNow>) {
    if IN_BLOCK_ON.with(Cell::get) || EVENT_LOOP.with(Cell::get) {
        let reader = reader();
        FOLLOWED.with(|f| *f.borrow_mut() = Some(reader));
    }
}

/// Whether the calling thread reads the answers to its requests itself
/// while it waits: inside [`block_on`], or an event loop
/// ([`follow_on_this_thread`]).
pub(crate) fn reads_its_answers() -> bool {
    IN_BLOCK_ON.with(Cell::get) || EVENT_LOOP.with(Cell::get)
}

/// Marks the calling thread, for the rest of its life, as an event loop
/// that stays awake while its calls are pending (Node's JavaScript thread):
/// a stdio transport that this thread sends a request on then offers its
/// stdout, and [`read_followed`] reads it. Must not be an engine thread.
pub fn follow_on_this_thread() {
    EVENT_LOOP.with(|f| f.set(true));
}

/// On an event loop thread ([`follow_on_this_thread`]): reads, without
/// blocking, what the stdio server this thread last sent a request to has
/// written, unless an engine thread is reading it at that moment. Its
/// messages are handed out as the engine's reader task would hand them
/// out, on this thread: wakers of the calls they answer run here. Call it
/// inside the runtime's context (a server request it reads starts a task).
/// So an answer that is already there reaches the loop without first
/// waking an engine thread.
pub fn read_followed() {
    if let Some(reader) = followed() {
        reader.read_now();
    }
}

/// Marks this thread as inside [`block_on`] until dropped (restoring the
/// outer state when nested), and forgets the followed reader at the end.
struct Following {
    outer: bool,
}

impl Following {
    fn start() -> Following {
        Following {
            outer: IN_BLOCK_ON.with(|b| b.replace(true)),
        }
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        IN_BLOCK_ON.with(|b| b.set(self.outer));
        if !self.outer {
            // (Taken out before it is dropped: its drop may run any code.)
            let reader = FOLLOWED.with(|f| f.borrow_mut().take());
            drop(reader);
        }
    }
}

/// The reader this thread follows, if it is still there (a strong
/// reference outside the cell: reading may send, and sending offers a
/// reader again).
fn followed() -> Option<Arc<dyn ReadNow>> {
    FOLLOWED.with(|f| f.borrow().as_ref().and_then(Weak::upgrade))
}

/// The calling thread of [`block_on`], as its future's waker sees it.
struct Waiter {
    thread: Thread,
    woken: AtomicBool,
}

impl Waiter {
    /// Returns once woken: until `spin` has passed, reads the followed
    /// reader (when there is one) and yields the CPU; then parks.
    /// (`Instant::now` is a vDSO read, not a system call.)
    fn wait(&self, spin: Duration) {
        let start = Instant::now();
        let reader = if spin.is_zero() { None } else { followed() };
        let mut rounds = 0u32;
        while !self.woken.load(Ordering::Acquire) {
            if start.elapsed() >= spin {
                // `park` may return spuriously (or on a token left by an
                // earlier wake-up): the loop looks at `woken` again.
                std::thread::park();
                continue;
            }
            if let Some(reader) = &reader {
                reader.read_now();
                if self.woken.load(Ordering::Acquire) {
                    break;
                }
            }
            rounds += 1;
            if rounds < 64 {
                std::hint::spin_loop();
            } else {
                // On a machine with few CPUs the engine thread that reads
                // the answer, or the server itself, may need this one.
                std::thread::yield_now();
            }
        }
    }
}

impl Wake for Waiter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        // Only a parked thread costs a system call here.
        self.thread.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn explicit_then_env_then_aliases_then_default() {
        let env = [
            ("MCPMUX_WORKER_THREADS", "3"),
            ("MCPMUX_ENGINE_THREADS", "5"),
            ("MCPMUX_NODE_WORKER_THREADS", "7"),
        ];
        assert_eq!(decide(Some(9), Some(2), &with(&env)).unwrap(), Some(9));
        assert_eq!(decide(None, Some(2), &with(&env)).unwrap(), Some(3));
        assert_eq!(decide(None, Some(2), &with(&env[1..])).unwrap(), Some(5));
        assert_eq!(decide(None, Some(2), &with(&env[2..])).unwrap(), Some(7));
        assert_eq!(decide(None, Some(2), &with(&[])).unwrap(), Some(2));
        assert_eq!(decide(None, None, &with(&[])).unwrap(), None);
        // Empty counts as unset.
        let empty = [
            ("MCPMUX_WORKER_THREADS", " "),
            ("MCPMUX_ENGINE_THREADS", "4"),
        ];
        assert_eq!(decide(None, None, &with(&empty)).unwrap(), Some(4));
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_variable() {
        for bad in ["0", "-1", "two", "1025", "1.5"] {
            let env = [("MCPMUX_ENGINE_THREADS", bad)];
            let e = decide(None, Some(2), &with(&env)).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT");
            assert!(e.to_string().contains("MCPMUX_ENGINE_THREADS"), "{e}");
        }
        // The explicit option is not second-guessed by a bad variable.
        let env = [("MCPMUX_WORKER_THREADS", "lots")];
        assert_eq!(decide(Some(1), None, &with(&env)).unwrap(), Some(1));
    }

    #[test]
    fn stay_awake_reads_microseconds_and_refuses_bad_values() {
        assert_eq!(stay_awake_from(&with(&[])).unwrap(), DEFAULT_STAY_AWAKE);
        let env = [("MCPMUX_STAY_AWAKE_US", " 0 ")];
        assert_eq!(stay_awake_from(&with(&env)).unwrap(), Duration::ZERO);
        let env = [("MCPMUX_STAY_AWAKE_US", "250")];
        assert_eq!(
            stay_awake_from(&with(&env)).unwrap(),
            Duration::from_micros(250)
        );
        for bad in ["-1", "lots", "10001", "1.5"] {
            let env = [("MCPMUX_STAY_AWAKE_US", bad)];
            let e = stay_awake_from(&with(&env)).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT");
            assert!(e.to_string().contains("MCPMUX_STAY_AWAKE_US"), "{e}");
        }
    }

    #[test]
    fn block_on_waits_for_fast_and_slow_wake_ups_from_engine_threads() {
        let rt = builder("mcpmux-test-rt", Some(2), None)
            .unwrap()
            .build()
            .unwrap();
        // Woken within the spin, after it (parked), and many times over.
        for delay in [
            Duration::ZERO,
            Duration::from_micros(10),
            DEFAULT_STAY_AWAKE * 20,
        ] {
            let (tx, rx) = tokio::sync::oneshot::channel();
            rt.spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = tx.send(std::thread::current().name().map(str::to_owned));
            });
            let from = block_on(rt.handle(), rx).unwrap();
            assert_eq!(from.as_deref(), Some("mcpmux-test-rt"));
        }
        let total = block_on(rt.handle(), async {
            let mut total = 0u64;
            for i in 0..200u64 {
                total += rt.spawn(async move { i }).await.unwrap();
                tokio::task::yield_now().await;
            }
            total
        });
        assert_eq!(total, 199 * 200 / 2);
        // The runtime's context is entered: timers work (without a time
        // driver, tokio's sleep panics instead of completing).
        let slept = block_on(rt.handle(), async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            "slept"
        });
        assert_eq!(slept, "slept");
    }

    #[test]
    fn the_builder_names_and_counts_its_threads() {
        let rt = builder("mcpmux-test-rt", Some(3), None)
            .unwrap()
            .build()
            .unwrap();
        let names = rt.block_on(async {
            let mut names = std::collections::BTreeSet::new();
            for _ in 0..64 {
                let name = tokio::spawn(async { std::thread::current().name().map(str::to_owned) })
                    .await
                    .unwrap();
                names.insert(name);
            }
            names
        });
        assert!(
            names.iter().all(|n| n.as_deref() == Some("mcpmux-test-rt")),
            "{names:?}"
        );
        assert_eq!(rt.metrics().num_workers(), 3);
    }
}
