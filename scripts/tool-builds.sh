#!/usr/bin/env bash
# The Valgrind and ASan tool builds on seeded bugs (tests/tools/run.sh):
#
#   scripts/tool-builds.sh [BUILD_DIR]      (default: build-tools)
#
# Compiles the library with -DPOOLKIT_VALGRIND (gcc) and with -DPOOLKIT_ASAN
# -fsanitize=address (clang) into BUILD_DIR, and checks that memcheck and
# ASan report a seeded use after free, leak and double free of pool objects
# and stay quiet on correct programs. Last line: "N passed, M failed"; exit
# status 1 if anything failed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
exec "$root/tests/tools/run.sh" "${1:-build-tools}"
