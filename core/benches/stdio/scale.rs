//! Figure 5: scale — 100 stdio servers with 100 tools each (10,000 tools):
//! connect time next to one such server, resident memory per server, and
//! the hub's tool listing (merged, prefixed) and search over all of them.

use std::time::{Duration, Instant};

use mcpmux_core::Hub;

use crate::harness::*;
use crate::report::*;

/// Servers and tools per server of the scale figure.
pub(crate) const SCALE_SERVERS: usize = 100;
pub(crate) const SCALE_TOOLS: usize = 100;

pub(crate) fn bench_scale(
    setup: &Setup,
    rt: &tokio::runtime::Runtime,
    report: &mut Report,
) -> Res<()> {
    let tools = SCALE_TOOLS.to_string();
    let config = |n: usize| -> Res<mcpmux_core::Config> {
        let mut toml = String::new();
        for i in 0..n {
            server_entry(
                &mut toml,
                &format!("s{i}"),
                &setup.demo,
                &[],
                &[("ECHO_TOOLS", &tools)],
            );
        }
        Ok(mcpmux_core::Config::parse(&toml)?)
    };
    let repeats = if setup.quick { 2 } else { 5 };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (mut one, mut many, mut rss, mut list, mut search) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut listed = 0;
    for _ in 0..repeats {
        let single = config(1)?;
        let all = config(SCALE_SERVERS)?;
        rt.block_on(async {
            let start = Instant::now();
            let hub = Hub::connect(single).await?;
            one.push(ms(start.elapsed()));
            ensure_connected(&hub)?;
            hub.close().await;

            malloc_trim();
            let before = rss_bytes()?;
            let start = Instant::now();
            let hub = Hub::connect(all).await?;
            many.push(ms(start.elapsed()));
            ensure_connected(&hub)?;
            tokio::time::sleep(Duration::from_millis(200)).await;
            malloc_trim();
            rss.push((rss_bytes()? as f64 - before as f64) / SCALE_SERVERS as f64 / 1024.0);
            // The merged, prefixed listing and a search, 10 times each.
            let mut times = Vec::new();
            for _ in 0..10 {
                let t = Instant::now();
                listed = hub.list_tools().len();
                times.push(ms(t.elapsed()));
            }
            list.push(median(&times));
            let mut times = Vec::new();
            for q in [
                "weather",
                "billing calendar",
                "echo number 4711",
                "maps of notes",
            ] {
                for _ in 0..5 {
                    let t = Instant::now();
                    std::hint::black_box(hub.search_tools(q, 10));
                    times.push(t.elapsed().as_secs_f64() * 1e6);
                }
            }
            search.push(median(&times));
            hub.close().await;
            Ok::<_, BoxError>(())
        })?;
    }
    report.section(
        5,
        format!(
            "scale: {SCALE_SERVERS} stdio servers x {SCALE_TOOLS} tools ({listed} tools listed), {repeats} interleaved repeats"
        ),
    );
    report.row(Row::ratio(
        &format!("scale: Hub::connect, {SCALE_SERVERS} servers (ms)"),
        many,
        one,
        "Hub::connect, 1 server",
        None,
    ));
    report.row(Row::absolute(
        &format!("scale: RSS per server of {SCALE_TOOLS} tools (KB)"),
        rss,
        "KB",
        "-",
        None,
    ));
    report.row(Row::absolute(
        &format!("scale: list_tools over {listed} tools (ms)"),
        list,
        "ms",
        "-",
        None,
    ));
    report.row(Row::absolute(
        &format!("scale: search_tools over {listed} tools (µs)"),
        search,
        "µs",
        "-",
        None,
    ));
    report.note(
        "each server is the echo server with ECHO_TOOLS=100; RSS is this process's, read after \
         malloc_trim(0), before and after connecting; list_tools is the hub's merged, prefixed \
         listing; search_tools a median over four queries"
            .to_owned(),
    );
    Ok(())
}
