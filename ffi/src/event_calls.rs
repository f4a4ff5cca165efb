//! The events extension (`io.modelcontextprotocol/events`) through the C
//! ABI: list a server's event types, poll one from a cursor, open a stream
//! whose occurrences arrive on the hub's event callback
//! (mcpmux_hub_set_event_callback(): `event` and `event_stream` events).
//! JSON in and out, blocking, any thread but an engine thread (as the other
//! hub calls). Webhook subscriptions (`events/subscribe`,
//! `events/unsubscribe`) for a host that runs its own receiver. Core does
//! the work (`Hub::list_events`, `poll_events`, `stream_events`,
//! `subscribe_events`, `unsubscribe_events`); this only converts.

use std::ffi::c_char;
use std::sync::Mutex;
use std::time::Duration;

use mcpmux_core::events_ext::{EventQuery, EventStreamHandle, SubscribeOptions, Webhook};
use mcpmux_core::Error;
use serde_json::{Map, Value};

use crate::boundary::guard_value;
use crate::error::{mcpmux_error, mcpmux_status};
use crate::hub::{hub_ref, mcpmux_hub};
use crate::util::{c_string, guard_status, json_string, write_out, Args};

/// An open stream of an event type, made by mcpmux_hub_stream_events(),
/// owned by the caller and freed (which stops the stream) with
/// mcpmux_event_stream_free(). It does not depend on the hub being alive
/// to be read or freed. Any thread.
pub struct mcpmux_event_stream {
    handle: Mutex<EventStreamHandle>,
}

/// `args_json` of an events call: the subscription's arguments, a JSON
/// object (`None` for NULL).
///
/// # Safety
/// As for [`Args::str`].
unsafe fn arguments(args: Args, args_json: *const c_char) -> Result<Option<Value>, Error> {
    // SAFETY: forwarded.
    Ok(unsafe { args.opt_object("args_json", args_json) }?.map(Value::Object))
}

/// The options object, refusing keys not in `known`.
fn options(
    args: Args,
    map: Option<Map<String, Value>>,
    known: &[&str],
) -> Result<Map<String, Value>, Error> {
    let map = map.unwrap_or_default();
    if let Some(other) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(args.invalid(
            "options_json",
            format!("has unknown option '{other}' (known: {})", known.join(", ")),
        ));
    }
    Ok(map)
}

/// The `cursor` option: a string or null.
fn cursor_option(args: Args, map: &Map<String, Value>) -> Result<Option<String>, Error> {
    match map.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(args.invalid("options_json", "option 'cursor' must be a string")),
    }
}

/// A milliseconds option (`ttl_ms`, `max_age_ms`, `heartbeat_ms`): a
/// non-negative integer or null.
fn millis_option(
    args: Args,
    map: &Map<String, Value>,
    key: &str,
) -> Result<Option<Duration>, Error> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Duration::from_millis)
            .map(Some)
            .ok_or_else(|| {
                args.invalid(
                    "options_json",
                    format!("option '{key}' must be a non-negative integer"),
                )
            }),
    }
}

/// Writes the event types of every server offering the events extension
/// (or of `server` only, when not NULL) to `*out_json`: a JSON array, each
/// item with a "server" member (`events/list`; the same as `mcpmux events
/// list --json`). A named server without the extension is INVALID_INPUT.
/// Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()).
///
/// # Safety
/// `hub` is a live hub; `server` NULL or a NUL-terminated string; `out_json`
/// and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_list_events(
    hub: *const mcpmux_hub,
    server: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_list_events",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.opt_str("server", server)?;
            args.non_null("out_json", out_json)?;
            let list = hub.shared.block_on(args, hub.hub.list_events(server))??;
            write_out(out_json, json_string(&list)?);
            Ok(())
        })
    }
}

