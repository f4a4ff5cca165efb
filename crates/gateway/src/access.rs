//! Who is the gateway and who may use it, shared by the MCP endpoint
//! (`http.rs`) and the status page (`status/`): the `Host` and `Origin`
//! values that name the gateway (DNS rebinding), and the constant-time
//! comparison of bearer tokens.

use std::net::SocketAddr;

/// `Origin` values that are the gateway itself: its address, and the
/// loopback names for it.
pub(crate) fn own_origins(local: &SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut origins = vec![format!("http://{local}")];
    if local.ip().is_loopback() || local.ip().is_unspecified() {
        origins.extend([
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ]);
    }
    origins
}

/// Whether a `Host` value names the gateway: `localhost`, an address of
/// 127.0.0.0/8 or `[::1]`, with or without a port, or one of `allowed`
/// (a bare name, any port; `name:port`, that port), case aside.
pub(crate) fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((name, port)) if port.is_empty() || is_port(port) => name,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host.as_str(),
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    let loopback = name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback
        || allowed.iter().any(|a| {
            let a = a.trim().to_ascii_lowercase();
            a == name || a == host
        })
}

/// `:port` (the part after the colon): one to five digits.
fn is_port(port: &str) -> bool {
    let port = port.strip_prefix(':').unwrap_or(port);
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

/// Compares two secrets in time that depends on their lengths only.
pub(crate) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_by_content_and_length() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"x"));
    }

    #[test]
    fn hosts_are_loopback_or_allowed() {
        let none: Vec<String> = Vec::new();
        for ok in [
            "localhost",
            "LOCALHOST:8766",
            "127.0.0.1",
            "127.0.0.1:1",
            "127.9.8.7:65535",
            "[::1]",
            "[::1]:8766",
            "localhost.",
        ] {
            assert!(host_allowed(ok, &none), "{ok}");
        }
        for bad in [
            "evil.com",
            "evil.com:8766",
            "128.0.0.1",
            "[::2]:1",
            "localhost.evil.com",
            "127.0.0.1.evil.com",
            "localhost:80:80",
            "[::1]x",
            "",
        ] {
            assert!(!host_allowed(bad, &none), "{bad}");
        }
        let allowed = vec!["mcp.example.org".to_owned(), "other.org:8443".to_owned()];
        assert!(host_allowed("mcp.example.org", &allowed));
        assert!(host_allowed("MCP.example.org:443", &allowed));
        assert!(host_allowed("other.org:8443", &allowed));
        assert!(!host_allowed("other.org:8444", &allowed));
        assert!(!host_allowed("evil.com", &allowed));
    }
}
