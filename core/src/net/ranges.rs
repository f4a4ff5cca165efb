//! Which addresses are not on the public internet, and networks written as
//! CIDR (`10.1.2.0/24`). Pure functions over `std::net` addresses: the
//! network policy ([`super::policy`]) decides with them; nothing here
//! resolves or connects.
//!
//! An address is private when it is loopback, RFC 1918 private, link-local
//! (169.254.0.0/16, the cloud metadata address 169.254.169.254 with it;
//! fe80::/10), shared address space (CGNAT, 100.64.0.0/10), unique-local
//! (fc00::/7), site-local (fec0::/10), multicast, unspecified or "this
//! network" (0.0.0.0/8, `::`), broadcast or reserved (240.0.0.0/4). An
//! IPv6 address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`,
//! IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) is judged by the
//! IPv4 address it carries: each can reach it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// The private range an address is in, as messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    /// `loopback`, `private`, `link-local`, ...
    pub kind: &'static str,
    /// The address is IPv6 carrying an IPv4 address of that range.
    pub in_ipv6: bool,
}

/// "a loopback address", "an unspecified address (IPv4 in IPv6)".
impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let article = if self.kind.starts_with("unspecified") {
            "an"
        } else {
            "a"
        };
        write!(f, "{article} {} address", self.kind)?;
        if self.in_ipv6 {
            f.write_str(" (IPv4 in IPv6)")?;
        }
        Ok(())
    }
}

/// The private range `ip` is in, or `None` for an address on the public
/// internet.
pub(crate) fn private_range(ip: IpAddr) -> Option<Range> {
    let (kind, in_ipv6) = match ip {
        IpAddr::V4(v4) => (private_v4(v4)?, false),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => (private_v4(v4)?, true),
            None => (private_v6(v6)?, false),
        },
    };
    Some(Range { kind, in_ipv6 })
}

fn private_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match (a, b) {
        (127, _) => "loopback",
        (10, _) | (192, 168) => "private",
        (172, b) if (16..32).contains(&b) => "private",
        (169, 254) => "link-local",
        (100, b) if (64..128).contains(&b) => "shared address space (CGNAT)",
        (0, _) => "unspecified",
        (224..=239, _) => "multicast",
        (240..=255, _) => "reserved or broadcast",
        _ => return None,
    })
}

fn private_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() {
        "unspecified"
    } else if first & 0xfe00 == 0xfc00 {
        "unique-local"
    } else if first & 0xffc0 == 0xfe80 {
        "link-local"
    } else if first & 0xffc0 == 0xfec0 {
        "site-local"
    } else if first & 0xff00 == 0xff00 {
        "multicast"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped (`::ffff:0:0/96`),
/// IPv4-compatible (`::/96`, but not `::` and `::1`), NAT64 (`64:ff9b::/96`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let compatible = s[..6].iter().all(|&x| x == 0) && !ip.is_unspecified() && !ip.is_loopback();
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0);
    (compatible || nat64).then_some(low)
}

/// A network: an address and a prefix length (`10.1.2.0/24`,
/// `fd00::/8`; a bare address is the network of that one address). Its
/// address is kept with the host bits cleared, so `10.1.2.7/24` is
/// `10.1.2.0/24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpNetwork {
    addr: IpAddr,
    prefix: u8,
}

impl IpNetwork {
    /// The network of `addr` with `prefix` bits; `None` when `prefix` is
    /// longer than the address (32 for IPv4, 128 for IPv6).
    pub fn new(addr: IpAddr, prefix: u8) -> Option<IpNetwork> {
        let bits = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        (prefix <= bits).then(|| IpNetwork {
            addr: mask(addr, prefix),
            prefix,
        })
    }

    /// Whether `ip` is in this network. An IPv4-mapped IPv6 address
    /// (`::ffff:10.1.2.3`) is in the IPv4 networks its IPv4 address is in.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                mask(ip, self.prefix) == self.addr
            }
            _ => false,
        }
    }
}

/// `addr` with every bit past the first `prefix` cleared.
fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let keep = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & keep))
        }
        IpAddr::V6(v6) => {
            let keep = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & keep))
        }
    }
}

impl FromStr for IpNetwork {
    type Err = String;

    /// Parses `address/prefix` or a bare address; the error says what is
    /// wrong, without the input (the caller names it).
    fn from_str(s: &str) -> Result<IpNetwork, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| "not an IP address or network (expected e.g. 10.1.2.0/24 or fd00::/8)")?;
        let prefix = match prefix {
            None => match addr {
                IpAddr::V4(_) => 32,
                IpAddr::V6(_) => 128,
            },
            Some(p) => p
                .parse::<u8>()
                .map_err(|_| "the prefix length after '/' is not a number")?,
        };
        IpNetwork::new(addr, prefix).ok_or_else(|| {
            "the prefix length is longer than the address (at most 32 for IPv4, 128 for IPv6)"
                .to_owned()
        })
    }
}

impl fmt::Display for IpNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl serde::Serialize for IpNetwork {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> Option<String> {
        private_range(s.parse().unwrap()).map(|r| r.to_string())
    }

    #[test]
    fn every_private_range_is_named() {
        for (ip, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("10.0.0.1", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "shared address space (CGNAT)"),
            ("100.127.255.255", "shared address space (CGNAT)"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("255.255.255.255", "reserved or broadcast"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fc00::1", "unique-local"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
        ] {
            let expected = match kind {
                "unspecified" => "an unspecified address".to_owned(),
                kind => format!("a {kind} address"),
            };
            assert_eq!(range(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn ipv4_in_ipv6_is_judged_by_its_ipv4_address() {
        for (ip, kind) in [
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::ffff:100.64.0.1", "shared address space (CGNAT)"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
        ] {
            let expected = format!("a {kind} address (IPv4 in IPv6)");
            assert_eq!(range(ip).as_deref(), Some(expected.as_str()), "{ip}");
        }
        assert_eq!(range("::ffff:8.8.8.8"), None);
        assert_eq!(range("64:ff9b::808:808"), None);
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.0.1",
            "192.169.0.1",
            "223.255.255.255",
            "2001:4860:4860::8888",
            "2606:4700::1111",
        ] {
            assert_eq!(range(ip), None, "{ip}");
        }
    }

    #[test]
    fn networks_parse_and_contain() {
        let n: IpNetwork = "10.1.2.7/24".parse().unwrap();
        assert_eq!(n.to_string(), "10.1.2.0/24");
        assert!(n.contains("10.1.2.200".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.2.9".parse().unwrap()));
        assert!(!n.contains("10.1.3.1".parse().unwrap()));
        assert!(!n.contains("fd00::1".parse().unwrap()));
        let one: IpNetwork = "127.0.0.1".parse().unwrap();
        assert_eq!(one.to_string(), "127.0.0.1/32");
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let all: IpNetwork = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("169.254.169.254".parse().unwrap()));
        let v6: IpNetwork = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!(!v6.contains("fe80::1".parse().unwrap()));
        for bad in [
            "10.1.2.0/33",
            "fd00::/129",
            "10.1.2/24",
            "x",
            "10.0.0.0/a",
            "",
        ] {
            assert!(bad.parse::<IpNetwork>().is_err(), "{bad}");
        }
    }
}
