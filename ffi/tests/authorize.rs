//! mcpmux_hub_connect_with_authorize(): the C callback is the person in the
//! loop for an OAuth server (tests/servers/net/oauth_server.py). It gets
//! the authorization URL, follows the server's immediate approval as a
//! browser would, and writes the redirect; without a callback the server
//! fails with AUTH_REQUIRED, with one that returns non-zero AUTH_FAILED.

mod common;

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::ptr;
use std::time::Duration;

use common::*;
use mcpmux::authorize::{mcpmux_hub_connect_with_authorize, MCPMUX_REDIRECT_MAX};
use mcpmux::engine::{mcpmux_engine, mcpmux_engine_free, mcpmux_engine_new};
use mcpmux::error::mcpmux_status;
use mcpmux::hub::{mcpmux_hub_free, mcpmux_hub_servers};
use mcpmux::mcpmux_string_free;
use serde_json::Value;

struct Fixture(Child, u16);

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fixture() -> Fixture {
    let mut child = Command::new(python())
        .arg(workspace_root().join("tests/servers/net/oauth_server.py"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().strip_prefix("READY ").unwrap().parse().unwrap();
    Fixture(child, port)
}

/// The redirect the authorization endpoint answers `url` with.
fn follow(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/')?;
    let mut s = TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .map(|l| l.trim().to_owned())
}

unsafe extern "C" fn browser(
    user_data: *mut c_void,
    server: *const c_char,
    url: *const c_char,
    _redirect_uri: *const c_char,
    out: *mut c_char,
) -> c_int {
    let calls = unsafe { &*(user_data as *const std::sync::atomic::AtomicUsize) };
    calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        unsafe { CStr::from_ptr(server) }.to_str().unwrap(),
        "secure"
    );
    let url = unsafe { CStr::from_ptr(url) }.to_str().unwrap();
    let Some(redirect) = follow(url) else {
        return 1;
    };
    let bytes = redirect.as_bytes();
    assert!(bytes.len() < MCPMUX_REDIRECT_MAX);
    unsafe {
        ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), out, bytes.len());
        *out.add(bytes.len()) = 0;
    }
    0
}

unsafe extern "C" fn refuse(
    _: *mut c_void,
    _: *const c_char,
    _: *const c_char,
    _: *const c_char,
    _: *mut c_char,
) -> c_int {
    7
}

fn servers_after(
    engine: *mut mcpmux_engine,
    config: &CString,
    cb: mcpmux::authorize::mcpmux_authorize_fn,
    user_data: *mut c_void,
) -> Value {
    let mut hub = ptr::null_mut();
    let status = unsafe {
        mcpmux_hub_connect_with_authorize(
            engine,
            config.as_ptr(),
            cb,
            user_data,
            &mut hub,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, mcpmux_status::MCPMUX_STATUS_OK);
    let mut json = ptr::null_mut();
    let status = unsafe { mcpmux_hub_servers(hub, &mut json, ptr::null_mut()) };
    assert_eq!(status, mcpmux_status::MCPMUX_STATUS_OK);
    let value = serde_json::from_str(unsafe { CStr::from_ptr(json) }.to_str().unwrap()).unwrap();
    unsafe {
        mcpmux_string_free(json);
        mcpmux_hub_free(hub);
    }
    value
}

#[test]
fn c_authorize_callback() {
    let fx = fixture();
    let home = tempfile::tempdir().unwrap();
    // SAFETY: set before the engine's threads start; tokens stay in the temp dir.
    unsafe { std::env::set_var("XDG_CONFIG_HOME", home.path()) };
    let config = CString::new(format!(
        r#"{{"mcpServers": {{"secure": {{"url": "http://127.0.0.1:{}/mcp", "auth": {{"type": "oauth"}}}}}}}}"#,
        fx.1
    ))
    .unwrap();
    let mut engine = ptr::null_mut();
    assert_eq!(
        unsafe { mcpmux_engine_new(ptr::null(), &mut engine, ptr::null_mut()) },
        mcpmux_status::MCPMUX_STATUS_OK
    );

    let servers = servers_after(engine, &config, None, ptr::null_mut());
    assert_eq!(servers[0]["error_code"], "AUTH_REQUIRED", "{servers}");

    let servers = servers_after(engine, &config, Some(refuse), ptr::null_mut());
    assert_eq!(servers[0]["error_code"], "AUTH_FAILED", "{servers}");

    let calls = std::sync::atomic::AtomicUsize::new(0);
    let servers = servers_after(
        engine,
        &config,
        Some(browser),
        &calls as *const _ as *mut c_void,
    );
    assert_eq!(servers[0]["state"], "connected", "{servers}");
    assert_eq!(servers[0]["tool_count"], 1, "{servers}");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    unsafe { mcpmux_engine_free(engine) };
}
