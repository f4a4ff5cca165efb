//! [`Roots`]: the directories a host shares with its servers, the answer to
//! `roots/list`. The host owns the list; the hub reads it on every
//! `roots/list` and, when the host changes it ([`Hub::set_roots`]), tells
//! each connected server with `notifications/roots/list_changed`.
//!
//! Every front end hands in what its user wrote (a path or a `file://` URI)
//! and this module turns it into a root, so the rule is written once.
//!
//! [`Hub::set_roots`]: crate::Hub::set_roots

use std::path::Path;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::Value;

use crate::client::{RequestHandler, ServerRequest};
use crate::error::Error;

/// Most roots a host may share: `roots/list` answers them all at once.
pub const MAX_ROOTS: usize = 1024;

/// Longest root (a path or URI) accepted, in bytes.
const MAX_ROOT_BYTES: usize = 4096;

/// One root as `roots/list` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// The directory's last component, shown to the person by some servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root from what a user wrote: a `file://` URI (kept as written once
    /// it parses) or a path (made absolute against the current directory;
    /// not required to exist). Anything else is `INVALID_INPUT` naming it.
    pub fn parse(item: &str) -> Result<Root, Error> {
        if item.is_empty() {
            return Err(Error::InvalidInput("roots: an empty root".into()));
        }
        if item.len() > MAX_ROOT_BYTES {
            return Err(Error::InvalidInput(format!(
                "roots: a root of {} bytes (at most {MAX_ROOT_BYTES})",
                item.len()
            )));
        }
        if let Some((scheme, _)) = item.split_once("://") {
            let url = url::Url::parse(item)
                .map_err(|e| Error::InvalidInput(format!("roots: '{item}' is not a URI: {e}")))?;
            if !scheme.eq_ignore_ascii_case("file") {
                return Err(Error::InvalidInput(format!(
                    "roots: '{item}' is not a file:// URI or a path (roots are file:// URIs)"
                )));
            }
            let name = url
                .to_file_path()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
            return Ok(Root {
                uri: url.to_string(),
                name,
            });
        }
        let path = std::path::absolute(Path::new(item))
            .map_err(|e| Error::InvalidInput(format!("roots: '{item}': {e}")))?;
        let url = url::Url::from_file_path(&path).map_err(|()| {
            Error::InvalidInput(format!(
                "roots: '{item}' cannot be written as a file:// URI"
            ))
        })?;
        Ok(Root {
            uri: url.to_string(),
            name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
        })
    }

    /// Parses every item ([`Root::parse`]), at most [`MAX_ROOTS`].
    pub fn parse_all<S: AsRef<str>>(items: &[S]) -> Result<Vec<Root>, Error> {
        if items.len() > MAX_ROOTS {
            return Err(Error::InvalidInput(format!(
                "roots: {} roots (at most {MAX_ROOTS})",
                items.len()
            )));
        }
        items.iter().map(|i| Root::parse(i.as_ref())).collect()
    }
}

/// The host's roots, shared between the host and every client of a hub.
/// Cheap to clone; clones share the list. Given to a hub
/// ([`HubOptions::with_roots`](crate::HubOptions::with_roots)), it declares
/// the `roots` capability with `listChanged: true` and answers `roots/list`.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    list: Arc<RwLock<Arc<Vec<Root>>>>,
}

impl Roots {
    /// Roots from paths or `file://` URIs ([`Root::parse`]).
    pub fn new<S: AsRef<str>>(items: &[S]) -> Result<Roots, Error> {
        let roots = Roots::default();
        roots.replace(Root::parse_all(items)?);
        Ok(roots)
    }

    /// The roots as they are now.
    pub fn list(&self) -> Arc<Vec<Root>> {
        self.list.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the list. Servers learn of it through
    /// [`Hub::set_roots`](crate::Hub::set_roots), which calls this.
    pub(crate) fn replace(&self, roots: Vec<Root>) {
        *self.list.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(roots);
    }

    /// The `roots/list` result: `{"roots": [...]}`.
    pub fn result(&self) -> Value {
        serde_json::json!({ "roots": &*self.list() })
    }

    /// A handler answering `roots/list` from this list (runs on an engine
    /// task; never waits).
    pub fn handler(&self) -> RequestHandler {
        let roots = self.clone();
        Arc::new(move |_: ServerRequest| {
            let result = roots.result();
            Box::pin(async move { Ok(result) })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_becomes_an_absolute_file_uri_named_by_its_last_component() {
        let root = Root::parse("/srv/my project").unwrap();
        assert_eq!(root.uri, "file:///srv/my%20project");
        assert_eq!(root.name.as_deref(), Some("my project"));
        let here = std::env::current_dir().unwrap();
        let relative = Root::parse("sub").unwrap();
        assert_eq!(
            relative.uri,
            url::Url::from_file_path(here.join("sub"))
                .unwrap()
                .to_string()
        );
    }

    #[test]
    fn a_file_uri_is_kept_and_named() {
        let root = Root::parse("file:///home/u/a%20b/").unwrap();
        assert_eq!(root.uri, "file:///home/u/a%20b/");
        assert_eq!(root.name.as_deref(), Some("a b"));
    }

    #[test]
    fn other_schemes_empty_and_oversized_roots_are_refused() {
        for bad in ["https://example.com/x", "", &"a".repeat(MAX_ROOT_BYTES + 1)] {
            let e = Root::parse(bad).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT", "{bad:.40}: {e}");
        }
        let many = vec!["/a"; MAX_ROOTS + 1];
        assert_eq!(Roots::new(&many).unwrap_err().code(), "INVALID_INPUT");
    }

    #[test]
    fn the_handler_answers_the_list_as_it_is_when_asked() {
        let roots = Roots::new(&["/a"]).unwrap();
        let handler = roots.handler();
        roots.replace(Root::parse_all(&["/b", "/c"]).unwrap());
        let request = ServerRequest {
            server: "s".into(),
            method: "roots/list".into(),
            params: Value::Null,
        };
        let answer = futures::executor::block_on(handler(request)).unwrap();
        assert_eq!(
            answer,
            serde_json::json!({"roots": [
                {"uri": "file:///b", "name": "b"},
                {"uri": "file:///c", "name": "c"}
            ]})
        );
    }
}
