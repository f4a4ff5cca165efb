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

use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Value};

use super::challenge::Challenge;
use super::crypto::{self, Pkce, SigningKey};
use super::discovery::{self, ResourceMetadata, ServerMetadata};
use super::store::{now, ClientRegistration, Credentials, TokenSet, TokenStore};
use super::{AuthOptions, AuthorizationHandler, AuthorizationRequest, GrantType, OAuthConfig};
use crate::error::Error;
use crate::net;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

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
    /// An authorizer for server `server` at `url`.
    pub fn new(
        server: &str,
        url: &url::Url,
        config: OAuthConfig,
        options: &AuthOptions,
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
        let meta = match discovery::server_metadata(&self.label, &issuer).await? {
            Some(m) => m,
            None => ServerMetadata::defaults_for(&url::Url::parse(&issuer).map_err(|_| {
                Error::AuthFailed(format!("{}: stored issuer is not a URL", self.label))
            })?),
        };
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
            &self.label,
            &self.url,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
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
        let token = match self.config.grant_type {
            GrantType::AuthorizationCode => {
                self.authorization_code(flight, &meta, &resource, &scopes)
                    .await?
            }
            GrantType::ClientCredentials => {
                let client = self.configured_client(&meta)?;
                let mut form = vec![("grant_type".to_owned(), "client_credentials".to_owned())];
                push_common(&mut form, &resource, &scopes);
                self.expect_token(flight, &meta, Some(&client), form)
                    .await?
            }
            GrantType::JwtBearer => {
                let assertion = self.config.assertion.clone().unwrap_or_default();
                let client = self.config.client_id.clone().map(|id| ClientRegistration {
                    client_id: id,
                    client_secret: self.config.client_secret.clone(),
                    token_endpoint_auth_method: Some(
                        self.auth_method(&meta, self.config.client_secret.is_some()),
                    ),
                });
                let mut form = vec![
                    ("grant_type".to_owned(), JWT_BEARER.to_owned()),
                    ("assertion".to_owned(), assertion),
                ];
                push_common(&mut form, &resource, &scopes);
                self.expect_token(flight, &meta, client.as_ref(), form)
                    .await?
            }
            GrantType::Enterprise => {
                let jag = self.exchange_for_id_jag(&meta, &resource, &scopes).await?;
                let client = self.configured_client(&meta)?;
                let mut form = vec![
                    ("grant_type".to_owned(), JWT_BEARER.to_owned()),
                    ("assertion".to_owned(), jag),
                ];
                push_common(&mut form, &resource, &scopes);
                self.expect_token(flight, &meta, Some(&client), form)
                    .await?
            }
        };
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
        match discovery::server_metadata(&self.label, &issuer).await? {
            Some(m) => Ok(m),
            None => {
                let base = url::Url::parse(&issuer).map_err(|_| {
                    Error::AuthFailed(format!(
                        "{}: authorization server '{issuer}' is not a URL",
                        self.label
                    ))
                })?;
                tracing::debug!(server = %self.server, "no authorization server metadata; using the default endpoints");
                Ok(ServerMetadata::defaults_for(&base))
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

    /// The pre-registered client of the config.
    fn configured_client(&self, meta: &ServerMetadata) -> Result<ClientRegistration, Error> {
        let Some(id) = self.config.client_id.clone() else {
            return Err(Error::AuthFailed(format!(
                "{}: this grant needs a client_id (auth.client_id)",
                self.label
            )));
        };
        let method = if self.config.private_key.is_some() {
            "private_key_jwt".to_owned()
        } else {
            self.auth_method(meta, self.config.client_secret.is_some())
        };
        Ok(ClientRegistration {
            client_id: id,
            client_secret: self.config.client_secret.clone(),
            token_endpoint_auth_method: Some(method),
        })
    }

    /// The token endpoint auth method for a client with or without a secret,
    /// among the ones the server supports.
    fn auth_method(&self, meta: &ServerMetadata, has_secret: bool) -> String {
        if !has_secret {
            return "none".into();
        }
        if meta.supports_auth_method("client_secret_basic") {
            "client_secret_basic".into()
        } else if meta.supports_auth_method("client_secret_post") {
            "client_secret_post".into()
        } else {
            "client_secret_basic".into()
        }
    }

    /// The client identity for the authorization code grant: kept from
    /// before (same issuer), configured, a metadata document URL, or a new
    /// dynamic registration.
    async fn client(
        &self,
        flight: &mut Flight,
        meta: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<ClientRegistration, Error> {
        if let Some(c) = &flight.credentials.client {
            return Ok(c.clone());
        }
        let client = if self.config.client_id.is_some() {
            self.configured_client(meta)?
        } else if let (true, Some(url)) = (
            meta.client_id_metadata_document_supported,
            self.config.client_metadata_url.clone(),
        ) {
            ClientRegistration {
                client_id: url,
                client_secret: None,
                token_endpoint_auth_method: Some("none".into()),
            }
        } else if let Some(endpoint) = &meta.registration_endpoint {
            self.register(meta, endpoint, redirect_uri).await?
        } else {
            return Err(Error::AuthFailed(format!(
                "{}: the authorization server offers no dynamic registration; configure auth.client_id (or auth.client_metadata_url)",
                self.label
            )));
        };
        flight.credentials.client = Some(client.clone());
        Ok(client)
    }

    /// Dynamic client registration (RFC 7591).
    async fn register(
        &self,
        meta: &ServerMetadata,
        endpoint: &str,
        redirect_uri: &str,
    ) -> Result<ClientRegistration, Error> {
        let method = if meta.supports_auth_method("none") {
            "none".to_owned()
        } else {
            self.auth_method(meta, true)
        };
        let body = json!({
            "client_name": "mcpmux",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native",
        });
        let url = self.endpoint_url(endpoint, "registration_endpoint")?;
        let response = net::client()
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| net::network_error(&self.label, &url, e))?;
        let status = response.status();
        let body = net::read_body(&self.label, response, 256 * 1024).await?;
        let doc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(Error::AuthFailed(format!(
                "{}: client registration at {} refused (HTTP {status}{})",
                self.label,
                net::display_url(&url),
                oauth_error(&doc)
            )));
        }
        let Some(client_id) = doc.get("client_id").and_then(Value::as_str) else {
            return Err(Error::AuthFailed(format!(
                "{}: client registration at {} returned no client_id",
                self.label,
                net::display_url(&url)
            )));
        };
        let secret = doc
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let method = doc
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                if secret.is_some() {
                    self.auth_method(meta, true)
                } else {
                    "none".into()
                }
            });
        Ok(ClientRegistration {
            client_id: client_id.to_owned(),
            client_secret: secret,
            token_endpoint_auth_method: Some(method),
        })
    }

    /// Authorization code with PKCE S256 through the host's handler.
    async fn authorization_code(
        &self,
        flight: &mut Flight,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
    ) -> Result<TokenSet, Error> {
        let Some(handler) = self.handler.clone() else {
            return Err(Error::AuthRequired(format!(
                "{}: authorization is needed and no one can be asked here; run `mcpmux auth login {}` or give the host an authorization handler",
                self.label, self.server
            )));
        };
        if meta.discovered
            && !meta
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|m| m.iter().any(|m| m == "S256"))
        {
            return Err(Error::AuthFailed(format!(
                "{}: the authorization server does not advertise PKCE S256 (code_challenge_methods_supported); refusing to authorize",
                self.label
            )));
        }
        let Some(endpoint) = &meta.authorization_endpoint else {
            return Err(Error::AuthFailed(format!(
                "{}: the authorization server metadata has no authorization_endpoint",
                self.label
            )));
        };
        let redirect_uri = handler
            .redirect_uri()
            .or_else(|| self.config.redirect_uri.clone())
            .unwrap_or_else(|| super::DEFAULT_REDIRECT_URI.to_owned());
        let client = self.client(flight, meta, &redirect_uri).await?;
        let pkce = Pkce::new()?;
        let state = crypto::random_token(24)?;
        let mut url = self.endpoint_url(endpoint, "authorization_endpoint")?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", resource);
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
        }
        let redirect = handler
            .authorize(AuthorizationRequest {
                server: self.server.clone(),
                url: url.to_string(),
                redirect_uri: redirect_uri.clone(),
            })
            .await
            .map_err(|e| match e {
                Error::AuthFailed(_) | Error::AuthRequired(_) => e,
                other => Error::AuthFailed(format!(
                    "{}: authorization did not complete: {other}",
                    self.label
                )),
            })?;
        let code = self.read_redirect(meta, &redirect, &state)?;
        let form = vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code),
            ("redirect_uri".to_owned(), redirect_uri),
            ("code_verifier".to_owned(), pkce.verifier),
            ("resource".to_owned(), resource.to_owned()),
        ];
        let mut token = self.expect_token(flight, meta, Some(&client), form).await?;
        if token.scope.is_none() && !scopes.is_empty() {
            token.scope = Some(scopes.join(" "));
        }
        Ok(token)
    }

    /// The code from the redirect, after the `state` and `iss` (RFC 9207)
    /// checks. `iss` is compared as a plain string.
    fn read_redirect(
        &self,
        meta: &ServerMetadata,
        redirect: &str,
        state: &str,
    ) -> Result<String, Error> {
        let url = url::Url::parse(redirect)
            .map_err(|_| Error::AuthFailed(format!("{}: the redirect is not a URL", self.label)))?;
        let get = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = get("error") {
            let description = get("error_description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            return Err(Error::AuthFailed(format!(
                "{}: the authorization server refused: {error}{description}",
                self.label
            )));
        }
        if get("state").as_deref() != Some(state) {
            return Err(Error::AuthFailed(format!(
                "{}: the redirect's state does not match the request; refusing it",
                self.label
            )));
        }
        match get("iss") {
            Some(iss) if iss != meta.issuer => {
                return Err(Error::AuthFailed(format!(
                    "{}: the authorization response comes from issuer '{iss}', not '{}'; refusing it",
                    self.label, meta.issuer
                )))
            }
            None if meta.authorization_response_iss_parameter_supported => {
                return Err(Error::AuthFailed(format!(
                    "{}: the authorization server promises an iss parameter but the response has none; refusing it",
                    self.label
                )))
            }
            _ => {}
        }
        get("code").ok_or_else(|| {
            Error::AuthFailed(format!(
                "{}: the redirect carries no authorization code",
                self.label
            ))
        })
    }

    /// Enterprise-managed authorization, step one: the IdP exchanges its ID
    /// token for an ID-JAG for this authorization server and resource.
    async fn exchange_for_id_jag(
        &self,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
    ) -> Result<String, Error> {
        let endpoint = self.config.idp_token_endpoint.clone().unwrap_or_default();
        let url = self.endpoint_url(&endpoint, "auth.idp_token_endpoint")?;
        let mut form = vec![
            ("grant_type".to_owned(), TOKEN_EXCHANGE.to_owned()),
            ("requested_token_type".to_owned(), ID_JAG.to_owned()),
            ("audience".to_owned(), meta.issuer.clone()),
            ("resource".to_owned(), resource.to_owned()),
            (
                "subject_token".to_owned(),
                self.config.idp_id_token.clone().unwrap_or_default(),
            ),
            ("subject_token_type".to_owned(), ID_TOKEN.to_owned()),
        ];
        if !scopes.is_empty() {
            form.push(("scope".into(), scopes.join(" ")));
        }
        let mut request = net::client().post(url.clone());
        if let Some(id) = &self.config.idp_client_id {
            match &self.config.idp_client_secret {
                Some(secret) => request = request.header(AUTHORIZATION, basic(id, secret)),
                None => form.push(("client_id".into(), id.clone())),
            }
        }
        let response = request
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(encode_form(&form))
            .send()
            .await
            .map_err(|e| net::network_error(&self.label, &url, e))?;
        let status = response.status();
        let body = net::read_body(&self.label, response, 256 * 1024).await?;
        let doc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match doc.get("access_token").and_then(Value::as_str) {
            Some(jag) if status.is_success() => Ok(jag.to_owned()),
            _ => Err(Error::AuthFailed(format!(
                "{}: the identity provider's token exchange at {} failed (HTTP {status}{})",
                self.label,
                net::display_url(&url),
                oauth_error(&doc)
            ))),
        }
    }

    /// A token request that must succeed.
    async fn expect_token(
        &self,
        flight: &mut Flight,
        meta: &ServerMetadata,
        client: Option<&ClientRegistration>,
        form: Vec<(String, String)>,
    ) -> Result<TokenSet, Error> {
        match self.token_request(flight, meta, client, form).await? {
            TokenOutcome::Issued(t) => Ok(t),
            TokenOutcome::Refused(why) => Err(Error::AuthFailed(format!(
                "{}: the token endpoint refused the request: {why}",
                self.label
            ))),
        }
    }

    /// POSTs to the token endpoint with the client's authentication (and a
    /// DPoP proof when DPoP is on; a `use_dpop_nonce` answer is retried
    /// once with the nonce).
    async fn token_request(
        &self,
        flight: &mut Flight,
        meta: &ServerMetadata,
        client: Option<&ClientRegistration>,
        mut form: Vec<(String, String)>,
    ) -> Result<TokenOutcome, Error> {
        let Some(endpoint) = &meta.token_endpoint else {
            return Err(Error::AuthFailed(format!(
                "{}: the authorization server metadata has no token_endpoint",
                self.label
            )));
        };
        let url = self.endpoint_url(endpoint, "token_endpoint")?;
        let mut basic_header = None;
        if let Some(c) = client {
            match c.token_endpoint_auth_method.as_deref().unwrap_or("none") {
                "client_secret_basic" => {
                    basic_header = Some(basic(
                        &c.client_id,
                        c.client_secret.as_deref().unwrap_or(""),
                    ))
                }
                "client_secret_post" => {
                    form.push(("client_id".into(), c.client_id.clone()));
                    form.push((
                        "client_secret".into(),
                        c.client_secret.clone().unwrap_or_default(),
                    ));
                }
                "private_key_jwt" => {
                    let key =
                        SigningKey::from_pem(self.config.private_key.as_deref().unwrap_or(""))
                            .map_err(|_| {
                                Error::AuthFailed(format!(
                                    "{}: auth.private_key is not usable",
                                    self.label
                                ))
                            })?;
                    let iat = now();
                    let claims = json!({
                        "iss": c.client_id,
                        "sub": c.client_id,
                        "aud": meta.issuer,
                        "iat": iat,
                        "exp": iat + 300,
                        "jti": crypto::random_token(16)?,
                    });
                    let assertion = key.sign_jwt(json!({ "typ": "JWT" }), &claims)?;
                    form.push(("client_id".into(), c.client_id.clone()));
                    form.push(("client_assertion_type".into(), ASSERTION_TYPE.into()));
                    form.push(("client_assertion".into(), assertion));
                }
                _ => form.push(("client_id".into(), c.client_id.clone())),
            }
        }
        let dpop_key = self.current.lock().unwrap().dpop_key.clone();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut request = net::client()
                .post(url.clone())
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(reqwest::header::ACCEPT, "application/json")
                .body(encode_form(&form));
            if let Some(h) = &basic_header {
                request = request.header(AUTHORIZATION, h.clone());
            }
            if let Some(key) = &dpop_key {
                let proof = key.dpop_proof("POST", &url, flight.as_nonce.as_deref(), None)?;
                request = request.header("dpop", proof);
            }
            let response = request
                .send()
                .await
                .map_err(|e| net::network_error(&self.label, &url, e))?;
            let status = response.status();
            let nonce = response
                .headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = net::read_body(&self.label, response, 256 * 1024).await?;
            let doc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if let Some(n) = nonce.clone() {
                flight.as_nonce = Some(n);
            }
            if !status.is_success() {
                let error = doc.get("error").and_then(Value::as_str).unwrap_or("");
                if error == "use_dpop_nonce"
                    && nonce.is_some()
                    && dpop_key.is_some()
                    && attempts < 2
                {
                    continue;
                }
                let why = format!("HTTP {status}{}", oauth_error(&doc));
                if status.as_u16() == 400 || status.as_u16() == 401 {
                    return Ok(TokenOutcome::Refused(why));
                }
                return Err(Error::AuthFailed(format!(
                    "{}: the token endpoint {} failed: {why}",
                    self.label,
                    net::display_url(&url)
                )));
            }
            let Some(access_token) = doc.get("access_token").and_then(Value::as_str) else {
                return Err(Error::AuthFailed(format!(
                    "{}: the token endpoint {} returned no access_token",
                    self.label,
                    net::display_url(&url)
                )));
            };
            let token_type = doc
                .get("token_type")
                .and_then(Value::as_str)
                .unwrap_or("Bearer")
                .to_owned();
            return Ok(TokenOutcome::Issued(TokenSet {
                access_token: access_token.to_owned(),
                token_type,
                refresh_token: doc
                    .get("refresh_token")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                expires_at: doc
                    .get("expires_in")
                    .and_then(Value::as_u64)
                    .map(|s| now() + s),
                scope: doc.get("scope").and_then(Value::as_str).map(str::to_owned),
            }));
        }
    }

    /// An endpoint from metadata as a URL (relative ones against the issuer).
    fn endpoint_url(&self, endpoint: &str, what: &str) -> Result<url::Url, Error> {
        url::Url::parse(endpoint)
            .map_err(|_| Error::AuthFailed(format!("{}: {what} is not a valid URL", self.label)))
    }
}

/// `resource` and `scope` parameters.
fn push_common(form: &mut Vec<(String, String)>, resource: &str, scopes: &[String]) {
    form.push(("resource".into(), resource.to_owned()));
    if !scopes.is_empty() {
        form.push(("scope".into(), scopes.join(" ")));
    }
}

/// `application/x-www-form-urlencoded` of `pairs`.
fn encode_form(pairs: &[(String, String)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// `client_secret_basic` (RFC 6749 §2.3.1: both parts form-encoded).
fn basic(id: &str, secret: &str) -> HeaderValue {
    use base64::Engine;
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let raw = format!("{}:{}", enc(id), enc(secret));
    let mut v = HeaderValue::from_str(&format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("Basic"));
    v.set_sensitive(true);
    v
}

/// `: error (description)` from an OAuth error body, for messages.
fn oauth_error(doc: &Value) -> String {
    match doc.get("error").and_then(Value::as_str) {
        Some(e) => match doc.get("error_description").and_then(Value::as_str) {
            Some(d) => format!(": {e} ({d})"),
            None => format!(": {e}"),
        },
        None => String::new(),
    }
}
