//! The four grants: the authorization code grant with PKCE (the host
//! opens the browser and hands back the redirect), client credentials, a
//! JWT bearer assertion, and the enterprise flow (an ID token exchanged for
//! an ID-JAG at the identity provider, then presented as a JWT bearer
//! assertion).

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;

use super::token::{basic, encode_form, oauth_error, push_common};
use super::{Authorizer, Flight};
use crate::auth::crypto::{self, Pkce};
use crate::auth::discovery::ServerMetadata;
use crate::auth::store::{ClientRegistration, TokenSet};
use crate::auth::{AuthorizationRequest, GrantType};
use crate::error::Error;
use crate::net;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

impl Authorizer {
    /// Runs the configured grant against `meta` for `resource` and
    /// `scopes` (the authorization code grant, client credentials, a JWT
    /// bearer assertion, or the enterprise ID-JAG exchange).
    pub(super) async fn obtain_token(
        &self,
        flight: &mut Flight,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
    ) -> Result<TokenSet, Error> {
        let token = match self.config.grant_type {
            GrantType::AuthorizationCode => {
                self.authorization_code(flight, meta, resource, scopes)
                    .await?
            }
            GrantType::ClientCredentials => {
                let client = self.configured_client(meta)?;
                let mut form = vec![("grant_type".to_owned(), "client_credentials".to_owned())];
                push_common(&mut form, resource, scopes);
                self.expect_token(flight, meta, Some(&client), form).await?
            }
            GrantType::JwtBearer => {
                let assertion = self.config.assertion.clone().unwrap_or_default();
                let client = self.config.client_id.clone().map(|id| ClientRegistration {
                    client_id: id,
                    client_secret: self.config.client_secret.clone(),
                    token_endpoint_auth_method: Some(
                        self.auth_method(meta, self.config.client_secret.is_some()),
                    ),
                });
                let mut form = vec![
                    ("grant_type".to_owned(), JWT_BEARER.to_owned()),
                    ("assertion".to_owned(), assertion),
                ];
                push_common(&mut form, resource, scopes);
                self.expect_token(flight, meta, client.as_ref(), form)
                    .await?
            }
            GrantType::Enterprise => {
                let jag = self.exchange_for_id_jag(meta, resource, scopes).await?;
                let client = self.configured_client(meta)?;
                let mut form = vec![
                    ("grant_type".to_owned(), JWT_BEARER.to_owned()),
                    ("assertion".to_owned(), jag),
                ];
                push_common(&mut form, resource, scopes);
                self.expect_token(flight, meta, Some(&client), form).await?
            }
        };
        Ok(token)
    }

    /// Authorization code with PKCE S256 through the host's handler.
    pub(super) async fn authorization_code(
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
            .unwrap_or_else(|| crate::auth::DEFAULT_REDIRECT_URI.to_owned());
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
    pub(super) fn read_redirect(
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
    pub(super) async fn exchange_for_id_jag(
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
        let mut request = self.http.post(&self.label, &url)?;
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
}
