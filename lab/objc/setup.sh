#!/bin/sh
# lab/objc/setup.sh: makes GNUstep (GNU Objective-C + gnustep-base) available
# for pk-lab-objc and the PKObject binding.
#
# Idempotent: when gcc can already compile Objective-C against gnustep-base it
# does nothing. Otherwise, as root on Debian, it installs the packages below
# from Debian's registry. Exits non-zero with one clear line on stderr when
# GNUstep cannot be made available; the lab then shows the Objective-C rows
# as "not available" with that line as the reason.
#
# Packages (Debian 12 "bookworm"): gobjc (GNU Objective-C for the default gcc),
# gnustep-make (gnustep-config), libgnustep-base-dev (Foundation headers and
# libgnustep-base). Debian's gnustep-base is built with gcc against gcc's own
# Objective-C runtime (libobjc4), not libobjc2.
set -u

PACKAGES="gobjc gnustep-make libgnustep-base-dev"

say() { printf 'objc setup: %s\n' "$*" >&2; }

# True when an Objective-C program using Foundation compiles, links and runs.
gnustep_works() {
    command -v gnustep-config >/dev/null 2>&1 || return 1
    tmp=$(mktemp -d 2>/dev/null) || return 1
    cat >"$tmp/probe.m" <<'PROBE'
#import <Foundation/Foundation.h>
int main(void) {
    NSAutoreleasePool *p = [NSAutoreleasePool new];
    NSObject *o = [[NSObject alloc] init];
    int ok = [o retainCount] == 1;
    [o release];
    [p release];
    return ok ? 0 : 1;
}
PROBE
    # gnustep-config prints flags meant for the shell's word splitting.
    # shellcheck disable=SC2046
    ${OBJC:-gcc} $(gnustep-config --objc-flags) "$tmp/probe.m" -o "$tmp/probe" \
        $(gnustep-config --base-libs) >"$tmp/log" 2>&1 && "$tmp/probe" >/dev/null 2>&1
    rc=$?
    rm -rf "$tmp"
    return $rc
}

if gnustep_works; then
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    say "GNUstep is missing and this is not a Debian system (no apt-get): install gobjc, gnustep-make and gnustep-base by hand"
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    say "GNUstep is missing; run as root (or: sudo apt-get install $PACKAGES)"
    exit 1
fi

say "installing $PACKAGES"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends $PACKAGES >/tmp/pk-objc-setup.log 2>&1; then
    say "apt-get install failed; refreshing the package lists and trying again"
    apt-get update -q >>/tmp/pk-objc-setup.log 2>&1
    if ! apt-get install -y -q --no-install-recommends $PACKAGES >>/tmp/pk-objc-setup.log 2>&1; then
        say "could not install $PACKAGES (see /tmp/pk-objc-setup.log): $(tail -n 1 /tmp/pk-objc-setup.log)"
        exit 1
    fi
fi

if ! gnustep_works; then
    say "GNUstep installed but a Foundation test program does not build or run"
    exit 1
fi
say "GNUstep ready ($(gnustep-config --variable=GNUSTEP_MAKEFILES 2>/dev/null))"
exit 0
