#!/usr/bin/env bash
# Builds poolkit's reference documentation with Doxygen from the public
# headers (include/poolkit/), docs/mainpage.md and the examples.
#
# Usage: scripts/docs.sh [BUILD_DIR]      (default: build)
# Output: BUILD_DIR/docs/html/index.html; the configuration used is
# BUILD_DIR/docs/Doxyfile (from docs/Doxyfile.in).
#
# Doxygen is installed with apt-get when it is missing and we are root;
# otherwise its absence is an error (scripts/setup.sh installs it). Any
# Doxygen warning (an undocumented public name, a bad reference, a parameter
# documented that does not exist), or a public header missing from the main
# page's table, fails the run: the warnings are printed, the exit status is 1.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
out=$build/docs

if ! command -v doxygen >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "docs: installing doxygen (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq doxygen >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get install -y -qq doxygen >/dev/null; }
    fi
    if ! command -v doxygen >/dev/null 2>&1; then
        echo "docs: doxygen not found (Debian: apt-get install doxygen)" >&2
        exit 1
    fi
fi
awk=$(command -v awk)
version=$(sed -n 's/^#define PK_VERSION_STRING "\([^"]*\)".*/\1/p' "$src/include/poolkit/poolkit.h")

mkdir -p "$out"
rm -rf "$out/html" "$out/doxygen-warnings.log"
sed -e "s|@PK_SOURCE@|$src|g" -e "s|@PK_OUTPUT@|$out|g" \
    -e "s|@PK_VERSION@|${version:-unknown}|g" -e "s|@PK_AWK@|$awk|g" \
    "$src/docs/Doxyfile.in" >"$out/Doxyfile"

echo "doxygen $out/Doxyfile   (doxygen $(doxygen --version))"
(cd "$src" && doxygen "$out/Doxyfile")

# The main page's table of headers names every public header (export.h is
# private to the others), so a new header cannot be left out of it.
for h in "$src"/include/poolkit/*.h "$src"/include/poolkit/*.hpp; do
    name=$(basename "$h")
    [ "$name" = export.h ] && continue
    grep -q "^| $name |" "$src/docs/mainpage.md" ||
        echo "docs/mainpage.md:1: warning: the table of headers leaves out $name" \
            >>"$out/doxygen-warnings.log"
done

if [ -s "$out/doxygen-warnings.log" ]; then
    cat "$out/doxygen-warnings.log" >&2
    echo "docs: FAILED: $(grep -c . "$out/doxygen-warnings.log") warning line(s) above" >&2
    exit 1
fi
echo "docs: $out/html/index.html"
