#!/usr/bin/env bash
# Installs Conan, for the package stage's test of packaging/conan, into the
# project's virtual environment (.venv, shared with the lab's report), at
# the version packaging/conan/requirements.txt pins. Idempotent: with that
# version there, it does nothing and needs no network. Needs python3-venv
# (scripts/setup.sh installs it, and runs this).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$root/.venv
req=$root/packaging/conan/requirements.txt
want=$(sed -n 's/^conan==//p' "$req")
have=$("$venv/bin/conan" --version 2>/dev/null | sed -n 's/^Conan version //p' || true)
if [ -n "$want" ] && [ "$have" = "$want" ]; then
    echo "conan-setup: conan $have in $venv"
    exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
    echo "conan-setup: creating $venv"
    python3 -m venv "$venv"
fi
echo "conan-setup: installing $(tr '\n' ' ' <"$req")into $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
echo "conan-setup: $("$venv/bin/conan" --version)"
