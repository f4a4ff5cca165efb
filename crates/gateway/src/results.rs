//! The whole of results the policy cut at `max_output_bytes`, for the
//! gateway's clients: the `read_result` tool (listed beside the hub's tools
//! when results can be cut and kept) and the resource
//! `mcpmux://results/<id>[?offset=N]`. Both read the policy's result store
//! (`mcpmux_policy::result_store`); neither reaches a server.
//!
//! Where results go: `--result-dir`, else the config's `[session]
//! result_dir`, else a temporary directory of this gateway, removed with it.

use std::path::Path;

use serde_json::{json, Value};

use super::Gateway;
use mcpmux_core::error::Error;
use mcpmux_policy::{output, SessionPolicy, READ_RESULT_TOOL};

/// The URI prefix of kept results.
pub(crate) const SCHEME: &str = "mcpmux://results/";

/// Most bytes one `resources/read` of a kept result gives; the rest comes
/// with `?offset=` (the `_meta.next_offset` of the page).
const RESOURCE_PAGE_BYTES: usize = 1 << 20;

/// Gives the policy its result directory: `dir` when given, else the
/// policy's own (`result_dir`), else, when results can be cut (the policy
/// sets `max_output_bytes`), a new temporary directory, returned to be
/// held as long as the gateway.
pub(crate) fn prepare(
    policy: &mut SessionPolicy,
    dir: Option<&Path>,
) -> Result<Option<tempfile::TempDir>, Error> {
    if let Some(dir) = dir {
        policy.set_result_dir(dir)?;
        return Ok(None);
    }
    if policy.keeps_results() || policy.settings().max_output_bytes.is_none() {
        return Ok(None);
    }
    let tmp = tempfile::Builder::new()
        .prefix("mcpmux-results-")
        .tempdir()
        .map_err(|e| Error::Internal(format!("cannot make a directory for results: {e}")))?;
    policy.set_result_dir(tmp.path())?;
    Ok(Some(tmp))
}

/// Whether `read_result` is offered: results are cut (`max_output_bytes`)
/// and kept.
pub(crate) fn offered(gateway: &Gateway) -> bool {
    let policy = &gateway.inner.policy;
    policy.keeps_results() && policy.settings().max_output_bytes.is_some()
}

/// Whether a `tools/call` of `name` is the gateway's `read_result` (a
/// server's own tool of that name, under `--no-prefix`, comes first).
pub(crate) fn is_call(gateway: &Gateway, name: &str) -> bool {
    name == READ_RESULT_TOOL && offered(gateway) && gateway.resolve(name).is_none()
}

/// Runs `read_result`: the page as a text block (framed under
/// `--frame-output`), where it is in `structuredContent`; an error as an
/// error result with its code first.
pub(crate) fn call(gateway: &Gateway, arguments: &Value) -> Value {
    match gateway.inner.policy.read_result_args(arguments) {
        Ok(page) => {
            let text = if gateway.inner.options.frame_output {
                output::frame(READ_RESULT_TOOL, &page.text)
            } else {
                page.text
            };
            json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": {
                    "offset": page.offset,
                    "next_offset": page.next_offset,
                    "total": page.total,
                },
            })
        }
        Err(e) => json!({
            "content": [{"type": "text", "text": format!("{}: {e}", e.code())}],
            "isError": true,
        }),
    }
}

/// `resources/read` of `mcpmux://results/<id>[?offset=N]`: up to 1 MiB of
/// the result from `N`, its place in `_meta`. A bad URI or an id not kept
/// is `INVALID_INPUT`.
pub(crate) fn read_resource(gateway: &Gateway, uri: &str) -> Result<Value, Error> {
    let Some(store) = gateway.inner.policy.result_store() else {
        return Err(Error::InvalidInput(format!(
            "resources/read '{uri}': this gateway keeps no results"
        )));
    };
    let rest = &uri[SCHEME.len()..];
    let (id, offset) = match rest.split_once('?') {
        None => (rest, 0),
        Some((id, query)) => match query.strip_prefix("offset=").map(str::parse::<u64>) {
            Some(Ok(n)) => (id, n),
            _ => {
                return Err(Error::InvalidInput(format!(
                    "resources/read '{uri}': expected {SCHEME}<id> or {SCHEME}<id>?offset=<bytes>"
                )))
            }
        },
    };
    let page = store.read(id, offset, RESOURCE_PAGE_BYTES)?;
    Ok(json!({
        "contents": [{
            "uri": uri,
            "mimeType": "text/plain",
            "text": page.text,
            "_meta": {"offset": page.offset, "next_offset": page.next_offset, "total": page.total},
        }]
    }))
}
