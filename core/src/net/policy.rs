//! The network policy: which addresses and schemes mcpmux may connect to
//! (`[network]` of a config, `HubOptions::network` of a host). This module
//! holds the policy and its judgements (of an address, of a URL); where
//! they are applied at connect time is [`super::guard`].
//!
//! Off by default: a config without `[network]` and a host that sets
//! nothing connect anywhere, as before.

use std::fmt;
use std::net::IpAddr;

use super::ranges::{private_range, IpNetwork, Range};
use crate::error::Error;

/// What every refusal's message contains: how [`is_refusal`] tells a
/// refusal from other failures to reach a server.
const MARK: &str = "refused by the [network] policy";

/// Where mcpmux may connect: the `[network]` table of a config and
/// [`HubOptions::network`](crate::HubOptions::network) of a host. Applied
/// to every connection the engine opens (Streamable HTTP, SSE, WebSocket,
/// each redirect hop, the OAuth endpoints, the LLM providers of sessions),
/// on the address actually connected to. The default refuses nothing.
///
/// Build one with [`NetworkPolicy::new`] and the `with_*` methods, or
/// [`NetworkPolicy::from_options`] from a front end's plain values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub struct NetworkPolicy {
    /// Refuse loopback, private, link-local (169.254.169.254 included),
    /// shared (CGNAT), unique-local, multicast, unspecified and reserved
    /// addresses, and IPv6 forms of those IPv4 ones: judged on the
    /// resolved address at connect time. Turns off the environment's
    /// proxy (`HTTP_PROXY` ...): a proxy would resolve names itself.
    pub deny_private: bool,
    /// Networks reached even with `deny_private` (`10.1.2.0/24`,
    /// `127.0.0.1`): exceptions to it, nothing more.
    pub allow_networks: Vec<IpNetwork>,
    /// Only `https` and `wss` URLs; `http` and `ws` to a loopback host
    /// (`localhost`, 127.0.0.0/8, `::1`) too, but only while
    /// `deny_private` is off.
    pub require_https: bool,
}

impl NetworkPolicy {
    /// The policy that refuses nothing (the default).
    pub fn new() -> Self {
        NetworkPolicy::default()
    }

    /// Sets [`NetworkPolicy::deny_private`].
    pub fn with_deny_private(mut self, on: bool) -> Self {
        self.deny_private = on;
        self
    }

    /// Sets [`NetworkPolicy::allow_networks`].
    pub fn with_allow_networks(mut self, networks: impl IntoIterator<Item = IpNetwork>) -> Self {
        self.allow_networks = networks.into_iter().collect();
        self
    }

    /// Sets [`NetworkPolicy::require_https`].
    pub fn with_require_https(mut self, on: bool) -> Self {
        self.require_https = on;
        self
    }

    /// The policy from a front end's plain values, with each network
    /// parsed; a bad one is `INVALID_INPUT` naming `what` (the option as
    /// the front end spells it), the entry and what is wrong with it.
    pub fn from_options<S: AsRef<str>>(
        deny_private: bool,
        allow_networks: &[S],
        require_https: bool,
        what: &str,
    ) -> Result<Self, Error> {
        let networks = parse_networks(allow_networks, what).map_err(Error::InvalidInput)?;
        Ok(NetworkPolicy {
            deny_private,
            allow_networks: networks,
            require_https,
        })
    }

    /// Whether nothing is checked (neither `deny_private` nor `require_https`).
    pub fn is_off(&self) -> bool {
        !self.deny_private && !self.require_https
    }

    /// This policy and `other` together: a check is on when either turns
    /// it on, and the networks either allows are allowed. How a host's
    /// options and a config's `[network]` combine.
    pub fn merged(&self, other: &NetworkPolicy) -> NetworkPolicy {
        let mut networks = self.allow_networks.clone();
        for n in &other.allow_networks {
            if !networks.contains(n) {
                networks.push(*n);
            }
        }
        NetworkPolicy {
            deny_private: self.deny_private || other.deny_private,
            allow_networks: networks,
            require_https: self.require_https || other.require_https,
        }
    }

    /// Why connecting to `ip` is refused (the private range it is in), or
    /// `None` when it may be reached.
    pub(crate) fn refusal(&self, ip: IpAddr) -> Option<Range> {
        if !self.deny_private || self.allow_networks.iter().any(|n| n.contains(ip)) {
            return None;
        }
        private_range(ip)
    }

