#!/usr/bin/env bash
# Builds the release artifacts of mcpmux into dist/ (what users install
# without Rust), then dist/SHA256SUMS. <v> is the workspace version
# (Cargo.toml [workspace.package]), the one place every version comes from.
#
#   mcpmux-<v>-cp310-abi3-manylinux_2_28_x86_64.whl   Python wheel (maturin --zig)
#   mcpmux-<v>.tar.gz                                  Python sdist (checked: builds with maturin)
#   mcpmux-<v>.tgz                                     npm package: JS + types, no install script
#   mcpmux-linux-x64-gnu-<v>.tgz                       npm platform package: the stripped .node
#   libmcpmux-<v>-x86_64-unknown-linux-gnu.tar.gz      C kit: header, .so (soname), .a, pkg-config, CMake
#   mcpmux-cli-<v>-x86_64-unknown-linux-gnu.tar.gz     the mcpmux command
#
# Also builds the demo server into .deps/dist-test/ (not an artifact:
# tests/dist.sh, which runs without cargo, starts it).
#
# Everything is built with the `dist` cargo profile (release, no debug info,
# stripped) into $CARGO_TARGET_DIR (default ./target). Tools go into
# folders of this checkout: maturin, ziglang and auditwheel into
# .deps/dist-venv (pinned by scripts/dist-requirements.txt).
#
# Env: CARGO_TARGET_DIR; DIST_JOBS (cargo -j, default: cargo's choice).
# Linux x86_64 (glibc) only, the one platform the artifacts are named for.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
TARGET=x86_64-unknown-linux-gnu
MANYLINUX=manylinux_2_28
DIST="$ROOT/dist"
STAGE="$CARGO_TARGET_DIR/dist-stage"
OUT="$STAGE/out"
TESTBIN="$ROOT/.deps/dist-test"
VENV="$ROOT/.deps/dist-venv"
JOBS=()
[ -n "${DIST_JOBS:-}" ] && JOBS=(-j "$DIST_JOBS")
# Reproducible archives: every file gets the time of the last commit. Not
# exported: C build scripts (cc) rebuild when SOURCE_DATE_EPOCH changes,
# and with it everything above ring, on every new commit.
EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

step() { printf '\n==> dist: %s\n' "$*"; }
die() { printf 'scripts/dist.sh: error: %s\n' "$*" >&2; exit 1; }

host="$(rustc -vV | sed -n 's/^host: //p')"
[ "$host" = "$TARGET" ] || die "the artifacts are built for $TARGET; this machine is $host"

# ---------------------------------------------------------------- version
VERSION="$(cargo metadata --no-deps --format-version 1 --locked \
  | python3 -c 'import json,sys; print({p["name"]: p["version"] for p in json.load(sys.stdin)["packages"]}["mcpmux-core"])')"
MAJOR="${VERSION%%.*}"
MINOR="$(echo "$VERSION" | cut -d. -f2)"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "unexpected workspace version '$VERSION'"
# package.json cannot read Cargo.toml: it repeats the version, and must agree.
for f in bindings/node/package.json bindings/node/package-lock.json; do
  v="$(node -p "require('./$f').version")"
  [ "$v" = "$VERSION" ] || die "$f has version $v, the workspace (Cargo.toml) has $VERSION"
done
echo "version $VERSION, target $TARGET"

rm -rf "$STAGE"
mkdir -p "$STAGE" "$OUT" "$TESTBIN"

# tar with fixed owners, order and times, gzip without a timestamp.
reprotar() { # reprotar <archive.tar.gz> <dir> <entries...>
  local archive="$1" dir="$2"
  shift 2
  tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner \
    --mtime="@$EPOCH" --format=gnu -cf - "$@" | gzip -n -9 > "$archive"
}

# ---------------------------------------------------------------- tools
step "tools into .deps/dist-venv (scripts/dist-requirements.txt)"
stamp="$VENV/.mcpmux-dist.sha256"
want="$(sha256sum scripts/dist-requirements.txt | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet -r scripts/dist-requirements.txt
  echo "$want" > "$stamp"
else
  echo "up to date"
fi

