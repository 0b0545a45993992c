#!/usr/bin/env bash
# Which main-job configuration most likely shows a visible improvement in ~5 minutes on
# 2 CPU cores with the embedded models (issue 12, item 7)?  Runs each configuration for
# SEEDS seeds, round-robin (so machine load hits all alike), with the CLI exactly as a
# user would, and prints per configuration: runs, improved runs (best > initial program),
# median wall time.  Run it on an otherwise idle machine and record the load it prints.
#
#   bash benchmarks/main_job.sh [OUTDIR]   # SEEDS=5 FIRST_SEED=0 CONFIGS="A B C D E F G H" BUDGET_S=4500
#
# A rerun into the same OUTDIR skips runs already finished there (resumes unfinished ones).
#
# A: the README main job  -- MinMaxDist, 1.5B, C=4, T=2 x N=2
# B: the 0.5B model       -- MinMaxDist, C=8, T=4 x N=2 (about as long as A: ~2x faster calls)
# C: the 0.5B model       -- MinMaxDist, C=8, T=2 x N=4 (breadth instead of depth)
# D: Heilbronn, 1.5B, C=4, T=2 x N=2 (its initial program puts every point at the origin)
# E: Heilbronn, 0.5B, C=8, T=2 x N=4
# F: prompt optimisation (LPO), 0.5B writes the templates and answers, 10 sample questions,
#    C=8, T=4 x N=2 (answers: temperature 0, at most 64 tokens)
# G: LPO, 1.5B writes the templates, 0.5B answers, 10 sample questions, C=4, T=2 x N=2
# H: as G with C=8, T=4 x N=2
# I: as H with C=16, T=4 x N=4: twice the independent tries per generation; the main job
#    since issue 37, item 3 (9 of 10 seeds improved)
# All: --max-tokens 1024, paper sampling defaults (temperature 0.6, top-p 0.95).
set -uo pipefail
OUT=${1:-bench-main-job}
mkdir -p "$OUT"
cd "$OUT"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-4500} ))
declare -A CFG
CFG[A]="--task min_max_distance --model embedded --budget 4 --depth 2"
CFG[B]="--task min_max_distance --model embedded-small --budget 8 --depth 4"
CFG[C]="--task min_max_distance --model embedded-small --budget 8 --depth 2"
CFG[D]="--task heilbronn_triangle --model embedded --budget 4 --depth 2"
CFG[E]="--task heilbronn_triangle --model embedded-small --budget 8 --depth 2"
LPO="--task prompt_optimization --task-param limit=10 --task-param answer_max_tokens=64"
CFG[F]="$LPO --model embedded-small --budget 8 --depth 4"
CFG[G]="$LPO --model embedded --task-param answer_model=embedded-small --budget 4 --depth 2"
CFG[H]="$LPO --model embedded --task-param answer_model=embedded-small --budget 8 --depth 4"
CFG[I]="$LPO --model embedded --task-param answer_model=embedded-small --budget 16 --depth 4"
for seed in $(seq ${FIRST_SEED:-0} $(( ${SEEDS:-5} - 1 ))); do
  for c in ${CONFIGS:-A B C D E F G H}; do
    [ "$(date +%s)" -ge "$DEADLINE" ] && break 2
    status=$(python -c "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute('SELECT status FROM runs WHERE run_id=?',(sys.argv[2],)).fetchone(); print(r[0] if r else '')" "store_$c.sqlite" "$c-s$seed" 2>/dev/null)
    [ "$status" = "finished" ] && continue
    t0=$(date +%s.%N); l0=$(cut -d' ' -f1 /proc/loadavg)
    if [ -n "$status" ]; then  # started before and stopped: continue it to its budget
      basevolve run --resume "$c-s$seed" --store "store_$c.sqlite" --out "out/$c-$seed" \
        --json > "log_$c-$seed.txt" 2>&1
    else
      basevolve run ${CFG[$c]} --max-tokens 1024 --seed "$seed" \
        --store "store_$c.sqlite" --out "out/$c-$seed" --run-id "$c-s$seed" --json \
        > "log_$c-$seed.txt" 2>&1
    fi
    rc=$?
    t1=$(date +%s.%N); l1=$(cut -d' ' -f1 /proc/loadavg)
    echo "{\"cfg\":\"$c\",\"seed\":$seed,\"rc\":$rc,\"wall_s\":$(echo "$t1-$t0" | bc),\"load_start\":$l0,\"load_end\":$l1}" >> results.jsonl
  done
done
python - <<'PY'
import json, sqlite3, statistics
rows = [json.loads(l) for l in open("results.jsonl")]
for cfg in sorted({r["cfg"] for r in rows}):
    runs = [r for r in rows if r["cfg"] == cfg]
    con = sqlite3.connect(f"store_{cfg}.sqlite")
    improved = finished = 0
    for r in runs:
        rid = f"{cfg}-s{r['seed']}"
        status = con.execute("SELECT status FROM runs WHERE run_id=?", (rid,)).fetchone()
        init = con.execute("SELECT score FROM programs WHERE run_id=? AND is_initial=1", (rid,)).fetchone()
        best = con.execute("SELECT max(score) FROM programs WHERE run_id=?", (rid,)).fetchone()
        if status and status[0] == "finished":
            finished += 1
            improved += int(best[0] > init[0])
    walls = [r["wall_s"] for r in runs if r["rc"] == 0]
    loads = [r["load_start"] for r in runs] + [r["load_end"] for r in runs]
    print(f"{cfg}: {finished}/{len(runs)} finished, {improved} improved, median wall "
          f"{statistics.median(walls) if walls else float('nan'):.0f} s, load {min(loads):.1f}-{max(loads):.1f}")
PY
