//! The `auth` table of a server entry as written, read with serde into raw
//! structs (one per auth type) and then checked: every message names the
//! field as `auth.<key>` through the caller's `field_err`, the same for a
//! wrong type (found by `serde_path_to_error`) as for a bad value.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{AuthConfig, GrantType, OAuthConfig};
use crate::error::Error;

/// Keys of each auth type (`type` included).
const BEARER_KEYS: &[&str] = &["type", "token"];
const HEADER_KEYS: &[&str] = &["type", "name", "value"];
const OAUTH_KEYS: &[&str] = &[
    "type",
    "client_id",
    "client_secret",
    "client_metadata_url",
    "scopes",
    "redirect_uri",
    "grant_type",
    "private_key",
    "signing_algorithm",
    "assertion",
    "idp_token_endpoint",
    "idp_id_token",
    "idp_client_id",
    "idp_client_secret",
    "dpop",
];

/// Only the `type` key, read before the rest.
#[derive(Deserialize)]
struct RawType {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// `type = "bearer"`.
#[derive(Deserialize)]
struct RawBearer {
    token: Option<String>,
}

/// `type = "header"`.
#[derive(Deserialize)]
struct RawHeader {
    name: Option<String>,
    value: Option<String>,
}

/// `scopes`: a space-separated string or an array of strings.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawScopes {
    Line(String),
    List(Vec<String>),
}

/// `type = "oauth"` (the default).
#[derive(Deserialize)]
struct RawOAuth {
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    scopes: Option<RawScopes>,
    redirect_uri: Option<String>,
    grant_type: Option<String>,
    private_key: Option<String>,
    signing_algorithm: Option<String>,
    assertion: Option<String>,
    idp_token_endpoint: Option<String>,
    idp_id_token: Option<String>,
    idp_client_id: Option<String>,
    idp_client_secret: Option<String>,
    dpop: Option<bool>,
}

/// What a wrong type of `key` is called.
fn wrong_type(key: &str) -> &'static str {
    match key {
        "scopes" => "must be an array of strings",
        "dpop" => "must be true or false",
        _ => "must be a string",
    }
}

/// `T` from the table; a wrong type is `auth.<key> <what it must be>`.
fn decode<T: DeserializeOwned>(
    map: &Map<String, Value>,
    field_err: &dyn Fn(&str, &str) -> Error,
) -> Result<T, Error> {
    crate::raw_table::decode(map)
        .map_err(|w| field_err(&format!("auth.{}", w.key), wrong_type(&w.key)))
}

/// A required, non-empty string of auth type `kind`.
fn required(
    value: Option<String>,
    key: &str,
    kind: &str,
    field_err: &dyn Fn(&str, &str) -> Error,
) -> Result<String, Error> {
    value.filter(|s| !s.is_empty()).ok_or_else(|| {
        field_err(
            &format!("auth.{key}"),
            &format!("is required for auth type {kind}"),
        )
    })
}

/// Reads and checks an `auth` table ([`AuthConfig::from_map`]).
pub(super) fn read(
    map: &Map<String, Value>,
    field_err: &dyn Fn(&str, &str) -> Error,
) -> Result<AuthConfig, Error> {
    let only_type: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| *k == "type")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let kind = decode::<RawType>(&only_type, field_err)?
        .kind
        .unwrap_or_else(|| "oauth".into());
    if !cfg!(feature = "oauth") && matches!(kind.as_str(), "oauth" | "oauth2") {
        let needs = crate::error::needs_feature("oauth");
        return Err(field_err(
            "auth.type",
            &format!("is '{kind}', which {needs}"),
        ));
    }
    let known = match kind.as_str() {
        "bearer" => BEARER_KEYS,
        "header" => HEADER_KEYS,
        "oauth" | "oauth2" => OAUTH_KEYS,
        other => {
            return Err(field_err(
                "auth.type",
                &format!("has unknown value '{other}' (expected oauth, bearer or header)"),
            ))
        }
    };
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(field_err(
            &format!("auth.{key}"),
            &format!("is not a setting of auth type {kind}"),
        ));
    }
    match kind.as_str() {
        "bearer" => {
            let raw: RawBearer = decode(map, field_err)?;
            Ok(AuthConfig::Bearer {
                token: required(raw.token, "token", "bearer", field_err)?,
            })
        }
        "header" => {
            let raw: RawHeader = decode(map, field_err)?;
            Ok(AuthConfig::Header {
                name: required(raw.name, "name", "header", field_err)?,
                value: required(raw.value, "value", "header", field_err)?,
            })
        }
        _ => oauth(decode(map, field_err)?, field_err).map(|c| AuthConfig::OAuth(Box::new(c))),
    }
}

/// The grant type named by `grant_type` (authorization code by default).
fn grant_type(
    value: Option<&str>,
    field_err: &dyn Fn(&str, &str) -> Error,
) -> Result<GrantType, Error> {
    Ok(match value {
        None | Some("authorization_code") => GrantType::AuthorizationCode,
        Some("client_credentials") => GrantType::ClientCredentials,
        Some("jwt_bearer" | "urn:ietf:params:oauth:grant-type:jwt-bearer") => GrantType::JwtBearer,
        Some("enterprise" | "token_exchange") => GrantType::Enterprise,
        Some(other) => {
            return Err(field_err(
                "auth.grant_type",
                &format!("has unknown value '{other}' (expected authorization_code, client_credentials, jwt_bearer or enterprise)"),
            ))
        }
    })
}