# ---------------------------------------------------------------- Rust builds
step "cargo build --profile dist: mcpmux, libmcpmux, the Node addon, the demo server"
# One cargo invocation for the four, so that their dependencies are built
# once with one feature set. MCPMUX_FFI_SONAME=1: ffi/build.rs links
# libmcpmux.so with the soname libmcpmux.so.<major> (only here: the tests
# link the library of target/debug by its plain name).
MCPMUX_FFI_SONAME=1 cargo build --locked --profile dist "${JOBS[@]}" \
  -p mcpmux-cli -p mcpmux-ffi -p mcpmux-node -p mcpmux-demo-server
BUILD="$CARGO_TARGET_DIR/dist"
cp "$BUILD/mcpmux-demo-server" "$TESTBIN/mcpmux-demo-server"

# The system libraries a static link of libmcpmux.a needs: those of the Rust
# standard library (mcpmux's dependencies link none), as rustc reports them
# for a staticlib.
echo '' > "$STAGE/empty.rs"
NATIVE_LIBS="$(rustc --edition 2021 --crate-type staticlib --print native-static-libs \
  -o "$STAGE/libempty.a" "$STAGE/empty.rs" 2>&1 | sed -n 's/.*native-static-libs: //p' \
  | tr ' ' '\n' | grep -vx -- '-lc' | awk 'NF && !seen[$0]++' | paste -sd' ')"
[ -n "$NATIVE_LIBS" ] || die "rustc printed no native-static-libs"
soname="$(readelf -d "$BUILD/libmcpmux.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = "libmcpmux.so.$MAJOR" ] || die "libmcpmux.so has soname '$soname', want libmcpmux.so.$MAJOR"
echo "static link needs: $NATIVE_LIBS"

# ---------------------------------------------------------------- Python
step "wheel: maturin build --zig --compatibility $MANYLINUX"
# --zig links against glibc 2.28 symbols whatever this machine's glibc is.
# SOURCE_DATE_EPOCH: the zip's file times (a byte-identical wheel per commit).
SOURCE_DATE_EPOCH="$EPOCH" PATH="$VENV/bin:$PATH" maturin build --locked --profile dist "${JOBS[@]}" --zig \
  --compatibility "$MANYLINUX" \
  -m bindings/python/Cargo.toml --out "$STAGE/wheel"
WHEEL="mcpmux-$VERSION-cp310-abi3-${MANYLINUX}_x86_64.whl"
[ -f "$STAGE/wheel/$WHEEL" ] || die "maturin did not write $WHEEL: $(ls "$STAGE/wheel")"
"$VENV/bin/auditwheel" show "$STAGE/wheel/$WHEEL" | tee "$STAGE/auditwheel.txt"
grep -q "\"${MANYLINUX}_x86_64\"" "$STAGE/auditwheel.txt" \
  || die "auditwheel does not agree with the tag ${MANYLINUX}_x86_64"
cp "$STAGE/wheel/$WHEEL" "$OUT/"

step "sdist: maturin sdist, then a wheel built from it"
PATH="$VENV/bin:$PATH" maturin sdist -m bindings/python/Cargo.toml --out "$STAGE/sdist"
SDIST="mcpmux-$VERSION.tar.gz"
[ -f "$STAGE/sdist/$SDIST" ] || die "maturin did not write $SDIST: $(ls "$STAGE/sdist")"
# What `pip install mcpmux-<v>.tar.gz` does, with the venv's maturin (no
# download) and the dev profile (the check is that it builds; the target
# dir's dependencies are reused). --offline, not --locked: the sdist's
# workspace has fewer members, so cargo drops their entries from the
# Cargo.lock it carries (the versions stay those of the lock).
PATH="$VENV/bin:$PATH" MATURIN_PEP517_ARGS="--offline --profile dev" \
  "$VENV/bin/pip" wheel --quiet --no-deps --no-build-isolation \
  "$STAGE/sdist/$SDIST" -w "$STAGE/sdist-wheel"
ls "$STAGE/sdist-wheel"/mcpmux-"$VERSION"-*.whl >/dev/null || die "the sdist did not build a wheel"
cp "$STAGE/sdist/$SDIST" "$OUT/"

