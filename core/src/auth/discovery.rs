//! Discovery: protected-resource metadata (RFC 9728) and authorization
//! server metadata (RFC 8414 and OpenID Connect discovery), in the order
//! the MCP authorization specification gives, with the 2025-03-26
//! fallbacks for servers without any metadata.

use serde::Deserialize;

use crate::error::Error;
use crate::net;

/// Protected-resource metadata (RFC 9728 §2), the parts the flow reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResourceMetadata {
    /// The resource identifier, kept exactly as published (it is sent back
    /// as the `resource` parameter).
    pub resource: Option<String>,
    /// Issuer URLs of the authorization servers.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    pub scopes_supported: Option<Vec<String>>,
}

/// Authorization-server metadata (RFC 8414 §2), the parts the flow reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ServerMetadata {
    /// The issuer identifier.
    #[serde(default)]
    pub issuer: String,
    /// Where the person approves.
    pub authorization_endpoint: Option<String>,
    /// Where codes, refresh tokens and grants become tokens.
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    pub scopes_supported: Option<Vec<String>>,
    /// Grants the server accepts.
    pub grant_types_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods.
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// Client ID Metadata Documents are accepted as client ids.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// DPoP algorithms (RFC 9449 §5.1); DPoP is used when ES256 is listed.
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether the document came from a well-known URL (false: the
    /// 2025-03-26 default endpoints).
    #[serde(skip)]
    pub discovered: bool,
}

impl ServerMetadata {
    /// Whether the server supports `method` for token endpoint auth
    /// (RFC 8414's default is `client_secret_basic`).
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(list) => list.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }

    /// Whether the server lists `scope` in `scopes_supported`.
    pub fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// Whether DPoP with ES256 is offered.
    pub fn dpop_es256(&self) -> bool {
        self.dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|a| a.iter().any(|x| x == "ES256"))
    }

    /// The 2025-03-26 fallback: default endpoints at the server's origin.
    pub fn defaults_for(origin: &url::Url) -> ServerMetadata {
        let at = |path: &str| origin.join(path).ok().map(|u| u.to_string());
        let mut issuer = origin.origin().ascii_serialization();
        if issuer == "null" {
            issuer = origin.to_string();
        }
        ServerMetadata {
            issuer,
            authorization_endpoint: at("/authorize"),
            token_endpoint: at("/token"),
            registration_endpoint: at("/register"),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..ServerMetadata::default()
        }
    }
}

/// Where to look for protected-resource metadata, in order: the
/// challenge's `resource_metadata`, the path-aware well-known URL, the
/// root well-known URL.
pub fn resource_metadata_urls(server: &url::Url, from_challenge: Option<&str>) -> Vec<url::Url> {
    let mut out = Vec::new();
    if let Some(u) = from_challenge.and_then(|u| server.join(u).ok()) {
        out.push(u);
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        if let Ok(u) = server.join(&format!("/.well-known/oauth-protected-resource{path}")) {
            out.push(u);
        }
    }
    if let Ok(u) = server.join("/.well-known/oauth-protected-resource") {
        out.push(u);
    }
    out.dedup();
    out
}

/// Where to look for an issuer's metadata (MCP 2025-11-25, "Authorization
/// Server Metadata Discovery"): with a path, RFC 8414 path insertion, OIDC
/// path insertion, then OIDC path appending; without one, RFC 8414 then OIDC.
pub fn server_metadata_urls(issuer: &url::Url) -> Vec<url::Url> {
    let path = issuer.path().trim_end_matches('/');
    let rel: Vec<String> = if path.is_empty() {
        vec![
            "/.well-known/oauth-authorization-server".into(),
            "/.well-known/openid-configuration".into(),
        ]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server{path}"),
            format!("/.well-known/openid-configuration{path}"),
            format!("{path}/.well-known/openid-configuration"),
        ]
    };
    rel.iter().filter_map(|r| issuer.join(r).ok()).collect()
}

/// GETs a JSON document through `http` (under its network policy);
/// `Ok(None)` for a 4xx (not there), an error for anything else that is
/// not a JSON success.
pub async fn get_json(
    http: &net::Http,
    label: &str,
    url: &url::Url,
) -> Result<Option<serde_json::Value>, Error> {
    let response = http
        .get(label, url)?
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| net::network_error(label, url, e))?;
    let status = response.status();
    if status.is_client_error() {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(Error::AuthFailed(format!(
            "{label}: {} answered HTTP {status}",
            net::display_url(url)
        )));
    }
    let body = net::read_body(label, response, 1024 * 1024).await?;
    serde_json::from_slice(&body).map(Some).map_err(|_| {
        Error::AuthFailed(format!(
            "{label}: {} is not a JSON document",
            net::display_url(url)
        ))
    })
}

