//! The one tokio runtime of the process, built by core's
//! [`mcpmux_core::runtime::builder`] (threads `mcpmux-engine`).
//!
//! Created on first use and never dropped: its worker threads live as long
//! as the process, which matters because the engine asks the kernel to kill
//! a stdio server when the thread that started it ends (`PR_SET_PDEATHSIG`),
//! so servers are always started from these threads. After `fork()` the
//! child gets a fresh runtime on first use (the parent's threads do not
//! exist there) and a new *generation*: hubs of an older generation belong
//! to the parent and are never used or closed by the child.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use mcpmux_core::Error;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static INIT: Mutex<()> = Mutex::new(());
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The runtime, created on first use.
pub fn get() -> Result<&'static Runtime, Error> {
    let rt = RUNTIME.load(Ordering::Acquire);
    if rt.is_null() {
        init()
    } else {
        // SAFETY: a non-null pointer comes from `Box::leak` in `init` and is
        // never freed.
        Ok(unsafe { &*rt })
    }
}

#[cold]
fn init() -> Result<&'static Runtime, Error> {
    let _guard = INIT.lock().unwrap_or_else(PoisonError::into_inner);
    let rt = RUNTIME.load(Ordering::Acquire);
    if !rt.is_null() {
        // SAFETY: as in `get`.
        return Ok(unsafe { &*rt });
    }
    // `$MCPMUX_WORKER_THREADS` (or its alias `$MCPMUX_ENGINE_THREADS`) or
    // one per CPU; a bad value is INVALID_INPUT, raised by the first call
    // that needs the runtime.
    let rt = mcpmux_core::runtime::builder("mcpmux-engine", None, None)?
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the mcpmux engine runtime: {e}")))?;
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    RUNTIME.store(std::ptr::from_ref(rt).cast_mut(), Ordering::Release);
    Ok(rt)
}

/// The current fork generation (0 in the process that imported mcpmux).
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Called by `os.register_at_fork(after_in_child=...)`: forgets the
/// parent's runtime (its threads do not exist in the child; it is leaked,
/// never dropped) and starts a new generation.
#[pyfunction]
pub fn after_fork_in_child() {
    RUNTIME.store(std::ptr::null_mut(), Ordering::Release);
    GENERATION.fetch_add(1, Ordering::AcqRel);
}
