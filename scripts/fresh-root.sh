#!/usr/bin/env bash
# scripts/fresh-root.sh [--rev REV] [--keep] CMD...: runs CMD (a shell command
# line) in a clone of this repository inside a new, minimal Debian 12 root, as
# a user's fresh machine would: nothing installed but the base system, so the
# project's own scripts must install everything they need.
#
#   1. the base: `debootstrap --variant=minbase bookworm` from the mirror this
#      machine's apt sources name. The untouched base is kept as a tarball in
#      POOLKIT_FRESH_CACHE (default /var/cache/poolkit-fresh-root) and reused
#      for a week; nothing else is cached.
#   2. this machine's settings that a fresh machine here has too: its apt
#      sources, resolv.conf, the system trust store (/etc/ssl/certs and
#      /usr/local/share/ca-certificates, so that pip and apt reach the
#      registries through the same proxy), pip's configuration file, and the
#      SSL and pip environment variables. The rest of the environment is
#      cleaned (env -i).
#   3. a clone of REV (default HEAD; uncommitted changes are not in it) in
#      /root/poolkit, where CMD runs under chroot, with proc, sys and dev
#      mounted in a private mount namespace (they vanish with it).
#   4. afterwards, also when CMD fails or the script is interrupted: every
#      process still inside the root is killed and the root is removed.
#
# --keep leaves the root in place (its path is printed) for a look after a
# failure. Needs root, chroot, unshare and debootstrap (installed with apt-get
# when missing). Exit status: CMD's; 125 when the root cannot be made here
# (.ci/run then falls back to a run on this machine).
#
# Example: scripts/fresh-root.sh 'apt-get update && apt-get install -y make && make test'
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rev=HEAD
keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --rev) rev=${2:?--rev needs a revision}; shift 2 ;;
    --rev=*) rev=${1#--rev=}; shift ;;
    --keep) keep=1; shift ;;
    --) shift; break ;;
    -*) echo "fresh-root: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
if [ $# -eq 0 ]; then
    echo "usage: scripts/fresh-root.sh [--rev REV] [--keep] CMD..." >&2
    exit 2
fi
cmd="$*"
say() { printf 'fresh-root: %s\n' "$*" >&2; }
cannot() { say "cannot make a fresh root here: $*"; exit 125; }

# ---- can this machine make one? --------------------------------------------
[ "$(id -u)" = 0 ] || cannot "not root"
command -v chroot >/dev/null && command -v unshare >/dev/null || cannot "no chroot or unshare"
unshare --mount --propagation private true 2>/dev/null || cannot "no mount namespace (unshare -m failed)"
if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null 2>&1; } ||
        cannot "debootstrap is missing and apt-get could not install it"
fi
commit=$(git -C "$here" rev-parse --verify "$rev^{commit}" 2>/dev/null) || cannot "no commit $rev in $here"
if [ -n "$(git -C "$here" status --porcelain --untracked-files=no 2>/dev/null)" ] && [ "$rev" = HEAD ]; then
    say "note: $here has uncommitted changes; the root gets the commit $commit only"
fi

# The mirror: the first Debian archive URI in this machine's apt sources.
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -n -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]*\/debian\/\{0,1\}\)[[:space:]].*/\2/p' \
        -e 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\/\{0,1\}\)[[:space:]]*$/\1/p' | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}

# ---- the base, cached untouched ----------------------------------------------
cache=${POOLKIT_FRESH_CACHE:-/var/cache/poolkit-fresh-root}
key=$(printf '%s' "$mirror" | sha256sum | cut -c1-12)
base=$cache/bookworm-minbase-$key.tar.gz
mkdir -p "$cache" || cannot "cannot create $cache"
if [ -f "$base" ] && [ -z "$(find "$base" -mtime +7 2>/dev/null)" ]; then
    say "base: $base (cached $(date -r "$base" +%F))"
else
    say "base: debootstrap --variant=minbase bookworm $mirror"
    tmpbase=$(mktemp -d "$cache/base.XXXXXX")
    if ! debootstrap --variant=minbase bookworm "$tmpbase/root" "$mirror" >"$tmpbase/log" 2>&1; then
        tail -n 5 "$tmpbase/log" >&2
        rm -rf --one-file-system "$tmpbase"
        cannot "debootstrap failed"
    fi
    tar -C "$tmpbase/root" -czf "$tmpbase/base.tar.gz" . && mv "$tmpbase/base.tar.gz" "$base"
    rm -rf --one-file-system "$tmpbase"
fi

# ---- the root ----------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/poolkit-fresh.XXXXXX")
R=$work/root
child=

still_mounted() { awk -v r="$R" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts; }
cleanup() {
    local rc=$? p link m
    trap - EXIT INT TERM HUP
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
    # Whatever still runs inside the root (a daemon CMD started) goes first.
    for p in /proc/[0-9]*; do
        link=$(readlink "$p/root" 2>/dev/null) || continue
        case $link in "$R" | "$R"/*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
    done
    [ -n "$child" ] && wait "$child" 2>/dev/null
    # The mounts live in the child's namespace and vanish with it; any that
    # leaked into this one are taken down before anything is removed.
    for m in $(still_mounted | sort -r); do umount -l "$m" 2>/dev/null; done
    if [ "$keep" = 1 ]; then
        say "kept: $R"
    elif [ -n "$(still_mounted)" ]; then
        say "not removing $work: still mounted there: $(still_mounted | tr '\n' ' ')"
    else
        rm -rf --one-file-system "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP

mkdir -p "$R" && tar -C "$R" -xzf "$base" || { say "cannot unpack $base"; exit 125; }

# This machine's settings that a fresh machine here has too.
copy_in() { # PATH...: each existing file or folder, to the same place in the root
    local f
    for f in "$@"; do
        [ -e "$f" ] || continue
        mkdir -p "$R$(dirname "$f")"
        cp -a "$f" "$R$(dirname "$f")/"
    done
}
rm -f "$R/etc/apt/sources.list"
copy_in /etc/apt/sources.list /etc/resolv.conf /etc/hosts /etc/pip.conf /etc/xdg/pip/pip.conf \
    /etc/ssl/certs /usr/local/share/ca-certificates
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    copy_in "$f"
done
passenv=()
while IFS='=' read -r name _; do
    case $name in
    SSL_* | *_CA_BUNDLE | *_CA_CERTS | *_CA_CERTS_FILE | *_SSL_CAINFO | PIP_* | http_proxy | https_proxy | no_proxy | HTTP_PROXY | HTTPS_PROXY | NO_PROXY)
        passenv+=("$name=${!name}") ;;
    esac
done < <(env)

git clone --quiet --no-local "$here" "$R/root/poolkit" && git -C "$R/root/poolkit" checkout --quiet "$commit" ||
    { say "cannot clone $commit into the root"; exit 125; }

say "root: $R ($commit, $(du -sh "$R" 2>/dev/null | cut -f1))"
say "running: $cmd"
start=$(date +%s)
unshare --mount --propagation private -- bash -c '
    R=$1; shift
    mount -t proc proc "$R/proc" && mount --rbind /sys "$R/sys" && mount --rbind /dev "$R/dev" || exit 125
    exec chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 TERM=dumb "$@"
' fresh-root "$R" "${passenv[@]}" bash -c "cd /root/poolkit && $cmd" &
child=$!
wait "$child"
rc=$?
child=
say "CMD exited with status $rc after $(( $(date +%s) - start ))s"
exit "$rc"