/// An OAuth table checked: URLs parse, each grant type has what it needs,
/// the signing algorithm is ES256 and the private key is one.
fn oauth(raw: RawOAuth, field_err: &dyn Fn(&str, &str) -> Error) -> Result<OAuthConfig, Error> {
    let grant_type = grant_type(raw.grant_type.as_deref(), field_err)?;
    for (key, value) in [
        ("client_metadata_url", &raw.client_metadata_url),
        ("redirect_uri", &raw.redirect_uri),
        ("idp_token_endpoint", &raw.idp_token_endpoint),
    ] {
        if let Some(u) = value {
            url::Url::parse(u).map_err(|e| {
                field_err(&format!("auth.{key}"), &format!("is not a valid URL ({e})"))
            })?;
        }
    }
    let config = OAuthConfig {
        client_id: raw.client_id,
        client_secret: raw.client_secret,
        client_metadata_url: raw.client_metadata_url,
        scopes: raw.scopes.map(|s| match s {
            RawScopes::Line(line) => line.split_whitespace().map(str::to_owned).collect(),
            RawScopes::List(list) => list,
        }),
        redirect_uri: raw.redirect_uri,
        grant_type,
        private_key: raw.private_key,
        signing_algorithm: raw.signing_algorithm,
        assertion: raw.assertion,
        idp_token_endpoint: raw.idp_token_endpoint,
        idp_id_token: raw.idp_id_token,
        idp_client_id: raw.idp_client_id,
        idp_client_secret: raw.idp_client_secret,
        dpop: raw.dpop.unwrap_or(true),
    };
    let missing = match config.grant_type {
        GrantType::ClientCredentials if config.client_id.is_none() => Some((
            "auth.client_id",
            "is required for grant_type client_credentials",
        )),
        GrantType::ClientCredentials
            if config.client_secret.is_none() && config.private_key.is_none() =>
        {
            Some((
                "auth.client_secret",
                "(or auth.private_key) is required for grant_type client_credentials",
            ))
        }
        GrantType::JwtBearer if config.assertion.is_none() => {
            Some(("auth.assertion", "is required for grant_type jwt_bearer"))
        }
        GrantType::Enterprise
            if config.idp_token_endpoint.is_none() || config.idp_id_token.is_none() =>
        {
            Some((
                "auth.idp_token_endpoint",
                "and auth.idp_id_token are required for grant_type enterprise",
            ))
        }
        _ => None,
    };
    if let Some((field, message)) = missing {
        return Err(field_err(field, message));
    }
    if let Some(alg) = &config.signing_algorithm {
        if alg != "ES256" {
            return Err(field_err(
                "auth.signing_algorithm",
                &format!("has unsupported value '{alg}' (only ES256)"),
            ));
        }
    }
    #[cfg(feature = "oauth")]
    if let Some(pem) = &config.private_key {
        super::crypto::SigningKey::from_pem(pem).map_err(|_| {
            field_err(
                "auth.private_key",
                "is not a PKCS#8 PEM EC P-256 private key",
            )
        })?;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        let map = v.as_object().unwrap().clone();
        read(&map, &|field, message| {
            Error::ConfigInvalid(format!("field '{field}' {message}"))
        })
        .unwrap_err()
        .to_string()
    }

    #[test]
    fn wrong_types_name_the_field_and_what_it_must_be() {
        assert!(err(json!({"type": 5})).contains("field 'auth.type' must be a string"));
        assert!(err(json!({"type": "bearer", "token": 5}))
            .contains("field 'auth.token' must be a string"));
        assert!(err(json!({"scopes": ["a", 5]}))
            .contains("field 'auth.scopes' must be an array of strings"));
        assert!(err(json!({"scopes": 5})).contains("'auth.scopes' must be an array of strings"));
        assert!(err(json!({"dpop": "yes"})).contains("field 'auth.dpop' must be true or false"));
        assert!(err(json!({"type": "header", "name": "X"}))
            .contains("'auth.value' is required for auth type header"));
        assert!(err(json!({"type": "bearer", "nope": 1}))
            .contains("'auth.nope' is not a setting of auth type bearer"));
        assert!(err(json!({"grant_type": "client_credentials"}))
            .contains("'auth.client_id' is required for grant_type client_credentials"));
    }

    #[test]
    fn scopes_are_a_line_or_a_list() {
        let read_scopes = |v: Value| match read(v.as_object().unwrap(), &|_, m| {
            Error::ConfigInvalid(m.to_owned())
        })
        .unwrap()
        {
            AuthConfig::OAuth(c) => c.scopes,
            _ => unreachable!(),
        };
        assert_eq!(
            read_scopes(json!({"scopes": "a b"})),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(
            read_scopes(json!({"scopes": ["c"], "dpop": null})),
            Some(vec!["c".to_owned()])
        );
    }
}
