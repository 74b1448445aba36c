#!/usr/bin/env bash
# Installs what poolkit's build and tests need, on Debian 12 (bookworm) or a
# close relative. Idempotent: when everything is present it does nothing and
# needs no network. Otherwise, as root, it runs `apt-get update` once and
# installs only the missing packages.
#
#   needed:  cmake (>= 3.25) ninja-build gcc g++ clang libclang-rt-N-dev llvm
#            libgtest-dev valgrind pkg-config make binutils python3
#            doxygen (`make docs`, the docs stage of `make test`; graphviz is
#            not needed: the Doxyfile draws no graphs, HAVE_DOT = NO)
#            gobjc gnustep-make libgnustep-base-dev (GNUstep: the Objective-C
#            binding's tests and example; installed here, before any test
#            stage, so that no stage skips them on a fresh machine)
#            dpkg-dev file (CPack's Debian packages: dpkg-shlibdeps, and file,
#            which CPackDeb needs to find the shared libraries) and
#            python3-venv (the project's .venv, where scripts/conan-setup.sh,
#            run last, installs Conan for the package stage)
#            libsqlite3-dev libxml2-dev libjansson-dev libexpat1-dev (the
#            size-class front end's hook examples), jq sqlite3 libxml2-utils
#            perl (real programs run under libpoolkit-malloc.so by the tests)
#            libpython3.11-testsuite (CPython's regression tests, run under
#            libpoolkit-malloc.so by make test's cpython stage)
#   peers:   libmimalloc-dev libjemalloc-dev libgoogle-perftools-dev libboost-dev
#            (allocators the benchmarks compare against; best effort: a peer
#            that cannot be installed is reported and skipped)
#
# Environment: POOLKIT_SETUP_PEERS=0 skips the peers.
# Exit status: 0 when every needed tool is present afterwards, 1 otherwise.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }
have_any_file() { # GLOB...: true if one of the globs names an existing file
    local f
    for f in "$@"; do
        [ -e "$f" ] && return 0
    done
    return 1
}

clang_major() {
    if have clang; then
        clang -dumpversion 2>/dev/null | cut -d. -f1
    else
        echo 14 # bookworm's clang
    fi
}

cmake_recent() { # cmake >= 3.25
    have cmake || return 1
    local v major minor
    v=$(cmake --version | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
    major=${v%%.*}
    minor=${v#*.}
    minor=${minor%%.*}
    [ "${major:-0}" -gt 3 ] || { [ "${major:-0}" -eq 3 ] && [ "${minor:-0}" -ge 25 ]; }
}

clang_runtime() { # the sanitizer runtimes for clang
    have clang || return 1
    local dir
    dir=$(clang -print-resource-dir 2>/dev/null) || return 1
    shopt -s nullglob
    local asan=("$dir"/lib/linux/libclang_rt.asan-*.a "$dir"/lib/*/libclang_rt.asan.a)
    local tsan=("$dir"/lib/linux/libclang_rt.tsan-*.a "$dir"/lib/*/libclang_rt.tsan.a)
    shopt -u nullglob
    [ ${#asan[@]} -gt 0 ] && [ ${#tsan[@]} -gt 0 ]
}

probe() { # PACKAGE: true if what the package gives us is present
    case "$1" in
        cmake) cmake_recent ;;
        ninja-build) have ninja ;;
        gcc) have gcc ;;
        g++) have g++ ;;
        clang) have clang && have clang++ ;;
        libclang-rt-*-dev) clang_runtime ;;
        llvm) have llvm-symbolizer ;;
        libgtest-dev)
            have_any_file /usr/include/gtest/gtest.h /usr/local/include/gtest/gtest.h &&
                have_any_file /usr/lib/*/cmake/GTest/GTestConfig.cmake \
                    /usr/lib/cmake/GTest/GTestConfig.cmake \
                    /usr/local/lib/cmake/GTest/GTestConfig.cmake \
                    /usr/local/lib/*/cmake/GTest/GTestConfig.cmake ;;
        valgrind) have valgrind ;;
        pkg-config) have pkg-config ;;
        make) have make ;;
        binutils) have ld && have objcopy && have ar && have nm ;;
        libmimalloc-dev) have_any_file /usr/include/mimalloc.h /usr/local/include/mimalloc.h ;;
        libjemalloc-dev) have_any_file /usr/include/jemalloc/jemalloc.h /usr/local/include/jemalloc/jemalloc.h ;;
        libgoogle-perftools-dev) have_any_file /usr/include/gperftools/tcmalloc.h /usr/local/include/gperftools/tcmalloc.h ;;
        libboost-dev) have_any_file /usr/include/boost/pool/pool.hpp /usr/local/include/boost/pool/pool.hpp ;;
        libvalgrind) have_any_file /usr/include/valgrind/memcheck.h ;;
        python3) have python3 ;;
        doxygen) have doxygen ;;
        gobjc) have_any_file /usr/lib/gcc/*/*/cc1obj ;;
        gnustep-make) have gnustep-config ;;
        libgnustep-base-dev) have_any_file /usr/include/GNUstep/Foundation/Foundation.h ;;
        dpkg-dev) have dpkg-shlibdeps ;;
        file) have file ;;
        python3-venv) have python3 && python3 -c 'import ensurepip, venv' >/dev/null 2>&1 ;;
        libsqlite3-dev) have_any_file /usr/include/sqlite3.h ;;
        libxml2-dev) have_any_file /usr/include/libxml2/libxml/parser.h ;;
        libjansson-dev) have_any_file /usr/include/jansson.h ;;
        libexpat1-dev) have_any_file /usr/include/expat.h ;;
        jq) [ -x /usr/bin/jq ] ;;
        sqlite3) [ -x /usr/bin/sqlite3 ] ;;
        libxml2-utils) [ -x /usr/bin/xmllint ] ;;
        perl) [ -x /usr/bin/perl ] ;;
        libpython3.11-testsuite) [ -f /usr/lib/python3.11/test/test_dict.py ] ;; # libregrtest comes with the stdlib
        *) return 1 ;;
    esac
}