/// Polls event type `name` of `server` (`events/poll`) and writes the page
/// to `*out_json`: `{"events": [{"event_id", "name", "timestamp"?,
/// "data"}], "cursor", "truncated", "has_more", "next_poll_ms"}`. Keep
/// `cursor` and poll again after `next_poll_ms` (at once when `has_more`).
/// `args_json` (nullable): the subscription's arguments, a JSON object.
/// `options_json` (nullable): `{"cursor": "...", "max_events": n,
/// "max_age_ms": n}` (no cursor: from now, which returns no events and a
/// cursor to keep; `max_events` is capped at 1000; `max_age_ms`: nothing
/// older than that is replayed, even from an older cursor, and the page
/// says `truncated` when that left some out); another key is
/// INVALID_INPUT.
/// Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()). A server's refusal is SERVER_ERROR.
///
/// # Safety
/// `hub` is a live hub; `server` and `name` NUL-terminated strings;
/// `args_json` and `options_json` NULL or NUL-terminated strings;
/// `out_json` and `err` are NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_poll_events(
    hub: *const mcpmux_hub,
    server: *const c_char,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_poll_events",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let name = args.str("name", name)?;
            let arguments = arguments(args, args_json)?;
            let opts = options(
                args,
                args.opt_object("options_json", options_json)?,
                &["cursor", "max_events", "max_age_ms"],
            )?;
            let cursor = cursor_option(args, &opts)?;
            let max_age = millis_option(args, &opts, "max_age_ms")?;
            let max_events = match opts.get("max_events") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(
                    || {
                        args.invalid(
                            "options_json",
                            "option 'max_events' must be a non-negative integer",
                        )
                    },
                )?),
            };
            args.non_null("out_json", out_json)?;
            let query = EventQuery {
                cursor,
                max_events,
                max_age,
                heartbeat: None,
            };
            let page = hub.shared.block_on(
                args,
                hub.hub
                    .poll_events_with(server, name, arguments.as_ref(), &query),
            )??;
            write_out(out_json, json_string(&page)?);
            Ok(())
        })
    }
}

/// Opens a stream of event type `name` of `server` (`events/stream`) and
/// writes its handle to `*out_stream`. The occurrences arrive on the hub's
/// event callback (mcpmux_hub_set_event_callback()) as `{"type": "event",
/// "server", "subscription", "name", "event_id", "timestamp"?, "data",
/// "cursor"?}`, the stream's changes as `{"type": "event_stream", "server",
/// "subscription", "state", "cursor"?, "truncated", "error"?}`;
/// `subscription` is mcpmux_event_stream_id(). `args_json` as for
/// mcpmux_hub_poll_events(); `options_json` (nullable): `{"cursor":
/// "...", "max_age_ms": n, "heartbeat_ms": n}` (no cursor: from now;
/// `max_age_ms` as for mcpmux_hub_poll_events(); `heartbeat_ms`: the
/// server's heartbeat interval, default 30000: after twice it without a
/// message the stream is sent again from its cursor). Blocking until the
/// request is sent.
///
/// On success `*out_stream` receives a stream owned by the caller (free it,
/// which stops the stream, with mcpmux_event_stream_free()).
///
/// # Safety
/// As for mcpmux_hub_poll_events(); `out_stream` is NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_stream_events(
    hub: *const mcpmux_hub,
    server: *const c_char,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    out_stream: *mut *mut mcpmux_event_stream,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_stream_events",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let name = args.str("name", name)?;
            let arguments = arguments(args, args_json)?;
            let opts = options(
                args,
                args.opt_object("options_json", options_json)?,
                &["cursor", "max_age_ms", "heartbeat_ms"],
            )?;
            let query = EventQuery {
                cursor: cursor_option(args, &opts)?,
                max_age: millis_option(args, &opts, "max_age_ms")?,
                heartbeat: millis_option(args, &opts, "heartbeat_ms")?,
                max_events: None,
            };
            args.non_null("out_stream", out_stream)?;
            let handle = hub.shared.block_on(
                args,
                hub.hub
                    .stream_events_with(server, name, arguments.as_ref(), &query),
            )??;
            let stream = Box::new(mcpmux_event_stream {
                handle: Mutex::new(handle),
            });
            write_out(out_stream, Box::into_raw(stream));
            Ok(())
        })
    }
}

