//! The `Mcp-Session-Id` a 2025-11-25 (or older) client gets from a gateway
//! over HTTP: the session's own state, sealed, so that any replica of a
//! fleet holding the same key can open it and carry the session on. No
//! session store is shared between replicas.
//!
//! A token is `<replica>.<key id>.<base64url(nonce ‖ AES-256-GCM(state))>`,
//! the key id bound as associated data. The state is what a session needs
//! to go on elsewhere: the revision the client negotiated, its
//! capabilities (the relay's and the tasks' decisions), a hash of the
//! bearer credential it presented, and when it was issued. Calls in
//! flight, a `GET` stream, 2025-11-25 tasks and stdio servers' state stay
//! with the replica that had them.
//!
//! Keys ([`SessionKeys`]) come from a key file shared by the replicas
//! (`--session-key-file`), read once at start; the file's second key, when
//! there is one, opens tokens but seals none (rotation: deploy the new key
//! first as the second, then swap). Without a file each process has a
//! random key: its tokens open nowhere else, as a single gateway's sessions
//! always were. A token that is too long, malformed, sealed with an unknown
//! key, tampered with, presented with other credentials or older than
//! [`LIFETIME`] opens as nothing: the caller answers 404 as for an unknown
//! session. Opening costs one AES-GCM pass over at most [`MAX_TOKEN_BYTES`].

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use mcpmux_core::error::Error;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Longest token accepted (and issued: a state that would make a longer
/// one keeps less of the client's capabilities).
pub const MAX_TOKEN_BYTES: usize = 1024;

/// How long a token opens after it was issued.
pub const LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// Longest replica name and key id.
const MAX_NAME: usize = 32;

/// Largest key file read.
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// The capabilities a token keeps, when the client's whole object would
/// not fit: what the gateway decides anything by.
const KEPT_CAPABILITIES: [&str; 4] = ["roots", "sampling", "elicitation", "tasks"];

/// One session's state as a token carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// The revision the client's `initialize` negotiated.
    #[serde(rename = "v")]
    pub version: String,
    /// The client's `initialize` capabilities (perhaps cut to the ones the
    /// gateway acts on: roots, sampling, elicitation, tasks).
    #[serde(rename = "c")]
    pub capabilities: Value,
    /// SHA-256 of the bearer credential it presented (hex, first 16
    /// bytes), empty when none.
    #[serde(rename = "h", default)]
    pub credential: String,
    /// When it was issued (Unix seconds).
    #[serde(rename = "t")]
    pub issued: u64,
}

impl SessionState {
    /// The state of a session that `initialize` with `params` began, for a
    /// client that presented `credential` (its bearer token, if any).
    pub fn new(version: &str, params: &Value, credential: Option<&str>) -> SessionState {
        SessionState {
            version: version.to_owned(),
            capabilities: params.get("capabilities").cloned().unwrap_or(Value::Null),
            credential: credential.map(credential_hash).unwrap_or_default(),
            issued: unix_now(),
        }
    }
}

/// The hash of a bearer credential a token keeps (never the credential).
pub fn credential_hash(credential: &str) -> String {
    let digest = Sha256::digest(credential.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One AES-256-GCM key and its id.
struct SessionKey {
    id: String,
    key: LessSafeKey,
}

/// The keys a replica seals and opens tokens with, and its name. Made once
/// at start (no key derivation per request); shared by every session.
pub struct SessionKeys {
    replica: String,
    /// Seals and opens.
    current: SessionKey,
    /// Only opens (a key being rotated out).
    previous: Option<SessionKey>,
    /// Read from a key file other replicas may share (not random).
    shared: bool,
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionKeys")
            .field("replica", &self.replica)
            .field("current", &self.current.id)
            .field("previous", &self.previous.as_ref().map(|k| &k.id))
            .finish_non_exhaustive()
    }
}

/// Whether `name` may be a replica name or key id: 1 to 32 of
/// `A-Z a-z 0-9 - _` (it goes into headers and balancer rules).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn random_bytes<const N: usize>() -> Result<[u8; N], Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Internal(format!("no randomness for the session key: {e}")))?;
    Ok(bytes)
}

fn key_of(id: &str, bytes: &[u8]) -> Result<SessionKey, Error> {
    let key = UnboundKey::new(&AES_256_GCM, bytes)
        .map_err(|_| Error::Internal("a session key must be 32 bytes".into()))?;
    Ok(SessionKey {
        id: id.to_owned(),
        key: LessSafeKey::new(key),
    })
}

