#!/usr/bin/env bash
# Tests the release artifacts of dist/ (made by scripts/dist.sh) the way
# users install them, on a PATH without cargo and rustc:
#
#   0. dist/ holds exactly the six artifacts and SHA256SUMS, which verifies;
#      every artifact carries LICENSE; the versions agree: the workspace
#      (Cargo.toml), both package.json files and the optionalDependencies
#      entry, the wheel (name, metadata, mcpmux.__version__), the header's
#      MCPMUX_VERSION_* macros, mcpmux_version() of the library, the addon's
#      version and `mcpmux --version`;
#   1. Python: a fresh venv, `pip install dist/mcpmux-*.whl`, the examples of
#      examples/python and a smoke test of Hub, AsyncHub, Sessions and an
#      error code against the demo server;
#   2. Node: a fresh npm project, `npm install ./mcpmux-linux-x64-gnu-<v>.tgz
#      ./mcpmux-<v>.tgz`, require and import, the examples of examples/node;
#   3. C: the kit unpacked into a temporary prefix; examples/c/hello.c built
#      with `pkg-config --cflags --libs mcpmux` and with examples/c/CMakeLists.txt
#      (find_package(mcpmux CONFIG REQUIRED), shared and static), and run;
#   4. CLI: the archive unpacked, `mcpmux --version`, `mcpmux servers` on
#      examples/mcpmux.toml.
#
# The demo server the tests start is the one scripts/dist.sh built into
# .deps/dist-test/ (or $MCPMUX_DEMO_SERVER): a prebuilt binary, not an
# artifact. Needs python3 (>= 3.10), node and npm (>= 20), cc, pkg-config and
# cmake; when cmake is missing it is installed with apt-get (Debian/Ubuntu
# CI). Everything else goes into a temporary directory, removed at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DIST="$ROOT/dist"
TARGET=x86_64-unknown-linux-gnu
export PIP_DISABLE_PIP_VERSION_CHECK=1

step() { printf '\n==> dist test: %s\n' "$*"; }
die() { printf 'tests/dist.sh: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- no Rust
# Drop every PATH entry that holds cargo or rustc, so nothing below can
# build from source by accident.
clean_path=""
IFS=: read -ra entries <<< "$PATH"
for dir in "${entries[@]}"; do
  [ -n "$dir" ] || continue
  if [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ]; then
    case "$dir" in /usr/bin|/bin) die "cargo or rustc is in $dir, which cannot be left out of PATH" ;; esac
    continue
  fi
  clean_path="${clean_path:+$clean_path:}$dir"
done
export PATH="$clean_path"
export CARGO=/nonexistent/cargo RUSTC=/nonexistent/rustc CARGO_HOME=/nonexistent RUSTUP_HOME=/nonexistent
! command -v cargo >/dev/null && ! command -v rustc >/dev/null || die "cargo or rustc is still on PATH"
echo "PATH without cargo and rustc: $PATH"

# ---------------------------------------------------------------- dist/
[ -d "$DIST" ] || die "no dist/: run bash scripts/dist.sh first"
VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
[ -n "$VERSION" ] || die "no version in Cargo.toml [workspace.package]"
MAJOR="${VERSION%%.*}"
WHEEL="mcpmux-$VERSION-cp310-abi3-manylinux_2_28_x86_64.whl"
SDIST="mcpmux-$VERSION.tar.gz"
NPM_MAIN="mcpmux-$VERSION.tgz"
NPM_PLAT="mcpmux-linux-x64-gnu-$VERSION.tgz"
KIT="libmcpmux-$VERSION-$TARGET.tar.gz"
CLI="mcpmux-cli-$VERSION-$TARGET.tar.gz"
DEMO="${MCPMUX_DEMO_SERVER:-$ROOT/.deps/dist-test/mcpmux-demo-server}"
[ -x "$DEMO" ] || die "no demo server at $DEMO (scripts/dist.sh builds it)"
export MCPMUX_DEMO_SERVER="$DEMO"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpmux-dist-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

step "dist/: the artifacts, SHA256SUMS"
want="$(printf '%s\n' SHA256SUMS "$WHEEL" "$SDIST" "$NPM_MAIN" "$NPM_PLAT" "$KIT" "$CLI" | sort)"
have="$(ls "$DIST" | sort)"
[ "$want" = "$have" ] || die "dist/ holds
$have
but should hold
$want"
(cd "$DIST" && sha256sum --quiet -c SHA256SUMS) || die "dist/SHA256SUMS does not verify"
(cd "$DIST" && ls -l --block-size=K -- *.whl *.tar.gz *.tgz)

