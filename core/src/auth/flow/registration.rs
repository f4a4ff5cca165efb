//! The client identity: the configured client, a client metadata document
//! URL, or dynamic client registration (RFC 7591), and the token endpoint
//! auth method that goes with it.

use reqwest::header::CONTENT_TYPE;
use serde_json::{json, Value};

use super::token::oauth_error;
use super::{Authorizer, Flight};
use crate::auth::discovery::ServerMetadata;
use crate::auth::store::ClientRegistration;
use crate::error::Error;
use crate::net;

impl Authorizer {
    /// The pre-registered client of the config.
    pub(super) fn configured_client(
        &self,
        meta: &ServerMetadata,
    ) -> Result<ClientRegistration, Error> {
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
    pub(super) fn auth_method(&self, meta: &ServerMetadata, has_secret: bool) -> String {
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
    pub(super) async fn client(
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
    pub(super) async fn register(
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
        let response = self
            .http
            .post(&self.label, &url)?
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
}
