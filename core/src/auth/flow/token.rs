//! Token endpoint requests: client authentication (basic, post, or a
//! signed client assertion), DPoP proofs with the server's nonce, and the
//! OAuth error shape.

use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Value};

use super::{Authorizer, Flight, TokenOutcome};
use crate::auth::crypto::{self, SigningKey};
use crate::auth::discovery::ServerMetadata;
use crate::auth::store::{now, ClientRegistration, TokenSet};
use crate::error::Error;
use crate::net;

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

impl Authorizer {
    /// A token request that must succeed.
    pub(super) async fn expect_token(
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
    pub(super) async fn token_request(
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
            let mut request = self
                .http
                .post(&self.label, &url)?
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
}

/// `resource` and `scope` parameters.
pub(super) fn push_common(form: &mut Vec<(String, String)>, resource: &str, scopes: &[String]) {
    form.push(("resource".into(), resource.to_owned()));
    if !scopes.is_empty() {
        form.push(("scope".into(), scopes.join(" ")));
    }
}

/// `application/x-www-form-urlencoded` of `pairs`.
pub(super) fn encode_form(pairs: &[(String, String)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// `client_secret_basic` (RFC 6749 §2.3.1: both parts form-encoded).
pub(super) fn basic(id: &str, secret: &str) -> HeaderValue {
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
pub(super) fn oauth_error(doc: &Value) -> String {
    match doc.get("error").and_then(Value::as_str) {
        Some(e) => match doc.get("error_description").and_then(Value::as_str) {
            Some(d) => format!(": {e} ({d})"),
            None => format!(": {e}"),
        },
        None => String::new(),
    }
}
