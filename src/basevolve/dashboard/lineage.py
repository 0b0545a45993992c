"""The run page's programs: the best program and the lineage of accepted programs.

Vectorised over the run's programs (numpy columns, :mod:`basevolve.dashboard.run_cache`):
a run of 20,000 calls has 20,000 programs, and a Python loop over row objects for the
best and per-trajectory bests was a quarter of its run page's server time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from basevolve.dashboard.run_cache import PROGRAMS

_NAMES = PROGRAMS


class Programs:
    """The run's programs, told order (the initial program first): the rows as tuples
    (for the lineage listed) and as numpy columns (for the searches), both from
    :class:`~basevolve.dashboard.run_cache.RunRows`."""

    def __init__(self, rows: list[Any], cols: dict[str, np.ndarray]) -> None:
        self.rows, self.cols = rows, cols

    def _row(self, i: int | None) -> dict[str, Any] | None:
        return None if i is None else dict(zip(_NAMES, self.rows[i], strict=True))

    @property
    def initial(self) -> dict[str, Any] | None:
        found = np.flatnonzero(self.cols["is_initial"])
        return self._row(int(found[0]) if found.size else None)

    @property
    def best(self) -> dict[str, Any] | None:
        """Highest score; among equals the initial program, then the earliest told."""
        c = self.cols
        if not self.rows:
            return None
        order = np.lexsort((-np.nan_to_num(c["seq"], nan=0.0), c["is_initial"],
                            np.nan_to_num(c["score"], nan=-np.inf)))
        return self._row(int(order[-1]))

    def errors(self) -> list[int]:
        """Ids of programs whose evaluation failed, in told order."""
        return self.cols["program_id"][self.cols["has_error"]].tolist()


def call_indexes(call_ids: np.ndarray, call_index: np.ndarray,
                 wanted: list[Any]) -> list[int | None]:
    """The call index of each of ``wanted`` call ids (None: no such call), looked up in
    the run's calls (``call_ids`` aligned with ``call_index``) without a dict of them all."""
    if not wanted:
        return []
    order = np.argsort(call_ids, kind="stable")
    ids = call_ids[order]
    want = np.array([np.nan if w is None else w for w in wanted], dtype=float)
    pos = np.minimum(np.searchsorted(ids, want), max(ids.size - 1, 0))
    hit = (ids[pos] == want) if ids.size else np.zeros(want.size, dtype=bool)
    found = call_index[order][pos].tolist() if ids.size else []
    return [int(found[i]) if h else None for i, h in enumerate(hit.tolist())]


def lineage(programs: Programs, parents: set[int], call_ids: np.ndarray,
            call_index: np.ndarray) -> list[dict[str, Any]]:
    """Accepted programs and their ancestors (the tree of the run's progress).

    Accepted = used as a parent by some call (``parents``), or the best of its
    trajectory (the first told of its highest valid score); every ancestor of an
    accepted program is shown too so the tree is connected.  ``call_ids`` and
    ``call_index``: the run's calls, to give each program the index of its call.
    """
    c = programs.cols
    ids = c["program_id"]
    keep = np.isin(ids, np.fromiter(parents, dtype=np.int64, count=len(parents))) | c["is_initial"]
    cand = np.flatnonzero(c["valid"] & ~c["is_initial"])
    if cand.size:
        traj = np.nan_to_num(c["trajectory"][cand], nan=-1.0)
        order = np.lexsort((cand, -np.nan_to_num(c["score"][cand], nan=-np.inf), traj))
        first = np.r_[True, traj[order][1:] != traj[order][:-1]]
        keep[cand[order[first]]] = True
    index = {pid: i for i, pid in enumerate(ids.tolist())}
    parent = c["parent_id"].tolist()
    done: set[int] = set()  # walked already: each program is visited once (a chain of
    for i in np.flatnonzero(keep).tolist():  # 20,000 accepted programs is linear)
        while i is not None and i not in done:
            done.add(i)
            keep[i] = True
            up = parent[i]
            i = None if up != up else index.get(int(up))  # NaN: no parent
    shown = [programs.rows[i] for i in np.flatnonzero(keep).tolist()]
    at = call_indexes(call_ids, call_index, [p[1] for p in shown])
    return [{"id": p[0], "parent": p[6], "score": p[7], "valid": bool(p[8]),
             "trajectory": p[4], "generation": p[5], "initial": bool(p[2]),
             "call_index": c, "parent_of_calls": p[0] in parents}
            for p, c in zip(shown, at, strict=True)]
