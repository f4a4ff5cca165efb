//! The report: rows of figures next to their references. A row holds one
//! value per interleaved round (a ratio to the reference measured in the
//! same round, or an absolute figure) and shows their median and range
//! (min–max), the target and whether the median holds it.
//!
//! With `$MCPMUX_BENCH_ROWS` set, every row is also appended to that file
//! as one tab-separated line, the format `benches/run.sh` tabulates (shared
//! with the Python, Node and gateway benches):
//!
//! ```text
//! figure  server  subject  reference  ref-kind  median  min  max  unit  target  overhead-µs  rounds
//! ```
//!
//! `unit` is `x` for a ratio (median/min/max of the per-round ratios),
//! else the unit of an absolute figure (`KB`, `µs`, `ms`); `target` is `-`,
//! `<=X` or `>=X` on the median; `subject`, `reference` and `overhead-µs`
//! are medians over the rounds or `-`.

use std::io::Write as _;

pub(crate) enum Target {
    AtMost(f64),
    AtLeast(f64),
}

/// Median, min and max of `values` (0 when empty).
pub(crate) fn spread(values: &[f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

pub(crate) fn median(values: &[f64]) -> f64 {
    spread(values).0
}

pub(crate) struct Row {
    pub(crate) name: String,
    /// Per-round subject and reference values (empty: not shown).
    pub(crate) ours: Vec<f64>,
    pub(crate) reference: Vec<f64>,
    pub(crate) reference_kind: String,
    /// The judged values, one per round: ratios, or the absolute figure.
    pub(crate) judged: Vec<f64>,
    /// `x` for ratios, else the absolute figure's unit.
    pub(crate) unit: String,
    /// Per-round overhead above the reference, in µs (latency rows).
    pub(crate) overhead: Vec<f64>,
    pub(crate) target: Option<Target>,
}

impl Row {
    /// Per-round `ours` against `reference`: the ratio of each round.
    pub(crate) fn ratio(
        name: &str,
        ours: Vec<f64>,
        reference: Vec<f64>,
        kind: &str,
        target: Option<Target>,
    ) -> Row {
        let judged = ours.iter().zip(&reference).map(|(a, b)| a / b).collect();
        Row {
            name: name.to_owned(),
            ours,
            reference,
            reference_kind: kind.to_owned(),
            judged,
            unit: "x".to_owned(),
            overhead: Vec::new(),
            target,
        }
    }

    /// A latency row: the ratio and, per round, `ours - reference` in µs.
    pub(crate) fn latency(
        name: &str,
        ours: Vec<f64>,
        reference: Vec<f64>,
        kind: &str,
        target: Option<Target>,
    ) -> Row {
        let overhead = ours.iter().zip(&reference).map(|(a, b)| a - b).collect();
        Row {
            overhead,
            ..Row::ratio(name, ours, reference, kind, target)
        }
    }

    /// An absolute figure (one value per round or pass) in `unit`.
    pub(crate) fn absolute(
        name: &str,
        values: Vec<f64>,
        unit: &str,
        kind: &str,
        target: Option<Target>,
    ) -> Row {
        Row {
            name: name.to_owned(),
            ours: values.clone(),
            reference: Vec::new(),
            reference_kind: kind.to_owned(),
            judged: values,
            unit: unit.to_owned(),
            overhead: Vec::new(),
            target,
        }
    }

    fn judged_text(&self, x: f64) -> String {
        if self.unit == "x" {
            format!("{x:.2}x")
        } else {
            num(x)
        }
    }

    pub(crate) fn target_text(&self) -> String {
        let unit = if self.unit == "x" { "x" } else { "" };
        match self.target {
            None => "-".to_owned(),
            Some(Target::AtMost(x)) => format!("<= {x}{unit}"),
            Some(Target::AtLeast(x)) => format!(">= {x}{unit}"),
        }
    }

    pub(crate) fn verdict(&self) -> &'static str {
        let m = median(&self.judged);
        match self.target {
            None => "info",
            Some(Target::AtMost(x)) if m <= x => "PASS",
            Some(Target::AtLeast(x)) if m >= x => "PASS",
            Some(_) => "MISS",
        }
    }

    fn tsv(&self, server: &str) -> String {
        let opt = |v: &[f64]| {
            if v.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.3}", median(v))
            }
        };
        let (m, lo, hi) = spread(&self.judged);
        let target = match self.target {
            None => "-".to_owned(),
            Some(Target::AtMost(x)) => format!("<={x}"),
            Some(Target::AtLeast(x)) => format!(">={x}"),
        };
        format!(
            "{}\t{server}\t{}\t{}\t{}\t{m:.4}\t{lo:.4}\t{hi:.4}\t{}\t{target}\t{}\t{}\n",
            self.name,
            opt(&self.ours),
            if self.reference.is_empty() {
                "-".to_owned()
            } else {
                opt(&self.reference)
            },
            self.reference_kind,
            self.unit,
            opt(&self.overhead),
            self.judged.len(),
        )
    }
}

