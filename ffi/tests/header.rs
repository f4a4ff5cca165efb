//! The committed header `include/mcpmux.h`: regenerated with cbindgen and
//! compared byte for byte, compiled alone as C99 and as C++ with
//! `-Wall -Werror`, and its version macros checked against Cargo.toml and
//! mcpmux_version().
//!
//! To accept an API change: `MCPMUX_BLESS=1 cargo test -p mcpmux-ffi --test header`,
//! then commit `include/mcpmux.h`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    crate_dir().join("../include/mcpmux.h")
}

/// The header as cbindgen generates it now from ffi/src and ffi/cbindgen.toml.
fn generate() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("ffi/cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen cannot generate the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn committed_header_matches_cbindgen_output() {
    let generated = generate();
    let path = header_path();
    if std::env::var_os("MCPMUX_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("cannot write include/mcpmux.h");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        let show = |text: &str| {
            text.lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "include/mcpmux.h differs from what cbindgen generates from ffi/src, from line {}:\n\
             --- committed\n{}\n+++ generated\n{}\n\
             Run `MCPMUX_BLESS=1 cargo test -p mcpmux-ffi --test header` and commit the header.",
            first + 1,
            show(&committed),
            show(&generated)
        );
    }
}

#[test]
fn header_declares_every_export() {
    let header = std::fs::read_to_string(header_path()).expect("include/mcpmux.h");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(crate_dir().join("src")).unwrap() {
        let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut lines = source.lines();
        while let Some(line) = lines.next() {
            if line.trim() != "#[no_mangle]" {
                continue;
            }
            let decl = lines
                .by_ref()
                .find(|l| l.contains("extern \"C\" fn"))
                .expect("an export after #[no_mangle]");
            let name = decl.split("fn ").nth(1).unwrap().split('(').next().unwrap();
            if !header.contains(&format!("{name}(")) {
                missing.push(name.to_owned());
            }
        }
    }
    assert!(missing.is_empty(), "not in include/mcpmux.h: {missing:?}");
}

/// Compiles `source` with `compiler` and `flags`; panics with its output on failure.
fn compile(compiler: &str, flags: &[&str], source: &Path, out: &Path) {
    let include = crate_dir().join("../include");
    let output = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(&include)
        .arg(source)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        output.status.success(),
        "{compiler} {flags:?} {} failed:\n{}{}",
        source.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn header_compiles_alone_as_c99_and_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("only_header.c");
    std::fs::write(
        &source,
        "#include \"mcpmux.h\"\n#include \"mcpmux.h\" /* the include guard works */\n\
         int only_header(void);\nint only_header(void) { return MCPMUX_STATUS_OK + MCPMUX_VERSION_MAJOR; }\n",
    )
    .unwrap();
    let obj = dir.path().join("only_header.o");
    let c_flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c"];
    compile("cc", &c_flags, &source, &obj);
    for std in ["-std=c++11", "-std=c++17"] {
        let flags = [
            "-x",
            "c++",
            std,
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-c",
        ];
        compile("c++", &flags, &source, &obj);
    }
}

#[test]
fn version_macros_match_cargo_toml_and_the_library() {
    let header = std::fs::read_to_string(header_path()).expect("include/mcpmux.h");
    // The workspace root's Cargo.toml holds the version of every crate.
    let manifest = std::fs::read_to_string(crate_dir().join("../Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .skip_while(|l| l.trim() != "[workspace.package]")
        .find_map(|l| l.trim().strip_prefix("version = "))
        .expect("version in [workspace.package]")
        .trim_matches('"')
        .to_owned();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let parts: Vec<&str> = version.split('.').collect();
    for (name, value) in [
        ("MCPMUX_VERSION_MAJOR", parts[0]),
        ("MCPMUX_VERSION_MINOR", parts[1]),
        ("MCPMUX_VERSION_PATCH", parts[2]),
    ] {
        let line = format!("#define {name} {value}");
        assert!(
            header.lines().any(|l| l == line),
            "the header lacks `{line}`"
        );
    }
    // MCPMUX_VERSION as a C program sees it.
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("version.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n#include \"mcpmux.h\"\nint main(void) { puts(MCPMUX_VERSION); return 0; }\n",
    )
    .unwrap();
    let exe = dir.path().join("version");
    compile("cc", &["-std=c99", "-Wall", "-Werror"], &source, &exe);
    let out = Command::new(&exe).output().expect("run version");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        version,
        "MCPMUX_VERSION"
    );
    // SAFETY: a static NUL-terminated string.
    let lib = unsafe { std::ffi::CStr::from_ptr(mcpmux::mcpmux_version()) };
    assert_eq!(lib.to_str().unwrap(), version);
}
