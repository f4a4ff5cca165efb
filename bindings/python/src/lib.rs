//! `mcpmux._native`: the extension module behind the `mcpmux` Python package.
//!
//! The documented public API is the Python layer (`python/mcpmux/__init__.py`,
//! typed in `__init__.pyi`); it calls this module. This crate stays thin
//! (`docs/ARCHITECTURE.md#crates`): argument conversion ([`convert`]), handing engine errors to
//! the Python exception classes ([`errors`]), and async bridging
//! ([`bridge`]). The engine itself is `mcpmux-core`.
//!
//! Threads: one tokio multi-thread runtime per process ([`runtime`]),
//! created on first use and never dropped; its threads run the transports.
//! A sync call runs the engine's future on the calling thread (`block_on`)
//! with the GIL released. An async call's future is polled on the event
//! loop's thread, or runs as a runtime task when it may start a server;
//! outcomes reach the loop through a [`bridge::Bridge`]. Engine threads
//! never take the GIL.

// The crate docs above link this crate's private modules: they are written
// for its maintainers (`cargo doc --document-private-items`); users read the
// JavaScript / Python API. `cargo doc -D warnings` must still pass.
#![allow(rustdoc::private_intra_doc_links)]

mod authorize;
mod bridge;
mod calls;
mod convert;
mod errors;
mod event_stream;
mod events;
mod handle;
mod hub;
mod policy;
mod requests;
mod runtime;
mod session;

use pyo3::prelude::*;

/// Core's contract of call options, policy options and search as JSON
/// text (`mcpmux_core::contract::schemas`): what the drift tests read.
#[pyfunction]
fn contract() -> String {
    mcpmux_core::contract::schemas().to_string()
}

/// The `mcpmux._native` module: `Hub`, `Events`, `EventStream`, `Policy`, `Sessions`, `Bridge`, `Pending`, and the
/// process-wide helpers `shutdown`, `after_fork_in_child`, `contract` and `version`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<handle::NativeHub>()?;
    m.add_class::<events::NativeEvents>()?;
    m.add_class::<event_stream::NativeEventStream>()?;
    m.add_class::<bridge::Bridge>()?;
    m.add_class::<bridge::Pending>()?;
    m.add_class::<session::NativeSessions>()?;
    m.add_class::<policy::NativePolicy>()?;
    m.add_function(wrap_pyfunction!(handle::shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(hub::telemetry_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(convert::_json_loads, m)?)?;
    m.add_function(wrap_pyfunction!(contract, m)?)?;
    m.add("ENGINE_VERSION", mcpmux_core::VERSION)?;
    // How long AsyncHub keeps its loop turning after a call went out (core's
    // rule: `$MCPMUX_STAY_AWAKE_US`).
    m.add(
        "STAY_AWAKE_MICROS",
        u64::try_from(mcpmux_core::runtime::stay_awake().as_micros()).unwrap_or(u64::MAX),
    )?;
    m.add("ERROR_CODES", mcpmux_core::error::ALL_CODES.to_vec())?;
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    m.add("BUILD_PROFILE", profile)?;
    Ok(())
}
