//! Stands in for the WebSocket transport when mcpmux-core is built without
//! its `websocket` feature. A config naming type websocket already fails to load;
//! this catches a [`ServerConfig`](crate::config::ServerConfig) built by
//! hand, with the same `CONFIG_INVALID` error.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;

use super::{FrameSink, Transport};
use crate::config::NetworkConfig;
use crate::error::Error;

/// Never exists in this build (no value of it can be made).
pub enum WebSocketTransport {}

impl WebSocketTransport {
    /// Fails: this build has no WebSocket transport.
    pub async fn connect(
        label: &str,
        _config: &NetworkConfig,
        _max_message_bytes: usize,
        _timeout: Duration,
        _sink: Weak<dyn FrameSink>,
        _network: &crate::net::policy::NetworkPolicy,
    ) -> Result<Arc<WebSocketTransport>, Error> {
        Err(Error::ConfigInvalid(format!(
            "{label}: type websocket {}",
            crate::error::needs_feature("websocket")
        )))
    }
}

impl Transport for WebSocketTransport {
    fn send(&self, _message: Vec<u8>) -> Result<(), Error> {
        match *self {}
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        match *self {}
    }
}
