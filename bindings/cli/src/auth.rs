//! `mcpmux auth login|status|logout`: OAuth for remote servers from the
//! shell. `login` prints the authorization URL and waits for the redirect
//! on a loopback listener; tokens go to the user's token store (one file
//! per server, mode 0600). Nothing here ever prints a token.

use std::sync::Arc;
use std::time::Duration;

use clap::Subcommand;
use futures::future::BoxFuture;
use mcpmux_core::auth::{AuthConfig, Credentials};
use mcpmux_core::config::TransportConfig;
use mcpmux_core::hub::HubOptions;
use mcpmux_core::{AuthOptions, AuthorizationHandler, AuthorizationRequest, Config, Error, Hub};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long `login` waits for the person to finish in the browser.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// The `auth` subcommands.
#[derive(Subcommand)]
pub enum AuthCommand {
    /// Authorize a server now: prints the URL to open, waits for the redirect.
    Login {
        /// The server's name in the config.
        server: String,
    },
    /// Per server: how it is authorized and whether a token is stored or expired.
    Status,
    /// Forget the stored credentials of a server.
    Logout {
        /// The server's name in the config.
        server: String,
    },
}

/// Runs one `auth` subcommand; the exit status on success.
pub async fn run(command: &AuthCommand, config: Config, json: bool) -> Result<u8, Error> {
    let store = AuthOptions::default().store();
    match command {
        AuthCommand::Status => {
            let mut rows = Vec::new();
            for server in &config.servers {
                rows.push(status(server, store.load(&server.name)));
            }
            if json {
                println!("{}", Value::Array(rows));
            } else {
                for row in rows {
                    println!(
                        "{}\t{}\t{}",
                        row["server"].as_str().unwrap_or(""),
                        row["auth"].as_str().unwrap_or("none"),
                        describe(&row)
                    );
                }
            }
            Ok(0)
        }
        AuthCommand::Logout { server } => {
            known(&config, server)?;
            store.delete(server)?;
            if json {
                println!("{}", json!({ "server": server, "logged_out": true }));
            } else {
                println!("{server}: stored credentials removed");
            }
            Ok(0)
        }
        AuthCommand::Login { server } => {
            let entry = known(&config, server)?.clone();
            let oauth = matches!(
                &entry.transport,
                TransportConfig::Http(n) if matches!(n.auth, Some(AuthConfig::OAuth(_)))
            );
            if !oauth {
                return Err(Error::InvalidInput(format!(
                    "server '{server}' is not configured for OAuth (set [mcp.servers.auth] type = \"oauth\")"
                )));
            }
            // A fresh login: what was stored before is not reused.
            store.delete(server)?;
            let redirect = match &entry.transport {
                TransportConfig::Http(n) => match &n.auth {
                    Some(AuthConfig::OAuth(o)) => o.redirect_uri.clone(),
                    _ => None,
                },
                _ => None,
            };
            let handler = Loopback::bind(redirect.as_deref()).await?;
            let options = HubOptions::default().with_auth(AuthOptions {
                handler: Some(Arc::new(handler)),
                store: Some(store.clone()),
            });
            let mut only = config.clone();
            only.servers.retain(|s| s.name == *server);
            for s in &mut only.servers {
                s.enabled = true;
                s.timeout = s.timeout.max(LOGIN_WAIT);
            }
            let hub = Hub::connect_with(only, options).await?;
            let state = hub.servers().into_iter().next();
            hub.close().await;
            match state {
                Some(s) if s.state == "connected" => {
                    let stored = store.load(server)?.is_some_and(|c| c.token.is_some());
                    if json {
                        println!("{}", json!({ "server": server, "authorized": stored }));
                    } else if stored {
                        println!("{server}: authorized; token stored");
                    } else {
                        println!(
                            "{server}: connected without authorization (the server asked for none)"
                        );
                    }
                    Ok(0)
                }
                Some(s) => Err(match s.error_code {
                    Some("AUTH_REQUIRED") => Error::AuthRequired(s.error.unwrap_or_default()),
                    Some("AUTH_FAILED") => Error::AuthFailed(s.error.unwrap_or_default()),
                    _ => Error::ConnectFailed(
                        s.error
                            .unwrap_or_else(|| format!("server '{server}' did not connect")),
                    ),
                }),
                None => Err(Error::UnknownServer(format!("unknown server '{server}'"))),
            }
        }
    }
}