# ---------------------------------------------------------------- npm
step "npm: mcpmux-linux-x64-gnu (the addon) and mcpmux (JS + types)"
NODE_FILE="mcpmux.linux-x64-gnu.node"
PLAT="$STAGE/npm/mcpmux-linux-x64-gnu"
MAIN="$STAGE/npm/mcpmux"
mkdir -p "$PLAT" "$MAIN"
cp "$BUILD/libmcpmux_node.so" "$PLAT/$NODE_FILE"
cp LICENSE "$PLAT/"
cp LICENSE "$MAIN/"
# The JavaScript files of the package (also its `files` list below): the
# API, the loader, and the framework adapters (mcpmux/ai-sdk, mcpmux/openai-agents).
NODE_JS_FILES="index.js index.mjs index.d.ts native.js adapters.js ai-sdk.mjs ai-sdk.d.ts openai-agents.js openai-agents.mjs openai-agents.d.ts"
for f in $NODE_JS_FILES README.md; do cp "bindings/node/$f" "$MAIN/"; done
# The manifests are made from bindings/node/package.json: the published
# package has no scripts (so no install script) and no devDependencies, and
# names the platform package (napi-rs convention: npm installs the one
# whose os/cpu/libc match; native.js requires it).
VERSION="$VERSION" NODE_FILE="$NODE_FILE" PLAT="$PLAT" MAIN="$MAIN" NODE_JS_FILES="$NODE_JS_FILES" node - <<'EOF'
const fs = require('node:fs')
const path = require('node:path')
const src = require(path.resolve('bindings/node/package.json'))
const { VERSION, NODE_FILE, PLAT, MAIN } = process.env
const write = (dir, obj) => fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(obj, null, 2) + '\n')
const main = { ...src, version: VERSION }
delete main.scripts
delete main.devDependencies
main.files = [...process.env.NODE_JS_FILES.split(' '), 'README.md', 'LICENSE']
main.optionalDependencies = { 'mcpmux-linux-x64-gnu': VERSION }
write(MAIN, main)
write(PLAT, {
  name: 'mcpmux-linux-x64-gnu',
  version: VERSION,
  description: `The native addon of the mcpmux package for Linux x64 (glibc). Install mcpmux, not this.`,
  license: src.license,
  repository: src.repository,
  os: ['linux'],
  cpu: ['x64'],
  libc: ['glibc'],
  main: NODE_FILE,
  files: [NODE_FILE, 'README.md', 'LICENSE'],
  engines: src.engines,
})
fs.writeFileSync(path.join(PLAT, 'README.md'),
  `# mcpmux-linux-x64-gnu\n\nThe prebuilt native addon of [mcpmux](https://www.npmjs.com/package/mcpmux) ${VERSION} ` +
  `for Linux x64 with glibc. \`npm install mcpmux\` installs it; it is of no use alone.\n`)
EOF
for dir in "$PLAT" "$MAIN"; do
  (cd "$dir" && npm pack --ignore-scripts --silent --pack-destination "$OUT" >/dev/null)
done
for f in "mcpmux-$VERSION.tgz" "mcpmux-linux-x64-gnu-$VERSION.tgz"; do
  [ -f "$OUT/$f" ] || die "npm pack did not write $f"
done
if tar -tzf "$OUT/mcpmux-$VERSION.tgz" | grep -E '\.(rs|node)$|Cargo\.toml'; then
  die "mcpmux-$VERSION.tgz carries Rust sources or a binary"
fi

# ---------------------------------------------------------------- C kit
step "C kit: libmcpmux-$VERSION-$TARGET.tar.gz"
# Written here rather than with cargo-c (`cargo cinstall`): cargo-c links
# cargo itself as a library, about 350 crates (its Cargo.lock: 84 KB, this
# workspace's: 62 KB for 256) including C builds of libgit2, curl, SQLite
# and nghttp2 and a system OpenSSL, compiled before the first artifact on
# every cold CI cache, to write eight files whose layout is plain (below).
KIT="$STAGE/kit"
mkdir -p "$KIT/include" "$KIT/lib/pkgconfig" "$KIT/lib/cmake/mcpmux" "$KIT/share/doc/mcpmux"
cp include/mcpmux.h "$KIT/include/"
cp "$BUILD/libmcpmux.so" "$KIT/lib/libmcpmux.so.$VERSION"
ln -s "libmcpmux.so.$VERSION" "$KIT/lib/libmcpmux.so.$MAJOR"
ln -s "libmcpmux.so.$MAJOR" "$KIT/lib/libmcpmux.so"
cp "$BUILD/libmcpmux.a" "$KIT/lib/"
strip --strip-debug "$KIT/lib/libmcpmux.a"
cp LICENSE README.md "$KIT/share/doc/mcpmux/"
# pkg-config: the prefix is found from the .pc file's own place, so the kit
# works wherever it is unpacked.
cat > "$KIT/lib/pkgconfig/mcpmux.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: mcpmux
Description: Connect a host application to Model Context Protocol (MCP) servers
URL: https://github.com/mcpmux/mcpmux
Version: $VERSION
Cflags: -I\${includedir}
Libs: -L\${libdir} -lmcpmux
Libs.private: $NATIVE_LIBS
EOF
# CMake: imported targets with paths relative to the config file.
cmake_libs="Threads::Threads"
for l in $NATIVE_LIBS; do
  case "$l" in -lpthread) ;; -l*) cmake_libs="$cmake_libs;${l#-l}" ;; esac
