//! The engine's integration tests use the helpers shared by every crate's
//! tests, in `tests/support` (crate `mcpmux-test-support`): where the real
//! peers live, config builders, process checks, network fixtures, event logs.
#![allow(unused_imports)]

pub use mcpmux_test_support::*;
