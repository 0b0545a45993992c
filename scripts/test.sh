#!/usr/bin/env bash
# Set up a virtual environment with basevolve, its test tools and the embedded model,
# then run ruff and the whole test suite (which includes `mkdocs build --strict` of the
# documentation site, tests/docs).  This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
# The sandbox tests use bubblewrap and the dashboard's browser tests drive Debian's
# chromium through Playwright; install them when we can (root with apt-get), as .ci/run
# does.  Without them those tests are skipped, and the session ends with a loud line
# saying so (tests/conftest.py; issue 24, item 11).
bash scripts/system_deps.sh bwrap:bubblewrap chromium:chromium
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
# pip only when something is missing (scripts/installed.py; issue 24, item 10)
if ! python scripts/installed.py dev docs local local-small ray >/dev/null; then
  python -m pip install -q --upgrade pip
  python -m pip install -q -e '.[dev,docs,local,local-small,ray]'
fi
ruff check --no-cache src tests benchmarks  # no cache: a stale one hid import-order errors once
python -m pytest "$@"
