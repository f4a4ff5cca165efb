//! The report: rows of figures next to their references, with the ratio,
//! the target and PASS/MISS.

pub(crate) enum Target {
    AtMost(f64),
    AtLeast(f64),
}

pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) ours: f64,
    pub(crate) reference: f64,
    pub(crate) reference_kind: String,
    pub(crate) target: Option<Target>,
}

impl Row {
    pub(crate) fn target(name: &str, ours: f64, reference: f64, kind: &str, target: Target) -> Row {
        Row {
            name: name.to_owned(),
            ours,
            reference,
            reference_kind: kind.to_owned(),
            target: Some(target),
        }
    }

    pub(crate) fn info(name: &str, ours: f64, reference: f64, kind: &str) -> Row {
        Row {
            target: None,
            ..Row::target(name, ours, reference, kind, Target::AtMost(0.0))
        }
    }

    pub(crate) fn ratio(&self) -> f64 {
        self.ours / self.reference
    }

    pub(crate) fn ratio_text(&self) -> String {
        match self.target {
            Some(Target::AtLeast(_)) => format!("{:.0}%", self.ratio() * 100.0),
            _ => format!("{:.2}x", self.ratio()),
        }
    }

    pub(crate) fn target_text(&self) -> String {
        match self.target {
            None => "-".to_owned(),
            Some(Target::AtMost(x)) => format!("<= {x:.2}x"),
            Some(Target::AtLeast(x)) => format!(">= {:.0}%", x * 100.0),
        }
    }

    pub(crate) fn verdict(&self) -> &'static str {
        let ratio = self.ratio();
        match self.target {
            None => "info",
            Some(Target::AtMost(x)) if ratio <= x => "PASS",
            Some(Target::AtLeast(x)) if ratio >= x => "PASS",
            Some(_) => "MISS",
        }
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

    pub(crate) fn print(&self) {
        println!(
            "{:<36} {:>10}  {:>10}  {:<28} {:>7}  {:<20} result",
            "figure", "mcpmux", "reference", "(reference is)", "ratio", "target"
        );
        println!("{}", "-".repeat(127));
        let (mut pass, mut miss) = (0, 0);
        let mut sections: Vec<&Section> = self.sections.iter().collect();
        sections.sort_by_key(|s| s.order);
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
                        println!(
                            "   {:<33} {:>10}  {:>10}  {:<28} {:>7}  {:<20} {verdict}",
                            r.name,
                            num(r.ours),
                            num(r.reference),
                            r.reference_kind,
                            r.ratio_text(),
                            r.target_text(),
                        );
                    }
                }
            }
        }
        println!();
        println!(
            "targets: {pass} PASS, {miss} MISS (informational; the exit status is 0 either way)"
        );
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
