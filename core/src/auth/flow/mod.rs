//! The per-server authorization state machine the HTTP transport drives.
//!
//! The transport asks [`Authorizer::request_headers`] before each request
//! and reports a 401 (or a 403 `insufficient_scope`) with
//! [`Authorizer::on_challenge`]. Only one authorization runs at a time per
//! server (an async mutex): requests that failed with the same token wait
//! for it and retry with the new one instead of starting their own.
//!
//! On a challenge: refresh when a refresh token is there; else discover
//! (protected-resource metadata, then authorization-server metadata, both
//! fetched again each time so an authorization server change is seen),
//! drop credentials bound to another issuer, find a client identity
//! (configured, metadata document, or dynamic registration), and run the
//! configured grant.
//!
//! This file holds the state machine (tickets, the single flight, refresh,
//! discovery, scopes); the grants are in `grants`, the client identity and
//! dynamic registration in `registration`, token endpoint requests (client
//! authentication, DPoP proofs and nonces, OAuth errors) in `token`.

use std::sync::{Arc, Mutex};

use reqwest::header::HeaderValue;

use super::challenge::Challenge;
use super::crypto::SigningKey;
use super::discovery::{self, ResourceMetadata, ServerMetadata};
use super::store::{Credentials, TokenSet, TokenStore};
use super::{AuthOptions, AuthorizationHandler, GrantType, OAuthConfig};
use crate::error::Error;
use crate::net;

mod grants;
mod registration;
mod token;

/// One server's authorization: its credentials and the single flight that
/// renews them.
pub struct Authorizer {
    server: String,
    label: String,
    url: url::Url,
    config: OAuthConfig,
    handler: Option<Arc<dyn AuthorizationHandler>>,
    store: Arc<dyn TokenStore>,
    current: Mutex<Current>,
    flight: tokio::sync::Mutex<Flight>,
    /// Every request of the flow (discovery, registration, tokens) goes
    /// through it, under the hub's network policy.
    http: net::Http,
}

/// What requests read: the token and its generation (bumped on every change).
#[derive(Default)]
struct Current {
    token: Option<TokenSet>,
    generation: u64,
    dpop_key: Option<Arc<SigningKey>>,
    /// The resource server's latest DPoP nonce.
    rs_nonce: Option<String>,
}

/// What only the single flight touches.
#[derive(Default)]
struct Flight {
    loaded: bool,
    credentials: Credentials,
    /// Scopes asked for in the last authorization (step-up unions them).
    requested: Vec<String>,
    /// The authorization server's latest DPoP nonce.
    as_nonce: Option<String>,
    /// The generation of the last token that came from a refresh (a 401
    /// to it means: authorize rather than refresh again).
    refreshed: Option<u64>,
}

/// A request's view of the credentials: the generation it was sent with
/// and the headers to send.
pub struct Ticket {
    /// The token generation, to hand back with a challenge.
    pub generation: u64,
    /// `Authorization` (and `DPoP`) headers.
    pub headers: Vec<(&'static str, HeaderValue)>,
}

/// What the token endpoint answered.
enum TokenOutcome {
    Issued(TokenSet),
    /// `invalid_grant` and friends: the grant (a refresh token) is dead.
    Refused(String),
}

impl Authorizer {
    /// An authorizer for server `server` at `url`, whose requests go
    /// through `http`.
    pub fn new(
        server: &str,
        url: &url::Url,
        config: OAuthConfig,
        options: &AuthOptions,
        http: &net::Http,
    ) -> Authorizer {
        Authorizer {
            server: server.to_owned(),
            label: format!("server '{server}'"),
            url: url.clone(),
            config,
            handler: options.handler.clone(),
            store: options.store(),
            current: Mutex::new(Current::default()),
            flight: tokio::sync::Mutex::new(Flight::default()),
            http: http.clone(),
        }
    }

