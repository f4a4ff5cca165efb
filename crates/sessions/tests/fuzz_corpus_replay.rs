//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`, found by
//! `bash fuzz/run.sh`) through the same entry points the fuzz targets call
//! ([`mcpmux_core::fuzzing`]), on stable: an input that once crashed a
//! target, or broke a property, fails here until it is fixed.

use std::path::Path;

type Entry = fn(&[u8]) -> Result<(), String>;

const TARGETS: &[(&str, Entry)] = &[
    ("jsonrpc_stream", mcpmux_core::fuzzing::jsonrpc_stream),
    ("config_toml", mcpmux_core::fuzzing::config),
    ("config_json", mcpmux_core::fuzzing::config_json),
    ("sse", mcpmux_core::fuzzing::sse),
    ("session_input", mcpmux_sessions::fuzzing::session_input),
    ("redact", mcpmux_policy::fuzzing::redact),
    ("tool_names", mcpmux_core::fuzzing::tool_names),
];

fn replay(target: &str, entry: Entry) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no corpus", dir.display());
    for file in &files {
        let data = std::fs::read(file).unwrap();
        if let Err(problem) = entry(&data) {
            panic!("{target}: {}: {problem}", file.display());
        }
    }
    eprintln!("{target}: {} inputs replayed", files.len());
}

#[test]
fn jsonrpc_stream_corpus() {
    replay(TARGETS[0].0, TARGETS[0].1);
}

#[test]
fn config_toml_corpus() {
    replay(TARGETS[1].0, TARGETS[1].1);
}

#[test]
fn config_json_corpus() {
    replay(TARGETS[2].0, TARGETS[2].1);
}

#[test]
fn sse_corpus() {
    replay(TARGETS[3].0, TARGETS[3].1);
}

#[test]
fn session_input_corpus() {
    replay(TARGETS[4].0, TARGETS[4].1);
}

#[test]
fn redact_corpus() {
    replay(TARGETS[5].0, TARGETS[5].1);
}

#[test]
fn tool_names_corpus() {
    replay(TARGETS[6].0, TARGETS[6].1);
}

/// Every target in `fuzz/fuzz_targets/` is replayed here.
#[test]
fn every_fuzz_target_is_replayed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .collect();
    found.sort();
    let mut known: Vec<String> = TARGETS.iter().map(|(t, _)| (*t).to_owned()).collect();
    known.sort();
    assert_eq!(found, known);
}
