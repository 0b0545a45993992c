"""The picture of a run's best solution, drawn from its stored value.

Why not run the best program again (as ``basevolve run`` does for ``best.png``): the
dashboard is read-only and executes no stored code, not even sandboxed, so a page view
can never start a process.  The run keeps the plain-data value its best program returned
(table ``solutions``, written when the run ends) and the task's trusted ``draw`` turns
that data into the same PNG ``run`` writes, into memory (no file is written or read).

Only built-in tasks are drawn: a run of a user task names a Python file, and importing it
would run code the dashboard was not asked to run.  Drawings are cached in memory (a
stored value never changes).
"""

from __future__ import annotations

import io
import json
import threading
from collections import OrderedDict

from basevolve.dashboard.db import ReadOnlyStore

CACHE_SIZE = 64
_DRAW_LOCK = threading.Lock()  # matplotlib is not promised to be thread-safe


class PictureUnavailable(Exception):
    """Why there is no picture (shown to the user as text)."""


class Pictures:
    """PNG bytes per (run, program), drawn once from stored values."""

    def __init__(self, store: ReadOnlyStore) -> None:
        self.store = store
        self._cache: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def best_png(self, run_id: str) -> bytes:
        if not self.store.has("solutions"):
            raise PictureUnavailable("this store was written before solutions were kept; "
                                     "re-run to get pictures")
        row = self.store.one("""
            SELECT s.program_id, s.value_json, r.task FROM solutions s
            JOIN runs r ON r.run_id = s.run_id
            JOIN programs p ON p.program_id = s.program_id
            WHERE s.run_id = ? ORDER BY p.score DESC, s.created_at DESC LIMIT 1""", (run_id,))
        if row is None:
            raise PictureUnavailable("no stored solution yet: the run keeps its best "
                                     "solution's value when it finishes")
        key = (run_id, int(row["program_id"]))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        png = self._draw(str(row["task"]), row["value_json"])
        with self._lock:
            self._cache[key] = png
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return png

    @staticmethod
    def _draw(task_name: str, value_json: str) -> bytes:
        from basevolve.tasks import TASKS

        if task_name not in TASKS:
            raise PictureUnavailable(f"task {task_name!r} is not built in; the dashboard does "
                                     "not import task files")
        task = TASKS.get(task_name)()
        try:
            value = json.loads(value_json)
        except ValueError:
            raise PictureUnavailable("the stored solution value is not valid JSON") from None
        buf = io.BytesIO()
        try:
            with _DRAW_LOCK:
                task.draw(value, buf)  # type: ignore[arg-type]
        except NotImplementedError:
            raise PictureUnavailable(f"task {task_name!r} has no picture") from None
        except Exception as exc:  # a value that cannot be drawn is a message, not a 500
            raise PictureUnavailable(f"cannot draw the solution: {type(exc).__name__}: "
                                     f"{str(exc)[:200]}") from None
        return buf.getvalue()
