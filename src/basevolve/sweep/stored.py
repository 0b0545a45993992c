"""What a store holds of a sweep's runs, read read-only (issue 11, part 4).

The store is opened with ``mode=ro`` (SQLite WAL lets readers run beside the writer),
so ``sweep --status``, the reliability summary and the sweep executor's start can read
it while another process runs the sweep.  Its own module because all three read it:
``status`` shows the reliability summary, so ``reliability`` cannot import ``status``
(issue 33: no import circles).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from basevolve.errors import StoreError
from basevolve.store.decoding import read_leniently
from basevolve.store.schema import inspect_file


def read_state(store_path: str | Path, *, configs: bool = True) -> dict[str, dict[str, Any]]:
    """Per stored run: status, error, config_json, counted calls, FLOPs, best score, and
    ``truncated``: replies cut at max_tokens (``finish_reason = "length"``, issue 23).

    ``configs=False`` leaves ``config_json`` out (NULL): ``--status`` and the reliability
    table do not need it, and it is the largest field of a stored run.
    """
    path = Path(store_path)
    if inspect_file(path) == "new":
        return {}
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read store {str(path)!r}: {exc}") from None
    con.row_factory = sqlite3.Row
    read_leniently(con)  # a run's error with invalid UTF-8 reads as U+FFFD
    try:
        runs = {r["run_id"]: dict(r) for r in con.execute(
            "SELECT run_id, status, error, "
            + ("config_json" if configs else "NULL AS config_json") + ", budget FROM runs")}
        for r in con.execute("SELECT run_id, coalesce(sum(counted),0) AS calls, "
                             "coalesce(sum(flops),0) AS flops, "
                             "coalesce(sum(finish_reason = 'length'),0) AS cut "
                             "FROM calls GROUP BY run_id"):
            if r["run_id"] in runs:
                runs[r["run_id"]].update(calls=int(r["calls"]), flops=float(r["flops"]),
                                         truncated=int(r["cut"]))
        for r in con.execute("SELECT run_id, max(score) AS best FROM programs GROUP BY run_id"):
            if r["run_id"] in runs:
                runs[r["run_id"]]["best"] = r["best"]
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read store {str(path)!r}: {exc}") from None
    finally:
        con.close()
    for r in runs.values():
        r.setdefault("calls", 0)
        r.setdefault("flops", 0.0)
        r.setdefault("truncated", 0)
        r.setdefault("best", None)
    return runs


__all__ = ["read_state"]
