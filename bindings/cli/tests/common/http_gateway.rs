//! `mcpmux gateway --http 127.0.0.1:0` with a bearer token, killed on drop.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use super::raw_gateway::HANG;
use super::{mcpmux_bin, Sandbox};

/// `mcpmux gateway --http 127.0.0.1:0` with a token; the address it
/// printed.
pub struct HttpGateway {
    pub child: std::process::Child,
    /// Where it serves MCP.
    pub url: String,
}

impl HttpGateway {
    pub fn start(sb: &Sandbox, token: &str) -> HttpGateway {
        HttpGateway::start_with(sb, token, &[])
    }

    /// With `extra` flags of `mcpmux gateway`.
    pub fn start_with(sb: &Sandbox, token: &str, extra: &[&str]) -> HttpGateway {
        HttpGateway::start_at(sb, token, "127.0.0.1:0", extra)
    }

    /// Serving at `addr`, with `extra` flags of `mcpmux gateway`.
    pub fn start_at(sb: &Sandbox, token: &str, addr: &str, extra: &[&str]) -> HttpGateway {
        HttpGateway::start_env(sb, token, addr, extra, &[])
    }

    /// [`HttpGateway::start_at`] with `env` set for the gateway (and so
    /// for the stdio servers it starts).
    pub fn start_env(
        sb: &Sandbox,
        token: &str,
        addr: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> HttpGateway {
        // An empty token: none asked for (loopback only), so each client's
        // bearer token is its own credential.
        let token_flags: &[&str] = if token.is_empty() {
            &[]
        } else {
            &["--token-env", "GW_TOKEN"]
        };
        let mut child = Command::new(mcpmux_bin())
            .arg("--config")
            .arg(sb.path().join("mcpmux.toml"))
            .args(["gateway", "--http", addr])
            .args(token_flags)
            .args(extra)
            .env("GW_TOKEN", token)
            .envs(env.iter().copied())
            .current_dir(sb.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let url = loop {
            let line = rx
                .recv_timeout(HANG)
                .expect("the gateway never said where it serves");
            if let Some(at) = line.split("serving MCP at ").nth(1) {
                break at.trim().to_owned();
            }
        };
        HttpGateway { child, url }
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer: status, headers (names lowercased), body.
pub type Exchange = (u16, Vec<(String, String)>, String);

/// One HTTP/1.1 exchange with `addr` (`host:port`) on a fresh connection
/// (`Connection: close`): the status, the headers (names lowercased) and
/// the body (chunked bodies decoded). Blocking; fails the test past 60 s
/// or when nothing listens at `addr`.
pub fn http_exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Exchange {
    try_http_exchange(addr, method, path, headers, body).expect("connect to the gateway")
}

/// [`http_exchange`], the connection's failure returned.
pub fn try_http_exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Exchange> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(HANG))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        let mut body = String::new();
        let mut rest = rest;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 || after.len() < size {
                break;
            }
            body.push_str(&after[..size]);
            rest = after[size..].trim_start_matches("\r\n");
        }
        body
    } else {
        rest.to_owned()
    };
    Ok((status, headers, body))
}

/// The JSON-RPC messages of an answer body: one JSON value (or a batch),
/// or an SSE stream's `data:` lines.
pub fn answers_in(body: &str) -> Vec<serde_json::Value> {
    let body = body.trim();
    if body.starts_with('{') || body.starts_with('[') {
        return match serde_json::from_str(body) {
            Ok(serde_json::Value::Array(all)) => all,
            Ok(one) => vec![one],
            Err(_) => Vec::new(),
        };
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

impl HttpGateway {
    /// `host:port` of [`HttpGateway::url`].
    pub fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned()
    }
}