/// Subscribes the host's webhook `url` to event type `name` of `server`
/// (`events/subscribe` with webhook delivery) and writes the server's
/// answer to `*out_json`: `{"id", "refresh_before"?, "cursor"?,
/// "truncated", "delivery_status"?}`. Subscribe again before
/// `refresh_before` to keep it. `url` must be `https` (`http` only to a
/// loopback address) and `secret` the signing secret, `whsec_` and base64:
/// else INVALID_INPUT before the server is asked. The secret is never
/// logged or put in an error (it joins the redacted secrets). `args_json`
/// as for mcpmux_hub_poll_events(); `options_json` (nullable):
/// `{"cursor": "...", "ttl_ms": n, "no_expiry": true, "max_age_ms": n}`
/// (no cursor: from now; no ttl: the server's default; `no_expiry` asks
/// for a subscription that never expires, `ttlMs: null` on the wire, and
/// cannot go with `ttl_ms`; `max_age_ms` as for
/// mcpmux_hub_poll_events()). Receiving and verifying the deliveries is
/// the host's.
/// Blocking.
///
/// On success `*out_json` receives a string owned by the caller (free it
/// with mcpmux_string_free()). A server's refusal is SERVER_ERROR.
///
/// # Safety
/// `hub` is a live hub; `server`, `name`, `url` and `secret` NUL-terminated
/// strings; `args_json` and `options_json` NULL or NUL-terminated strings;
/// `out_json` and `err` are NULL or valid for one pointer write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mcpmux_hub_subscribe_events(
    hub: *const mcpmux_hub,
    server: *const c_char,
    name: *const c_char,
    args_json: *const c_char,
    url: *const c_char,
    secret: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_subscribe_events",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let name = args.str("name", name)?;
            let arguments = arguments(args, args_json)?;
            let url = args.str("url", url)?;
            let secret = args.str("secret", secret)?;
            let opts = options(
                args,
                args.opt_object("options_json", options_json)?,
                &["cursor", "ttl_ms", "no_expiry", "max_age_ms"],
            )?;
            let no_expiry = match opts.get("no_expiry") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    return Err(args.invalid("options_json", "option 'no_expiry' must be a boolean"))
                }
            };
            let hook = Webhook {
                url: url.to_owned(),
                secret: secret.to_owned(),
                cursor: cursor_option(args, &opts)?,
                ttl: millis_option(args, &opts, "ttl_ms")?,
            };
            let options = SubscribeOptions {
                no_expiry,
                max_age: millis_option(args, &opts, "max_age_ms")?,
            };
            args.non_null("out_json", out_json)?;
            let sub = hub.shared.block_on(
                args,
                hub.hub
                    .subscribe_events_with(server, name, arguments.as_ref(), &hook, &options),
            )??;
            write_out(out_json, json_string(&sub)?);
            Ok(())
        })
    }
}

/// Ends the webhook subscription of `url` to event type `name` of `server`
/// with these arguments (`events/unsubscribe`). `args_json` as given when
/// subscribing (nullable). Blocking. A subscription the server does not
/// know is SERVER_ERROR (the server's own code).
///
/// # Safety
/// `hub` is a live hub; `server`, `name` and `url` NUL-terminated strings;
/// `args_json` NULL or a NUL-terminated string; `err` is NULL or valid for
/// one pointer write.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_hub_unsubscribe_events(
    hub: *const mcpmux_hub,
    server: *const c_char,
    name: *const c_char,
    args_json: *const c_char,
    url: *const c_char,
    err: *mut *mut mcpmux_error,
) -> mcpmux_status {
    let args = Args {
        func: "mcpmux_hub_unsubscribe_events",
    };
    // SAFETY: the caller's promises, forwarded.
    unsafe {
        guard_status(args.func, err, || {
            let hub = hub_ref(args, hub)?;
            let server = args.str("server", server)?;
            let name = args.str("name", name)?;
            let arguments = arguments(args, args_json)?;
            let url = args.str("url", url)?;
            hub.shared.block_on(
                args,
                hub.hub
                    .unsubscribe_events(server, name, arguments.as_ref(), url),
            )??;
            Ok(())
        })
    }
}

/// The stream's id: the `subscription` of its events; 0 for NULL. Any
/// thread.
///
/// # Safety
/// `stream` is NULL or a stream that was not freed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_event_stream_id(stream: *const mcpmux_event_stream) -> u64 {
    guard_value(0, || {
        // SAFETY: the caller's promise.
        unsafe { stream.as_ref() }.map_or(0, |s| {
            s.handle.lock().unwrap_or_else(|p| p.into_inner()).id()
        })
    })
}

/// The stream's latest cursor (from its last occurrence, heartbeat or
/// confirmation: keep it to resume, also after a restart), as a string
/// owned by the caller (free it with mcpmux_string_free()); NULL when there
/// is none yet, or for a NULL stream. Any thread.
///
/// # Safety
/// `stream` is NULL or a stream that was not freed.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_event_stream_cursor(
    stream: *const mcpmux_event_stream,
) -> *mut c_char {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: the caller's promise.
        let cursor = unsafe { stream.as_ref() }
            .and_then(|s| s.handle.lock().unwrap_or_else(|p| p.into_inner()).cursor());
        cursor
            .and_then(|c| c_string(&c).ok())
            .unwrap_or(std::ptr::null_mut())
    })
}

/// Stops the stream (the server is told) and frees it. NULL is a no-op.
/// Any thread, callbacks included.
///
/// # Safety
/// `stream` is NULL or a stream that was not freed; it must not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpmux_event_stream_free(stream: *mut mcpmux_event_stream) {
    guard_value((), || {
        if !stream.is_null() {
            // SAFETY: the caller gives back ownership of the Box.
            drop(unsafe { Box::from_raw(stream) });
        }
    })
}