# Unpacked once, used by the version checks and the tests below.
mkdir -p "$WORK/npm-main" "$WORK/npm-plat" "$WORK/prefix" "$WORK/cli" "$WORK/sdist"
tar -xzf "$DIST/$NPM_MAIN" -C "$WORK/npm-main"
tar -xzf "$DIST/$NPM_PLAT" -C "$WORK/npm-plat"
tar -xzf "$DIST/$KIT" -C "$WORK/prefix"
tar -xzf "$DIST/$CLI" -C "$WORK/cli"
tar -xzf "$DIST/$SDIST" -C "$WORK/sdist"
PREFIX="$WORK/prefix"
MCPMUX_BIN="$WORK/cli/mcpmux-cli-$VERSION-$TARGET/mcpmux"

step "LICENSE in every artifact"
python3 - "$DIST/$WHEEL" <<'EOF' || die "the wheel has no LICENSE"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
EOF
for f in "npm-main/package/LICENSE" "npm-plat/package/LICENSE" "prefix/share/doc/mcpmux/LICENSE" \
  "cli/mcpmux-cli-$VERSION-$TARGET/LICENSE" "sdist/mcpmux-$VERSION/LICENSE"; do
  cmp -s "$WORK/$f" LICENSE || die "$f is missing or is not the repository's LICENSE"
done
echo "ok"

# ---------------------------------------------------------------- versions
step "versions agree with the workspace ($VERSION)"
mismatch=0
check_version() { # check_version <what> <version found>
  if [ "$2" = "$VERSION" ]; then
    printf '  %-48s %s\n' "$1" "$2"
  else
    printf '  %-48s %s   <- the workspace has %s\n' "$1" "$2" "$VERSION" >&2
    mismatch=1
  fi
}
pkg_field() { node -p "require('$1')$2"; }
check_version "npm mcpmux: package.json version" "$(pkg_field "$WORK/npm-main/package/package.json" .version)"
check_version "npm mcpmux: optionalDependencies" \
  "$(pkg_field "$WORK/npm-main/package/package.json" ".optionalDependencies['mcpmux-linux-x64-gnu']")"
check_version "npm mcpmux-linux-x64-gnu: package.json version" "$(pkg_field "$WORK/npm-plat/package/package.json" .version)"
check_version "wheel: METADATA Version" "$(python3 - "$DIST/$WHEEL" <<'EOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
print(next(l.split(":", 1)[1].strip() for l in z.read(meta).decode().splitlines() if l.startswith("Version:")))
EOF
)"
check_version "sdist: PKG-INFO Version" "$(sed -n 's/^Version: //p' "$WORK/sdist/mcpmux-$VERSION/PKG-INFO")"
cat > "$WORK/version.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include "mcpmux.h"
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "macros") == 0)
        printf("%d.%d.%d\n", MCPMUX_VERSION_MAJOR, MCPMUX_VERSION_MINOR, MCPMUX_VERSION_PATCH);
    else if (argc > 1 && strcmp(argv[1], "string") == 0)
        printf("%s\n", MCPMUX_VERSION);
    else
        printf("%s\n", mcpmux_version());
    return 0;
}
EOF
cc -std=c99 -Wall -Werror -I"$PREFIX/include" "$WORK/version.c" -L"$PREFIX/lib" -Wl,-rpath,"$PREFIX/lib" \
  -lmcpmux -o "$WORK/version"
check_version "mcpmux.h: MCPMUX_VERSION_MAJOR/MINOR/PATCH" "$("$WORK/version" macros)"
check_version "mcpmux.h: MCPMUX_VERSION" "$("$WORK/version" string)"
check_version "libmcpmux.so: mcpmux_version()" "$("$WORK/version")"
check_version "mcpmux --version" "$("$MCPMUX_BIN" --version | sed -n 's/^mcpmux //p')"
check_version "mcpmux.linux-x64-gnu.node: engine version" \
  "$(node -p "require('$WORK/npm-plat/package/mcpmux.linux-x64-gnu.node').engineVersion()")"
[ "$mismatch" = 0 ] || die "versions disagree (see above): every version comes from Cargo.toml [workspace.package]"

