"""One progress display for a whole sweep (issue 11, part 4).

Runs done/running/total, calls, effective FLOPs, best-so-far per cell and an ETA, fed
by every run's engine snapshots.  On a terminal it is a ``rich`` live table on stderr;
otherwise (a log file, CI) a plain line every ``every_s`` seconds, so logs stay
readable.  Rendering is throttled: a grid of thousands of runs sends many snapshots a
second and rebuilding the table for each would cost more than the runs.  stdout is left for the final summary and ``--json``.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any, TextIO

from basevolve.sweep.config import SweepConfig
from basevolve.sweep.grid import GridRuns, SweepRun
from basevolve.terminal import clean

MAX_ROWS = 20  # cells shown live; the final summary lists them all


def cell_labels(runs: GridRuns | list[SweepRun]) -> dict[Any, str]:
    """Cell -> label naming only the coordinates that vary across the sweep.

    A key one block gives and another leaves at its default (``allocator`` in a BaSE
    row beside greedy rows) varies too, so values come from the resolved config.  A
    grid is read one run per cell (a cell's runs differ only in their seeds).
    """
    if isinstance(runs, GridRuns):
        runs = runs.representatives()
    keys = sorted({k for r in runs for k, _ in r.cell}, key=_key_order)
    values = {r.cell: {k: getattr(r.config, k) for k in keys} for r in runs}
    varying = [k for k in keys if len({_show(v[k]) for v in values.values()}) > 1]
    short = {"budget": "C", "depth": "T", "arms": "K"}
    return {cell: " ".join(f"{short.get(k, k)}={_show(v[k])}" for k in varying) or "(one cell)"
            for cell, v in values.items()}


_ORDER = ("task", "model", "protocol", "allocator", "arms", "budget", "depth")


def _key_order(k: str) -> tuple[int, str]:
    return (_ORDER.index(k) if k in _ORDER else len(_ORDER), k)


def _show(v: Any) -> str:
    if isinstance(v, tuple | list) and v and all(isinstance(m, dict) and "name" in m
                                                 for m in v):  # a run's models (issue 25)
        from basevolve.sweep.models import show

        return show(v)
    if isinstance(v, dict):
        return ",".join(f"{a}:{b}" for a, b in sorted(v.items())) or "{}"
    return str(v)


def fmt_duration(s: float | None) -> str:
    if s is None:
        return "-"
    s = max(0, round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


class SweepProgress:
    """Aggregates run snapshots; renders with rich on a TTY, plain lines otherwise."""

    def __init__(self, sweep: SweepConfig, *, stream: TextIO | None = None,
                 every_s: float = 10.0, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.name = sweep.name
        self.grid = sweep.runs
        self.runs = {rid: i for i, rid in enumerate(self.grid.ids())}  # run id -> index
        self.labels = cell_labels(self.grid)
        self.total_calls = self.grid.total_budget()
        self.cost_runs = self.grid.cost_runs()  # their calls are not known in advance
        self.calls: dict[str, int] = {}
        self.flops: dict[str, float] = {}
        self.best: dict[str, float | None] = {}
        self.state: dict[str, str] = dict.fromkeys(self.runs, "pending")
        self.started = time.monotonic()
        self.calls_at_start = 0
        self.last_line = 0.0
        self.last_render = 0.0
        use_live = self.stream.isatty() if live is None else live
        self._live = self._start_live() if use_live else None

    # ------------------------------------------------------------------ events
    def preload(self, run_id: str, status: str, calls: int, flops: float,
                best: float | None) -> None:
        """What the store already holds for a run when the sweep (re)starts."""
        self.state[run_id] = "done" if status == "finished" else "pending"
        self.calls[run_id], self.flops[run_id], self.best[run_id] = calls, flops, best
        self.calls_at_start = sum(self.calls.values())

    def started_run(self, run_id: str) -> None:
        self.state[run_id] = "running"
        self._refresh()

    def update(self, snap: dict[str, Any]) -> None:
        rid = snap["run_id"]
        self.calls[rid] = int(snap["calls_completed"])
        self.flops[rid] = float(snap["flops"])
        self.best[rid] = snap.get("best_score")
        self._refresh()

    def finished(self, run_id: str, summary: dict[str, Any]) -> None:
        self.state[run_id] = "done"
        self.calls[run_id] = int(summary.get("calls_completed") or 0)
        self.flops[run_id] = float(summary.get("flops") or 0.0)
        self.best[run_id] = summary.get("best_score")
        self._refresh()

    def failed(self, run_id: str, error: str) -> None:
        self.state[run_id] = "failed"
        self._line(f"run {run_id} failed: {error}")
        self._refresh(force=True)

    def skipped(self, run_id: str, reason: str) -> None:
        self.state[run_id] = "skipped"
        self._line(f"run {run_id} skipped: {reason}")

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self._table(), refresh=True)
            self._live.stop()
            self._live = None
        else:
            self._plain(force=True)

    # ------------------------------------------------------------------ numbers
    def totals(self) -> dict[str, Any]:
        counts = defaultdict(int)
        for s in self.state.values():
            counts[s] += 1
        done_calls = sum(self.calls.values())
        elapsed = time.monotonic() - self.started
        rate = (done_calls - self.calls_at_start) / elapsed if elapsed > 0 else 0.0
        left = self.total_calls - done_calls
        if self.cost_runs:  # a cost budget has no call count: ETA from finished runs
            finished = counts["done"] + counts["failed"] + counts["skipped"]
            run_rate = finished / elapsed if elapsed > 0 else 0.0
            left, rate = len(self.runs) - finished, run_rate
        return {
            "runs_total": len(self.runs), "runs_done": counts["done"],
            "runs_running": counts["running"], "runs_failed": counts["failed"],
            "runs_skipped": counts["skipped"], "calls": done_calls,
            "calls_total": self.total_calls, "flops": sum(self.flops.values()),
            "elapsed_s": elapsed, "eta_s": left / rate if rate > 0 and left > 0 else
            (0.0 if left <= 0 else None),
        }

    def cells(self) -> list[dict[str, Any]]:
        rows: dict[Any, dict[str, Any]] = {}
        for rid, i in self.runs.items():
            cell = self.grid.template_at(i).cell
            row = rows.setdefault(cell, {"cell": self.labels[cell], "runs": 0,
                                         "done": 0, "running": 0, "best": None})
            row["runs"] += 1
            row["done"] += self.state[rid] == "done"
            row["running"] += self.state[rid] == "running"
            b = self.best.get(rid)
            if b is not None and (row["best"] is None or b > row["best"]):
                row["best"] = b
        return list(rows.values())

    def headline(self) -> str:
        t = self.totals()
        failed = f", {t['runs_failed']} failed" if t["runs_failed"] else ""
        return (f"sweep {self.name}: runs {t['runs_done']}/{t['runs_total']} done, "
                f"{t['runs_running']} running{failed} | calls {t['calls']}"
                f"{'' if self.cost_runs else '/' + str(t['calls_total'])}"
                f" | FLOPs {t['flops']:.3g} | {fmt_duration(t['elapsed_s'])} elapsed, "
                f"ETA {fmt_duration(t['eta_s'])}")

    # ------------------------------------------------------------------ rendering
    def _start_live(self) -> Any:
        from rich.console import Console
        from rich.live import Live

        live = Live(self._table(), console=Console(file=self.stream), refresh_per_second=4,
                    transient=False)
        live.start()
        return live

    def _table(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        # Text, not str: rich reads "[...]" in a str as markup, and a cell label holds
        # model ids and task names (text from outside, printed clean)
        table = Table(title=Text(clean(self.headline())), title_justify="left", expand=False)
        for col in ("cell", "runs done", "running", "best so far"):
            table.add_column(col, justify="left" if col == "cell" else "right")
        rows = sorted(self.cells(), key=lambda r: (-r["running"], r["done"] == r["runs"]))
        for r in rows[:MAX_ROWS]:
            best = "-" if r["best"] is None else f"{r['best']:.4f}"
            table.add_row(Text(clean(r["cell"])), f"{r['done']}/{r['runs']}",
                          str(r["running"]), best)
        if len(rows) > MAX_ROWS:
            table.caption = f"... and {len(rows) - MAX_ROWS} more cells"
        return table

    def _refresh(self, force: bool = False) -> None:
        if self._live is not None:
            now = time.monotonic()
            if force or now - self.last_render >= 0.25:
                self.last_render = now
                self._live.update(self._table())
        else:
            self._plain(force)

    def _plain(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_line < self.every_s:
            return
        self.last_line = now
        self._line(self.headline())

    def _line(self, text: str) -> None:
        """One line (a run's failure quotes its error: printed clean, never as markup)."""
        text = clean(text)
        if self._live is not None:
            self._live.console.print(text, markup=False, highlight=False)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()


__all__ = ["SweepProgress", "cell_labels", "fmt_duration"]
