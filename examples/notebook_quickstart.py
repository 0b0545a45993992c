"""basevolve from Python, notebook style: a task in code, greedy vs BaSE, analysis, a plot.

Runs as a plain script (CI executes it) and cell by cell in Jupyter (the ``# %%`` marks
are cells in VS Code / Jupytext)::

    python examples/notebook_quickstart.py --out quickstart-out

Offline and in seconds: the "LLM" is basevolve's bundled OpenAI-compatible **test
server** on 127.0.0.1 (``basevolve.testing.LLMTestServer``), scripted to answer every
request with a complete program that moves the parent's points by small random steps
(drawn from the request's seed) -- a crude stand-in for an LLM mutation.  It is not a language model -- the point is the
machinery: the same calls against a real endpoint (``base_url="http://HOST:8000/v1"``,
``model="qwen3-8b"``) run a real search.  Every program still runs in the sandbox and
is scored by the task below, in this process.
"""

from __future__ import annotations

# %% [markdown]
# ## 1. A task defined in code
# `score_value` is the trusted scorer: it sees only the plain data the program returned
# (here a list of [x, y] pairs) and recomputes everything it needs.
# %%
import argparse
import ast
import math
import random
import re
import sys
from pathlib import Path
from typing import Any

import basevolve
from basevolve.testing import LLMTestServer

N_POINTS = 9
GRID = 0.5  # min distance of the 3 x 3 grid on [0, 1]^2: fitness 1.0 = as good as it


class SpreadNine(basevolve.Task):
    """Nine points in the unit square, as far apart as possible (fitness = d_min / 0.5)."""

    name = "spread_nine"
    entry = "spread"
    timeout_s = 10.0
    initial_program = (
        "import random\n\n\n# EVOLVE-BLOCK-START\ndef spread():\n"
        "    rng = random.Random(0)\n"
        "    return [[rng.random(), rng.random()] for _ in range(9)]\n# EVOLVE-BLOCK-END\n")
    system_message = ("Improve spread() so that it returns 9 points [x, y] in the unit square "
                      "whose smallest pairwise distance is as large as possible.")

    def score_value(self, value: Any, *, tol: float = 1e-6) -> basevolve.ScoreResult:
        try:
            points = [(float(x), float(y)) for x, y in value]
        except (TypeError, ValueError):
            return basevolve.ScoreResult(0.0, False, error="expected a list of [x, y] pairs")
        if len(points) != N_POINTS or not all(math.isfinite(c) for p in points for c in p):
            return basevolve.ScoreResult(0.0, False, error="expected 9 finite points")
        if any(not -tol <= c <= 1 + tol for p in points for c in p):
            return basevolve.ScoreResult(0.0, False, error="a point lies outside the square")
        dmin = min(math.dist(p, q) for i, p in enumerate(points) for q in points[i + 1:])
        return basevolve.ScoreResult(dmin / GRID, True, {"min_distance": dmin})


# %% [markdown]
# ## 2. A stand-in for the LLM
# %%
_PARENT = re.compile(r"return (\[\[[^\]]*\](?:, \[[^\]]*\])*\])")


def scripted_reply(body: dict[str, Any], index: int) -> str:
    """A fenced program: the parent's points, each moved by a small random step.

    The parent is the last point list in the prompt (the program being improved); the
    initial program has none, so the first children start from a jittered 3 x 3 grid.
    The steps are drawn from the call's seed, so a run repeats exactly.  Like a real
    mutation operator most children are worse than their parent and a few are better,
    which is what makes depth (refining the best) and allocation (which trajectory to
    refine) matter.
    """
    rng = random.Random(str(body.get("seed")))
    prompt = "\n".join(str(m.get("content")) for m in body.get("messages") or [])
    found = _PARENT.findall(prompt)
    if found:
        points, step = ast.literal_eval(found[-1]), 0.04
    else:
        points, step = [[0.5 * i, 0.5 * j] for i in range(3) for j in range(3)], 0.15
    moved = [[round(min(1.0, max(0.0, c + rng.gauss(0.0, step))), 4) for c in p]
             for p in points]
    return f"```python\ndef spread():\n    return {moved!r}\n```\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("quickstart-out"),
                        help="folder for the store and the plot (default quickstart-out)")
    parser.add_argument("--budget", type=int, default=16, help="LLM calls per run (C)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "quickstart.sqlite"

    # %% [markdown]
    # ## 3. Greedy (T x N) and BaSE (a bandit over K trajectories), same budget C
    # %%
    task = SpreadNine()
    with LLMTestServer(scripted_reply) as server:
        common = {"base_url": server.base_url, "params": 1e9, "store": store, "progress": False}
        greedy = basevolve.run(task, args.budget, depth=4, run_id="greedy-T4", **common)
        base = basevolve.run(task, args.budget, allocator="ucb", arms=4, run_id="base-ucb-K4",
                             **common)
    for r in (greedy, base):
        print(f"{r.run_id:12s} best {r.best_score:.4f}  calls {r.calls_completed}  "
              f"FLOPs {r.flops:.3g}  tokens {r.prompt_tokens}+{r.completion_tokens}")

    # %% [markdown]
    # ## 4. Analyse both (the paper's statistics; one seed each, so no error bars)
    # %%
    result = basevolve.analyze(store=store, resamples=200, shuffles=200, gate_shuffles=200)
    print(result["summary"][["method", "budget", "n", "mean"]].to_string(index=False))

    # %% [markdown]
    # ## 5. The running best of each run against the calls spent
    # %%
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for r, label in ((greedy, "greedy T=4, N=4"), (base, "BaSE UCB, K=4")):
        traj = r.trajectories()
        ax.step(traj["calls"], traj["best_fitness"], where="post", label=label)
    ax.set_xlabel("LLM calls")
    ax.set_ylabel("best fitness (d_min / 0.5)")
    ax.set_title(f"Running best, C = {args.budget}")
    ax.legend()
    fig.tight_layout()
    png = args.out / "running_best.png"
    fig.savefig(png, dpi=110)
    plt.close(fig)
    print(f"plot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