impl SessionKeys {
    /// A random key of this process alone (no key file): its tokens open
    /// only here. `replica`: its name, or a random one.
    pub fn ephemeral(replica: Option<&str>) -> Result<SessionKeys, Error> {
        let replica = replica_name(replica)?;
        Ok(SessionKeys {
            replica,
            current: key_of("local", &random_bytes::<32>()?)?,
            previous: None,
            shared: false,
        })
    }

    /// The keys in the key file at `path`: one or two lines
    /// `<key id> <64 hex digits>` (the first seals, a second only opens;
    /// blank lines and `#` comments are skipped). The file must not be
    /// readable by others (mode 0600 or stricter), as any key material.
    pub fn from_file(path: &Path, replica: Option<&str>) -> Result<SessionKeys, Error> {
        let shown = path.display();
        let bad = |why: String| Error::ConfigInvalid(format!("--session-key-file {shown}: {why}"));
        let text = read_key_file(path).map_err(&bad)?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(id), Some(hex), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(bad(format!(
                    "line {}: expected `<key id> <64 hex digits>`",
                    n + 1
                )));
            };
            if !valid_name(id) {
                return Err(bad(format!(
                    "line {}: a key id is 1 to {MAX_NAME} of A-Z a-z 0-9 - _",
                    n + 1
                )));
            }
            let bytes = decode_hex(hex).filter(|b| b.len() == 32).ok_or_else(|| {
                bad(format!(
                    "line {}: key '{id}' must be 64 hex digits (32 random bytes)",
                    n + 1
                ))
            })?;
            keys.push(key_of(id, &bytes)?);
        }
        if keys.len() > 2 {
            return Err(bad(
                "at most two keys: the current one, then the previous one".into(),
            ));
        }
        if keys.len() == 2 && keys[0].id == keys[1].id {
            return Err(bad("the two keys have the same id".into()));
        }
        let mut keys = keys.into_iter();
        let current = keys.next().ok_or_else(|| bad("no key in it".into()))?;
        Ok(SessionKeys {
            replica: replica_name(replica)?,
            current,
            previous: keys.next(),
            shared: true,
        })
    }

    /// Whether the keys came from a key file (other replicas, or this one
    /// after a restart, may have sealed tokens with them), not made up at
    /// start.
    pub fn shared(&self) -> bool {
        self.shared
    }

    /// This replica's name (the tokens' prefix).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// A token holding `state`, or `None` when the system has no
    /// randomness for a nonce.
    pub fn seal(&self, state: &SessionState) -> Option<String> {
        let mut state = state.clone();
        let mut plain = serde_json::to_vec(&state).ok()?;
        if self.sealed_len(plain.len()) > MAX_TOKEN_BYTES {
            state.capabilities = kept_capabilities(&state.capabilities);
            plain = serde_json::to_vec(&state).ok()?;
        }
        if self.sealed_len(plain.len()) > MAX_TOKEN_BYTES {
            return None;
        }
        let nonce: [u8; NONCE_LEN] = random_bytes().ok()?;
        let aad = Aad::from(self.current.id.as_bytes());
        self.current
            .key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad, &mut plain)
            .ok()?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&plain);
        Some(format!(
            "{}.{}.{}",
            self.replica,
            self.current.id,
            URL_SAFE_NO_PAD.encode(sealed)
        ))
    }

    fn sealed_len(&self, plain: usize) -> usize {
        let bytes = NONCE_LEN + plain + AES_256_GCM.tag_len();
        self.replica.len() + self.current.id.len() + 2 + bytes.div_ceil(3) * 4
    }

    /// The state in `token`, when it is one of these keys', intact, issued
    /// less than [`LIFETIME`] ago and presented with the credential it was
    /// issued for (`credential`: the request's bearer token).
    pub fn open(&self, token: &str, credential: Option<&str>) -> Option<SessionState> {
        if token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        let mut parts = token.splitn(3, '.');
        let (_replica, id, sealed) = (parts.next()?, parts.next()?, parts.next()?);
        let key = std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .find(|k| k.id == id)?;
        let mut sealed = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if sealed.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return None;
        }
        let nonce = Nonce::try_assume_unique_for_key(&sealed[..NONCE_LEN]).ok()?;
        let plain = key
            .key
            .open_in_place(
                nonce,
                Aad::from(key.id.as_bytes()),
                &mut sealed[NONCE_LEN..],
            )
            .ok()?;
        let state: SessionState = serde_json::from_slice(plain).ok()?;
        let age = unix_now().saturating_sub(state.issued);
        if age > LIFETIME.as_secs() || state.issued > unix_now() + 60 {
            return None;
        }
        let presented = credential.map(credential_hash).unwrap_or_default();
        (presented == state.credential).then_some(state)
    }
}

