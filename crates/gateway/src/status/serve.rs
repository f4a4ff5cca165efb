//! The status page's routes, on the gateway's own HTTP listener
//! (`--status`) or on a listener of their own (`--status-addr`):
//!
//! - `GET /status`: the page (HTML, rendered on the server);
//! - `GET /status.json`: the same data as JSON;
//! - `GET /status/events`: server-sent notices (`data: <n>`) that the
//!   status changed: at most 4 a second, and one a second at least so that
//!   nothing shown is older than 2 s; at most [`MAX_VIEWERS`] at once;
//! - `GET /status/tool?name=` (and `/status/tool.json?name=`): one tool's
//!   definition;
//! - `POST /status/approve` (form `server`, `tool`): approves a quarantined
//!   tool; needs the token and a same-origin request.
//!
//! Every route first checks who asks: the `Host` (DNS rebinding, as the
//! MCP endpoint), then a loopback peer, or the bearer token when one is
//! set (compared in constant time).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{
    HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, HOST, LOCATION, ORIGIN,
};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

use super::{page, snapshot, StatusAccess, MAX_VIEWERS};
use crate::access::{host_allowed, same_secret};
use crate::Gateway;

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Largest approve form accepted.
const MAX_FORM_BYTES: usize = 4096;
/// Least time between two notices to one page.
const MIN_NOTICE_GAP: Duration = Duration::from_millis(250);
/// Longest time without a notice (the page then re-reads anyway).
const MAX_NOTICE_GAP: Duration = Duration::from_millis(1000);

/// The replica's side of the page: its name and readiness, as the
/// listener serving it knows them.
pub(crate) struct Fleet {
    /// This replica's name (`--replica`), if any.
    pub replica: Option<String>,
    /// Where MCP is served: `http` or `stdio`.
    pub transport: &'static str,
    /// Ready, or why not (as `/readyz` says).
    pub ready: Result<(), String>,
}

/// What one listener serving the page knows: who may look, which `Host`
/// and `Origin` values are its own, and the pages following live.
pub(crate) struct Site {
    pub access: StatusAccess,
    /// Whether `Host` must be loopback or one of `allowed_hosts`.
    pub enforce_host: bool,
    pub allowed_hosts: Vec<String>,
    /// `Origin` values that are this listener itself.
    pub origins: Vec<String>,
    viewers: Arc<AtomicUsize>,
}

impl Site {
    pub(crate) fn new(
        access: StatusAccess,
        enforce_host: bool,
        allowed_hosts: Vec<String>,
        origins: Vec<String>,
    ) -> Site {
        Site {
            access,
            enforce_host,
            allowed_hosts,
            origins,
            viewers: Arc::default(),
        }
    }
}

/// Whether `path` is one of the page's.
pub(crate) fn is_status_path(path: &str) -> bool {
    path == "/status" || path == "/status.json" || path.starts_with("/status/")
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn owned(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: under the latter a browser sends
    // `Origin: null` with the page's form POST, which the approve check
    // must refuse.
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    if content_type.starts_with("text/html") {
        if let Ok(csp) = HeaderValue::from_str(&page::CSP) {
            h.insert("content-security-policy", csp);
        }
        h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    }
    r
}

/// The bearer token of `Authorization` (the scheme in any case).
fn bearer(req: &Request<Incoming>) -> &str {
    req.headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, token)| token.trim())
}

/// Whether a browser says the request comes from another site's page (a
/// script's fetch, not a navigation): refused, so that no page can read
/// the status or hold the viewers' places (a navigation from a link is
/// fine: it only shows the page).
fn from_another_site(req: &Request<Incoming>, site: &Site) -> bool {
    let headers = req.headers();
    let navigating = headers
        .get("sec-fetch-mode")
        .is_some_and(|m| m.as_bytes() == b"navigate");
    let cross = headers
        .get("sec-fetch-site")
        .is_some_and(|s| s.as_bytes() == b"cross-site" || s.as_bytes() == b"same-site");
    let foreign_origin = headers
        .get(ORIGIN)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|o| !site.origins.iter().any(|own| own == o));
    !navigating && (cross || foreign_origin)
}

/// Who asks may look: `None`, or the refusal to send.
fn refusal(site: &Site, req: &Request<Incoming>, peer: SocketAddr) -> Option<Response<Body>> {
    if from_another_site(req, site) {
        return Some(text(
            StatusCode::FORBIDDEN,
            "forbidden: the status page is not served to other sites' scripts",
        ));
    }
    match &site.access.token {
        Some(token) if !same_secret(bearer(req).as_bytes(), token.as_bytes()) => {
            let mut r = text(
                StatusCode::UNAUTHORIZED,
                "unauthorized: the status page needs Authorization: Bearer <the --status-token-file token>",
            );
            r.headers_mut()
                .insert("www-authenticate", HeaderValue::from_static("Bearer"));
            return Some(r);
        }
        None if !peer.ip().to_canonical().is_loopback() => {
            return Some(text(
                StatusCode::FORBIDDEN,
                "forbidden: the status page is served to loopback clients only (see --status-token-file)",
            ));
        }
        _ => {}
    }
    // Without a token, what guards the page is that only this machine can
    // reach it: a foreign `Host` (DNS rebinding) is refused whatever the
    // bind address.
    if site.enforce_host || site.access.token.is_none() {
        let host = match req.uri().authority() {
            Some(authority) => Some(authority.as_str()),
            None => req.headers().get(HOST).and_then(|v| v.to_str().ok()),
        };
        if !host.is_some_and(|h| host_allowed(h, &site.allowed_hosts)) {
            return Some(text(
                StatusCode::FORBIDDEN,
                "forbidden: Host is not this gateway (see --allowed-host)",
            ));
        }
    }
    None
}

