//! Connect to the servers of a config, list their tools and call one.
//!
//! ```sh
//! cargo build -p mcpmux-demo-server
//! cargo run -p mcpmux-core --example basic -- examples/mcpmux.toml mcp_demo_echo '{"text":"hi"}'
//! ```

use std::sync::Arc;
use std::time::Duration;

use mcpmux_core::{CallOptions, Config, Hub};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "examples/mcpmux.toml".into());
    let tool = args.next().unwrap_or_else(|| "mcp_demo_echo".into());
    let arguments: serde_json::Value =
        serde_json::from_str(&args.next().unwrap_or_else(|| r#"{"text":"hello"}"#.into()))?;

    // Every enabled server starts at once; one that fails is reported, not fatal.
    let hub = Hub::connect(Config::load(&path)?).await?;
    for server in hub.servers() {
        println!(
            "{:12} {:10} {} tools {}",
            server.name,
            server.state,
            server.tool_count,
            server.error.unwrap_or_default()
        );
    }
    for t in hub.list_tools() {
        println!("  {}  {}", t.name, t.description.unwrap_or_default());
    }

    // The progress callback runs on the connection's reader task: keep it quick.
    let options = CallOptions::default()
        .with_timeout(Duration::from_secs(30))
        .with_progress(Arc::new(|p| {
            eprintln!("progress {} / {:?}", p.progress, p.total)
        }));
    match hub.call_tool(&tool, Some(&arguments), &options).await {
        Ok(result) if result.is_error() => println!("tool error: {}", result.json()),
        Ok(result) => println!("{}", result.json()),
        Err(e) => println!("failed: {} ({})", e, e.code()),
    }
    hub.close().await;
    Ok(())
}