done
cat > "$KIT/lib/cmake/mcpmux/mcpmuxConfig.cmake" <<EOF
# CMake package of mcpmux $VERSION: find_package(mcpmux CONFIG REQUIRED), then
# link mcpmux::mcpmux (libmcpmux.so) or mcpmux::mcpmux_static (libmcpmux.a).
# Paths are relative to this file (<prefix>/lib/cmake/mcpmux).
include(CMakeFindDependencyMacro)
find_dependency(Threads)
get_filename_component(_mcpmux_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET mcpmux::mcpmux)
  add_library(mcpmux::mcpmux SHARED IMPORTED)
  set_target_properties(mcpmux::mcpmux PROPERTIES
    IMPORTED_LOCATION "\${_mcpmux_prefix}/lib/libmcpmux.so.$VERSION"
    IMPORTED_SONAME "libmcpmux.so.$MAJOR"
    INTERFACE_INCLUDE_DIRECTORIES "\${_mcpmux_prefix}/include")
endif()

if(NOT TARGET mcpmux::mcpmux_static)
  add_library(mcpmux::mcpmux_static STATIC IMPORTED)
  set_target_properties(mcpmux::mcpmux_static PROPERTIES
    IMPORTED_LOCATION "\${_mcpmux_prefix}/lib/libmcpmux.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "\${_mcpmux_prefix}/include"
    INTERFACE_LINK_LIBRARIES "$cmake_libs")
endif()

unset(_mcpmux_prefix)
set(mcpmux_VERSION "$VERSION")
EOF
cat > "$KIT/lib/cmake/mcpmux/mcpmuxConfigVersion.cmake" <<EOF
# Version check of the mcpmux CMake package. $VERSION satisfies a request
# that is not newer and has the same major version (for 0.x the same minor
# too: 0.x minor versions may change the API), on a 64-bit build.
set(PACKAGE_VERSION "$VERSION")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(NOT "\${PACKAGE_FIND_VERSION}" STREQUAL "")
  if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif(NOT "\${PACKAGE_FIND_VERSION_MAJOR}" STREQUAL "$MAJOR")
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif("$MAJOR" STREQUAL "0" AND NOT "\${PACKAGE_FIND_VERSION_MINOR}" STREQUAL "$MINOR")
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(NOT "\${CMAKE_SIZEOF_VOID_P}" STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF
reprotar "$OUT/libmcpmux-$VERSION-$TARGET.tar.gz" "$KIT" include lib share

# ---------------------------------------------------------------- CLI
step "CLI: mcpmux-cli-$VERSION-$TARGET.tar.gz"
CLI_NAME="mcpmux-cli-$VERSION-$TARGET"
mkdir -p "$STAGE/cli/$CLI_NAME"
cp "$BUILD/mcpmux" README.md LICENSE "$STAGE/cli/$CLI_NAME/"
reprotar "$OUT/$CLI_NAME.tar.gz" "$STAGE/cli" "$CLI_NAME"

# ---------------------------------------------------------------- dist/
step "dist/ and SHA256SUMS"
rm -rf "$DIST"
mkdir -p "$DIST"
cp "$OUT"/* "$DIST/"
(cd "$DIST" && sha256sum -- * > SHA256SUMS)
(cd "$DIST" && ls -l --block-size=K)
