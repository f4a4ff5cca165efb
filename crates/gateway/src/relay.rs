//! Requests from the servers behind a gateway (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) relayed to a downstream client.
//!
//! The hub is connected before any client, so its handlers are this relay's
//! ([`Relay::handlers`]); each client connection attaches itself once it
//! has said what it can do (its `initialize` capabilities). A request goes
//! to the client attached last that declared the matching capability; with
//! none, it gets the error a client without that capability gives
//! (-32601, method not found). A request a server sends for one of its tasks
//! (`_meta["io.modelcontextprotocol/related-task"]`) goes first to whoever
//! that task was handed to (`Relay::route_task`): the gateway's own task
//! of a 2026-07-28 client, which asks it through `tasks/get`. Any other
//! request of a server goes first to the latest call of a 2026-07-28 client
//! still running on that server (`Relay::route_call`), which asks it in an
//! input-required result: such a client has no channel for requests of
//! the server's, and its call is the likeliest asker.

use std::sync::{Arc, Mutex, Weak};

use futures::future::BoxFuture;
use serde_json::Value;

use mcpmux_core::client::{ClientHandlers, RequestHandler, ServerRequest};
use mcpmux_core::error::Error;

/// Where relayed requests can go: one downstream client.
pub(crate) trait RelayTarget: Send + Sync {
    /// Whether the client declared the capability `method` needs.
    fn accepts(&self, method: &str) -> bool;
    /// Sends `method` with `params` to the client; its answer.
    fn request(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, Error>>;
}

/// The relay shared by a gateway's hub and its connections. Cheap to
/// clone.
#[derive(Clone, Default)]
pub struct Relay {
    /// Attached clients, newest last (weak: a closed connection drops out).
    targets: Arc<Mutex<Vec<Weak<dyn RelayTarget>>>>,
    /// Servers' tasks by `(server, task id)`, to who asks for them.
    task_routes: Arc<Mutex<Vec<TaskRoute>>>,
    /// Calls of 2026-07-28 clients running on a server, newest last.
    call_routes: Arc<Mutex<Vec<TaskRoute>>>,
}

/// Where the requests of one server's task (or, without a task id, of a
/// call running on it) go.
struct TaskRoute {
    server: String,
    task_id: String,
    target: Weak<dyn RelayTarget>,
}

/// The `_meta` key a server puts on a request sent for one of its tasks.
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Clients attached at once that the relay remembers (older ones are
/// forgotten first).
const MAX_TARGETS: usize = 1024;

impl Relay {
    /// A relay with no client attached.
    pub fn new() -> Relay {
        Relay::default()
    }

    /// Handlers for the hub (`HubOptions::handlers` of mcpmux-core): each relays
    /// its requests to a client. They run on engine tasks.
    pub fn handlers(&self) -> ClientHandlers {
        let handler = || -> RequestHandler {
            let relay = self.clone();
            Arc::new(move |req: ServerRequest| {
                let relay = relay.clone();
                Box::pin(async move { relay.forward(req).await })
            })
        };
        ClientHandlers {
            roots: Some(handler()),
            sampling: Some(handler()),
            elicitation: Some(handler()),
        }
    }

    /// [`Relay::handlers`] for only what a client declared in its
    /// `initialize` `capabilities` (`roots`, `sampling`, `elicitation`):
    /// the servers are then told only of what the client can answer (a
    /// server may offer more when its client declares roots, as
    /// server-everything's `get-roots-list` does).
    pub fn handlers_for(&self, capabilities: &Value) -> ClientHandlers {
        let all = self.handlers();
        let declared = |name: &str| capabilities.get(name).is_some_and(Value::is_object);
        ClientHandlers {
            roots: all.roots.filter(|_| declared("roots")),
            sampling: all.sampling.filter(|_| declared("sampling")),
            elicitation: all.elicitation.filter(|_| declared("elicitation")),
        }
    }

    /// Sends the requests of task `task_id` of `server` to `target` (while
    /// it lives and accepts them). At most [`MAX_TARGETS`] routes are kept,
    /// the oldest forgotten first.
    pub(crate) fn route_task(&self, server: &str, task_id: &str, target: Weak<dyn RelayTarget>) {
        let mut routes = self.task_routes.lock().unwrap();
        routes.retain(|r| r.target.strong_count() > 0);
        if routes.len() >= MAX_TARGETS {
            routes.remove(0);
        }
        routes.push(TaskRoute {
            server: server.to_owned(),
            task_id: task_id.to_owned(),
            target,
        });
    }

    /// Sends the requests `server` sends outside its tasks to `target`
    /// first, while it lives and accepts them (a call of a 2026-07-28
    /// client). At most [`MAX_TARGETS`] are kept, the oldest forgotten
    /// first.
    pub(crate) fn route_call(&self, server: &str, target: Weak<dyn RelayTarget>) {
        let mut routes = self.call_routes.lock().unwrap();
        routes.retain(|r| r.target.strong_count() > 0);
        if routes.len() >= MAX_TARGETS {
            routes.remove(0);
        }
        routes.push(TaskRoute {
            server: server.to_owned(),
            task_id: String::new(),
            target,
        });
    }

    /// The latest call routed for `req`'s server that accepts it.
    fn call_target(&self, req: &ServerRequest) -> Option<Arc<dyn RelayTarget>> {
        let routes = self.call_routes.lock().unwrap();
        routes
            .iter()
            .rev()
            .filter(|r| r.server == req.server)
            .filter_map(|r| r.target.upgrade())
            .find(|t| t.accepts(&req.method))
    }

    /// The target of the task `req` was sent for, if one was routed.
    fn task_target(&self, req: &ServerRequest) -> Option<Arc<dyn RelayTarget>> {
        let task_id = req
            .params
            .get("_meta")
            .and_then(|m| m.get(RELATED_TASK))
            .and_then(|t| t.get("taskId"))
            .and_then(Value::as_str)?;
        let routes = self.task_routes.lock().unwrap();
        routes
            .iter()
            .filter(|r| r.server == req.server && r.task_id == task_id)
            .filter_map(|r| r.target.upgrade())
            .find(|t| t.accepts(&req.method))
    }

    /// Makes `target` the first choice for what it accepts.
    pub(crate) fn attach(&self, target: Weak<dyn RelayTarget>) {
        let mut targets = self.targets.lock().unwrap();
        targets.retain(|t| t.strong_count() > 0);
        if targets.len() >= MAX_TARGETS {
            targets.remove(0);
        }
        targets.push(target);
    }

    async fn forward(&self, req: ServerRequest) -> Result<Value, Error> {
        let target = self
            .task_target(&req)
            .or_else(|| self.call_target(&req))
            .or_else(|| {
                let targets = self.targets.lock().unwrap();
                targets
                    .iter()
                    .rev()
                    .filter_map(Weak::upgrade)
                    .find(|t| t.accepts(&req.method))
            });
        match target {
            Some(target) => {
                // The answer does not need the client kept alive: once it
                // leaves, its connection closes and this fails at once.
                let answer = target.request(&req.method, req.params);
                drop(target);
                answer.await
            }
            None => Err(Error::ServerError {
                code: -32601,
                message: format!(
                    "{}: no client of the gateway accepts it (server '{}')",
                    req.method, req.server
                ),
                data: None,
            }),
        }
    }
}

/// The client capability `method` needs.
pub(crate) fn capability_for(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}
