//! `mcpmux auth login|status|logout` against a real authorization server
//! and protected MCP endpoint (`tests/servers/net/oauth_server.py`): login
//! prints the URL and receives the redirect on its loopback listener; the
//! token file is private; later commands use it without asking; status
//! never shows a token; logout forgets it and the server then needs
//! authorization again (AUTH_REQUIRED).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// The OAuth fixture; killed on drop.
struct Fixture {
    child: Child,
    port: u16,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture() -> Fixture {
    let script = workspace_root().join("tests/servers/net/oauth_server.py");
    let mut child = Command::new(python())
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("oauth_server.py starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .strip_prefix("READY ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no READY line: {line:?}"));
    Fixture { child, port }
}

/// A plain HTTP/1.1 GET; the status line and headers of the answer.
fn get(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut s = TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // One write: a request split over several segments is legal, but the
    // test is about the flow, not about segmentation.
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
}

fn location(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            l.strip_prefix("Location: ")
                .or_else(|| l.strip_prefix("location: "))
        })
        .unwrap_or_else(|| panic!("no Location in {head}"))
        .trim()
        .to_owned()
}

#[test]
fn login_status_logout() {
    let fx = fixture();
    let sb = Sandbox::with_config(&format!(
        "[[mcp.servers]]\nname = \"secure\"\ntype = \"http\"\nurl = \"http://127.0.0.1:{}/mcp\"\n[mcp.servers.auth]\ntype = \"oauth\"\n\n\
         [[mcp.servers]]\nname = \"fixed\"\ntype = \"http\"\nurl = \"http://127.0.0.1:9/mcp\"\nenabled = false\n[mcp.servers.auth]\ntype = \"bearer\"\ntoken = \"sekrit\"\n",
        fx.port
    ));
    let home = sb.path().join("home");
    let status = |sb: &Sandbox| -> Vec<Value> {
        let out = sb
            .mcpmux(&["--json", "auth", "status"])
            .env("XDG_CONFIG_HOME", &home)
            .run();
        out.ok();
        assert!(!out.to_string().contains("sekrit"), "{out}");
        out.json().as_array().unwrap().clone()
    };
    let rows = status(&sb);
    assert_eq!(rows[0]["server"], "secure");
    assert_eq!(rows[0]["auth"], "oauth");
    assert_eq!(rows[0]["stored"], false);
    assert_eq!(rows[1]["auth"], "bearer");

    // Without a login, nobody can be asked: AUTH_REQUIRED.
    let out = sb
        .mcpmux(&["--json", "servers"])
        .env("XDG_CONFIG_HOME", &home)
        .run();
    out.ok();
    assert_eq!(out.json()[0]["error_code"], "AUTH_REQUIRED", "{out}");

    // Login: the URL on stderr, the redirect to the loopback listener.
    let mut login = Command::new(mcpmux_bin())
        .current_dir(sb.path())
        .args(["--config", "mcpmux.toml", "auth", "login", "secure"])
        .env("XDG_CONFIG_HOME", &home)
        .env_remove("MCPMUX_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(login.stderr.take().unwrap());
    let mut url = None;
    for _ in 0..50 {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(u) = line.trim().strip_prefix("http://") {
            url = Some(format!("http://{u}"));
            break;
        }
    }
    let url = url.expect("login printed the authorization URL");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let redirect = location(&get(&url));
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    let page = get(&redirect);
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let mut stdout = String::new();
    login
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status_code = login.wait().unwrap();
    assert!(status_code.success(), "login failed: {stdout}");
    assert!(stdout.contains("authorized"), "{stdout}");

    let file = home.join("mcpmux/tokens/secure.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let token = saved["token"]["access_token"].as_str().unwrap().to_owned();

    // Later commands use the stored token, without asking.
    let out = sb
        .mcpmux(&["--json", "tools"])
        .env("XDG_CONFIG_HOME", &home)
        .run();
    out.ok();
    assert!(out.to_string().contains("mcp_secure_echo"), "{out}");
    let rows = status(&sb);
    assert_eq!(rows[0]["stored"], true);
    assert_eq!(rows[0]["expired"], false);
    assert_eq!(rows[0]["refreshable"], true);
    let out = sb
        .mcpmux(&["auth", "status"])
        .env("XDG_CONFIG_HOME", &home)
        .run();
    out.ok();
    assert!(
        !out.to_string().contains(&token),
        "status shows the token: {out}"
    );

    // Logout forgets it.
    sb.mcpmux(&["auth", "logout", "secure"])
        .env("XDG_CONFIG_HOME", &home)
        .run()
        .ok();
    assert!(!file.exists());
    assert_eq!(status(&sb)[0]["stored"], false);
    let out = sb
        .mcpmux(&["auth", "logout", "nope"])
        .env("XDG_CONFIG_HOME", &home)
        .run();
    out.fails_with("UNKNOWN_SERVER");
}
