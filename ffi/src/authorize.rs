//! The person in the loop from C: a callback that opens the authorization
//! URL of an OAuth server and hands back the redirect
//! (mcpmux_hub_connect_with_authorize()).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Arc;

use futures::future::BoxFuture;
use mcpmux_core::{AuthorizationHandler, AuthorizationRequest, ConfigSource, Error, HubOptions};

use crate::engine::mcpmux_engine;
use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{connect_with, mcpmux_hub};
use crate::util::{guard_status, write_out, Args};

/// Size of the buffer a mcpmux_authorize_fn writes the redirect URL into
/// (NUL included).
pub const MCPMUX_REDIRECT_MAX: usize = 8192;

/// Opens `url` for the person (a browser) and waits for the authorization
/// server's redirect to `redirect_uri`; writes the full redirect URL, NUL
/// terminated, into `redirect_out` (MCPMUX_REDIRECT_MAX bytes) and returns
/// 0, or returns non-zero when the authorization did not complete (the
/// server then fails with AUTH_FAILED). `server` is the configured server's
/// name. Called on an engine thread (never the caller of a blocking mcpmux
/// function), possibly long after connect (when a token must be renewed).
#[allow(non_camel_case_types)]
pub type mcpmux_authorize_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        server: *const c_char,
        url: *const c_char,
        redirect_uri: *const c_char,
        redirect_out: *mut c_char,
    ) -> c_int,
>;

/// The callback and its `user_data`, which the host keeps valid for the
/// hub's whole life.
struct CAuthorize {
    callback: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        *const c_char,
        *const c_char,
        *mut c_char,
    ) -> c_int,
    user_data: usize,
}

impl AuthorizationHandler for CAuthorize {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, Error>> {
        let (callback, user_data) = (self.callback, self.user_data);
        Box::pin(async move {
            let text = |s: String| {
                CString::new(s)
                    .map_err(|_| Error::AuthFailed("authorization request holds a NUL byte".into()))
            };
            let (server, url, redirect) = (
                text(request.server)?,
                text(request.url)?,
                text(request.redirect_uri)?,
            );
            let answer = tokio::task::spawn_blocking(move || {
                let mut buf = vec![0 as c_char; MCPMUX_REDIRECT_MAX];
                // SAFETY: the host's callback with its own user_data and
                // NUL-terminated strings that live across the call; the
                // buffer has MCPMUX_REDIRECT_MAX bytes.
                let rc = unsafe {
                    callback(
                        user_data as *mut c_void,
                        server.as_ptr(),
                        url.as_ptr(),
                        redirect.as_ptr(),
                        buf.as_mut_ptr(),
                    )
                };
                buf[MCPMUX_REDIRECT_MAX - 1] = 0;
                // SAFETY: NUL-terminated above at the latest.
                let out = unsafe { CStr::from_ptr(buf.as_ptr()) }
                    .to_string_lossy()
                    .into_owned();
                (rc, out)
            })
            .await
            .map_err(|e| Error::Internal(format!("authorize callback: {e}")))?;
            match answer {
                (0, redirect) if !redirect.is_empty() => Ok(redirect),
                (rc, _) => Err(Error::AuthFailed(format!(
                    "the authorize callback returned {rc}"
                ))),
            }
        })
    }
}

/// Like mcpmux_hub_connect(), with `authorize` as the person in the loop
/// for servers whose config has `auth.type = "oauth"` (see
/// mcpmux_authorize_fn). `authorize` may be NULL: a server that needs a new
/// authorization then fails with AUTH_REQUIRED. `user_data` is passed to
/// every call and must stay valid until the hub is freed. Blocking.
///
/// # Safety
/// As for mcpmux_hub_connect(); `authorize` is NULL or a function that is
/// safe to call from any thread with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_connect_with_authorize(
    engine: *mut mcpmux_engine,
    config_text: *const c_char,
    authorize: mcpmux_authorize_fn,
    user_data: *mut c_void,
    out: *mut *mut mcpmux_hub,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_connect_with_authorize",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            args.non_null("engine", engine)?;
            let text = args.str("config_text", config_text)?;
            args.non_null("out", out)?;
            let mut options = HubOptions::default();
            if let Some(callback) = authorize {
                options.auth.handler = Some(Arc::new(CAuthorize {
                    callback,
                    user_data: user_data as usize,
                }));
            }
            let hub = connect_with(
                args,
                &*engine,
                crate::util::load_config(ConfigSource::Text(text.into())),
                options,
            )?;
            write_out(out, hub);
            Ok(())
        })
    }
}
