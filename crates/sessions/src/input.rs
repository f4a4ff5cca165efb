//! The host's Markdown input and the prompt templates it fills.
//!
//! Input: optional front matter of `NAME: value` lines between `---` lines,
//! then a `## NAME` section for each multi-line value (NAME in capitals,
//! digits and `_`). Text outside any section, when the template has exactly
//! one placeholder the input does not name, fills that placeholder, so a
//! plain Markdown file works for one-placeholder skills.
//!
//! Templates use `{{NAME}}` placeholders; a placeholder the input does not
//! provide is an `INVALID_INPUT` error naming it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use mcpmux_core::error::Error;

/// Values by placeholder name.
pub type Values = BTreeMap<String, String>;

/// Parses the input Markdown into named values and the unnamed rest.
pub fn parse(input: &str) -> (Values, String) {
    let mut values = Values::new();
    let text = input.replace("\r\n", "\n");
    let mut body: &str = &text;
    if let Some(rest) = text.strip_prefix("---\n") {
        if let Some(end) = find_line(rest, "---") {
            for line in rest[..end].lines() {
                if let Some((k, v)) = line.split_once(':') {
                    let k = k.trim();
                    if is_name(k) {
                        values.insert(k.to_owned(), v.trim().to_owned());
                    }
                }
            }
            body = rest[end..].split_once('\n').map_or("", |(_, b)| b);
        }
    }
    let mut rest = String::new();
    let mut current: Option<(String, String)> = None;
    for line in body.split_inclusive('\n') {
        let heading = line
            .strip_prefix("## ")
            .map(str::trim)
            .filter(|h| is_name(h));
        if let Some(name) = heading {
            if let Some((k, v)) = current.take() {
                values.insert(k, v.trim().to_owned());
            }
            current = Some((name.to_owned(), String::new()));
        } else if let Some((_, v)) = current.as_mut() {
            v.push_str(line);
        } else {
            rest.push_str(line);
        }
    }
    if let Some((k, v)) = current {
        values.insert(k, v.trim().to_owned());
    }
    (values, rest.trim().to_owned())
}

/// The byte offset of the first line of `text` equal to `line`.
fn find_line(text: &str, line: &str) -> Option<usize> {
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        if l.trim_end() == line {
            return Some(at);
        }
        at += l.len();
    }
    None
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && s.starts_with(|c: char| c.is_ascii_uppercase())
}

/// The distinct `{{NAME}}` placeholders of a template, in order.
pub fn placeholders(template: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].trim();
        if is_name(name) && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
        rest = &after[end + 2..];
    }
    out
}

