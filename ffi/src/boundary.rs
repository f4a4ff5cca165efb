//! The panic boundary at its simplest: what the error accessors themselves
//! run behind (`error` cannot use `util`, which reports through `error`).

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f` behind the panic boundary; a panic gives `fallback`.
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}
