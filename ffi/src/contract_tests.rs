//! The C ABI against core's contract (`mcpmux_core::contract`): every call
//! option is a key `options_json` accepts (and the header documents), its
//! callback a parameter of a function in `include/mcpmux.h`; every policy
//! option is a key mcpmux_policy_new() documents; the search and timeout
//! constants are core's. Fails when the C ABI misses or misnames one.

use mcpmux_core::contract;
use serde_json::{json, Map, Value};

use crate::hub::call_options;
use crate::util::Args;

fn header() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../include/mcpmux.h");
    std::fs::read_to_string(path).expect("include/mcpmux.h")
}

/// A valid value for a property of the call options schema.
fn sample(prop: &Value) -> Value {
    if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match prop["type"]
        .as_array()
        .and_then(|t| t.first())
        .or(prop.get("type"))
    {
        Some(t) if t == "boolean" => json!(true),
        Some(t) if t == "string" => {
            json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        }
        _ => json!(1.5),
    }
}

fn parse(options: Value) -> Result<mcpmux_core::CallOptions, mcpmux_core::Error> {
    let Value::Object(map) = options else {
        unreachable!()
    };
    call_options(Args { func: "test" }, Some(map))
}

#[test]
fn every_call_option_is_an_options_json_key_or_a_callback() {
    let schema = contract::call_options_schema();
    let header = header();
    let mut missing = Vec::new();
    for names in contract::names("call_options").unwrap() {
        let prop = &schema["properties"][&names.field];
        if prop["x-callback"] == true {
            // A callback is a parameter of some function of the header.
            let param = format!(" {},", names.c[0]);
            let declared = header.contains(&format!("mcpmux_progress_fn{param}"));
            if !declared {
                missing.push(format!("callback parameter {}", names.c[0]));
            }
            continue;
        }
        for key in &names.c {
            let mut map = Map::new();
            map.insert(key.clone(), sample(prop));
            if let Err(e) = parse(Value::Object(map)) {
                missing.push(format!("options_json key '{key}': {e}"));
            }
            if !header.contains(&format!("`{key}`")) && !header.contains(&format!("\"{key}\"")) {
                missing.push(format!("header documents '{key}'"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "core has these, the C ABI does not: {missing:?}"
    );
}

#[test]
fn durations_are_capped_by_core() {
    for names in contract::names("call_options").unwrap() {
        for key in names
            .c
            .iter()
            .filter(|k| k.ends_with("_ms") || k.ends_with("_seconds"))
        {
            let over = if key.ends_with("_ms") {
                contract::MAX_TIMEOUT_MS * 2.0
            } else {
                contract::MAX_TIMEOUT_SECONDS * 2.0
            };
            let e = parse(json!({ key.as_str(): over }))
                .err()
                .unwrap_or_else(|| panic!("{key} = {over} was accepted past the cap"));
            assert_eq!(e.code(), "INVALID_INPUT");
            assert!(e.to_string().contains(&format!("'{key}'")), "{e}");
            let at_cap = if key.ends_with("_ms") {
                contract::MAX_TIMEOUT_MS
            } else {
                contract::MAX_TIMEOUT_SECONDS
            };
            assert!(parse(json!({ key.as_str(): at_cap })).is_ok(), "{key}");
        }
    }
    assert_eq!(
        crate::MCPMUX_MAX_TIMEOUT_SECONDS,
        contract::MAX_TIMEOUT_SECONDS
    );
    assert_eq!(
        crate::MCPMUX_SEARCH_DEFAULT_LIMIT as usize,
        contract::SEARCH_DEFAULT_LIMIT
    );
}

#[test]
fn every_policy_option_is_documented_for_mcpmux_policy_new() {
    let header = header();
    let start = header
        .find("Builds a policy for calls on `hub`")
        .expect("mcpmux_policy_new doc");
    let end = start + header[start..].find("mcpmux_policy_new(").unwrap();
    let doc = &header[start..end];
    let missing: Vec<String> = contract::names("policy_options")
        .unwrap()
        .into_iter()
        .flat_map(|n| n.c)
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "mcpmux_policy_new() does not document {missing:?}"
    );
}

#[test]
fn search_takes_query_and_limit() {
    let header = header();
    let start = header
        .find("mcpmux_hub_search_tools(const")
        .expect("declared");
    let decl = &header[start..start + header[start..].find(';').unwrap()];
    for n in contract::names("search").unwrap() {
        let k = &n.c[0];
        assert!(
            decl.contains(&format!(" {k},")) || decl.contains(&format!("*{k},")),
            "{k} missing in {decl}"
        );
    }
}