    /// The checks that need no name resolution, for a URL about to be
    /// requested (the first one, and every redirect hop): its scheme under
    /// `require_https`, and its host when it is an IP address (which is
    /// connected to without resolving). A refusal is `TRANSPORT_CLOSED`
    /// naming `label` (the server), the host and the address.
    pub(crate) fn check_url(&self, label: &str, url: &url::Url) -> Result<(), Error> {
        self.judge_url(url).map_err(|refused| refused.error(label))
    }

    /// [`NetworkPolicy::check_url`] without a label, for a redirect rule.
    pub(crate) fn judge_url(&self, url: &url::Url) -> Result<(), Refused> {
        if self.is_off() {
            return Ok(());
        }
        if self.require_https && !matches!(url.scheme(), "https" | "wss") {
            let loopback_ok = !self.deny_private && super::is_loopback_host(url);
            if !loopback_ok {
                return Err(Refused::scheme(url, self.deny_private));
            }
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
            _ => return Ok(()),
        };
        match self.refusal(ip) {
            Some(range) => Err(Refused::address(&ip.to_string(), ip, range)),
            None => Ok(()),
        }
    }
}

/// `entries` as networks; the error names `what`, the entry (index and
/// text, cut to 100 characters) and what is wrong with it.
pub(crate) fn parse_networks<S: AsRef<str>>(
    entries: &[S],
    what: &str,
) -> Result<Vec<IpNetwork>, String> {
    let mut out: Vec<IpNetwork> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let entry = entry.as_ref();
        let network = entry
            .parse::<IpNetwork>()
            .map_err(|why| format!("{what}[{i}] '{entry:.100}': {why}"))?;
        if !out.contains(&network) {
            out.push(network);
        }
    }
    Ok(out)
}

/// Whether `e` is a refusal of the network policy (rather than a server
/// that could not be reached): callers that try the next URL on failure
/// (OAuth discovery) stop on it.
pub(crate) fn is_refusal(e: &Error) -> bool {
    e.to_string().contains(MARK)
}

/// A connection refused by the policy, with its message: the host as
/// asked for and the address it came to (and its range), or the URL whose
/// scheme `require_https` refuses. The error the resolver, the connectors
/// and redirect rules return; [`super::unreachable_error`] finds it among
/// an error's causes.
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    message: String,
}

impl Refused {
    /// A refusal of `ip` (in `range`), which `host` named.
    pub(crate) fn address(host: &str, ip: IpAddr, range: Range) -> Refused {
        let host: String = host.chars().take(253).collect();
        let to = if host.parse::<IpAddr>().ok() == Some(ip) {
            format!("connecting to {ip}")
        } else {
            format!("connecting to {host} (it resolves to {ip})")
        };
        Refused {
            message: format!(
                "{to} is {MARK}: {ip} is {range} (deny_private; allow_networks does not list it)"
            ),
        }
    }

    /// A refusal of `url`'s cleartext scheme under `require_https`.
    fn scheme(url: &url::Url, deny_private: bool) -> Refused {
        let why = if deny_private {
            "require_https; http only to loopback, and not with deny_private"
        } else {
            "require_https; http only to loopback"
        };
        Refused {
            message: format!("{} {MARK} ({why})", super::display_url(url)),
        }
    }