impl SessionKeys {
    /// `plain` sealed with the current key for `purpose` (bound as
    /// associated data with the key's id, so that what was sealed for one
    /// purpose opens for no other): base64url of nonce and ciphertext.
    /// `None` when the system has no randomness for a nonce.
    pub(crate) fn seal_for(&self, purpose: &str, mut plain: Vec<u8>) -> Option<String> {
        let nonce: [u8; NONCE_LEN] = random_bytes().ok()?;
        let aad = format!("{purpose} {}", self.current.id);
        self.current
            .key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad.as_bytes()),
                &mut plain,
            )
            .ok()?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&plain);
        Some(URL_SAFE_NO_PAD.encode(sealed))
    }

    /// What [`SessionKeys::seal_for`] sealed for `purpose` with either key
    /// (the current one first); `None` for anything else. At most two
    /// AES-GCM passes over at most `max` bytes of text.
    pub(crate) fn open_for(&self, purpose: &str, text: &str, max: usize) -> Option<Vec<u8>> {
        if text.len() > max {
            return None;
        }
        let sealed = URL_SAFE_NO_PAD.decode(text).ok()?;
        if sealed.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return None;
        }
        std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .find_map(|key| {
                let nonce = Nonce::try_assume_unique_for_key(&sealed[..NONCE_LEN]).ok()?;
                let mut body = sealed[NONCE_LEN..].to_vec();
                let aad = format!("{purpose} {}", key.id);
                let plain = key
                    .key
                    .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut body)
                    .ok()?;
                Some(plain.to_vec())
            })
    }
}

/// The replica name given, checked, or a random one (`g` and 8 hex digits).
fn replica_name(given: Option<&str>) -> Result<String, Error> {
    match given {
        Some(name) if valid_name(name) => Ok(name.to_owned()),
        Some(name) => Err(Error::InvalidInput(format!(
            "--replica '{name:.64}': a replica name is 1 to {MAX_NAME} of A-Z a-z 0-9 - _"
        ))),
        None => {
            let bytes: [u8; 4] = random_bytes()?;
            Ok(format!(
                "g{}",
                bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
            ))
        }
    }
}

/// Only the capabilities the gateway decides by, each reduced to whether
/// it was declared (and `elicitation`'s modes, `tasks` whole when small).
fn kept_capabilities(capabilities: &Value) -> Value {
    let mut kept = serde_json::Map::new();
    for key in KEPT_CAPABILITIES {
        if let Some(v) = capabilities.get(key).filter(|v| !v.is_null()) {
            let small = serde_json::to_vec(v).is_ok_and(|b| b.len() <= 128);
            kept.insert(
                key.into(),
                if small {
                    v.clone()
                } else {
                    Value::Object(Default::default())
                },
            );
        }
    }
    Value::Object(kept)
}

