//! The per-tool latency histogram as inline SVG (no script, no external
//! file): one bar per latency bucket, its height the bucket's share of the
//! calls, each with a `<title>` a screen reader or a hover shows. The
//! page's script draws the same shape (`page.rs`) when it updates.

use super::board::BUCKET_BOUNDS_MS;
use super::page::escape;

/// Width and height of the drawing, in CSS pixels.
const WIDTH: u32 = 120;
const HEIGHT: u32 = 28;

/// A bucket's label: `<10 ms`, ..., `≥30 s`.
pub(crate) fn bucket_label(i: usize) -> String {
    fn ms(v: u64) -> String {
        if v >= 1000 {
            format!("{} s", v / 1000)
        } else {
            format!("{v} ms")
        }
    }
    match BUCKET_BOUNDS_MS.get(i) {
        Some(&bound) => format!("<{}", ms(bound)),
        None => format!("≥{}", ms(*BUCKET_BOUNDS_MS.last().unwrap_or(&0))),
    }
}

/// The histogram of `buckets` (calls per bucket), `tool` naming it.
pub(crate) fn histogram(tool: &str, buckets: &[u64]) -> String {
    let most = buckets.iter().copied().max().unwrap_or(0).max(1);
    let n = buckets.len().max(1) as u32;
    let bar = WIDTH / n;
    let mut svg = format!(
        "<svg class=\"hist\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         role=\"img\" aria-label=\"latency of {}\">",
        escape(tool)
    );
    for (i, &count) in buckets.iter().enumerate() {
        let h = if count == 0 {
            1
        } else {
            ((count * u64::from(HEIGHT - 2)) / most).max(2) as u32
        };
        let x = i as u32 * bar;
        svg.push_str(&format!(
            "<rect x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{h}\"><title>{}: {count}</title></rect>",
            HEIGHT - h,
            bar.saturating_sub(2).max(1),
            escape(&bucket_label(i)),
        ));
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_has_a_bar_per_bucket_and_escapes_its_name() {
        let svg = histogram("<b>&", &[0, 3, 1, 0, 0, 0, 0, 2]);
        assert_eq!(svg.matches("<rect").count(), 8);
        assert!(svg.contains("&lt;b&gt;&amp;"));
        assert!(svg.contains("<title>&lt;50 ms: 3</title>"));
        assert!(svg.contains("≥30 s: 2"));
    }
}
