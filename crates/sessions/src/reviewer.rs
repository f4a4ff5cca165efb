//! What a reviewer (the agent loop, the `command` reviewer) hands back to
//! the runner that runs it: [`Progress`] the watchdog reads, the thread id
//! it reports ([`set_thread_id`]) and how it ended ([`Finish`]). The runner
//! and the reviewers use this module; it uses neither.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::Value;

use super::state::{self, Spec};
use super::store;
use mcpmux_core::error::Error;

/// Progress seen by the watchdog: stream bytes, events, finished tool calls.
#[derive(Default)]
pub struct Progress {
    last_ms: AtomicU64,
    observed: AtomicBool,
}

impl Progress {
    /// Records progress now.
    pub fn tick(&self) {
        self.last_ms
            .store((store::now() * 1000.0) as u64, Ordering::Relaxed);
        self.observed.store(true, Ordering::Relaxed);
    }
    /// Seconds since the last progress.
    pub fn idle_seconds(&self) -> f64 {
        store::now() - self.last_ms.load(Ordering::Relaxed) as f64 / 1000.0
    }
    /// Whether any progress was seen by this runner.
    pub fn observed(&self) -> bool {
        self.observed.load(Ordering::Relaxed)
    }
    /// Sets whether progress was seen (a resumed round carries what its
    /// earlier runners saw).
    pub fn set_observed(&self, observed: bool) {
        self.observed.store(observed, Ordering::Relaxed);
    }
}

/// What the reviewer work produced.
pub enum Finish {
    /// The reviewer answered.
    Completed {
        /// `{verdict, blocks, summary?}`.
        review: Value,
        /// Its final text.
        text: String,
    },
    /// The round failed.
    Failed {
        /// The error message.
        error: String,
        /// `turn_failed`, `reviewer_process_exit`, `max_turns`, ...
        reason: String,
    },
}

/// Stores the thread id the reviewer reported in `session.json`.
pub fn set_thread_id(dir: &Path, thread_id: &str) -> Result<(), Error> {
    let mut spec: Spec = state::read_spec(dir)?;
    if spec.thread_id.as_deref() != Some(thread_id) {
        spec.thread_id = Some(thread_id.to_owned());
        state::write_spec(dir, &spec)?;
    }
    Ok(())
}
