//! The gateway's live status page (`--status`, `--status-addr`): servers,
//! tools with the policy's decision, the latest calls with per-tool
//! figures, clients and the replica's readiness, as a server-rendered HTML
//! page at `/status`, as JSON at `/status.json`, and as a stream of change
//! notices at `/status/events` that the page's script follows.
//!
//! Off unless asked: a gateway built without
//! [`GatewayOptions::status`](crate::GatewayOptions::status) keeps no
//! board, and nothing here runs per call. With it, the policy's audit
//! listener records each call in the board (`board.rs`, bounded), on the
//! task that made the call; snapshots are built only when a page or a
//! script asks.
//!
//! Who may look: loopback peers only, unless a token is given
//! ([`StatusAccess::token`]): then every request needs
//! `Authorization: Bearer <token>`, from anywhere. The page changes nothing
//! but for the approve button of a quarantined tool, which needs the token
//! and a same-origin `POST`.

pub(crate) mod board;
mod listener;
mod page;
mod serve;
mod snapshot;
mod svg;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

pub use listener::serve_status;
pub(crate) use serve::{is_status_path, respond, Fleet, Site};

/// Who may see the status page. [`StatusAccess::default`]: loopback peers
/// only, no approving.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct StatusAccess {
    /// The bearer token every request must carry (`--status-token-file`);
    /// with it the page is served to any peer that sends it, and quarantined
    /// tools can be approved from it.
    pub token: Option<String>,
}

impl StatusAccess {
    /// Loopback peers only ([`StatusAccess::default`]).
    pub fn loopback_only() -> StatusAccess {
        StatusAccess::default()
    }

    /// Every request needs `Authorization: Bearer <token>`.
    pub fn with_token(token: impl Into<String>) -> StatusAccess {
        StatusAccess {
            token: Some(token.into()),
        }
    }
}

impl std::fmt::Debug for StatusAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusAccess")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// A client connection as the page shows it.
pub(crate) trait ClientView: Send + Sync {
    /// Its number (`c<n>` on the page).
    fn id(&self) -> u64;
    /// The revision it speaks (empty before `initialize`).
    fn revision(&self) -> String;
    /// Bytes of answers held for it now, and its bound.
    fn held(&self) -> (usize, usize);
}

/// Most client connections the page lists (the count is always whole).
const MAX_CLIENTS_LISTED: usize = 256;

/// The open client connections, held weakly: a connection that ends drops
/// out by itself.
#[derive(Default)]
pub(crate) struct Clients {
    open: Mutex<HashMap<u64, Weak<dyn ClientView>>>,
}

impl Clients {
    /// Adds a connection (and forgets those gone).
    pub(crate) fn register(&self, client: Weak<dyn ClientView>) {
        let Some(id) = client.upgrade().map(|c| c.id()) else {
            return;
        };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, c| c.strong_count() > 0);
        open.insert(id, client);
    }

    /// The connections open now, by number.
    pub(crate) fn open(&self) -> Vec<Arc<dyn ClientView>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, c| c.strong_count() > 0);
        let mut live: Vec<Arc<dyn ClientView>> = open.values().filter_map(Weak::upgrade).collect();
        live.sort_by_key(|c| c.id());
        live
    }
}

tokio::task_local! {
    /// The client connection whose request is being answered on this task:
    /// the audit listener names it in the calls' rows.
    pub(crate) static CLIENT: u64;
}

/// The client connection answered on the current task, if any.
pub(crate) fn current_client() -> Option<u64> {
    CLIENT.try_with(|c| *c).ok()
}

/// Most status pages following live updates at once; past it a new one is
/// refused (503) and the page stays as rendered.
pub(crate) const MAX_VIEWERS: usize = 16;
