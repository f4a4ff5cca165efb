//! Authorization for remote MCP servers (the MCP authorization
//! specification: OAuth 2.1 with PKCE, RFC 9728 protected-resource
//! metadata, RFC 8414 / OpenID Connect discovery, RFC 7591 dynamic client
//! registration, client ID metadata documents, RFC 8707 resource
//! indicators, RFC 9207 `iss` checks), plus the extensions hosts meet in
//! practice: client credentials (`client_secret_basic`, `private_key_jwt`),
//! enterprise-managed authorization (token exchange + JWT bearer), workload
//! identity JWT bearer, and DPoP (RFC 9449).
//!
//! What lives where:
//! * this module: the config shape ([`AuthConfig`]) and the host's hooks
//!   ([`AuthOptions`]: an [`AuthorizationHandler`], the person in the loop,
//!   and a [`TokenStore`]);
//! * [`store`]: credentials at rest ([`FileTokenStore`], mode 0600);
//! * `challenge`: `WWW-Authenticate` parsing;
//! * `discovery`: protected-resource and authorization-server metadata;
//! * `crypto`: PKCE, random values, ES256 JWTs, DPoP proofs;
//! * `flow`: the per-server `flow::Authorizer` the HTTP transport asks
//!   for a header and tells about a 401 / 403.
//!
//! Secrets (tokens, client secrets, codes, private keys) never reach logs or
//! error messages: errors name the step and the URL (without query), never a
//! value.

pub(crate) mod challenge;
#[cfg(feature = "oauth")]
pub(crate) mod crypto;
#[cfg(feature = "oauth")]
pub(crate) mod discovery;
#[cfg(feature = "oauth")]
pub(crate) mod flow;
// Without the `oauth` feature: a stand-in Authorizer that reports it off.
#[cfg(not(feature = "oauth"))]
#[path = "flow_off.rs"]
pub(crate) mod flow;
mod raw;
pub mod store;

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::error::Error;

pub use store::{
    ClientRegistration, Credentials, FileTokenStore, MemoryTokenStore, TokenSet, TokenStore,
};

/// How a server is authorized (`[mcp.servers.auth]`, or `auth` in a
/// `mcpServers` JSON entry).
#[derive(Clone, PartialEq)]
pub enum AuthConfig {
    /// `type = "oauth"`: the MCP authorization flow.
    OAuth(Box<OAuthConfig>),
    /// `type = "bearer"`: a fixed `Authorization: Bearer <token>`.
    Bearer {
        /// The token (a secret).
        token: String,
    },
    /// `type = "header"`: one fixed header.
    Header {
        /// The header name.
        name: String,
        /// The header value (a secret).
        value: String,
    },
}

/// Which OAuth grant obtains the access token.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum GrantType {
    /// Authorization code with PKCE: a person approves in a browser.
    #[default]
    AuthorizationCode,
    /// Client credentials (machine to machine; `client_secret_basic` or
    /// `private_key_jwt`).
    ClientCredentials,
    /// RFC 7523 JWT bearer with a workload identity token (`assertion`).
    JwtBearer,
    /// Enterprise-managed authorization: the IdP's ID token is exchanged for
    /// an ID-JAG (RFC 8693), which the JWT bearer grant turns into a token.
    Enterprise,
}

