//! The gateway's side of pinned tool definitions (`pin_tools`, on by
//! default): an operator's `mcpmux policy approve` in another process
//! writes the pin store; this task notices and tells every client
//! `notifications/tools/list_changed` when the offered tools changed.
//!
//! One task per gateway, started with its first client on the runtime: it looks
//! at the store file's length and modification time every [`PERIOD`] (it
//! never reads the file; the policy does, at the clients' next list), and
//! ends when the gateway is dropped. Quarantines themselves reach clients through the hub's
//! `tools_changed` (the server's list changed) and reach the operator as
//! the hub's `tool_quarantined` events (the CLI prints them).

use std::sync::Weak;
use std::time::Duration;

use mcpmux_policy::pins::PinStore;

use super::{Gateway, Shared};

/// How often the store file is looked at.
pub(crate) const PERIOD: Duration = Duration::from_secs(1);

/// Starts the watch when the gateway's pins are kept in a store file and a
/// runtime is running (in-memory pins change only through this process).
pub(crate) fn start(gateway: &Gateway) {
    let Some((path, _)) = gateway.inner.policy.pins().location() else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let store = PinStore::at(path);
    let shared = std::sync::Arc::downgrade(&gateway.inner);
    runtime.spawn(watch(shared, store));
}

async fn watch(shared: Weak<Shared>, store: PinStore) {
    let mut stamp = store.stamp();
    loop {
        tokio::time::sleep(PERIOD).await;
        let now = store.stamp();
        if now == stamp {
            if shared.strong_count() == 0 {
                return;
            }
            continue;
        }
        stamp = now;
        // Any approval or revocation may change what is offered (the store
        // is shared by every config; a needless re-list costs the client
        // one request).
        let Some(inner) = shared.upgrade() else {
            return;
        };
        inner.pins_changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}
