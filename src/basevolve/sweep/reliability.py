"""End-of-sweep reliability summary per cell (issue 11, part 5).

The paper's message (Sections 5-6, Appendix "Distribution"): a run is a draw, so a
configuration is described by the distribution of its runs' final fitness, not by its
best run.  Per cell (the run config without the seed): n finished runs, mean, IQM,
the 95% stratified-bootstrap CI of the mean (rliable protocol, via
:func:`basevolve.analysis.stats.cell_stats`: seeded per cell, so ``analyze`` and the
dashboard give a cell the same interval) and P(fitness >= tau), the share of runs
reaching each threshold the sweep file sets (also shown by ``sweep --status``).  Fitness is the run's final best score
including the initial program, as in :func:`basevolve.store.export.runs_table`.

``truncated`` / ``replies``: of the finished runs' counted replies, how many were cut at
``max_tokens`` (``finish_reason = "length"``, issue 23, item 8): a thinking model cut
before its program is a score-0 child, so a cell's numbers are only as good as its cap;
the table shows the share and a closing line says how to raise it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from basevolve.analysis.stats import cell_stats
from basevolve.sweep.config import SweepConfig
from basevolve.sweep.progress import cell_labels
from basevolve.sweep.stored import read_state
from basevolve.terminal import clean_lines


def reliability(sweep: SweepConfig, store_path: str, seed: int = 0,
                stored: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per cell with at least one finished run (cells in file order).

    The CI is :func:`~basevolve.analysis.stats.cell_stats`, seeded per cell: the cell's
    interval in ``analyze`` and on the dashboard (issue 24, item 4).  ``stored``: the
    store's state when the caller has read it (``sweep --status``)."""
    stored = read_state(store_path, configs=False) if stored is None else stored
    labels = cell_labels(sweep.runs)
    by_cell: dict[Any, list[float]] = {}
    task_of: dict[Any, str] = {}
    cut: dict[Any, list[int]] = {}  # cell -> [truncated, replies]
    for run in sweep.runs:
        task_of[run.cell] = run.template.config.task
        row = stored.get(run.run_id)
        if row and row["status"] == "finished" and row["best"] is not None:
            by_cell.setdefault(run.cell, []).append(float(row["best"]))
            counts = cut.setdefault(run.cell, [0, 0])
            counts[0] += int(row.get("truncated", 0))
            counts[1] += int(row["calls"])
    rows = []
    for cell, scores in by_cell.items():
        x = np.asarray(scores)
        d = cell_stats(x, seed, reps=sweep.resamples)
        taus = sweep.taus(task_of[cell])
        rows.append({
            "cell": labels[cell], "task": task_of[cell], "n": d["n"], "mean": d["mean"],
            "iqm": d["iqm"], "ci_low": d["ci_low"], "ci_high": d["ci_high"],
            "p_reach": {f"{t:g}": float(np.mean(x >= t)) for t in taus},
            "truncated": cut[cell][0], "replies": cut[cell][1],
        })
    return rows


def render_reliability(rows: list[dict[str, Any]], store_path: str) -> str:
    if not rows:
        return "no finished run yet; nothing to summarise"
    taus = sorted({t for r in rows for t in r["p_reach"]}, key=float)
    width = max(len(r["cell"]) for r in rows)
    head = f"{'cell':<{width}}  {'n':>3}  {'mean':>7}  {'IQM':>7}  {'95% CI':>17}"
    head += "".join(f"  {'P>=' + t:>8}" for t in taus) + f"  {'cut':>6}"
    lines = ["reliability per cell (a run is a draw: n runs, mean, IQM, bootstrap CI):",
             head]
    for r in rows:
        ci = f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
        line = (f"{r['cell']:<{width}}  {r['n']:>3}  {r['mean']:7.4f}  {r['iqm']:7.4f}  "
                f"{ci:>17}")
        line += "".join(f"  {r['p_reach'][t]:8.2f}" if t in r["p_reach"] else f"  {'-':>8}"
                        for t in taus)
        replies, truncated = r.get("replies", 0), r.get("truncated", 0)
        line += f"  {100 * truncated / replies:5.1f}%" if replies else f"  {'-':>6}"
        lines.append(line)
    truncated = sum(r.get("truncated", 0) for r in rows)
    if truncated:
        replies = sum(r.get("replies", 0) for r in rows)
        lines.append(f"cut: {truncated} of {replies} replies were cut at max_tokens "
                     "(finish_reason = length); raise max_tokens for the cells that show it")
    lines.append("")
    lines.append(f"full tables and figures: basevolve report --store {store_path} --out report/")
    # cell labels hold model ids and task names
    return clean_lines("\n".join(lines))


__all__ = ["reliability", "render_reliability"]
