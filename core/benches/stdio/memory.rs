//! Figure 4: resident memory per idle connection.

use std::time::Duration;

use mcpmux_core::Hub;

use crate::harness::*;
use crate::report::*;

/// Connections for the memory figure.
pub(crate) const MEMORY_SERVERS: usize = 100;

/// rmcp's resident memory per idle connection, as quoted in the issue.
pub(crate) const RMCP_KB_PER_CONNECTION: f64 = 30.0;

pub(crate) async fn bench_memory(setup: &Setup, report: &mut Report) -> Res<()> {
    let (rss1, rss100) = memory_pass(setup, false).await?;
    let trimmed = if cfg!(all(target_os = "linux", target_env = "gnu")) {
        Some(memory_pass(setup, true).await?)
    } else {
        None
    };
    let per = |(a, b): (u64, u64)| (b as f64 - a as f64) / (MEMORY_SERVERS - 1) as f64 / 1024.0;
    report.section(
        4,
        format!(
            "resident memory per idle connection (RSS with 1 vs {MEMORY_SERVERS} demo servers)"
        ),
    );
    report.row(Row::info(
        "RSS per connection (KB)",
        per((rss1, rss100)),
        RMCP_KB_PER_CONNECTION,
        "rmcp (quoted, not measured)",
    ));
    report.note(format!(
        "process RSS with 1 connection: {:.1} MB; with {MEMORY_SERVERS}: {:.1} MB",
        rss1 as f64 / 1048576.0,
        rss100 as f64 / 1048576.0
    ));
    if let Some(t) = trimmed {
        report.note(format!(
            "second pass with malloc_trim(0) before each reading (freed heap returned to the OS): {:.1} KB per connection",
            per(t)
        ));
    }
    Ok(())
}

/// Connects 1 server, reads RSS, connects 99 more (a second hub), reads RSS.
pub(crate) async fn memory_pass(setup: &Setup, trim: bool) -> Res<(u64, u64)> {
    // Everything allocated up front, so that only the connections themselves
    // lie between the two readings.
    let first = setup.demo_config(["mem0".to_owned()])?;
    let rest = setup.demo_config((1..MEMORY_SERVERS).map(|i| format!("mem{i}")))?;
    let settle = Duration::from_millis(300);
    let reading = || {
        if trim {
            malloc_trim();
        }
        rss_bytes()
    };

    let hub1 = Hub::connect(first).await?;
    tokio::time::sleep(settle).await;
    let rss1 = reading()?;
    let hub99 = Hub::connect(rest).await?;
    tokio::time::sleep(settle).await;
    let rss100 = reading()?;

    let checked = ensure_connected(&hub1).and(ensure_connected(&hub99));
    hub99.close().await;
    hub1.close().await;
    checked?;
    Ok((rss1, rss100))
}
