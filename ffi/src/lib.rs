//! # mcpmux-ffi
//!
//! The C ABI of mcpmux (`docs/ARCHITECTURE.md#front-ends`): `libmcpmux.so` / `libmcpmux.a` and the
//! header `include/mcpmux.h`, generated from this crate by cbindgen.
//!
//! A thin layer over `mcpmux-core`: argument conversion (`util`), error
//! mapping ([`error`], the one place where core errors become C statuses
//! and errors), and async bridging ([`engine`]: an explicit runtime handle;
//! [`hub`]: blocking calls; [`call`]: callback calls; [`policy`]: allow lists, limits, redaction
//! and audit for a host's calls; [`session`]: review
//! sessions and the host reviewer).
//!
//! Every export runs behind a panic boundary (`catch_unwind`), checks its
//! pointers, writes out-parameters only on success and states in its doc
//! comment who owns what and on which thread it may be called.

#![allow(non_camel_case_types)]

use std::ffi::c_char;

// In the order of the header: engine, hub, call, session, error.
pub mod engine;

pub mod hub;

pub mod authorize;

pub mod call;

pub mod progress;

pub mod policy;

pub mod session;

pub mod error;

pub mod events;

pub mod tasks;

pub mod event_calls;

pub mod requests;

mod boundary;
mod util;

#[cfg(test)]
mod contract_tests;

pub use call::{mcpmux_call, mcpmux_callback};
pub use engine::mcpmux_engine;
pub use error::{mcpmux_error, mcpmux_status};
pub use events::mcpmux_event_fn;
pub use hub::mcpmux_hub;
pub use policy::{mcpmux_audit_fn, mcpmux_policy};
pub use progress::mcpmux_progress_fn;
pub use requests::{mcpmux_request_fn, mcpmux_request_reply};
pub use session::{mcpmux_host_fn, mcpmux_host_reply, mcpmux_sessions};

/// The number of tools mcpmux_hub_search_tools() returns by default in
/// every front end (Python, Node and the CLI use it when no limit is
/// given); a limit of 0 finds nothing. Core's
/// `mcpmux_core::contract::SEARCH_DEFAULT_LIMIT`.
pub const MCPMUX_SEARCH_DEFAULT_LIMIT: u32 = 10;

/// The largest timeout any option takes, in seconds (about 31 years; the
/// `*_ms` options take at most 1000 times this): the same cap in every
/// front end, core's `mcpmux_core::contract::MAX_TIMEOUT_SECONDS`.
pub const MCPMUX_MAX_TIMEOUT_SECONDS: f64 = 1e9;

/// The major version of this header; equals the major part of
/// mcpmux_version() (checked when the library is built).
pub const MCPMUX_VERSION_MAJOR: u32 = 0;
/// The minor version of this header.
pub const MCPMUX_VERSION_MINOR: u32 = 1;
/// The patch version of this header.
pub const MCPMUX_VERSION_PATCH: u32 = 0;
// The header also defines MCPMUX_VERSION, "MAJOR.MINOR.PATCH" built from
// these three (ffi/cbindgen.toml, after_includes).

/// Parses a decimal version part at compile time.
const fn parse_part(s: &str) -> u32 {
    let bytes = s.as_bytes();
    let mut n = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "version part is not a number");
        n = n * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    n
}

// The header's version macros are literals (cbindgen copies them); these
// checks stop the build when Cargo.toml's version moves without them.
const _: () = {
    assert!(parse_part(env!("CARGO_PKG_VERSION_MAJOR")) == MCPMUX_VERSION_MAJOR);
    assert!(parse_part(env!("CARGO_PKG_VERSION_MINOR")) == MCPMUX_VERSION_MINOR);
    assert!(parse_part(env!("CARGO_PKG_VERSION_PATCH")) == MCPMUX_VERSION_PATCH);
};

/// The version of the library, "MAJOR.MINOR.PATCH" (the same as the
/// MCPMUX_VERSION macro of the header it was built with). The string is
/// static: do not free it. Any thread.
#[no_mangle]
pub extern "C" fn mcpmux_version() -> *const c_char {
    const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => panic!("the version contains a NUL byte"),
    };
    VERSION.as_ptr()
}

/// Frees a string returned by mcpmux (through a `char **` out-parameter or
/// a callback's `result_json`). NULL is a no-op. Any thread.
///
/// # Safety
/// `s` is NULL or a string from mcpmux that was not freed yet; it must not
/// be used afterwards. Strings from anywhere else (malloc, literals) must
/// not be passed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_string_free(s: *mut c_char) {
    util::guard_value((), || {
        if !s.is_null() {
            // SAFETY: the caller gives back a string from CString::into_raw.
            drop(unsafe { std::ffi::CString::from_raw(s) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::mcpmux_status::*;

    #[test]
    fn version_matches_cargo() {
        // SAFETY: static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(mcpmux_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(v.to_str().unwrap(), mcpmux_core::VERSION);
        assert_eq!(
            format!("{MCPMUX_VERSION_MAJOR}.{MCPMUX_VERSION_MINOR}.{MCPMUX_VERSION_PATCH}"),
            env!("CARGO_PKG_VERSION")
        );
    }

    #[test]
    fn a_panic_becomes_internal_and_never_crosses() {
        let mut err: *mut mcpmux_error = std::ptr::null_mut();
        // SAFETY: `err` is a valid out-parameter.
        let status = unsafe {
            util::guard_status(
                "mcpmux_test",
                &mut err,
                || -> Result<(), mcpmux_core::Error> { panic!("boom") },
            )
        };
        assert_eq!(status, MCPMUX_STATUS_INTERNAL);
        assert!(!err.is_null());
        // SAFETY: `err` came from mcpmux.
        unsafe {
            let code = std::ffi::CStr::from_ptr(error::mcpmux_error_code(err));
            let message = std::ffi::CStr::from_ptr(error::mcpmux_error_message(err));
            assert_eq!(code.to_str().unwrap(), "INTERNAL");
            assert_eq!(
                message.to_str().unwrap(),
                "mcpmux_test: internal panic: boom"
            );
            assert_eq!(error::mcpmux_error_status(err), MCPMUX_STATUS_INTERNAL);
            error::mcpmux_error_free(err);
        }
        assert_eq!(util::guard_value(7, || panic!("again")), 7);
    }
}
