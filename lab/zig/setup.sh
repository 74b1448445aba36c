#!/bin/sh
# lab/zig/setup.sh: makes the Zig toolchain available for pk-lab-zig.
#
# Installs the pinned PyPI package `ziglang` (the official Zig binaries,
# run as `python -m ziglang`) into the project's virtual environment,
# /work/main/.venv by default (the repository's .venv; PK_LAB_VENV overrides).
# The lab's setup normally creates that environment; when it is missing, this
# script creates it with `python3 -m venv`.
#
# Idempotent: when the pinned version is already installed it does nothing and
# needs no network. Exits non-zero with one clear line on stderr when Zig
# cannot be made available; the lab then shows the Zig rows as "not
# available" with that line as the reason.
set -u

# The pinned Zig release. build.sh reads this line.
ZIG_VERSION=0.14.1

say() { printf 'zig setup: %s\n' "$*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${PK_LAB_VENV:-$root/.venv}
py=$venv/bin/python

installed_version() {
    [ -x "$py" ] || return 1
    "$py" -m ziglang version 2>/dev/null
}

if [ "$(installed_version)" = "$ZIG_VERSION" ]; then
    exit 0
fi

if [ ! -x "$py" ]; then
    command -v python3 >/dev/null 2>&1 || {
        say "python3 not found: cannot create $venv for the ziglang package"
        exit 1
    }
    say "creating the virtual environment $venv"
    python3 -m venv "$venv" >&2 || {
        say "python3 -m venv $venv failed (on Debian: apt-get install python3-venv)"
        exit 1
    }
fi

say "installing ziglang==$ZIG_VERSION into $venv"
if ! "$py" -m pip install --disable-pip-version-check -q "ziglang==$ZIG_VERSION" >&2; then
    say "pip install ziglang==$ZIG_VERSION failed (no network or no wheel for this platform?)"
    exit 1
fi

v=$(installed_version) || v=
if [ "$v" != "$ZIG_VERSION" ]; then
    say "ziglang installed but 'python -m ziglang version' says '${v:-nothing}', expected $ZIG_VERSION"
    exit 1
fi
exit 0