    /// As the engine's error: `TRANSPORT_CLOSED` naming the server.
    pub(crate) fn error(&self, label: &str) -> Error {
        Error::TransportClosed(format!("{label}: {self}"))
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refused {}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    fn deny() -> NetworkPolicy {
        NetworkPolicy::new().with_deny_private(true)
    }

    #[test]
    fn off_refuses_nothing() {
        let p = NetworkPolicy::default();
        assert!(p.is_off());
        assert_eq!(p.refusal("127.0.0.1".parse().unwrap()), None);
        p.check_url("s", &url("http://169.254.169.254/")).unwrap();
        // allow_networks alone changes nothing.
        let p = NetworkPolicy::from_options(false, &["10.0.0.0/8"], false, "x").unwrap();
        assert!(p.is_off());
    }

    #[test]
    fn ip_literals_in_private_ranges_are_refused_naming_server_host_and_address() {
        let p = deny();
        for (u, ip) in [
            ("http://127.0.0.1:8080/mcp", "127.0.0.1"),
            ("https://10.0.0.5/mcp", "10.0.0.5"),
            ("http://172.16.3.4/", "172.16.3.4"),
            ("http://192.168.0.1/", "192.168.0.1"),
            ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
            ("http://100.64.1.1/", "100.64.1.1"),
            ("http://0.0.0.0:80/", "0.0.0.0"),
            ("http://224.0.0.1/", "224.0.0.1"),
            ("http://[::1]:9/", "::1"),
            ("http://[fd00::1]/", "fd00::1"),
            ("http://[fe80::1]/", "fe80::1"),
            ("http://[::]/", "::"),
            ("http://[ff02::1]/", "ff02::1"),
            ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
            ("http://[::ffff:169.254.169.254]/", "::ffff:169.254.169.254"),
            ("ws://127.0.0.1:1/", "127.0.0.1"),
        ] {
            let e = p.check_url("server 'x'", &url(u)).unwrap_err();
            assert_eq!(e.code(), "TRANSPORT_CLOSED");
            let m = e.to_string();
            assert!(m.starts_with("server 'x': connecting to "), "{m}");
            assert!(m.contains(&format!("{ip} is a")), "{m}");
            assert!(m.contains(ip), "{u}: {m}");
            assert!(is_refusal(&e), "{m}");
        }
        p.check_url("s", &url("https://8.8.8.8/")).unwrap();
        p.check_url("s", &url("https://[2001:4860::8888]/"))
            .unwrap();
        // Names are judged when resolved, not here.
        p.check_url("s", &url("http://localhost/")).unwrap();
    }

    #[test]
    fn allow_networks_are_exceptions() {
        let p =
            NetworkPolicy::from_options(true, &["127.0.0.0/8", "fd00::/8"], false, "x").unwrap();
        p.check_url("s", &url("http://127.0.0.1/")).unwrap();
        p.check_url("s", &url("http://[::ffff:127.0.0.1]/"))
            .unwrap();
        p.check_url("s", &url("http://[fd00::1]/")).unwrap();
        assert!(p.check_url("s", &url("http://10.0.0.1/")).is_err());
        assert!(p.check_url("s", &url("http://[::1]/")).is_err());
    }

    #[test]
    fn require_https_allows_loopback_http_only_without_deny_private() {
        let p = NetworkPolicy::new().with_require_https(true);
        p.check_url("s", &url("https://example.com/")).unwrap();
        p.check_url("s", &url("wss://example.com/")).unwrap();
        p.check_url("s", &url("http://localhost:3000/")).unwrap();
        p.check_url("s", &url("http://127.0.0.1:3000/")).unwrap();
        p.check_url("s", &url("ws://[::1]:3000/")).unwrap();
        let e = p
            .check_url("server 'x'", &url("http://example.com/mcp?k=secret"))
            .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("server 'x'") && m.contains("require_https"),
            "{m}"
        );
        assert!(!m.contains("secret"), "{m}");
        let both = NetworkPolicy::from_options(true, &["127.0.0.0/8"], true, "x").unwrap();
        let e = both.check_url("s", &url("http://127.0.0.1/")).unwrap_err();
        assert!(e.to_string().contains("not with deny_private"), "{e}");
        both.check_url("s", &url("https://127.0.0.1/")).unwrap();
    }

    #[test]
    fn merging_adds_up() {
        let host = NetworkPolicy::from_options(true, &["10.0.0.0/8"], false, "x").unwrap();
        let config =
            NetworkPolicy::from_options(false, &["192.168.1.0/24", "10.0.0.0/8"], true, "x")
                .unwrap();
        let both = host.merged(&config);
        assert!(both.deny_private && both.require_https);
        assert_eq!(both.allow_networks.len(), 2);
        assert_eq!(
            NetworkPolicy::default().merged(&NetworkPolicy::default()),
            NetworkPolicy::default()
        );
    }

    #[test]
    fn bad_networks_name_the_option_and_entry() {
        let e = NetworkPolicy::from_options(
            true,
            &["10.0.0.0/8", "10.1.2.0/33"],
            false,
            "allow_networks",
        )
        .unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        let m = e.to_string();
        assert!(m.contains("allow_networks[1] '10.1.2.0/33'"), "{m}");
    }
}
