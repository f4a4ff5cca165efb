//! The pooled HTTP clients stop reusing an idle connection before servers
//! close it: a server that closes a connection idle for
//! [`POOL_IDLE_TIMEOUT`] plus a little, just as the next request arrives
//! on it (the race a keep-alive timeout leaves), never sees that request.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::POOL_IDLE_TIMEOUT;

/// Serves `200 {}` to each request; a request that arrives on a connection
/// idle longer than `POOL_IDLE_TIMEOUT` is dropped with the connection,
/// unanswered.
async fn server_closing_idle_connections() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut last = Instant::now();
                let mut buf = vec![0u8; 64 << 10];
                let mut held = Vec::new();
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    if held.is_empty() && last.elapsed() > POOL_IDLE_TIMEOUT {
                        return; // the server's idle close, racing the request
                    }
                    held.extend_from_slice(&buf[..n]);
                    // One small request per read is all these clients send.
                    if !held.windows(4).any(|w| w == b"\r\n\r\n") {
                        continue;
                    }
                    held.clear();
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                    if socket.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                    last = Instant::now();
                }
            });
        }
    });
    format!("http://{addr}/mcp")
}

/// Idle a little longer than the pool keeps a connection, by less than the
/// servers' own timeouts.
const IDLE: Duration = Duration::from_millis(POOL_IDLE_TIMEOUT.as_millis() as u64 + 700);

#[tokio::test]
async fn the_shared_client_opens_a_new_connection_after_an_idle_spell() {
    let url = server_closing_idle_connections().await;
    let client = super::client();
    for round in 0..2 {
        let answer = client
            .post(&url)
            .body("{}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("request {round}: {e:?}"));
        assert_eq!(answer.text().await.unwrap(), "{}");
        if round == 0 {
            tokio::time::sleep(IDLE).await;
        }
    }
}

#[tokio::test]
async fn the_direct_client_opens_a_new_connection_after_an_idle_spell() {
    let url = server_closing_idle_connections().await;
    let client = super::direct::client().expect("no proxy in the test environment");
    for round in 0..2 {
        let request = hyper::Request::post(&url)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let answer = client
            .request(request)
            .await
            .unwrap_or_else(|e| panic!("request {round}: {e:?}"));
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"{}");
        if round == 0 {
            tokio::time::sleep(IDLE).await;
        }
    }
}
