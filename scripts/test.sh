#!/usr/bin/env bash
# Set up a virtual environment with basevolve, its test tools and the embedded model,
# then run ruff and the whole test suite (which includes `mkdocs build --strict` of the
# documentation site, tests/docs).  This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
# The sandbox tests use bubblewrap; install it when we can (root with apt-get), as
# scripts/main.sh does.  Without it the tests of the bubblewrap level are skipped.
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[dev,docs,local,local-small,ray]'
ruff check --no-cache src tests benchmarks  # no cache: a stale one hid import-order errors once
python -m pytest "$@"