    /// The headers for a request: the stored token (loaded on first use,
    /// refreshed first when it has expired), or none yet.
    pub async fn request_headers(&self, method: &str, target: &url::Url) -> Result<Ticket, Error> {
        let needs_load_or_refresh = {
            let current = self.current.lock().unwrap();
            current.generation == 0 || current.token.as_ref().is_some_and(TokenSet::is_expired)
        };
        if needs_load_or_refresh {
            let mut flight = self.flight.lock().await;
            self.load(&mut flight)?;
            let expired = self
                .current
                .lock()
                .unwrap()
                .token
                .as_ref()
                .is_some_and(TokenSet::is_expired);
            if expired {
                // Refresh ahead of the request; when that is not possible the
                // request goes without a token and its 401 starts a new
                // authorization.
                if let Err(e) = self.try_refresh(&mut flight).await {
                    tracing::debug!(server = %self.server, "refresh before the request failed: {e}");
                }
            }
        }
        let current = self.current.lock().unwrap();
        let mut headers = Vec::new();
        if let Some(token) = &current.token {
            let dpop = token.token_type.eq_ignore_ascii_case("dpop");
            let scheme = if dpop { "DPoP" } else { "Bearer" };
            let mut value = HeaderValue::from_str(&format!("{scheme} {}", token.access_token))
                .map_err(|_| {
                    Error::AuthFailed(format!(
                        "{}: the access token is not a valid header value",
                        self.label
                    ))
                })?;
            value.set_sensitive(true);
            headers.push(("authorization", value));
            if let (true, Some(key)) = (dpop, &current.dpop_key) {
                let proof = key.dpop_proof(
                    method,
                    target,
                    current.rs_nonce.as_deref(),
                    Some(&token.access_token),
                )?;
                let mut value = HeaderValue::from_str(&proof)
                    .map_err(|_| Error::Internal("DPoP proof is not a header value".into()))?;
                value.set_sensitive(true);
                headers.push(("dpop", value));
            }
        }
        Ok(Ticket {
            generation: current.generation,
            headers,
        })
    }

    /// Handles a 401 / 403 to a request sent with token `generation`:
    /// returns once a retry may succeed, or fails with AUTH_REQUIRED /
    /// AUTH_FAILED.
    pub async fn on_challenge(
        &self,
        generation: u64,
        status: u16,
        challenge: &Challenge,
        dpop_nonce: Option<&str>,
    ) -> Result<(), Error> {
        let mut flight = self.flight.lock().await;
        self.load(&mut flight)?;
        if self.current.lock().unwrap().generation != generation {
            // Another request renewed the token meanwhile: just retry.
            return Ok(());
        }
        if challenge.error.as_deref() == Some("use_dpop_nonce") {
            if let Some(nonce) = dpop_nonce {
                let mut current = self.current.lock().unwrap();
                current.rs_nonce = Some(nonce.to_owned());
                current.generation += 1;
                return Ok(());
            }
        }
        if status == 403 {
            let needed = challenge.scopes();
            let have_all =
                !needed.is_empty() && needed.iter().all(|s| flight.requested.contains(s));
            if have_all || needed.is_empty() {
                return Err(Error::AuthFailed(format!(
                    "{}: the server refuses the token for lack of scope{} although it was requested; not asking again",
                    self.label,
                    challenge.scope.as_deref().map(|s| format!(" '{s}'")).unwrap_or_default()
                )));
            }
            return self.authorize(&mut flight, challenge, true).await;
        }
        let has_token = self.current.lock().unwrap().token.is_some();
        if has_token
            && flight.refreshed != Some(generation)
            && self.try_refresh(&mut flight).await?
        {
            return Ok(());
        }
        self.authorize(&mut flight, challenge, false).await
    }

