//! Every front end lists exactly core's error codes: the Python stubs and
//! classes, Node's `ErrorCode` type, the C header's `mcpmux_status` and the
//! table of `docs/errors.md` (with each code's C status and Python class).
//! Core's codes come from the one table in `core/src/error.rs` (`ALL_CODES`);
//! a code added there and forgotten in one of these files, or a stale code
//! left in one, fails here, naming the file.

use std::collections::BTreeSet;
use std::path::PathBuf;

use mcpmux_core::error::ALL_CODES;

fn repo_file(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// `CONFIG_INVALID` -> `ConfigInvalid` (the Python class names).
fn camel(code: &str) -> String {
    code.split('_')
        .map(|w| {
            let lower = w.to_ascii_lowercase();
            let mut c = lower.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn core_codes() -> BTreeSet<String> {
    ALL_CODES.iter().map(|c| c.to_string()).collect()
}

/// Fails naming the file and what is missing from it or extra in it.
fn assert_same(file: &str, what: &str, expected: &BTreeSet<String>, found: &BTreeSet<String>) {
    let missing: Vec<_> = expected.difference(found).collect();
    let extra: Vec<_> = found.difference(expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{file}: {what} differ from core's ALL_CODES: missing {missing:?}, extra {extra:?}"
    );
}

/// Words that look like codes (upper case, at least one `_` or one of the
/// one-word codes) inside backticks or quotes of `text`.
fn quoted_codes(text: &str, quote: char) -> BTreeSet<String> {
    let one_word: BTreeSet<&str> = ALL_CODES
        .iter()
        .copied()
        .filter(|c| !c.contains('_'))
        .collect();
    text.split(quote)
        .skip(1)
        .step_by(2)
        .filter(|w| {
            !w.is_empty()
                && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                && (w.contains('_') || one_word.contains(w))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn codes_are_unique_and_every_variant_has_one() {
    let set = core_codes();
    assert_eq!(
        set.len(),
        ALL_CODES.len(),
        "duplicate code in {ALL_CODES:?}"
    );
    let samples = [
        mcpmux_core::Error::ConfigInvalid("x".into()),
        mcpmux_core::Error::ServerError {
            code: -1,
            message: "m".into(),
            data: None,
        },
        mcpmux_core::Error::AuthFailed("x".into()),
    ];
    for e in &samples {
        assert!(set.contains(e.code()), "{} not in ALL_CODES", e.code());
        // The std error trait stays implemented (a host's `?` into
        // `Box<dyn Error>` and `source()` keep working).
        let dyn_err: &dyn std::error::Error = e;
        assert!(dyn_err.source().is_none());
    }
}

#[test]
fn python_stubs_list_every_code() {
    let file = "bindings/python/python/mcpmux/__init__.pyi";
    let text = repo_file(file);
    let found: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("class "))
        .filter(|l| l.contains("(McpmuxError"))
        .map(|l| l.split('(').next().unwrap().trim().to_owned())
        .collect();
    let expected: BTreeSet<String> = ALL_CODES.iter().map(|c| camel(c)).collect();
    assert_same(file, "the McpmuxError subclasses", &expected, &found);
}

#[test]
fn python_errors_module_lists_every_code() {
    let file = "bindings/python/python/mcpmux/_errors.py";
    let text = repo_file(file);
    let found: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("code = \""))
        .map(|l| l.trim_end_matches('"').to_owned())
        .collect();
    assert_same(file, "the `code = ...` classes", &core_codes(), &found);
}

#[test]
fn node_types_list_every_code() {
    let file = "bindings/node/index.d.ts";
    let text = repo_file(file);
    let start = text
        .find("export type ErrorCode =")
        .unwrap_or_else(|| panic!("{file}: no `export type ErrorCode`"));
    let found: BTreeSet<String> = text[start..]
        .lines()
        .skip(1)
        .map_while(|l| l.trim().strip_prefix("| '"))
        .map(|l| l.trim_end_matches('\'').to_owned())
        .collect();
    assert_same(file, "the ErrorCode members", &core_codes(), &found);
}

#[test]
fn c_header_lists_every_code_with_its_status_value() {
    let file = "include/mcpmux.h";
    let text = repo_file(file);
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("MCPMUX_STATUS_") else {
            continue;
        };
        let Some((name, value)) = rest.split_once(" = ") else {
            continue;
        };
        if name == "OK" {
            continue;
        }
        let value: usize = value.trim_end_matches(',').parse().unwrap();
        // The status value is the code's place in ALL_CODES, plus one.
        let at = ALL_CODES.iter().position(|c| *c == name);
        assert!(
            at.is_none() || at == Some(value - 1),
            "{file}: MCPMUX_STATUS_{name} = {value}, but ALL_CODES puts it at {}",
            at.unwrap() + 1
        );
        found.insert(name.to_owned());
    }
    assert_same(file, "the mcpmux_status values", &core_codes(), &found);
}

#[test]
fn docs_error_codes_page_lists_every_code() {
    let file = "docs/errors.md";
    let text = repo_file(file);
    let start = text
        .find("\n## Codes\n")
        .unwrap_or_else(|| panic!("{file}: no \"## Codes\" section"));
    let section = &text[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let section = &section[..end];
    let found = quoted_codes(section, '`');
    assert_same(file, "the codes of \"## Codes\"", &core_codes(), &found);
    // Each row: | `CODE` | <C status> (...) | `mcpmux.<PythonClass>` | ...
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let Some(code) = cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')) else {
            continue;
        };
        let Some(at) = ALL_CODES.iter().position(|c| *c == code) else {
            continue;
        };
        let status = cells[2].split_whitespace().next().unwrap_or("");
        assert_eq!(
            status,
            (at + 1).to_string(),
            "{file}: {code} has C status {status:?}, but ALL_CODES puts it at {}",
            at + 1
        );
        let class = format!("`mcpmux.{}`", camel(code));
        assert_eq!(
            cells[3], class,
            "{file}: {code} names Python class {:?}, expected {class}",
            cells[3]
        );
    }
}
