//! Starting servers and changing the server list of a running hub: the one
//! start of a server (by connect, by a reload, or by the first use of a
//! `lazy` one) and [`Hub::reload`].
//!
//! Every start of a slot holds its `starting` lock, so a lazy server used by
//! several calls at once is started once and the others wait for it. A
//! reload swaps the hub's whole slot list: unchanged servers keep their slot
//! (same process, same supervisor), the others get new slots.

use std::sync::Arc;

use super::{closed, state_event, Hub, HubInner, Slot, SlotState};
use crate::client::Client;
use crate::config::Config;
use crate::error::Error;
use crate::events::HubEvent;

impl HubInner {
    /// The options a server is started with: the hub's, under the host's
    /// network policy and the current config's `[network]` together (a
    /// reload that changes `[network]` applies to the servers started
    /// after it).
    pub(super) fn connect_options(&self) -> crate::client::ClientOptions {
        let mut options = self.options.clone();
        options.network = options.network.merged(&self.config.read().unwrap().network);
        options
    }

    /// Starts server `slot` when it is `idle` and hands it to a supervisor;
    /// when a start is already under way, waits for it instead. Returns
    /// once the server is connected, failed or restarting (or was never
    /// idle).
    pub(super) async fn start(self: &Arc<Self>, slot: &Arc<Slot>) {
        let _starting = slot.starting.lock().await;
        if !slot.is_idle() {
            return;
        }
        let started = super::surface::connect(&slot.config, &self.connect_options()).await;
        if slot.is_closed() {
            // The hub closed, or a reload removed the server, meanwhile.
            if let Ok(client) = started {
                client.close().await;
            }
            return;
        }
        self.start_supervising(slot, started);
    }

    /// Starts the idle (lazy, not yet used) servers whose hub-name prefix
    /// `mcp_<server>_` begins `name`, longest server name first, until one
    /// of them lists `name`. Returns whether it started any. A name already
    /// listed starts nothing.
    pub(super) async fn start_owners(self: &Arc<Self>, name: &str) -> bool {
        let listed = |inner: &HubInner| inner.index.read().unwrap().by_name.contains_key(name);
        if listed(self) {
            return false;
        }
        let mut owners: Vec<Arc<Slot>> = self
            .slots()
            .iter()
            .filter(|s| s.is_idle() && s.prefixes(name))
            .cloned()
            .collect();
        owners.sort_by_key(|s| std::cmp::Reverse(s.config.name.len()));
        let started = !owners.is_empty();
        for slot in owners {
            self.start(&slot).await;
            if listed(self) {
                break;
            }
        }
        started
    }
}

impl Hub {
    /// Applies `config` to the running hub. Servers whose entry is
    /// unchanged (every field equal, the name included) stay as they are:
    /// same connection, same process, same state. Servers no longer in
    /// `config` are closed; new ones are started (unless `lazy`); a server
    /// whose entry changed is closed and started again from its new entry.
    /// Tool names are recomputed from the new config, and the host hears of
    /// it all through [`Hub::events`] (`server_state` of each started
    /// server and `removed` of each server whose name left the config,
    /// `tools_changed` for the tools that went and came). Returns
    /// once the new servers have connected or failed (each within its
    /// `timeout_seconds`), like [`Hub::connect`]; a server that fails is
    /// marked failed and the reload goes on. On a closed hub it is
    /// `TRANSPORT_CLOSED`. One reload runs at a time.
    pub async fn reload(&self, config: Config) -> Result<(), Error> {
        let inner = &self.inner;
        let _one = inner.reloading.lock().await;
        if self.is_closed() {
            return Err(closed());
        }
        crate::secrets::register(config.secret_values());
        let old = inner.slots();
        let mut kept = vec![false; old.len()];
        let mut fresh = Vec::new();
        let slots: Vec<Arc<Slot>> = config
            .servers
            .iter()
            .map(|entry| match old.iter().position(|o| o.config == *entry) {
                Some(i) if !kept[i] => {
                    kept[i] = true;
                    old[i].clone()
                }
                _ => {
                    let slot = Arc::new(Slot::new(entry.clone()));
                    fresh.push(slot.clone());
                    slot
                }
            })
            .collect();
        // The new list first, so that the hub never looks closed while the
        // servers that go are closed below.
        *inner.slots.write().unwrap() = Arc::new(slots);
        *inner.config.write().unwrap() = Arc::new(config);
        let mut clients: Vec<Client> = Vec::new();
        for (slot, _) in old.iter().zip(&kept).filter(|(_, kept)| !**kept) {
            slot.set_supervisor(None);
            let was = std::mem::replace(&mut *slot.state.write().unwrap(), SlotState::Closed);
            // Calls waiting for it (restarting) give up now.
            slot.changed.send_modify(|n| *n += 1);
            if let SlotState::Connected(client) = was {
                clients.push(client);
            }
        }
        // Tools of the servers that went leave the list (`tools_changed`).
        inner.rebuild_index();
        // Closed before their replacements start: a changed server may
        // need the same port or files.
        futures::future::join_all(clients.iter().map(Client::close)).await;
        // Servers whose name left the config are gone for good (a changed
        // one keeps its name and reports its new start instead).
        let current = self.config();
        for (slot, _) in old.iter().zip(&kept).filter(|(_, kept)| !**kept) {
            let name = &slot.config.name;
            if !current.servers.iter().any(|s| s.name == *name) {
                inner.options.events.send(HubEvent::ServerState {
                    server: name.clone(),
                    state: "removed".to_owned(),
                    error: None,
                    code: None,
                    attempt: 0,
                });
            }
        }
        for slot in &fresh {
            if !slot.config.enabled {
                if let Some(event) = state_event(&slot.config.name, &SlotState::Disabled, 0) {
                    inner.options.events.send(event);
                }
            }
        }
        let eager: Vec<&Arc<Slot>> = fresh
            .iter()
            .filter(|s| s.config.enabled && !s.config.supervision.lazy)
            .collect();
        futures::future::join_all(eager.into_iter().map(|s| inner.start(s))).await;
        Ok(())
    }
}
