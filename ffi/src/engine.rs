//! [`mcpmux_engine`]: the async runtime that every hub of the engine runs on,
//! the count of work in flight, and the hubs to close on shutdown.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_char;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use mcpmux_core::{Error, Hub};
use tokio::runtime::{Handle, Runtime};

use crate::error::{mcpmux_error, mcpmux_status};
use crate::util::{guard_status, guard_value, write_out, Args};

/// Most worker threads an engine may be given (core's bound).
const MAX_WORKER_THREADS: u64 = mcpmux_core::runtime::MAX_WORKER_THREADS as u64;
/// How long engine shutdown waits for runtime threads to finish.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

thread_local! {
    /// Set on every thread of every engine runtime (workers and blocking
    /// threads): callbacks run there, and blocking there would deadlock.
    static ENGINE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread belongs to an engine (or runs inside any tokio
/// runtime), i.e. whether blocking here could deadlock.
pub(crate) fn on_engine_thread() -> bool {
    ENGINE_THREAD.with(Cell::get) || Handle::try_current().is_ok()
}

/// An mcpmux engine: owns the async runtime (a tokio multi-thread runtime)
/// that runs every hub connected through it, and the callbacks of its
/// asynchronous calls. Created by mcpmux_engine_new(), owned by the caller,
/// freed with mcpmux_engine_free(). Any thread may use it.
pub struct mcpmux_engine {
    runtime: Option<Runtime>,
    shared: Arc<Shared>,
}

/// What hubs and calls share with their engine: a handle to its runtime and
/// the accounting that lets mcpmux_engine_free() wait for work in flight.
pub(crate) struct Shared {
    handle: Handle,
    state: Mutex<State>,
    idle: Condvar,
}

struct State {
    open: bool,
    in_flight: usize,
    hubs: HashMap<u64, Hub>,
    next_hub: u64,
}

/// One unit of work in flight (a blocking call, or an asynchronous call
/// until its callback returned). The engine does not shut down while any
/// exists.
pub(crate) struct Work {
    shared: Arc<Shared>,
}

impl Drop for Work {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.in_flight -= 1;
        if state.in_flight == 0 {
            self.shared.idle.notify_all();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave State inconsistent
        // (every update is a single assignment), so poison is ignored.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The runtime handle (to spawn asynchronous calls).
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Counts one unit of work, or fails when the engine is shut down.
    pub(crate) fn begin(self: &Arc<Self>) -> Result<Work, Error> {
        let mut state = self.lock();
        if !state.open {
            return Err(engine_closed());
        }
        state.in_flight += 1;
        Ok(Work {
            shared: self.clone(),
        })
    }

    /// Runs `fut` to completion on the calling thread (the engine's worker
    /// threads drive its I/O). Refused on engine threads, where it would
    /// deadlock, and after shutdown.
    pub(crate) fn block_on<F: Future>(
        self: &Arc<Self>,
        args: Args,
        fut: F,
    ) -> Result<F::Output, Error> {
        if on_engine_thread() {
            return Err(Error::InvalidInput(format!(
                "{}: blocking function called on an engine thread (inside an mcpmux callback), \
                 where it would deadlock; use mcpmux_hub_call_tool_async or call it from another thread",
                args.func
            )));
        }
        let _work = self.begin()?;
        Ok(mcpmux_core::runtime::block_on(&self.handle, fut))
    }

    /// Remembers a hub so that shutdown closes its servers; returns its key.
    pub(crate) fn register(&self, hub: Hub) -> u64 {
        let mut state = self.lock();
        state.next_hub += 1;
        let id = state.next_hub;
        state.hubs.insert(id, hub);
        id
    }

    /// Forgets a hub (mcpmux_hub_free) and drops `hub` inside the runtime
    /// when it still runs (dropping kills its servers at once).
    pub(crate) fn release(&self, id: u64, hub: Hub) {
        let (registered, open) = {
            let mut state = self.lock();
            (state.hubs.remove(&id), state.open)
        };
        let _enter = open.then(|| self.handle.enter());
        drop(registered);
        drop(hub);
    }

    /// Refuses new work, waits for work in flight, closes every hub.
    fn shut_down(&self, runtime: &Runtime) {
        let hubs: Vec<Hub> = {
            let mut state = self.lock();
            state.open = false;
            while state.in_flight > 0 {
                state = self.idle.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            state.hubs.drain().map(|(_, hub)| hub).collect()
        };
        runtime.block_on(futures::future::join_all(hubs.iter().map(Hub::close)));
        let _enter = runtime.enter();
        drop(hubs);
    }
}

/// The error for work on a shut-down engine.
pub(crate) fn engine_closed() -> Error {
    Error::TransportClosed("the engine is shut down (mcpmux_engine_free was called)".into())
}

impl mcpmux_engine {
    /// What hubs of this engine share with it.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// Sets SIGPIPE to SIG_IGN when it has the default disposition (which would
/// kill the host on a write to the pipe of a server that died).
fn ignore_sigpipe_if_default() {
    // SAFETY: sigaction with valid pointers to zeroed/initialized structs.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) != 0 {
            return;
        }
        if old.sa_sigaction == libc::SIG_DFL {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = libc::SIG_IGN;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(libc::SIGPIPE, &new, std::ptr::null_mut());
        }
    }
}

/// Reads the engine options.
fn worker_threads(
    args: Args,
    options: Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<Option<usize>, Error> {
    let mut threads = None;
    for (key, value) in options.unwrap_or_default() {
        match key.as_str() {
            "worker_threads" => match value.as_u64() {
                Some(n) if (1..=MAX_WORKER_THREADS).contains(&n) => threads = Some(n as usize),
                _ => {
                    return Err(args.invalid(
                        "options_json",
                        format!("option 'worker_threads' must be an integer from 1 to {MAX_WORKER_THREADS}, not {value}"),
                    ))
                }
            },
            other => return Err(args.unknown_option(other, &["worker_threads"])),
        }
    }
    Ok(threads)
}

/// Creates an engine: a tokio multi-thread runtime whose worker threads
/// run every hub connected through this engine and the callbacks of its
/// asynchronous calls.
///
/// `options_json` (nullable): a JSON object; `{"worker_threads": N}` sets
/// the number of worker threads (1 to 1024). Without it the environment
/// variable MCPMUX_WORKER_THREADS (aliases MCPMUX_ENGINE_THREADS,
/// MCPMUX_NODE_WORKER_THREADS) sets it, else one per CPU. Unknown options,
/// and a variable that is not an integer from 1 to 1024, are an
/// INVALID_INPUT error.
///
/// On success `*out` receives the engine, owned by the caller, to be freed
/// with mcpmux_engine_free(). Also sets SIGPIPE to SIG_IGN when its
/// disposition is SIG_DFL (see the top of this file). Any thread but an
/// engine thread.
///
/// # Safety
/// `options_json` is NULL or a NUL-terminated string; `out` and `err` are
/// NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_engine_new(
    options_json: *const c_char,
    out: *mut *mut mcpmux_engine,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_engine_new",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("out", out)?;
            let threads = worker_threads(args, args.opt_object("options_json", options_json)?)?;
            // The option beats $MCPMUX_WORKER_THREADS (and its aliases),
            // which beats one per CPU (core's one rule).
            let mut builder = mcpmux_core::runtime::builder("mcpmux-engine", threads, None)?;
            builder.on_thread_start(|| ENGINE_THREAD.with(|f| f.set(true)));
            let runtime = builder.build().map_err(|e| {
                Error::Internal(format!("{}: cannot start the runtime: {e}", args.func))
            })?;
            ignore_sigpipe_if_default();
            let shared = Arc::new(Shared {
                handle: runtime.handle().clone(),
                state: Mutex::new(State {
                    open: true,
                    in_flight: 0,
                    hubs: HashMap::new(),
                    next_hub: 0,
                }),
                idle: Condvar::new(),
            });
            let engine = Box::new(mcpmux_engine {
                runtime: Some(runtime),
                shared,
            });
            write_out(out, Box::into_raw(engine));
            Ok(())
        })
    }
}

/// Shuts an engine down and frees it. Blocking: refuses new work, waits
/// until every call in flight has finished (blocking calls have returned,
/// asynchronous calls have had their callback called), closes the servers
/// of every hub of this engine that was not freed yet, and stops the
/// runtime's threads. Hubs not freed yet stay valid to free (mcpmux_hub_free)
/// but every call on them fails with TRANSPORT_CLOSED.
///
/// NULL is a no-op. Called from inside a callback (an engine thread) it is
/// refused and does nothing, since waiting there would deadlock: the engine
/// stays valid and must be freed later from another thread.
///
/// # Safety
/// `engine` is NULL or an engine from mcpmux_engine_new() that was not
/// freed; unless refused, it must not be used afterwards, and no other
/// thread may use it during this call.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_engine_free(engine: *mut mcpmux_engine) {
    guard_value((), || {
        if engine.is_null() || on_engine_thread() {
            return;
        }
        // SAFETY: the caller gives back ownership of the Box from mcpmux_engine_new.
        let mut engine = unsafe { Box::from_raw(engine) };
        if let Some(runtime) = engine.runtime.take() {
            engine.shared.shut_down(&runtime);
            runtime.shutdown_timeout(SHUTDOWN_WAIT);
        }
    })
}