    /// Reads the store once.
    fn load(&self, flight: &mut Flight) -> Result<(), Error> {
        if flight.loaded {
            return Ok(());
        }
        let stored = self.store.load(&self.server)?;
        flight.loaded = true;
        if let Some(c) = stored {
            crate::secrets::register(c.secret_values());
            if c.server_url.as_deref() == Some(self.url.as_str()) {
                if let Some(scope) = c.token.as_ref().and_then(|t| t.scope.as_deref()) {
                    flight.requested = scope.split_whitespace().map(str::to_owned).collect();
                }
                let mut current = self.current.lock().unwrap();
                // Stored DPoP tokens are bound to a key that is not kept.
                current.token = c
                    .token
                    .clone()
                    .filter(|t| !t.token_type.eq_ignore_ascii_case("dpop"));
                flight.credentials = c;
            }
        }
        let mut current = self.current.lock().unwrap();
        current.generation = current.generation.max(1);
        Ok(())
    }

    /// Keeps a new token (or none) and the credentials.
    fn keep(&self, flight: &mut Flight, token: Option<TokenSet>) -> Result<(), Error> {
        flight.credentials.token = token.clone();
        flight.credentials.server_url = Some(self.url.to_string());
        crate::secrets::register(flight.credentials.secret_values());
        {
            let mut current = self.current.lock().unwrap();
            current.token = token;
            current.generation += 1;
        }
        self.store.save(&self.server, &flight.credentials)
    }

