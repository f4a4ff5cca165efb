//! Stands in for the legacy HTTP+SSE transport when mcpmux-core is built without
//! its `sse` feature. A config naming type sse already fails to load;
//! this catches a [`ServerConfig`](crate::config::ServerConfig) built by
//! hand, with the same `CONFIG_INVALID` error.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;

use super::{FrameSink, Transport};
use crate::config::NetworkConfig;
use crate::error::Error;

/// Never exists in this build (no value of it can be made).
pub enum SseTransport {}

impl SseTransport {
    /// Fails: this build has no legacy HTTP+SSE transport.
    pub async fn connect(
        label: &str,
        _config: &NetworkConfig,
        _max_message_bytes: usize,
        _timeout: Duration,
        _sink: Weak<dyn FrameSink>,
        _network: &crate::net::Http,
    ) -> Result<Arc<SseTransport>, Error> {
        Err(Error::ConfigInvalid(format!(
            "{label}: type sse {}",
            crate::error::needs_feature("sse")
        )))
    }
}

impl Transport for SseTransport {
    fn send(&self, _message: Vec<u8>) -> Result<(), Error> {
        match *self {}
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        match *self {}
    }
}
