//! The cryptography the flows need, on `ring` (already in the build for
//! TLS): random values, PKCE S256, ES256 JWTs (`private_key_jwt` client
//! assertions) and DPoP proofs (RFC 9449).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

use crate::error::Error;

/// Base64url without padding.
pub fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `n` random bytes from the system's CSPRNG.
pub fn random_bytes(n: usize) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; n];
    SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| Error::Internal("the system random generator failed".into()))?;
    Ok(out)
}

/// A random URL-safe string of `n` random bytes (state, jti, verifier).
pub fn random_token(n: usize) -> Result<String, Error> {
    random_bytes(n).map(|b| b64url(&b))
}

/// SHA-256 of `data`, base64url.
pub fn sha256_b64url(data: &[u8]) -> String {
    b64url(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
}

/// A PKCE pair (RFC 7636): the verifier kept, the S256 challenge sent.
pub struct Pkce {
    /// The code verifier (43 characters, a secret until the token request).
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub fn new() -> Result<Pkce, Error> {
        let verifier = random_token(32)?;
        let challenge = sha256_b64url(verifier.as_bytes());
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

/// An EC P-256 key that signs ES256 JWTs.
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl SigningKey {
    /// A key from a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pem(pem: &str) -> Result<SigningKey, Error> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let der = STANDARD
            .decode(body.as_bytes())
            .map_err(|_| Error::ConfigInvalid("private key: not a PEM document".into()))?;
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
                .map_err(|_| {
                    Error::ConfigInvalid("private key: not a PKCS#8 EC P-256 key".into())
                })?;
        Ok(SigningKey { pair })
    }

    /// A new random key (a DPoP key lives as long as its tokens).
    pub fn generate() -> Result<SigningKey, Error> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| Error::Internal("cannot generate a P-256 key".into()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
            .map_err(|_| Error::Internal("cannot load a generated P-256 key".into()))?;
        Ok(SigningKey { pair })
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`).
    pub fn public_jwk(&self) -> Value {
        // An uncompressed point: 0x04 || x || y.
        let point = self.pair.public_key().as_ref();
        json!({
            "kty": "EC",
            "crv": "P-256",
            "x": b64url(&point[1..33]),
            "y": b64url(&point[33..65]),
        })
    }

    /// A compact JWS of `claims` with `header` (which gets `alg: ES256`).
    pub fn sign_jwt(&self, mut header: Value, claims: &Value) -> Result<String, Error> {
        header["alg"] = Value::String("ES256".into());
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| Error::Internal("ES256 signing failed".into()))?;
        Ok(format!("{input}.{}", b64url(signature.as_ref())))
    }

    /// A DPoP proof (RFC 9449 §4.2) for `method` on `url` (query and
    /// fragment dropped), with the server's `nonce` and, for resource
    /// requests, the access token hash `ath`.
    pub fn dpop_proof(
        &self,
        method: &str,
        url: &url::Url,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> Result<String, Error> {
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let mut claims = json!({
            "jti": random_token(16)?,
            "htm": method,
            "htu": htu.as_str(),
            "iat": super::store::now(),
        });
        if let Some(nonce) = nonce {
            claims["nonce"] = Value::String(nonce.to_owned());
        }
        if let Some(token) = access_token {
            claims["ath"] = Value::String(sha256_b64url(token.as_bytes()));
        }
        self.sign_jwt(
            json!({ "typ": "dpop+jwt", "jwk": self.public_jwk() }),
            &claims,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_is_s256_of_the_verifier() {
        let p = Pkce::new().unwrap();
        assert_eq!(p.verifier.len(), 43);
        assert_eq!(p.challenge, sha256_b64url(p.verifier.as_bytes()));
        // RFC 7636 appendix B.
        assert_eq!(
            sha256_b64url(b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn signs_a_verifiable_jwt() {
        let key = SigningKey::generate().unwrap();
        let jwt = key.sign_jwt(json!({}), &json!({"a": 1})).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let point = key.pair.public_key().as_ref().to_vec();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            point,
        );
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        public
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .unwrap();
    }
}
