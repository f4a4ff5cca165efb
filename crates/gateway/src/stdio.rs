//! A gateway serving one client over newline-delimited JSON-RPC (MCP's
//! stdio transport): `mcpmux gateway` reads its stdin and writes its
//! stdout.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::budget::Outgoing;
use super::connection::{error_answer, Connection, OUTGOING_QUEUE};
use super::out::Out;
use super::Gateway;
use mcpmux_core::error::Error;
use mcpmux_core::internal::telemetry::ServedVia;

/// Serves the client on `reader` / `writer` until the reader ends (the
/// client closed its end), then cancels the client's calls in flight and
/// returns. A line longer than `max_message_bytes` is answered with a
/// parse error and skipped; nothing the client sends ends the gateway.
/// An answer holds the client's budget until it is written: a client that
/// does not read gets -32000 "gateway busy" refusals past it.
/// Runs on the caller's task; each request runs on its own engine task.
pub async fn serve_stdio<R, W>(
    gateway: Gateway,
    mut reader: R,
    mut writer: W,
    max_message_bytes: usize,
) -> Result<(), Error>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut outgoing) = mpsc::channel::<Outgoing>(OUTGOING_QUEUE);
    let connection = Connection::new(gateway, Out::Queue(out.clone()));
    let writing = tokio::spawn(async move {
        while let Some(msg) = outgoing.recv().await {
            let (line, held) = msg.into_framed(b"", b"\n");
            if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
                return; // the client is gone
            }
            // Written: its bytes are the client's budget again.
            drop(held);
        }
    });
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = max_message_bytes as u64 + 1;
        let n = (&mut reader)
            .take(limit)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| Error::TransportClosed(format!("gateway: reading stdin: {e}")))?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') && line.len() as u64 >= limit {
            skip_rest_of_line(&mut reader).await;
            let _ = out
                .send(
                    error_answer(
                        &Value::Null,
                        -32700,
                        &format!("message longer than {max_message_bytes} bytes"),
                        Some("LIMIT_EXCEEDED"),
                    )
                    .into(),
                )
                .await;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(batch)) => {
                for msg in batch {
                    connection.handle(msg, ServedVia::Pipe).await;
                }
            }
            Ok(msg) => connection.handle(msg, ServedVia::Pipe).await,
            Err(e) => {
                let _ = out
                    .send(
                        error_answer(&Value::Null, -32700, &format!("parse error: {e}"), None)
                            .into(),
                    )
                    .await;
            }
        }
    }
    // The client closed its end: its calls are cancelled, and what is
    // already queued for it still goes out.
    connection.close();
    drop(connection);
    drop(out);
    let _ = writing.await;
    Ok(())
}

/// Reads and drops bytes up to and including the next newline (or the end).
async fn skip_rest_of_line<R: AsyncBufRead + Unpin>(reader: &mut R) {
    loop {
        let Ok(buf) = reader.fill_buf().await else {
            return;
        };
        if buf.is_empty() {
            return;
        }
        match memchr::memchr(b'\n', buf) {
            Some(i) => {
                reader.consume(i + 1);
                return;
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}