needed_packages() {
    echo cmake ninja-build gcc g++ clang "libclang-rt-$(clang_major)-dev" llvm \
        libgtest-dev valgrind pkg-config make binutils python3 doxygen \
        gobjc gnustep-make libgnustep-base-dev dpkg-dev file python3-venv \
        libsqlite3-dev libxml2-dev libjansson-dev libexpat1-dev jq sqlite3 libxml2-utils perl \
        libpython3.11-testsuite
}
peer_packages="libmimalloc-dev libjemalloc-dev libgoogle-perftools-dev libboost-dev"

missing=()
for p in $(needed_packages); do
    probe "$p" || missing+=("$p")
done
missing_peers=()
if [ "${POOLKIT_SETUP_PEERS:-1}" != 0 ]; then
    for p in $peer_packages; do
        probe "$p" || missing_peers+=("$p")
    done
fi

# Conan (for the package stage) lives in the project's .venv, not in apt.
conan_setup() {
    bash "$(dirname "${BASH_SOURCE[0]}")/conan-setup.sh" || {
        echo "setup: could not install Conan into .venv (scripts/conan-setup.sh)" >&2
        return 1
    }
}

if [ ${#missing[@]} -eq 0 ] && [ ${#missing_peers[@]} -eq 0 ]; then
    echo "setup: every tool poolkit needs is present"
    conan_setup || exit 1
    exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: missing: ${missing[*]}"
fi
if [ ${#missing_peers[@]} -gt 0 ]; then
    echo "setup: missing benchmark peers (optional): ${missing_peers[*]}"
fi

if [ "$(id -u)" != 0 ] || ! have apt-get; then
    all=("${missing[@]}" "${missing_peers[@]}")
    if ! have apt-get; then
        echo "setup: no apt-get here; install the equivalents of: ${all[*]}" >&2
    else
        echo "setup: not running as root, so nothing was installed. Run as root:" >&2
        echo "    apt-get update && apt-get install -y --no-install-recommends ${all[*]}" >&2
        echo "or run this script as root: sudo scripts/setup.sh" >&2
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        exit 1
    fi
    echo "setup: only optional peers are missing; continuing without them" >&2
    conan_setup || exit 1
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "setup: apt-get update"
if ! apt-get update -q; then
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: apt-get update failed; cannot install ${missing[*]}" >&2
        exit 1
    fi
    echo "setup: apt-get update failed; benchmark peers not installed" >&2
    conan_setup || exit 1
    exit 0
fi

apt_install() { apt-get install -y -q --no-install-recommends "$@"; }

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    if ! apt_install "${missing[@]}"; then
        echo "setup: apt-get install failed for: ${missing[*]}" >&2
        exit 1
    fi
fi
if [ ${#missing_peers[@]} -gt 0 ]; then
    echo "setup: installing benchmark peers ${missing_peers[*]}"
    if ! apt_install "${missing_peers[@]}"; then
        for p in "${missing_peers[@]}"; do
            apt_install "$p" || echo "setup: could not install peer $p; benchmarks will skip it" >&2
        done
    fi
fi

# The clang runtime's package name follows clang's version, known only once
# clang is installed.
still=()
for p in $(needed_packages); do
    probe "$p" || still+=("$p")
done
if [ ${#still[@]} -gt 0 ] && [ "${still[*]}" = "libclang-rt-$(clang_major)-dev" ]; then
    apt_install "${still[@]}" || true
    still=()
    for p in $(needed_packages); do
        probe "$p" || still+=("$p")
    done
fi
if [ ${#still[@]} -gt 0 ]; then
    echo "setup: still missing after installing: ${still[*]}" >&2
    exit 1
fi
conan_setup || exit 1
echo "setup: done"
