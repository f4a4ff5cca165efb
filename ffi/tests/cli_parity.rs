//! The JSON that the C ABI returns is what `mcpmux --json` prints: the same
//! servers, tools, tool formats, resources and prompts (compared as JSON
//! values; the CLI pretty-prints, the C ABI writes compact JSON) and the
//! same raw CallToolResult text, byte for byte. Drives the exported
//! functions from Rust through the rlib.

mod common;

use std::ffi::{c_char, CStr, CString};
use std::path::Path;
use std::process::Command;
use std::ptr::null_mut;

use mcpmux::engine::{mcpmux_engine_free, mcpmux_engine_new};
use mcpmux::error::{mcpmux_error_code, mcpmux_error_free, mcpmux_error_message};
use mcpmux::hub::*;
use mcpmux::{mcpmux_engine, mcpmux_error, mcpmux_hub, mcpmux_status, mcpmux_string_free};
use serde_json::Value;

use common::*;

/// Takes a C result: the string on OK, a panic with the error otherwise.
fn take(status: mcpmux_status, out: *mut c_char, err: *mut mcpmux_error) -> String {
    // SAFETY: pointers from mcpmux, freed once here.
    unsafe {
        if status != mcpmux_status::MCPMUX_STATUS_OK {
            let code = CStr::from_ptr(mcpmux_error_code(err))
                .to_string_lossy()
                .into_owned();
            let msg = CStr::from_ptr(mcpmux_error_message(err))
                .to_string_lossy()
                .into_owned();
            mcpmux_error_free(err);
            panic!("{status:?}: {code}: {msg}");
        }
        let text = CStr::from_ptr(out).to_str().unwrap().to_owned();
        mcpmux_string_free(out);
        text
    }
}

fn cli_json(config: &Path, args: &[&str]) -> String {
    let out = Command::new(cli())
        .arg("--config")
        .arg(config)
        .arg("--json")
        .args(args)
        .output()
        .expect("run mcpmux");
    assert!(
        out.status.success(),
        "mcpmux {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn c_json_is_what_the_cli_prints() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcpmux.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp.servers]]\nname = \"demo\"\ncommand = \"{}\"\n\n\
             [[mcp.servers]]\nname = \"off\"\ncommand = \"true\"\nenabled = false\n\n\
             [[mcp.servers]]\nname = \"missing\"\ncommand = \"/nonexistent/mcpmux-no-such-server\"\n",
            demo_server().display()
        ),
    )
    .unwrap();
    let path = CString::new(config.to_str().unwrap()).unwrap();

    let mut engine: *mut mcpmux_engine = null_mut();
    let mut hub: *mut mcpmux_hub = null_mut();
    let mut err: *mut mcpmux_error = null_mut();
    // SAFETY: valid out-parameters; every handle is freed below.
    unsafe {
        assert_eq!(
            mcpmux_engine_new(null_mut(), &mut engine, &mut err),
            mcpmux_status::MCPMUX_STATUS_OK
        );
        let st = mcpmux_hub_connect_file(engine, path.as_ptr(), &mut hub, &mut err);
        assert_eq!(st, mcpmux_status::MCPMUX_STATUS_OK);

        let mut out: *mut c_char = null_mut();
        let servers = take(mcpmux_hub_servers(hub, &mut out, &mut err), out, err);
        assert!(!servers.contains('\n'), "compact JSON");
        assert_eq!(value(&servers), value(&cli_json(&config, &["servers"])));

        let tools = take(mcpmux_hub_list_tools(hub, &mut out, &mut err), out, err);
        assert_eq!(value(&tools), value(&cli_json(&config, &["tools"])));

        for format in ["anthropic", "openai", "openai-responses", "mcp"] {
            let f = CString::new(format).unwrap();
            let rendered = take(
                mcpmux_hub_tools_for(hub, f.as_ptr(), &mut out, &mut err),
                out,
                err,
            );
            assert_eq!(
                value(&rendered),
                value(&cli_json(&config, &["tools", "--format", format])),
                "format {format}"
            );
        }

        let name = CString::new("mcp_demo_add").unwrap();
        let args = CString::new(r#"{"a": 2, "b": 40}"#).unwrap();
        let result = take(
            mcpmux_hub_call_tool(
                hub,
                name.as_ptr(),
                args.as_ptr(),
                null_mut(),
                &mut out,
                &mut err,
            ),
            out,
            err,
        );
        let cli = cli_json(&config, &["call", "mcp_demo_add", r#"{"a": 2, "b": 40}"#]);
        assert_eq!(
            result,
            cli.trim_end(),
            "the raw CallToolResult, byte for byte"
        );

        let resources = take(
            mcpmux_hub_list_resources(hub, null_mut(), &mut out, &mut err),
            out,
            err,
        );
        assert_eq!(value(&resources), value(&cli_json(&config, &["resources"])));

        let uri = CString::new("demo://readme").unwrap();
        let read = take(
            mcpmux_hub_read_resource(hub, uri.as_ptr(), null_mut(), &mut out, &mut err),
            out,
            err,
        );
        assert_eq!(
            value(&read),
            value(&cli_json(&config, &["read", "demo://readme"]))
        );

        let prompts = take(
            mcpmux_hub_list_prompts(hub, null_mut(), &mut out, &mut err),
            out,
            err,
        );
        assert_eq!(value(&prompts), value(&cli_json(&config, &["prompts"])));

        let greet = CString::new("greet").unwrap();
        let pargs = CString::new(r#"{"name": "Ada"}"#).unwrap();
        let prompt = take(
            mcpmux_hub_get_prompt(
                hub,
                greet.as_ptr(),
                pargs.as_ptr(),
                null_mut(),
                &mut out,
                &mut err,
            ),
            out,
            err,
        );
        assert_eq!(
            value(&prompt),
            value(&cli_json(
                &config,
                &["prompt", "greet", r#"{"name": "Ada"}"#]
            ))
        );

        mcpmux_hub_free(hub);
        mcpmux_engine_free(engine);
    }
}
