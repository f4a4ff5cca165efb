//! Stands in for the OAuth flow when mcpmux-core is built without its
//! `oauth` feature. A config with `auth.type = "oauth"` already fails to
//! load; an [`OAuthConfig`] put into a server config by hand gets the same
//! `CONFIG_INVALID` error from the first request instead of a token.

use reqwest::header::HeaderValue;

use super::challenge::Challenge;
use super::{AuthOptions, OAuthConfig};
use crate::error::Error;

/// One server's authorization; in this build it only reports that OAuth
/// is compiled out.
pub struct Authorizer {
    label: String,
}

/// A request's view of the credentials (never issued in this build).
pub struct Ticket {
    /// The token generation, to hand back with a challenge.
    pub generation: u64,
    /// `Authorization` (and `DPoP`) headers.
    pub headers: Vec<(&'static str, HeaderValue)>,
}

impl Authorizer {
    /// An authorizer for server `server` that fails every request.
    pub fn new(
        server: &str,
        _url: &url::Url,
        _config: OAuthConfig,
        _options: &AuthOptions,
        _network: &crate::net::Http,
    ) -> Authorizer {
        Authorizer {
            label: format!("server '{server}'"),
        }
    }

    fn off(&self) -> Error {
        Error::ConfigInvalid(format!(
            "{}: auth type oauth {}",
            self.label,
            crate::error::needs_feature("oauth")
        ))
    }

    /// Fails with `CONFIG_INVALID`: OAuth is compiled out.
    pub async fn request_headers(
        &self,
        _method: &str,
        _target: &url::Url,
    ) -> Result<Ticket, Error> {
        Err(self.off())
    }

    /// Fails with `CONFIG_INVALID`: OAuth is compiled out.
    pub async fn on_challenge(
        &self,
        _generation: u64,
        _status: u16,
        _challenge: &Challenge,
        _dpop_nonce: Option<&str>,
    ) -> Result<(), Error> {
        Err(self.off())
    }
}
