//! The status page on a listener of its own (`--status-addr`), for a
//! gateway serving MCP on stdio (an HTTP gateway serves it on its own
//! listener with `--status`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::Request;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::serve::{respond, Fleet, Site};
use super::StatusAccess;
use crate::access::own_origins;
use crate::Gateway;
use mcpmux_core::error::Error;

/// Connections served at once; the next ones wait in the listen queue.
const MAX_CONNECTIONS: usize = 32;
/// How long a request head may take to arrive.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether the servers are all up or given up on (what `/readyz` says of
/// an HTTP gateway, draining aside).
pub(crate) fn readiness(gateway: &Gateway) -> Result<(), String> {
    let starting = gateway
        .hub()
        .servers()
        .iter()
        .any(|s| s.state == mcpmux_core::ServerState::Starting);
    if starting {
        Err("not ready: a server is still starting".into())
    } else {
        Ok(())
    }
}

/// Serves the status page of `gateway` on `listener` until the task is
/// dropped. Binding anything but loopback needs a token in `access`
/// (`CONFIG_INVALID` otherwise). `gateway` must have been built with
/// [`GatewayOptions::status`](crate::GatewayOptions::status) for the calls
/// to be shown. Each connection runs on its own engine task.
pub async fn serve_status(
    gateway: Gateway,
    listener: TcpListener,
    access: StatusAccess,
) -> Result<(), Error> {
    let local = listener
        .local_addr()
        .map_err(|e| Error::Internal(format!("status page: local address: {e}")))?;
    if !local.ip().is_loopback() && access.token.is_none() {
        return Err(Error::ConfigInvalid(format!(
            "--status-addr {local}: serving the status page on an address other than loopback \
             needs --status-token-file"
        )));
    }
    let enforce_host = local.ip().is_loopback();
    let site = Arc::new(Site::new(
        access,
        enforce_host,
        Vec::new(),
        own_origins(&local),
    ));
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("status page: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (gateway, site, builder) = (gateway.clone(), site.clone(), builder.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let (gateway, site) = (gateway.clone(), site.clone());
                async move {
                    let fleet = || Fleet {
                        replica: gateway.inner.options.replica.clone(),
                        transport: "stdio",
                        ready: readiness(&gateway),
                    };
                    let response = if super::serve::is_status_path(req.uri().path()) {
                        respond(&gateway, &site, req, peer, fleet).await
                    } else {
                        let mut r = hyper::Response::new(http_body_util::BodyExt::boxed(
                            http_body_util::Full::new(bytes::Bytes::from_static(
                                b"not found: the status page is /status",
                            )),
                        ));
                        *r.status_mut() = hyper::StatusCode::NOT_FOUND;
                        r
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = builder
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}
