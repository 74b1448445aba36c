#!/usr/bin/env bash
# scripts/lab-setup.sh: installs what the lab (pk-lab and its report) needs,
# on Debian 12 (bookworm) or a close relative. Idempotent: when everything is
# present it does nothing and needs no network.
#
#   peers     libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev
#             libboost-dev libglib2.0-dev libapr1-dev libtalloc-dev
#             (allocators pk-lab compares; one that cannot be installed
#             becomes a "not available" row, and the lab goes on)
#   realprog  libsqlite3-dev libxml2-dev libjansson-dev libexpat1-dev (the
#             libraries the real-program experiment drives through their
#             allocator hooks), jq libxml2-utils sqlite3 perl python3 (the
#             programs it runs under LD_PRELOAD); a missing one leaves its
#             workload's rows "not available"
#   tools     cmake ninja-build gcc g++ make binutils (the build; a fresh
#             machine has none of them), pkg-config (how the build finds
#             GLib, APR, talloc), python3-venv (the report's virtual
#             environment)
#   .venv     the project's virtual environment (python3 -m venv .venv) with
#             lab/requirements.txt installed, pinned: matplotlib (the
#             report's charts) and cmeel-mimalloc (mimalloc 3.4 as a peer:
#             its libmimalloc.so.3, which pk-lab loads from .venv; without
#             it the "mimalloc 3" rows say not available)
#   then      lab/objc/setup.sh (GNUstep) and lab/zig/setup.sh (Zig, from
#             PyPI into .venv), if present; their failure does not fail the
#             lab: their rows become "not available", with the last line
#             they printed on stderr as the reason
#
# As root it installs missing packages with apt-get (after one apt-get
# update; it waits for another apt-get holding the lock). Otherwise it says
# what to install and goes on.
#
# Environment: PK_LAB_WHY_DIR, a folder where the reason a contender
# program's setup failed is written (pk-lab-objc.why, pk-lab-zig.why; lab/run.sh
# points it next to pk-lab); POOLKIT_LAB_SETUP_PACKAGES=0 skips apt-get;
# POOLKIT_LAB_SETUP_CONTENDERS=0 skips GNUstep and Zig (make bench, whose
# programs are C and C++ alone).
# Exit status: 0, unless the virtual environment cannot be made (the report
# then has no charts).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv
say() { printf 'lab setup: %s\n' "$*"; }

packages="libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev libboost-dev libglib2.0-dev
          libapr1-dev libtalloc-dev pkg-config python3-venv
          libsqlite3-dev libxml2-dev libjansson-dev libexpat1-dev jq libxml2-utils sqlite3 perl python3
          cmake ninja-build gcc g++ make binutils"

installed() { # PACKAGE
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# ---- Debian packages --------------------------------------------------------
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
    for p in $packages; do
        installed "$p" || missing+=("$p")
    done
fi
if [ ${#missing[@]} -gt 0 ] && [ "${POOLKIT_LAB_SETUP_PACKAGES:-1}" != 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
        say "installing ${missing[*]}"
        if "${apt[@]}" update >/dev/null; then
            if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null; then
                for p in "${missing[@]}"; do # one by one: install what can be
                    "${apt[@]}" install -y --no-install-recommends "$p" >/dev/null ||
                        say "could not install $p; its rows will say not available"
                done
            fi
        else
            say "apt-get update failed; not installing ${missing[*]}"
        fi
    else
        say "missing ${missing[*]}; as root: apt-get install ${missing[*]}"
        say "(the lab goes on; those peers' rows will say not available)"
    fi
fi

# ---- the virtual environment --------------------------------------------------
status=0
req=$root/lab/requirements.txt
stamp=$venv/.lab-requirements
want=$(sha256sum "$req" 2>/dev/null | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv"
    python3 -m venv "$venv" || { say "python3 -m venv failed (python3-venv missing?)"; status=1; }
fi
if [ -x "$venv/bin/python" ]; then
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] ||
        ! "$venv/bin/python" -c 'import matplotlib' >/dev/null 2>&1 ||
        ! compgen -G "$venv/lib/python3*/site-packages/cmeel.prefix/lib/libmimalloc.so.3" >/dev/null; then
        say "installing lab/requirements.txt into $venv"
        if "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"; then
            echo "$want" >"$stamp"
        else
            say "pip install failed; the report may have no charts, and mimalloc 3 may be not available"
            status=1
        fi
    fi
fi

# ---- the contender programs' own set-up -------------------------------------
# name script: runs it; on failure records its last stderr line as the reason.
contender_setup() {
    local name=$1 script=$2 err why
    [ -f "$script" ] || return 0
    err=$(mktemp)
    if sh "$script" 2> >(tee "$err" >&2); then
        [ -n "${PK_LAB_WHY_DIR:-}" ] && rm -f "$PK_LAB_WHY_DIR/$name.why"
    else
        sleep 0.1 # let tee finish
        why=$(grep -v '^[[:space:]]*$' "$err" | tail -n 1)
        [ -n "$why" ] || why="$(basename "$(dirname "$script")")/setup.sh failed"
        say "$name: $why (its rows will say not available)"
        if [ -n "${PK_LAB_WHY_DIR:-}" ]; then
            mkdir -p "$PK_LAB_WHY_DIR" && printf '%s\n' "$why" >"$PK_LAB_WHY_DIR/$name.why"
        fi
    fi
    rm -f "$err"
}
if [ "${POOLKIT_LAB_SETUP_CONTENDERS:-1}" != 0 ]; then
    contender_setup pk-lab-objc "$root/lab/objc/setup.sh"
    contender_setup pk-lab-zig "$root/lab/zig/setup.sh"
fi

exit $status
