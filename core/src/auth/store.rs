//! Credentials at rest: what a server's authorization produced (the client
//! registration bound to its issuer, the token set), and where it is kept.
//!
//! [`FileTokenStore`] keeps one JSON file per server under the user's
//! config directory (`$XDG_CONFIG_HOME/mcpmux/tokens/<server>.json`), mode
//! 0600, written atomically; a file that group or others can read is
//! refused, not used.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A client identity at one authorization server.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ClientRegistration {
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients (a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

/// An access token and what came with it.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token (a secret).
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    #[serde(default = "bearer")]
    pub token_type: String,
    /// The refresh token (a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes requested or granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

fn bearer() -> String {
    "Bearer".into()
}

impl TokenSet {
    /// Whether the token is past its expiry (with a little slack).
    pub fn is_expired(&self) -> bool {
        self.expires_at.is_some_and(|at| now() + 1 >= at)
    }
}

/// Everything kept for one server.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct Credentials {
    /// The server URL the credentials are for; credentials for another URL
    /// are not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_url: Option<String>,
    /// The issuer of the authorization server the client and token belong
    /// to; when the server names another one, both are dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The registered (or metadata-document) client at that issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRegistration>,
    /// The current tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<TokenSet>,
}

impl Credentials {
    /// The secret values held (tokens, client secret), for
    /// `crate::secrets::register`: a server may echo them back.
    pub fn secret_values(&self) -> Vec<String> {
        let token = self
            .token
            .iter()
            .flat_map(|t| std::iter::once(t.access_token.clone()).chain(t.refresh_token.clone()));
        let client = self.client.iter().filter_map(|c| c.client_secret.clone());
        token.chain(client).collect()
    }
}

// Never print a secret, even in debug output.
impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client.as_ref().map(|c| &c.client_id))
            .field("has_token", &self.token.is_some())
            .finish()
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Where credentials are kept, per server name. Implementations must keep
/// them private to the user; errors never carry their content.
pub trait TokenStore: Send + Sync + 'static {
    /// The credentials of `server`, if any.
    fn load(&self, server: &str) -> Result<Option<Credentials>, Error>;
    /// Replaces the credentials of `server`.
    fn save(&self, server: &str, credentials: &Credentials) -> Result<(), Error>;
    /// Forgets the credentials of `server` (no error when there are none).
    fn delete(&self, server: &str) -> Result<(), Error>;
}

/// Credentials in memory, for one process (tests, hosts with their own
/// keychain).
#[derive(Default)]
pub struct MemoryTokenStore {
    entries: Mutex<HashMap<String, Credentials>>,
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, server: &str) -> Result<Option<Credentials>, Error> {
        Ok(self.entries.lock().unwrap().get(server).cloned())
    }
    fn save(&self, server: &str, credentials: &Credentials) -> Result<(), Error> {
        self.entries
            .lock()
            .unwrap()
            .insert(server.to_owned(), credentials.clone());
        Ok(())
    }
    fn delete(&self, server: &str) -> Result<(), Error> {
        self.entries.lock().unwrap().remove(server);
        Ok(())
    }
}

/// One JSON file per server in a directory, mode 0600 (directory 0700).
#[derive(Clone, Debug)]
pub struct FileTokenStore {
    dir: PathBuf,
}

impl FileTokenStore {
    /// A store in `dir` (created on first save).
    pub fn new(dir: impl Into<PathBuf>) -> FileTokenStore {
        FileTokenStore { dir: dir.into() }
    }

    /// `$XDG_CONFIG_HOME/mcpmux/tokens`, else `$HOME/.config/mcpmux/tokens`;
    /// `None` when neither variable is set.
    pub fn default_location() -> Option<FileTokenStore> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".config"))
            })?;
        Some(FileTokenStore::new(base.join("mcpmux").join("tokens")))
    }

    /// The directory of the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `server` (its name made safe for a file name).
    pub fn path(&self, server: &str) -> PathBuf {
        let safe: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let safe = if safe.is_empty() || safe.starts_with('.') {
            format!("_{safe}")
        } else {
            safe
        };
        self.dir.join(format!("{safe}.json"))
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self, server: &str) -> Result<Option<Credentials>, Error> {
        let path = self.path(server);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(Error::AuthFailed(format!(
                    "token store {}: cannot read: {e}",
                    path.display()
                )))
            }
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = file
                .metadata()
                .map_err(|e| Error::AuthFailed(format!("token store {}: {e}", path.display())))?;
            if meta.mode() & 0o077 != 0 {
                return Err(Error::AuthFailed(format!(
                    "token store {}: refusing a file that group or others can access (mode {:o}); run `chmod 600` on it or delete it",
                    path.display(),
                    meta.mode() & 0o777
                )));
            }
        }
        let credentials = serde_json::from_reader(std::io::BufReader::new(file)).map_err(|_| {
            Error::AuthFailed(format!(
                "token store {}: not a valid credentials file",
                path.display()
            ))
        })?;
        Ok(Some(credentials))
    }

    fn save(&self, server: &str, credentials: &Credentials) -> Result<(), Error> {
        use std::io::Write;
        let fail = |what: &str, e: std::io::Error| {
            Error::AuthFailed(format!("token store {}: {what}: {e}", self.dir.display()))
        };
        create_private_dir(&self.dir).map_err(|e| fail("cannot create the directory", e))?;
        let path = self.path(server);
        let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let body = serde_json::to_vec_pretty(credentials)
            .map_err(|e| Error::Internal(format!("token store: {e}")))?;
        let mut file = options.open(&tmp).map_err(|e| fail("cannot write", e))?;
        file.write_all(&body)
            .and_then(|_| file.sync_all())
            .map_err(|e| fail("cannot write", e))?;
        std::fs::rename(&tmp, &path).map_err(|e| fail("cannot write", e))?;
        Ok(())
    }

    fn delete(&self, server: &str) -> Result<(), Error> {
        match std::fs::remove_file(self.path(server)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::AuthFailed(format!(
                "token store {}: cannot delete: {e}",
                self.dir.display()
            ))),
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_store_round_trip_and_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path().join("tokens"));
        assert!(store.load("s").unwrap().is_none());
        let creds = Credentials {
            issuer: Some("https://as".into()),
            token: Some(TokenSet {
                access_token: "secret-token".into(),
                token_type: "Bearer".into(),
                ..TokenSet::default()
            }),
            ..Credentials::default()
        };
        store.save("s", &creds).unwrap();
        let loaded = store.load("s").unwrap().unwrap();
        assert_eq!(loaded.token.unwrap().access_token, "secret-token");
        assert!(!format!("{:?}", creds).contains("secret-token"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = store.path("s");
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = store.load("s").unwrap_err();
            assert_eq!(err.code(), "AUTH_FAILED");
            assert!(!err.to_string().contains("secret-token"));
        }
        store.delete("s").unwrap();
        store.delete("s").unwrap();
        assert!(store.load("s").unwrap().is_none());
        assert_eq!(store.path("../x").file_name().unwrap(), "_.._x.json");
    }
}
