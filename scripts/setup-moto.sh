#!/usr/bin/env bash
# Makes moto_server available for the integration tests and `npm run local-cloud`
# (cli/cloud/moto.ts runs scripts/moto_serial.py with python3, then with .venv/bin/python).
# Idempotent and quiet when moto is already there; otherwise installs it into .venv.
set -euo pipefail

MOTO_VERSION="5.2.1"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo_root/.venv"

if python3 -c 'import moto.server' >/dev/null 2>&1; then
  exit 0
fi
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import moto.server' >/dev/null 2>&1; then
  exit 0
fi

if ! command -v python3 >/dev/null 2>&1; then
  echo "setup-moto: python3 is required to run moto_server" >&2
  exit 1
fi

echo "setup-moto: installing moto[server]==$MOTO_VERSION into $venv" >&2
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
"$venv/bin/python" -c 'import moto.server' >/dev/null
echo "setup-moto: moto_server is at $venv/bin/moto_server" >&2
