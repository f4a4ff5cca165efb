//! Entry point for the `session_input` fuzz target in `fuzz/` and the
//! replay of its corpus (`tests/fuzz_corpus_replay.rs`): arbitrary bytes
//! through the session input parser and template renderer. Not part of the
//! crate's API; stable only in name. Runs on the calling thread.

use crate::input;

/// The prompt templates of the built-in skills.
const TEMPLATES: &[&str] = &[
    include_str!("templates/review-plan.md"),
    include_str!("templates/review-impl.md"),
    include_str!("templates/review-think.md"),
    include_str!("templates/review-pr.md"),
    include_str!("templates/followup.md"),
    include_str!("templates/format.md"),
    include_str!("templates/analysis-think.md"),
    include_str!("templates/analysis-pr.md"),
];

/// A host's session input (front matter, `## NAME` sections), and a
/// template, split at the first NUL byte (no NUL: the input alone). The
/// input is parsed and rendered into the fuzzed template and every
/// built-in one: a text or `INVALID_INPUT`.
pub fn session_input(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let (template, input) = text.split_once('\0').unwrap_or(("{{INPUT}}", &text));
    let (values, _rest) = input::parse(input);
    for name in values.keys() {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(format!("value name {name:?}"));
        }
    }
    let provided = input::Values::from([("SESSION_ID".to_owned(), "s-1".to_owned())]);
    for template in std::iter::once(template).chain(TEMPLATES.iter().copied()) {
        for name in input::placeholders(template) {
            if !template.contains(&name) {
                return Err(format!("placeholder {name:?} not in the template"));
            }
        }
        match input::render(template, input, &provided) {
            Ok(_) => {}
            Err(e) if e.code() == "INVALID_INPUT" => {}
            Err(e) => return Err(format!("{}: {e}", e.code())),
        }
    }
    let _ = input::value(input, "BASE");
    Ok(())
}