    /// Refreshes with the stored refresh token. `Ok(false)` when there is
    /// none or the server refused it (the tokens are then forgotten).
    async fn try_refresh(&self, flight: &mut Flight) -> Result<bool, Error> {
        let Some(refresh) = flight
            .credentials
            .token
            .as_ref()
            .and_then(|t| t.refresh_token.clone())
        else {
            return Ok(false);
        };
        let Some(issuer) = flight.credentials.issuer.clone() else {
            return Ok(false);
        };
        let meta = match discovery::server_metadata(&self.http, &self.label, &issuer).await? {
            Some(m) => m,
            None => ServerMetadata::defaults_for(&url::Url::parse(&issuer).map_err(|_| {
                Error::AuthFailed(format!("{}: stored issuer is not a URL", self.label))
            })?),
        };
        discovery::check_endpoints(&self.label, None, Some(&meta))?;
        let client = flight.credentials.client.clone();
        let mut form = vec![
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), refresh.clone()),
        ];
        if let Some(resource) = flight
            .credentials
            .token
            .as_ref()
            .and(Some(self.resource_hint()))
        {
            form.push(("resource".into(), resource));
        }
        match self
            .token_request(flight, &meta, client.as_ref(), form)
            .await?
        {
            TokenOutcome::Issued(mut token) => {
                if token.refresh_token.is_none() {
                    token.refresh_token = Some(refresh);
                }
                if token.scope.is_none() {
                    token.scope = flight
                        .credentials
                        .token
                        .as_ref()
                        .and_then(|t| t.scope.clone());
                }
                self.keep(flight, Some(token))?;
                flight.refreshed = Some(self.current.lock().unwrap().generation);
                tracing::info!(server = %self.server, "access token refreshed");
                Ok(true)
            }
            TokenOutcome::Refused(why) => {
                tracing::info!(server = %self.server, "refresh token refused ({why}); a new authorization is needed");
                self.keep(flight, None)?;
                Ok(false)
            }
        }
    }

    /// The `resource` to send when no metadata says otherwise: the server
    /// URL without fragment.
    fn resource_hint(&self) -> String {
        let mut u = self.url.clone();
        u.set_fragment(None);
        u.to_string()
    }

    /// Discovery and a new grant.
    async fn authorize(
        &self,
        flight: &mut Flight,
        challenge: &Challenge,
        step_up: bool,
    ) -> Result<(), Error> {
        let prm = discovery::resource_metadata(
            &self.http,
            &self.label,
            &self.url,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
        discovery::check_endpoints(&self.label, prm.as_ref(), None)?;
        let resource = match prm.as_ref().and_then(|p| p.resource.clone()) {
            Some(r) => {
                if !discovery::resource_matches(&self.url, &r) {
                    return Err(Error::AuthFailed(format!(
                        "{}: the protected resource metadata is for '{r}', not for {}; refusing to authorize",
                        self.label,
                        net::display_url(&self.url)
                    )));
                }
                r
            }
            None => self.resource_hint(),
        };
        let meta = self.server_metadata(prm.as_ref()).await?;
        if flight.credentials.issuer.as_deref() != Some(meta.issuer.as_str()) {
            // Credentials are bound to their issuer: another authorization
            // server means a new registration and new tokens.
            if flight.credentials.issuer.is_some() {
                tracing::info!(server = %self.server, issuer = %meta.issuer, "authorization server changed; registering again");
            }
            flight.credentials = Credentials {
                issuer: Some(meta.issuer.clone()),
                server_url: Some(self.url.to_string()),
                ..Credentials::default()
            };
            flight.requested.clear();
        }
        if meta.dpop_es256() && self.config.dpop {
            let mut current = self.current.lock().unwrap();
            if current.dpop_key.is_none() {
                current.dpop_key = Some(Arc::new(SigningKey::generate()?));
            }
        }
        let scopes = self.scopes(flight, challenge, prm.as_ref(), &meta, step_up);
        let token = self.obtain_token(flight, &meta, &resource, &scopes).await?;
        flight.requested = scopes;
        flight.refreshed = None;
        self.keep(flight, Some(token))?;
        tracing::info!(server = %self.server, "authorized");
        Ok(())
    }

    /// The authorization server's metadata: the first server the resource
    /// names, else (2025-03-26) the MCP server's own origin, with default
    /// endpoints when no metadata is published.
    async fn server_metadata(
        &self,
        prm: Option<&ResourceMetadata>,
    ) -> Result<ServerMetadata, Error> {
        let issuer = match prm.and_then(|p| p.authorization_servers.first()) {
            Some(i) => i.clone(),
            None => self.url.origin().ascii_serialization(),
        };
        match discovery::server_metadata(&self.http, &self.label, &issuer).await? {
            Some(m) => Ok(m),
            None => {
                let base = url::Url::parse(&issuer).map_err(|_| {
                    Error::AuthFailed(format!(
                        "{}: authorization server '{issuer}' is not a URL",
                        self.label
                    ))
                })?;
                tracing::debug!(server = %self.server, "no authorization server metadata; using the default endpoints");
                let meta = ServerMetadata::defaults_for(&base);
                discovery::check_endpoints(&self.label, None, Some(&meta))?;
                Ok(meta)
            }
        }
    }

    /// The scopes to request: the config's; else the challenge's, else the
    /// resource's `scopes_supported`, else none; on a step-up, together with
    /// the ones asked for before; `offline_access` where the authorization
    /// server lists it.
    fn scopes(
        &self,
        flight: &Flight,
        challenge: &Challenge,
        prm: Option<&ResourceMetadata>,
        meta: &ServerMetadata,
        step_up: bool,
    ) -> Vec<String> {
        let mut scopes: Vec<String> = if let Some(s) = &self.config.scopes {
            s.clone()
        } else if !challenge.scopes().is_empty() {
            challenge.scopes()
        } else {
            prm.and_then(|p| p.scopes_supported.clone())
                .unwrap_or_default()
        };
        if step_up || !flight.requested.is_empty() {
            for s in flight.requested.iter().rev() {
                if !scopes.contains(s) {
                    scopes.insert(0, s.clone());
                }
            }
        }
        let refresh_ok = meta
            .grant_types_supported
            .as_ref()
            .is_none_or(|g| g.iter().any(|g| g == "refresh_token"));
        if !scopes.is_empty()
            && self.config.grant_type == GrantType::AuthorizationCode
            && refresh_ok
            && meta.lists_scope("offline_access")
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".into());
        }
        scopes
    }

    /// An endpoint (metadata field or config key `what`) as a URL; never
    /// cleartext (`discovery::secure_endpoint`).
    fn endpoint_url(&self, endpoint: &str, what: &str) -> Result<url::Url, Error> {
        discovery::secure_endpoint(&self.label, what, endpoint)
    }
}