/// The protected-resource metadata of `server`: the first of
/// [`resource_metadata_urls`] that answers; `None` when none does. A URL
/// the network policy refuses ends the search with that refusal.
pub async fn resource_metadata(
    http: &net::Http,
    label: &str,
    server: &url::Url,
    from_challenge: Option<&str>,
) -> Result<Option<ResourceMetadata>, Error> {
    for url in resource_metadata_urls(server, from_challenge) {
        match get_json(http, label, &url).await {
            Ok(Some(doc)) => {
                let prm: ResourceMetadata = serde_json::from_value(doc).map_err(|e| {
                    Error::AuthFailed(format!(
                        "{label}: protected resource metadata at {} is malformed: {e}",
                        net::display_url(&url)
                    ))
                })?;
                tracing::debug!(server = label, url = %net::display_url(&url), "protected resource metadata");
                return Ok(Some(prm));
            }
            Ok(None) => continue,
            Err(e) if net::policy::is_refusal(&e) => return Err(e),
            Err(e) => {
                tracing::debug!(server = label, "protected resource metadata: {e}");
                continue;
            }
        }
    }
    Ok(None)
}

/// Whether the published `resource` may stand for `server` (RFC 9728 §3.3,
/// MCP "Canonical Server URI"): same origin, and the server's path is the
/// resource's path or below it.
pub fn resource_matches(server: &url::Url, resource: &str) -> bool {
    let Ok(r) = url::Url::parse(resource) else {
        return false;
    };
    if !net::same_origin(server, &r) {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// Whether `url` may carry OAuth traffic (OAuth 2.1 §1.5): `https`, or
/// `http` to a loopback host (`localhost`, 127.0.0.0/8, `::1`).
pub fn is_secure_endpoint(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => net::is_loopback_host(url),
        _ => false,
    }
}

/// `endpoint` (the metadata field `field`) as a URL, refused with
/// AUTH_FAILED naming the field and the URL (without query or user info)
/// unless it is [`is_secure_endpoint`].
pub fn secure_endpoint(label: &str, field: &str, endpoint: &str) -> Result<url::Url, Error> {
    let url = url::Url::parse(endpoint)
        .map_err(|_| Error::AuthFailed(format!("{label}: {field} is not a valid URL")))?;
    if !is_secure_endpoint(&url) {
        return Err(Error::AuthFailed(format!(
            "{label}: {field} {} is not https; OAuth needs https except on loopback (localhost, 127.0.0.0/8, ::1); refusing it",
            net::display_url(&url)
        )));
    }
    Ok(url)
}

/// The one check of every endpoint discovery hands the flow: the
/// protected resource's `authorization_servers` and the authorization
/// server's `issuer`, `authorization_endpoint`, `token_endpoint` and
/// `registration_endpoint` must each be [`secure_endpoint`]s.
pub fn check_endpoints(
    label: &str,
    prm: Option<&ResourceMetadata>,
    meta: Option<&ServerMetadata>,
) -> Result<(), Error> {
    for server in prm.iter().flat_map(|p| &p.authorization_servers) {
        secure_endpoint(label, "authorization_servers entry", server)?;
    }
    if let Some(m) = meta {
        secure_endpoint(label, "issuer", &m.issuer)?;
        for (field, value) in [
            ("authorization_endpoint", &m.authorization_endpoint),
            ("token_endpoint", &m.token_endpoint),
            ("registration_endpoint", &m.registration_endpoint),
        ] {
            if let Some(v) = value {
                secure_endpoint(label, field, v)?;
            }
        }
    }
    Ok(())
}

/// The metadata of the authorization server `issuer`; its `issuer` must be
/// the one the URLs were built from (RFC 8414 §3.3). `None` when no
/// well-known URL answers.
pub async fn server_metadata(
    http: &net::Http,
    label: &str,
    issuer: &str,
) -> Result<Option<ServerMetadata>, Error> {
    let base = url::Url::parse(issuer).map_err(|_| {
        Error::AuthFailed(format!(
            "{label}: authorization server '{issuer}' is not a valid URL"
        ))
    })?;
    // Its metadata is not fetched over cleartext either.
    secure_endpoint(label, "authorization server", issuer)?;
    for url in server_metadata_urls(&base) {
        let Some(doc) = get_json(http, label, &url).await? else {
            continue;
        };
        let mut meta: ServerMetadata = serde_json::from_value(doc).map_err(|e| {
            Error::AuthFailed(format!(
                "{label}: authorization server metadata at {} is malformed: {e}",
                net::display_url(&url)
            ))
        })?;
        if meta.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(Error::AuthFailed(format!(
                "{label}: authorization server metadata at {} names issuer '{}', not '{issuer}'; refusing it",
                net::display_url(&url),
                meta.issuer
            )));
        }
        check_endpoints(label, None, Some(&meta))?;
        meta.discovered = true;
        return Ok(Some(meta));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn well_known_orders() {
        let urls: Vec<String> = resource_metadata_urls(&u("http://h:1/mcp"), None)
            .iter()
            .map(|u| u.to_string())
            .collect();
        assert_eq!(
            urls,
            [
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        let urls: Vec<String> = server_metadata_urls(&u("http://h:1/tenant1"))
            .iter()
            .map(|u| u.to_string())
            .collect();
        assert_eq!(
            urls,
            [
                "http://h:1/.well-known/oauth-authorization-server/tenant1",
                "http://h:1/.well-known/openid-configuration/tenant1",
                "http://h:1/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(server_metadata_urls(&u("http://h:1")).len(), 2);
    }

    #[test]
    fn endpoints_are_https_except_on_loopback() {
        for ok in [
            "https://auth.example.com/token",
            "http://localhost:8080/token",
            "http://LOCALHOST/token",
            "http://127.0.0.1:9/token",
            "http://127.45.6.7/token",
            "http://[::1]:9/token",
        ] {
            assert!(is_secure_endpoint(&u(ok)), "{ok}");
        }
        for bad in [
            "http://auth.evil.example/token",
            "http://128.0.0.1/token",
            "http://10.0.0.1/token",
            "http://[::2]/token",
            "http://localhost.evil.example/token",
            "http://127.0.0.1.evil.example/token",
            "ftp://localhost/token",
        ] {
            assert!(!is_secure_endpoint(&u(bad)), "{bad}");
        }
    }

    #[test]
    fn cleartext_metadata_is_auth_failed_naming_the_endpoint() {
        let good = ServerMetadata {
            issuer: "https://as.example.com".into(),
            authorization_endpoint: Some("https://as.example.com/authorize".into()),
            token_endpoint: Some("https://as.example.com/token".into()),
            registration_endpoint: Some("http://127.0.0.1:1/register".into()),
            ..ServerMetadata::default()
        };
        check_endpoints("server 's'", None, Some(&good)).unwrap();
        let evil = "http://auth.evil.example/x?secret=s3cr3t";
        for field in [
            "issuer",
            "authorization_endpoint",
            "token_endpoint",
            "registration_endpoint",
        ] {
            let mut meta = good.clone();
            let slot = match field {
                "issuer" => {
                    meta.issuer = evil.into();
                    None
                }
                "authorization_endpoint" => Some(&mut meta.authorization_endpoint),
                "token_endpoint" => Some(&mut meta.token_endpoint),
                _ => Some(&mut meta.registration_endpoint),
            };
            if let Some(slot) = slot {
                *slot = Some(evil.into());
            }
            let e = check_endpoints("server 's'", None, Some(&meta)).unwrap_err();
            assert_eq!(e.code(), "AUTH_FAILED");
            let m = e.to_string();
            assert!(
                m.contains(field) && m.contains("http://auth.evil.example/x"),
                "{m}"
            );
            assert!(!m.contains("s3cr3t"), "{m}");
        }
        let prm = ResourceMetadata {
            authorization_servers: vec!["http://auth.evil.example".into()],
            ..ResourceMetadata::default()
        };
        let m = check_endpoints("server 's'", Some(&prm), None)
            .unwrap_err()
            .to_string();
        assert!(
            m.contains("authorization_servers") && m.contains("http://auth.evil.example/"),
            "{m}"
        );
        let local = ResourceMetadata {
            authorization_servers: vec!["http://127.0.0.1:4000".into()],
            ..ResourceMetadata::default()
        };
        check_endpoints("server 's'", Some(&local), None).unwrap();
    }

    #[tokio::test]
    async fn cleartext_issuer_is_not_fetched() {
        let e = server_metadata(
            &net::Http::default(),
            "server 's'",
            "http://auth.evil.example",
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), "AUTH_FAILED", "{e}");
        assert!(e.to_string().contains("http://auth.evil.example/"), "{e}");
    }

    #[test]
    fn resource_matching() {
        let s = u("http://h:1/mcp");
        assert!(resource_matches(&s, "http://h:1/mcp"));
        assert!(resource_matches(&s, "http://h:1"));
        assert!(resource_matches(&s, "http://h:1/"));
        assert!(!resource_matches(&s, "https://evil.example.com/mcp"));
        assert!(!resource_matches(&s, "http://h:1/other"));
        assert!(!resource_matches(&s, "http://h:1/mc"));
    }
}