/// `type = "oauth"` settings. Every field is optional: with none, the
/// engine discovers everything and registers itself dynamically.
#[derive(Clone, Default, PartialEq)]
pub struct OAuthConfig {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// The pre-registered client's secret (a secret).
    pub client_secret: Option<String>,
    /// A Client ID Metadata Document URL, used as the client id where the
    /// authorization server supports it.
    pub client_metadata_url: Option<String>,
    /// Scopes to request instead of the ones the server asks for.
    pub scopes: Option<Vec<String>>,
    /// The redirect URI registered for the authorization code grant.
    pub redirect_uri: Option<String>,
    /// The grant; authorization code unless set.
    pub grant_type: GrantType,
    /// A PEM (PKCS#8) EC P-256 private key: `private_key_jwt` client
    /// authentication (a secret).
    pub private_key: Option<String>,
    /// The signing algorithm of `private_key` (only `ES256`).
    pub signing_algorithm: Option<String>,
    /// The JWT for the JWT bearer grant (workload identity; a secret).
    pub assertion: Option<String>,
    /// Enterprise: the IdP's token endpoint.
    pub idp_token_endpoint: Option<String>,
    /// Enterprise: the ID token from the IdP (a secret).
    pub idp_id_token: Option<String>,
    /// Enterprise: the client id at the IdP.
    pub idp_client_id: Option<String>,
    /// Enterprise: the client secret at the IdP (a secret).
    pub idp_client_secret: Option<String>,
    /// Use DPoP (RFC 9449) when the authorization server supports it
    /// (default true).
    pub dpop: bool,
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthConfig::OAuth(o) => f
                .debug_struct("OAuth")
                .field("client_id", &o.client_id)
                .field("client_metadata_url", &o.client_metadata_url)
                .field("scopes", &o.scopes)
                .field("grant_type", &o.grant_type)
                .finish_non_exhaustive(),
            AuthConfig::Bearer { .. } => f.write_str("Bearer"),
            AuthConfig::Header { name, .. } => {
                f.debug_struct("Header").field("name", name).finish()
            }
        }
    }
}

impl AuthConfig {
    /// Reads an `auth` table whose strings are already expanded. `field`
    /// names it in errors (`server 'x': field 'auth.type' ...`).
    pub fn from_map(
        map: &Map<String, Value>,
        field_err: &dyn Fn(&str, &str) -> Error,
    ) -> Result<AuthConfig, Error> {
        raw::read(map, field_err)
    }
}

/// What the host is asked to do for the authorization code grant: open
/// `url` for the person (a browser) and return the URL the authorization
/// server redirected to (`redirect_uri` with `code`, `state`, maybe `iss`).
#[derive(Clone, Debug)]
pub struct AuthorizationRequest {
    /// The configured server's name.
    pub server: String,
    /// The authorization URL to open.
    pub url: String,
    /// Where the authorization server will redirect.
    pub redirect_uri: String,
}

/// The person in the loop: opens the authorization URL and hands back the
/// redirect. Hosts implement it (the CLI prints the URL and listens on a
/// loopback redirect URI; bindings wrap a callback).
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// Opens `request.url` and resolves to the full redirect URL the
    /// authorization server sent the user agent to. An error (the person
    /// declined, a time-out) fails the authorization with AUTH_FAILED.
    fn authorize(&self, request: AuthorizationRequest)
        -> BoxFuture<'static, Result<String, Error>>;

    /// The redirect URI this handler receives on, when it chooses one (a
    /// loopback listener's port); the config's `redirect_uri` otherwise.
    fn redirect_uri(&self) -> Option<String> {
        None
    }
}

/// The default redirect URI when neither the config nor the handler names one.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:33418/callback";

/// The host's authorization hooks, shared by every server of a hub.
#[derive(Clone, Default)]
pub struct AuthOptions {
    /// Asked to run the authorization code grant; without one, a server
    /// that needs a new authorization fails with AUTH_REQUIRED.
    pub handler: Option<Arc<dyn AuthorizationHandler>>,
    /// Where credentials are kept; [`FileTokenStore::default_location`]
    /// (or memory when there is no config directory) when `None`.
    pub store: Option<Arc<dyn TokenStore>>,
}

impl AuthOptions {
    /// The store to use: the configured one, else the user's file store,
    /// else an in-memory one.
    pub fn store(&self) -> Arc<dyn TokenStore> {
        if let Some(store) = &self.store {
            return store.clone();
        }
        match FileTokenStore::default_location() {
            Some(store) => Arc::new(store),
            None => Arc::new(MemoryTokenStore::default()),
        }
    }
}