# ---------------------------------------------------------------- Python
step "Python: fresh venv, pip install dist/$WHEEL"
python3 -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install --quiet --no-index "$DIST/$WHEEL"
# Run from the temporary directory, so that the repository's Python sources
# cannot be imported instead of the installed package.
(cd "$WORK" && "$PY" - "$VERSION" <<'EOF'
import asyncio, json, os, sys, tempfile
from importlib.metadata import version
import mcpmux

want = sys.argv[1]
assert mcpmux.__version__ == want, mcpmux.__version__
assert version("mcpmux") == want, version("mcpmux")
native = mcpmux._native.__file__
assert "site-packages" in native and native.endswith(".abi3.so"), native
config = {"mcpServers": {"demo": {"command": os.environ["MCPMUX_DEMO_SERVER"]}}}

with mcpmux.Hub.connect(config) as hub:
    assert [s["state"] for s in hub.servers()] == ["connected"], hub.servers()
    result = hub.call_tool("mcp_demo_echo", {"text": "from the wheel"})
    assert result["content"][0]["text"] == "from the wheel", result
    try:
        hub.call_tool("mcp_demo_no_such_tool", {})
        raise AssertionError("an unknown tool did not raise")
    except mcpmux.UnknownTool as err:
        assert err.code == "UNKNOWN_TOOL", err.code

async def async_hub():
    async with mcpmux.AsyncHub.connect(config) as hub:
        results = await asyncio.gather(*(hub.call_tool("mcp_demo_add", {"a": i, "b": 1}) for i in range(8)))
        assert all(not r.get("isError") for r in results), results
        try:
            await hub.call_tool("mcp_demo_slow", {"seconds": 5}, timeout=0.2)
            raise AssertionError("a slow call did not time out")
        except mcpmux.Timeout as err:
            assert err.code == "TIMEOUT", err.code
asyncio.run(async_hub())

def reviewer(request):
    return 'Fine.\n\n```json\n{"verdict": "APPROVE", "blocks": []}\n```\n'
sessions = mcpmux.Sessions({"session": {"max_turns": 2}}, host=reviewer)
with tempfile.TemporaryDirectory() as work:
    begun = sessions.begin(skill="review-plan", reviewer="host", input="---\nUSER_REQUEST: Print a greeting\n---\n## PLAN\n1. Add hello.py.\n", working_dir=work)
    status = sessions.wait(begun["session_dir"], max_wait_seconds=60)
    assert status["status"] != "running" and status["review"]["verdict"] == "APPROVE", status
    assert sessions.end(begun["session_dir"])["status"] == "ended"
print("Hub, AsyncHub, Sessions, UNKNOWN_TOOL, TIMEOUT: ok")
EOF
)
for example in examples/python/*.py; do
  echo "--- $example"
  (cd "$WORK" && "$PY" "$ROOT/$example")
done

# ---------------------------------------------------------------- Node
step "Node: fresh npm project, npm install ./$NPM_PLAT ./$NPM_MAIN"
project="$WORK/node-project"
mkdir -p "$project"
cp "$DIST/$NPM_PLAT" "$DIST/$NPM_MAIN" "$project/"
cat > "$project/package.json" <<'EOF'
{ "name": "mcpmux-dist-check", "version": "1.0.0", "private": true }
EOF
(cd "$project" && npm install --no-audit --no-fund --offline "./$NPM_PLAT" "./$NPM_MAIN")
[ ! -e "$project/node_modules/mcpmux/scripts" ] && ! ls "$project"/node_modules/mcpmux/*.node >/dev/null 2>&1 \
  || die "the mcpmux package carries scripts or a .node file"
[ -f "$project/node_modules/mcpmux-linux-x64-gnu/mcpmux.linux-x64-gnu.node" ] \
  || die "the platform package did not install its addon"
(cd "$project" && node -e '
  const mcpmux = require("mcpmux")
  const { Hub, McpmuxError } = mcpmux
  if (mcpmux.version !== process.argv[1]) throw new Error(`version ${mcpmux.version}`)
  Hub.connect({ mcpServers: { demo: { command: process.env.MCPMUX_DEMO_SERVER } } }).then(async (hub) => {
    const r = await hub.callTool("mcp_demo_echo", { text: "installed" })
    if (r.content[0].text !== "installed") throw new Error("bad result " + JSON.stringify(r))
    await hub.callTool("nope").then(() => { throw new Error("an unknown tool resolved") },
      (e) => { if (!(e instanceof McpmuxError) || e.code !== "UNKNOWN_TOOL") throw e })
    await hub.close()
    console.log("require(\"mcpmux\"): ok")
  })
' "$VERSION" && node --input-type=module -e '
  import { Hub } from "mcpmux"
  const hub = await Hub.connect({ mcpServers: { demo: { command: process.env.MCPMUX_DEMO_SERVER } } })
  const r = await hub.callTool("mcp_demo_echo", { text: "esm" })
  if (r.content[0].text !== "esm") throw new Error("bad result")
  await hub.close()
  console.log("import { Hub } from \"mcpmux\": ok")
' && node --input-type=module -e '
  import { HubMCPServer } from "mcpmux/openai-agents"
  import { tools } from "mcpmux/ai-sdk"
  if (typeof HubMCPServer !== "function" || typeof tools !== "function") throw new Error("adapters missing")
  console.log("mcpmux/openai-agents, mcpmux/ai-sdk: ok")
')
cp examples/node/*.mjs examples/node/*.cjs "$project/"
for example in examples/node/*.mjs examples/node/*.cjs; do
  echo "--- $example"
  (cd "$project" && node "$(basename "$example")")
done

# ---------------------------------------------------------------- C
step "C kit: unpacked into a temporary prefix"
for f in include/mcpmux.h "lib/libmcpmux.so.$VERSION" lib/libmcpmux.a lib/pkgconfig/mcpmux.pc \
  lib/cmake/mcpmux/mcpmuxConfig.cmake lib/cmake/mcpmux/mcpmuxConfigVersion.cmake; do
  [ -f "$PREFIX/$f" ] || die "the C kit has no $f"
done
[ "$(readlink "$PREFIX/lib/libmcpmux.so.$MAJOR")" = "libmcpmux.so.$VERSION" ] || die "libmcpmux.so.$MAJOR is not a link to libmcpmux.so.$VERSION"
[ "$(readlink "$PREFIX/lib/libmcpmux.so")" = "libmcpmux.so.$MAJOR" ] || die "libmcpmux.so is not a link to libmcpmux.so.$MAJOR"
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
run_hello() { # run_hello <binary>: calls the demo server's echo tool through the C ABI
  "$1" examples/mcpmux.toml > "$WORK/hello.out" || { cat "$WORK/hello.out"; die "$1 failed"; }
  grep -q 'hello from C' "$WORK/hello.out" || { cat "$WORK/hello.out"; die "$1 printed no tool result"; }
  echo "$(basename "$1"): $(grep -m1 '^mcpmux ' "$WORK/hello.out"), tool result ok"
}

echo "--- pkg-config --cflags --libs mcpmux"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
flags="$(pkg-config --cflags --libs mcpmux)"
echo "$flags"
cc -std=c99 -Wall -Werror examples/c/hello.c $flags -Wl,-rpath,"$(pkg-config --variable=libdir mcpmux)" \
  -o "$WORK/hello-pkgconfig"
needed "$WORK/hello-pkgconfig" | grep -qx "libmcpmux.so.$MAJOR" || die "hello-pkgconfig does not need libmcpmux.so.$MAJOR"
run_hello "$WORK/hello-pkgconfig"

echo "--- cmake: find_package(mcpmux CONFIG REQUIRED)"
if ! command -v cmake >/dev/null; then
  echo "cmake is missing: apt-get install cmake"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null
fi
cmake -S examples/c -B "$WORK/cmake-build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/cmake-build" >/dev/null
needed "$WORK/cmake-build/hello" | grep -qx "libmcpmux.so.$MAJOR" || die "cmake's hello does not need libmcpmux.so.$MAJOR"
! needed "$WORK/cmake-build/hello_static" | grep -q libmcpmux || die "cmake's hello_static needs libmcpmux.so"
run_hello "$WORK/cmake-build/hello"
run_hello "$WORK/cmake-build/hello_static"

# ---------------------------------------------------------------- CLI
step "CLI: $CLI"
"$MCPMUX_BIN" --version
"$MCPMUX_BIN" --config examples/mcpmux.toml servers | tee "$WORK/servers.out"
grep -q demo "$WORK/servers.out" && grep -q connected "$WORK/servers.out" || die "mcpmux servers did not list the demo server as connected"

step "dist artifacts: all passed"
