#!/usr/bin/env bash
# Set up a virtual environment with basevolve, its test tools and the embedded model,
# then run ruff and the whole test suite (which includes `mkdocs build --strict` of the
# documentation site, tests/docs).  This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[dev,docs,local,local-small,ray]'
ruff check src tests benchmarks
python -m pytest "$@"