/// Fills `template` from `input`; `provided` are values mcpmux supplies
/// itself (never required from the input). A placeholder with no value is
/// an `INVALID_INPUT` error naming it.
pub fn render(template: &str, input: &str, provided: &Values) -> Result<String, Error> {
    let (mut values, rest) = parse(input);
    let names = placeholders(template);
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !values.contains_key(*n) && !provided.contains_key(*n))
        .collect();
    if missing.len() == 1 && !rest.is_empty() {
        values.insert(missing[0].clone(), rest.clone());
    } else if let Some(name) = missing.first() {
        return Err(Error::InvalidInput(format!(
            "input: missing placeholder {name} (give it as `{name}: value` front matter or a `## {name}` section)"
        )));
    }
    // One pass over the template: a value is never scanned again, so input
    // holding `{{OTHER}}` stays literal and the output grows linearly.
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &after[..end];
        // `{{NAME}}` or the spaced form `{{ NAME }}`.
        let name = inner
            .strip_prefix(' ')
            .and_then(|n| n.strip_suffix(' '))
            .unwrap_or(inner);
        if is_name(name) {
            let value = values.get(name).or_else(|| provided.get(name));
            out.push_str(value.map_or("", String::as_str));
        } else {
            out.push_str(&rest[start..start + 2 + end + 2]);
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The named value `name` of the input, if any (e.g. `BASE`).
pub fn value(input: &str, name: &str) -> Option<String> {
    parse(input).0.get(name).cloned().filter(|v| !v.is_empty())
}

fn git(dir: &Path, args: &[&str]) -> Result<String, Error> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| Error::InvalidInput(format!("cannot run git in {}: {e}", dir.display())))?;
    if !out.status.success() {
        return Err(Error::InvalidInput(format!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The changes `review-impl` reviews: `working-tree` = `git diff HEAD` plus
/// the untracked files; `branch` = the diff from the merge base with the
/// base branch (`base`, else `main`, `master`, `origin/HEAD`).
pub fn diff(working_dir: &Path, mode: &str, base: Option<&str>) -> Result<String, Error> {
    if git(working_dir, &["rev-parse", "--is-inside-work-tree"]).is_err() {
        return Err(Error::InvalidInput(format!(
            "working_dir {} is not a git repository (review-impl reads its changes with git)",
            working_dir.display()
        )));
    }
    match mode {
        "working-tree" => {
            let has_head = git(working_dir, &["rev-parse", "--verify", "HEAD"]).is_ok();
            let diff = if has_head {
                git(working_dir, &["diff", "HEAD"])?
            } else {
                git(working_dir, &["diff", "--cached"])?
            };
            let untracked = git(working_dir, &["ls-files", "--others", "--exclude-standard"])?;
            let untracked: Vec<&str> = untracked
                .lines()
                .filter(|l| !l.starts_with(".mcpmux/"))
                .collect();
            let mut out = format!("```diff\n{}```\n", ensure_newline(&diff));
            if !untracked.is_empty() {
                out.push_str("\nUntracked files:\n");
                for f in untracked {
                    out.push_str(&format!("- {f}\n"));
                }
            }
            Ok(out)
        }
        "branch" => {
            let candidates: Vec<&str> = match base {
                Some(b) => vec![b],
                None => vec!["main", "master", "origin/HEAD"],
            };
            for candidate in &candidates {
                if let Ok(mb) = git(working_dir, &["merge-base", candidate, "HEAD"]) {
                    let mb = mb.trim().to_owned();
                    let diff = git(working_dir, &["diff", &mb, "HEAD"])?;
                    return Ok(format!(
                        "Base: {candidate} ({})\n\n```diff\n{}```\n",
                        &mb[..mb.len().min(12)],
                        ensure_newline(&diff)
                    ));
                }
            }
            Err(Error::InvalidInput(format!(
                "no base branch found in {} (tried {}); give `BASE: <branch>` in the input",
                working_dir.display(),
                candidates.join(", ")
            )))
        }
        other => Err(Error::InvalidInput(format!(
            "mode '{other}' is not valid for review-impl (expected working-tree or branch)"
        ))),
    }
}

fn ensure_newline(s: &str) -> String {
    if s.is_empty() || s.ends_with('\n') {
        s.to_owned()
    } else {
        format!("{s}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_sections() {
        let (v, rest) = parse(
            "---\nUSER_REQUEST: add a flag\nBASE: main\n---\nintro\n## PLAN\n1. a\n2. b\n\n## NOTES\nx\n",
        );
        assert_eq!(v["USER_REQUEST"], "add a flag");
        assert_eq!(v["BASE"], "main");
        assert_eq!(v["PLAN"], "1. a\n2. b");
        assert_eq!(v["NOTES"], "x");
        assert_eq!(rest, "intro");
    }

    #[test]
    fn render_fills_each_placeholder_once_and_never_rescans_a_value() {
        let template = "a {{X}} b {{ Y }} c {{X}} {{lower}} {{unclosed";
        let input = "---\nX: {{Y}}{{Y}}\nY: y\n---\n";
        let out = render(template, input, &Values::new()).unwrap();
        assert_eq!(out, "a {{Y}}{{Y}} b y c {{Y}}{{Y}} {{lower}} {{unclosed");
        // A value that names other placeholders does not multiply them.
        let input = format!(
            "---\nX: {}\nY: {}\n---\n",
            "{{Y}}".repeat(1000),
            "z".repeat(1000)
        );
        let out = render("{{X}}{{Y}}", &input, &Values::new()).unwrap();
        assert_eq!(out.len(), 5 * 1000 + 1000);
    }

    #[test]
    fn render_names_the_missing_placeholder() {
        let t = "Request: {{USER_REQUEST}}\nPlan: {{PLAN}}";
        let e = render(t, "## PLAN\nx", &Values::new()).unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT");
        assert!(e.to_string().contains("USER_REQUEST"), "{e}");
        let ok = render(
            t,
            "USER_REQUEST is not front matter\n## PLAN\nx",
            &Values::new(),
        );
        // The unnamed text fills the one missing placeholder.
        assert_eq!(
            ok.unwrap(),
            "Request: USER_REQUEST is not front matter\nPlan: x"
        );
        let one = render("Q: {{QUESTION}}", "Why?", &Values::new()).unwrap();
        assert_eq!(one, "Q: Why?");
    }
}