/// Answers one request for the page's routes.
pub(crate) async fn respond(
    gateway: &Gateway,
    site: &Site,
    req: Request<Incoming>,
    peer: SocketAddr,
    fleet: impl FnOnce() -> Fleet,
) -> Response<Body> {
    if let Some(refused) = refusal(site, &req, peer) {
        return refused;
    }
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    match (req.method().clone(), path.as_str()) {
        (Method::GET | Method::HEAD, "/status") => {
            let doc = snapshot::build(gateway, &fleet());
            let can_approve = site.access.token.is_some();
            owned(
                StatusCode::OK,
                "text/html; charset=utf-8",
                page::render(&doc, can_approve),
            )
        }
        (Method::GET | Method::HEAD, "/status.json") => {
            let doc = snapshot::build(gateway, &fleet());
            owned(StatusCode::OK, "application/json", doc.to_string())
        }
        (Method::GET, "/status/events") => events(gateway, site),
        (Method::GET | Method::HEAD, "/status/tool" | "/status/tool.json") => {
            let Some(name) = snapshot::query_param(&query, "name") else {
                return text(StatusCode::BAD_REQUEST, "missing ?name=<tool's hub name>");
            };
            let Some(tool) = gateway
                .hub()
                .list_tools()
                .into_iter()
                .find(|t| t.name == name)
            else {
                return text(StatusCode::NOT_FOUND, "no such tool");
            };
            let definition = serde_json::to_value(&tool).unwrap_or(Value::Null);
            if path.ends_with(".json") {
                owned(StatusCode::OK, "application/json", definition.to_string())
            } else {
                owned(
                    StatusCode::OK,
                    "text/html; charset=utf-8",
                    page::tool_page(&name, &definition),
                )
            }
        }
        (Method::POST, "/status/approve") => approve(gateway, site, req).await,
        (_, "/status" | "/status.json" | "/status/tool" | "/status/tool.json") => {
            not_allowed("GET, HEAD")
        }
        (_, "/status/events") => not_allowed("GET"),
        (_, "/status/approve") => not_allowed("POST"),
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: the status page is /status",
        ),
    }
}

fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
    r.headers_mut()
        .insert("allow", HeaderValue::from_static(allow));
    r
}

/// A viewer's place among the [`MAX_VIEWERS`], given back when its stream
/// ends.
struct Viewer(Arc<AtomicUsize>);

impl Drop for Viewer {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn events(gateway: &Gateway, site: &Site) -> Response<Body> {
    let Some(board) = gateway.status_board() else {
        return text(StatusCode::NOT_FOUND, "the status page is off");
    };
    let taken = site.viewers.fetch_add(1, Ordering::Relaxed);
    let viewer = Viewer(site.viewers.clone());
    if taken >= MAX_VIEWERS {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many status pages follow this gateway; reload later",
        );
    }
    let changes = board.watch();
    // Pulled by hyper: one notice at a time, so a viewer that stops
    // reading holds one frame, never a queue.
    let stream = futures::stream::unfold(
        (changes, viewer, 0u64, true),
        |(mut changes, viewer, mut n, first)| async move {
            if !first {
                tokio::time::sleep(MIN_NOTICE_GAP).await;
                let _ =
                    tokio::time::timeout(MAX_NOTICE_GAP - MIN_NOTICE_GAP, changes.changed()).await;
            }
            changes.borrow_and_update();
            n += 1;
            let notice = if first {
                format!("retry: 2000\ndata: {n}\n\n")
            } else {
                format!("data: {n}\n\n")
            };
            Some((
                Ok::<_, Infallible>(Frame::data(Bytes::from(notice))),
                (changes, viewer, n, false),
            ))
        },
    );
    let mut r = Response::new(StreamBody::new(stream).boxed());
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

async fn approve(gateway: &Gateway, site: &Site, req: Request<Incoming>) -> Response<Body> {
    if site.access.token.is_none() {
        return text(
            StatusCode::FORBIDDEN,
            "forbidden: approving from the status page needs --status-token-file",
        );
    }
    // A form posted from the page itself: its Origin is this listener (a
    // browser sends Origin on every POST), or, behind a proxy whose name
    // this listener does not know, the browser says it is same-origin.
    let headers = req.headers();
    let same_origin = headers
        .get(ORIGIN)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|o| site.origins.iter().any(|own| own == o))
        || headers
            .get("sec-fetch-site")
            .is_some_and(|s| s.as_bytes() == b"same-origin");
    if !same_origin {
        return text(
            StatusCode::FORBIDDEN,
            "forbidden: approving needs a same-origin request (Origin is not this gateway)",
        );
    }
    let body = match Limited::new(req.into_body(), MAX_FORM_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large"),
    };
    let form = String::from_utf8_lossy(&body);
    let (Some(server), Some(tool)) = (
        snapshot::query_param(&form, "server"),
        snapshot::query_param(&form, "tool"),
    ) else {
        return text(StatusCode::BAD_REQUEST, "the form needs server and tool");
    };
    match gateway.inner.policy.approve_tools(
        gateway.hub(),
        Some(&server),
        std::slice::from_ref(&tool),
    ) {
        Ok(_) => {
            tracing::info!(%server, %tool, "tool approved from the status page");
            gateway
                .inner
                .pins_changed
                .send_modify(|n| *n = n.wrapping_add(1));
            let mut r = text(StatusCode::SEE_OTHER, "approved");
            r.headers_mut()
                .insert(LOCATION, HeaderValue::from_static("/status"));
            r
        }
        Err(e) => owned(
            StatusCode::BAD_REQUEST,
            "text/plain; charset=utf-8",
            format!("{}: {e}", e.code()),
        ),
    }
}
