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
        let mut child = Command::new(mcpmux_bin())
            .arg("--config")
            .arg(sb.path().join("mcpmux.toml"))
            .args([
                "gateway",
                "--http",
                "127.0.0.1:0",
                "--token-env",
                "GW_TOKEN",
            ])
            .args(extra)
            .env("GW_TOKEN", token)
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