pub(crate) enum Line {
    Row(Row),
    Note(String),
}

pub(crate) struct Section {
    pub(crate) order: u32,
    pub(crate) title: String,
    pub(crate) lines: Vec<Line>,
}

/// The figures, grouped in numbered sections (printed in number order,
/// whatever order they were measured in).
#[derive(Default)]
pub(crate) struct Report {
    pub(crate) sections: Vec<Section>,
}

impl Report {
    pub(crate) fn section(&mut self, order: u32, title: String) {
        self.sections.push(Section {
            order,
            title,
            lines: Vec::new(),
        });
    }

    pub(crate) fn push(&mut self, line: Line) {
        self.sections
            .last_mut()
            .expect("a section comes first")
            .lines
            .push(line);
    }

    pub(crate) fn row(&mut self, row: Row) {
        self.push(Line::Row(row));
    }

    pub(crate) fn note(&mut self, text: String) {
        self.push(Line::Note(text));
    }

    /// Prints the report; appends the rows to `$MCPMUX_BENCH_ROWS` when set
    /// (labelled with `server`).
    pub(crate) fn print(&self, server: &str) -> std::io::Result<()> {
        println!(
            "{:<44} {:>10}  {:>10}  {:<26} {:>7} {:>17} {:>9}  {:<10} result",
            "figure", "mcpmux", "reference", "(reference is)", "median", "range", "+µs", "target"
        );
        println!("{}", "-".repeat(150));
        let (mut pass, mut miss) = (0, 0);
        let mut sections: Vec<&Section> = self.sections.iter().collect();
        sections.sort_by_key(|s| s.order);
        let mut tsv = String::new();
        for section in sections {
            println!("\n{}. {}", section.order, section.title);
            for line in &section.lines {
                match line {
                    Line::Note(text) => println!("     note: {text}"),
                    Line::Row(r) => {
                        let verdict = r.verdict();
                        match verdict {
                            "PASS" => pass += 1,
                            "MISS" => miss += 1,
                            _ => {}
                        }
                        let (m, lo, hi) = spread(&r.judged);
                        let shown = |v: &[f64]| {
                            if v.is_empty() {
                                "-".to_owned()
                            } else {
                                num(median(v))
                            }
                        };
                        println!(
                            "   {:<41} {:>10}  {:>10}  {:<26} {:>7} {:>17} {:>9}  {:<10} {verdict}",
                            r.name,
                            shown(&r.ours),
                            shown(&r.reference),
                            r.reference_kind,
                            r.judged_text(m),
                            format!("{}-{}", r.judged_text(lo), r.judged_text(hi)),
                            shown(&r.overhead),
                            r.target_text(),
                        );
                        tsv.push_str(&r.tsv(server));
                    }
                }
            }
        }
        println!();
        println!(
            "targets: {pass} PASS, {miss} MISS on the medians (informational; the exit status is 0 either way)"
        );
        if let Some(path) = std::env::var_os("MCPMUX_BENCH_ROWS") {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?
                .write_all(tsv.as_bytes())?;
        }
        Ok(())
    }
}

pub(crate) fn num(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{x:.0}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}
