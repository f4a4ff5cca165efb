//! Figure 4: resident memory per idle connection.

use std::time::Duration;

use mcpmux_core::Hub;

use crate::harness::*;
use crate::report::*;

/// Connections for the memory figure.
pub(crate) const MEMORY_SERVERS: usize = 100;

/// rmcp's resident memory per idle connection, as quoted in the issue.
pub(crate) const RMCP_KB_PER_CONNECTION: f64 = 30.0;

/// Passes of the memory figure (the median and range are reported).
pub(crate) fn memory_passes(setup: &Setup) -> usize {
    if setup.quick {
        2
    } else {
        3
    }
}

pub(crate) async fn bench_memory(setup: &Setup, report: &mut Report) -> Res<()> {
    let per = |(a, b): (u64, u64)| (b as f64 - a as f64) / (MEMORY_SERVERS - 1) as f64 / 1024.0;
    let passes = memory_passes(setup);
    let mut plain = Vec::new();
    let mut trimmed = Vec::new();
    let mut last = (0, 0);
    for _ in 0..passes {
        last = memory_pass(setup, false).await?;
        plain.push(per(last));
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            trimmed.push(per(memory_pass(setup, true).await?));
        }
    }
    report.section(
        4,
        format!(
            "resident memory per idle connection (RSS with 1 vs {MEMORY_SERVERS} demo servers, {passes} passes)"
        ),
    );
    report.row(Row::absolute(
        "RSS per idle connection (KB)",
        plain,
        "KB",
        "-",
        Some(Target::AtMost(24.0)),
    ));
    if !trimmed.is_empty() {
        report.row(Row::absolute(
            "RSS per idle connection, malloc_trim (KB)",
            trimmed,
            "KB",
            "-",
            None,
        ));
    }
    report.note(format!(
        "process RSS with 1 connection: {:.1} MB; with {MEMORY_SERVERS}: {:.1} MB (last pass); \
         rmcp is quoted at {RMCP_KB_PER_CONNECTION} KB per connection (not measured)",
        last.0 as f64 / 1048576.0,
        last.1 as f64 / 1048576.0
    ));
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
