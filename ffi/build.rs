//! Build script: the soname of libmcpmux.so.
//!
//! With `MCPMUX_FFI_SONAME=1` in the environment (scripts/dist.sh sets it
//! for the release kit) the shared library is linked with the soname
//! `libmcpmux.so.<major>`, so that programs record that name and a later
//! compatible library can replace the file. Without it (every other build)
//! there is no soname: the tests link `target/<profile>/libmcpmux.so`
//! directly, where no `libmcpmux.so.<major>` exists.

fn main() {
    println!("cargo:rerun-if-env-changed=MCPMUX_FFI_SONAME");
    let wanted = std::env::var("MCPMUX_FFI_SONAME").is_ok_and(|v| v == "1");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if wanted && linux {
        let major = env!("CARGO_PKG_VERSION_MAJOR");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmcpmux.so.{major}");
    }
}