fn known<'a>(config: &'a Config, server: &str) -> Result<&'a mcpmux_core::ServerConfig, Error> {
    config.server(server).ok_or_else(|| {
        Error::UnknownServer(format!(
            "unknown server '{server}' (configured: {})",
            config
                .servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// One server's row of `auth status` (never a secret).
fn status(server: &mcpmux_core::ServerConfig, stored: Result<Option<Credentials>, Error>) -> Value {
    let kind = match &server.transport {
        TransportConfig::Http(n) | TransportConfig::Sse(n) | TransportConfig::WebSocket(n) => {
            match &n.auth {
                Some(AuthConfig::OAuth(_)) => "oauth",
                Some(AuthConfig::Bearer { .. }) => "bearer",
                Some(AuthConfig::Header { .. }) => "header",
                None => "none",
            }
        }
        TransportConfig::Stdio(_) => "none",
    };
    let mut row = json!({ "server": server.name, "auth": kind });
    match stored {
        Ok(Some(c)) => {
            row["stored"] = json!(c.token.is_some());
            if let Some(t) = &c.token {
                row["expired"] = json!(t.is_expired());
                row["expires_at"] = json!(t.expires_at);
                row["refreshable"] = json!(t.refresh_token.is_some());
                row["scope"] = json!(t.scope);
            }
            row["issuer"] = json!(c.issuer);
        }
        Ok(None) => row["stored"] = json!(false),
        Err(e) => {
            row["stored"] = json!(false);
            row["error"] = e.to_json();
        }
    }
    row
}

fn describe(row: &Value) -> String {
    if let Some(e) = row.get("error") {
        return format!("error: {}", e["error"].as_str().unwrap_or(""));
    }
    match (row["stored"].as_bool(), row["expired"].as_bool()) {
        (Some(true), Some(true)) if row["refreshable"] == json!(true) => {
            "token expired (refreshable)".into()
        }
        (Some(true), Some(true)) => "token expired".into(),
        (Some(true), _) => "token stored".into(),
        _ => "no token".into(),
    }
}

/// The person in the loop for the CLI: prints the authorization URL and
/// receives the redirect on a loopback HTTP listener.
struct Loopback {
    listener: Arc<tokio::sync::Mutex<tokio::net::TcpListener>>,
    redirect_uri: String,
}

impl Loopback {
    /// Listens on the configured loopback redirect URI's port, or on a free one.
    async fn bind(configured: Option<&str>) -> Result<Loopback, Error> {
        let (port, path) = match configured.and_then(|u| url::Url::parse(u).ok()) {
            Some(u) => {
                let loopback = matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
                if !loopback || u.scheme() != "http" {
                    return Err(Error::InvalidInput(format!(
                        "auth.redirect_uri must be an http loopback URL for `mcpmux auth login` (got {})",
                        u.origin().ascii_serialization()
                    )));
                }
                (u.port().unwrap_or(80), u.path().to_owned())
            }
            None => (0, "/callback".to_owned()),
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| {
                Error::InvalidInput(format!(
                    "cannot listen on 127.0.0.1:{port} for the redirect: {e}"
                ))
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::Internal(e.to_string()))?
            .port();
        Ok(Loopback {
            listener: Arc::new(tokio::sync::Mutex::new(listener)),
            redirect_uri: configured
                .map(str::to_owned)
                .unwrap_or_else(|| format!("http://127.0.0.1:{port}{path}")),
        })
    }
}

impl AuthorizationHandler for Loopback {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, Error>> {
        let listener = self.listener.clone();
        let base = self.redirect_uri.clone();
        Box::pin(async move {
            eprintln!(
                "To authorize '{}', open this URL in a browser:\n\n  {}\n\nWaiting for the redirect to {base} ...",
                request.server, request.url
            );
            let wait = async {
                let listener = listener.lock().await;
                loop {
                    let (mut socket, _) = listener
                        .accept()
                        .await
                        .map_err(|e| Error::AuthFailed(format!("redirect listener: {e}")))?;
                    // A request line may arrive in several segments: read
                    // up to the end of the head (or 16 KiB, or EOF).
                    let mut buf = Vec::with_capacity(1024);
                    let mut chunk = [0u8; 4096];
                    while buf.len() < 16 * 1024 && !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    let target = head
                        .lines()
                        .next()
                        .and_then(|l| l.split_whitespace().nth(1))
                        .unwrap_or("")
                        .to_owned();
                    if !target.contains("code=") && !target.contains("error=") {
                        let _ = socket
                            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                        continue;
                    }
                    let page = "<html><body>mcpmux: authorization received; you can close this window.</body></html>";
                    let _ = socket
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                                page.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                    let origin = url::Url::parse(&base)
                        .map_err(|_| Error::Internal("redirect URI".into()))?;
                    return origin
                        .join(&target)
                        .map(|u| u.to_string())
                        .map_err(|_| Error::AuthFailed("the redirect is not a URL".into()));
                }
            };
            match tokio::time::timeout(LOGIN_WAIT, wait).await {
                Ok(r) => r,
                Err(_) => Err(Error::AuthFailed(format!(
                    "no redirect within {} s",
                    LOGIN_WAIT.as_secs()
                ))),
            }
        })
    }

    fn redirect_uri(&self) -> Option<String> {
        Some(self.redirect_uri.clone())
    }
}