/// Reads the key file: a regular file, not a link, readable by its owner
/// only, at most [`MAX_KEY_FILE_BYTES`].
fn read_key_file(path: &Path) -> Result<String, String> {
    use mcpmux_core::internal::files::{open_regular, read_capped};
    let file = open_regular(path, std::fs::OpenOptions::new().read(true))
        .map_err(|e| format!("cannot open it: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mode = file
            .metadata()
            .map_err(|e| format!("cannot stat it: {e}"))?
            .mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "others may read it (mode {:o}); chmod 600 it",
                mode & 0o777
            ));
        }
    }
    let bytes =
        read_capped(file, MAX_KEY_FILE_BYTES).map_err(|e| format!("cannot read it: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".into())
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(file: &str, replica: &str) -> SessionKeys {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        std::fs::write(&path, file).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        SessionKeys::from_file(&path, Some(replica)).unwrap()
    }

    const K1: &str = "k1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    const K2: &str = "k2 ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n";

    #[test]
    fn what_is_sealed_for_a_purpose_opens_for_it_alone_with_either_key() {
        let a = keys(K1, "a");
        let sealed = a.seal_for("mcpmux task", b"plain".to_vec()).unwrap();
        assert_eq!(a.open_for("mcpmux task", &sealed, 512).unwrap(), b"plain");
        // Another replica with the key, and one rotating it out.
        assert_eq!(
            keys(K1, "b").open_for("mcpmux task", &sealed, 512).unwrap(),
            b"plain"
        );
        let rotated = keys(&format!("{K2}{K1}"), "c");
        assert_eq!(
            rotated.open_for("mcpmux task", &sealed, 512).unwrap(),
            b"plain"
        );
        // Not for another purpose, another key, tampered, cut or too long.
        assert_eq!(a.open_for("session", &sealed, 512), None);
        assert_eq!(keys(K2, "a").open_for("mcpmux task", &sealed, 512), None);
        let mut tampered = sealed.clone().into_bytes();
        tampered[20] = if tampered[20] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(a.open_for("mcpmux task", &tampered, 512), None);
        assert_eq!(
            a.open_for("mcpmux task", &sealed[..sealed.len() - 3], 512),
            None
        );
        assert_eq!(a.open_for("mcpmux task", &sealed, 8), None);
        assert_eq!(a.open_for("mcpmux task", "not base64 ~", 512), None);
        assert_eq!(a.open_for("mcpmux task", "", 512), None);
        // A session token's sealed part is no task.
        let token = a.seal(&state()).unwrap();
        let part = token.rsplit('.').next().unwrap();
        assert_eq!(a.open_for("mcpmux task", part, 1024), None);
    }

    fn state() -> SessionState {
        SessionState::new(
            "2025-11-25",
            &json!({"capabilities": {"elicitation": {}}}),
            Some("tok"),
        )
    }

    #[test]
    fn any_replica_with_the_key_opens_a_token() {
        let (a, b) = (keys(K1, "a"), keys(K1, "b"));
        let token = a.seal(&state()).unwrap();
        assert!(token.starts_with("a.k1."), "{token}");
        assert!(token.len() <= MAX_TOKEN_BYTES);
        assert_eq!(b.open(&token, Some("tok")), Some(state()));
        // Other credentials, or none: nothing.
        assert_eq!(b.open(&token, Some("other")), None);
        assert_eq!(b.open(&token, None), None);
    }

    #[test]
    fn tampered_truncated_foreign_and_expired_tokens_open_as_nothing() {
        let a = keys(K1, "a");
        let token = a.seal(&state()).unwrap();
        let mut bytes = token.clone().into_bytes();
        let last = bytes.len() - 3;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            a.open(&String::from_utf8(bytes).unwrap(), Some("tok")),
            None
        );
        assert_eq!(a.open(&token[..token.len() - 5], Some("tok")), None);
        assert_eq!(a.open("a.k1.", Some("tok")), None);
        assert_eq!(a.open("garbage", Some("tok")), None);
        assert_eq!(a.open(&"x".repeat(5000), Some("tok")), None);
        // Another key of the same id, and a key of another id.
        let other = keys(&K2.replace("k2", "k1"), "a");
        assert_eq!(other.open(&token, Some("tok")), None);
        assert_eq!(keys(K2, "a").open(&token, Some("tok")), None);
        // A key id swapped in the token (the id is bound as associated data).
        let both = keys(&format!("{K2}{K1}"), "a");
        let swapped = token.replacen(".k1.", ".k2.", 1);
        assert_eq!(both.open(&swapped, Some("tok")), None);
        let mut old = state();
        old.issued -= LIFETIME.as_secs() + 1;
        assert_eq!(a.open(&a.seal(&old).unwrap(), Some("tok")), None);
    }

    #[test]
    fn the_previous_key_opens_but_never_seals() {
        let old = keys(K1, "a");
        let rotated = keys(&format!("{K2}{K1}"), "b");
        let token = old.seal(&state()).unwrap();
        assert_eq!(rotated.open(&token, Some("tok")), Some(state()));
        assert!(rotated.seal(&state()).unwrap().starts_with("b.k2."));
    }

    #[test]
    fn big_capabilities_are_cut_to_what_the_gateway_decides_by() {
        let a = keys(K1, "a");
        let mut s = state();
        s.capabilities = json!({"elicitation": {}, "experimental": {"x": "y".repeat(2000)}});
        let token = a.seal(&s).unwrap();
        assert!(token.len() <= MAX_TOKEN_BYTES, "{}", token.len());
        let opened = a.open(&token, Some("tok")).unwrap();
        assert_eq!(opened.capabilities, json!({"elicitation": {}}));
    }

    #[test]
    fn a_bad_key_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        for (text, why) in [
            ("", "no key"),
            ("k1 abcd\n", "64 hex digits"),
            ("k1\n", "expected"),
            (&format!("{K1}{K2}{K1}"), "at most two"),
            ("bad/id 00\n", "key id"),
        ] {
            std::fs::write(&path, text).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
            let e = SessionKeys::from_file(&path, None).unwrap_err().to_string();
            assert!(e.contains("--session-key-file") && e.contains(why), "{e}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(&path, K1).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = SessionKeys::from_file(&path, None).unwrap_err().to_string();
            assert!(e.contains("chmod 600"), "{e}");
        }
    }
}
