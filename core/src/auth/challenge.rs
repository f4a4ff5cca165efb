//! `WWW-Authenticate` challenges (RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1):
//! the parameters the authorization flow reads.

/// What a 401 / 403 challenge said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme (`Bearer`, `DPoP`), as sent.
    pub scheme: Option<String>,
    /// `resource_metadata`: the protected-resource metadata URL.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, `use_dpop_nonce`...
    pub error: Option<String>,
}

impl Challenge {
    /// Parses every `WWW-Authenticate` value of a response; the first
    /// value of each parameter wins.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        let mut c = Challenge::default();
        for value in values {
            for (key, val) in params(value, &mut c.scheme) {
                let slot = match key.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut c.resource_metadata,
                    "scope" => &mut c.scope,
                    "error" => &mut c.error,
                    _ => continue,
                };
                if slot.is_none() {
                    *slot = Some(val);
                }
            }
        }
        c
    }

    /// The challenged scopes, one per entry.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

/// The `key=value` parameters of one header value (quoted strings
/// unescaped); the first scheme name seen goes to `scheme`.
fn params(value: &str, scheme: &mut Option<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && (bytes[i] == b',' || bytes[i].is_ascii_whitespace()) {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && !matches!(bytes[i], b'=' | b',' | b' ' | b'\t') {
            i += 1;
        }
        let token = &value[start..i];
        if token.is_empty() {
            break;
        }
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'=' {
            j += 1;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            let mut val = String::new();
            if j < bytes.len() && bytes[j] == b'"' {
                j += 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    if bytes[j] == b'\\' && j + 1 < bytes.len() {
                        j += 1;
                    }
                    // Byte-wise copy of a UTF-8 string: push whole chars.
                    let ch = value[j..].chars().next().unwrap_or('\u{fffd}');
                    val.push(ch);
                    j += ch.len_utf8();
                }
                j += 1;
            } else {
                let s = j;
                while j < bytes.len() && bytes[j] != b',' && !bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                val.push_str(&value[s..j]);
            }
            out.push((token.to_owned(), val));
            i = j;
        } else {
            // A scheme name (or a token68 after one).
            if scheme.is_none() {
                *scheme = Some(token.to_owned());
            }
            i = j;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_parameters() {
        let c = Challenge::parse([
            r#"Bearer error="insufficient_scope", scope="mcp:write mcp:read", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", error_description="a \"b\", c""#,
        ]);
        assert_eq!(c.scheme.as_deref(), Some("Bearer"));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scopes(), vec!["mcp:write", "mcp:read"]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(["DPoP error=use_dpop_nonce, algs=\"ES256\""]);
        assert_eq!(c.scheme.as_deref(), Some("DPoP"));
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(
            Challenge::parse(["Bearer"]).scheme.as_deref(),
            Some("Bearer")
        );
    }
}
