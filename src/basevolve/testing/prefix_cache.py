"""The test server's prefix cache in a run's logical call order (issue 34, item 4).

The emulated prefix cache of :class:`~basevolve.testing.llm_server.LLMTestServer` gives a
request the longest common prefix with any *earlier received* prompt.  That depends on
arrival order (replies overtake each other) and on everything the server answered
before, other runs included: two ``--deterministic`` runs made the same calls, replies
and scores, but their ``cached_tokens``, and so the effective FLOPs that are the paper's
x-axis, differed (call 0 of a second run on the same server had 646 cached tokens).

Here a request that says where it stands in its run (the engine's ``X-Basevolve-Call``
header, :mod:`basevolve.llm.call_order`: ``<run>/<position>``, the position counting the
run's calls to this model in issue order) is answered from a cache of *that run*: the
longest common prefix with the prompts of the run's earlier positions (the
``window`` most recent, as the cache is bounded).  So the cache starts empty for each
run and is a function of the logical call order: a request whose predecessors have not
arrived yet waits for them (they were issued before it, so they are on their way), and
a call sent again (a failed call, or one lost in a kill and resent on ``--resume``) is
answered from the same predecessors.  A predecessor that does not come within
:data:`WAIT_S` (a server restarted between a kill and its resume knows none of the
run's earlier calls) is given up for the run, once: no stall, but then that run's
cached tokens are not replicable.  A request without the header (another client, a
text task's answer calls) keeps the arrival-order cache (:class:`ArrivalPrefixCache`).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import OrderedDict, deque

#: how long a request waits for an earlier position of its run (module docstring)
WAIT_S = 30.0
#: runs whose caches are kept (the least recently used is dropped beyond this)
MAX_RUNS = 64


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``.

    Binary search on slice equality (C speed) instead of a character loop: the server
    compares every prompt with all earlier ones under its lock, and greedy siblings are
    byte-identical, so a Python loop cost ~ms per pair and serialised concurrent
    requests on CPU that a real server does not spend (it grew with the run's length).
    """
    if a.startswith(b):
        return len(b)
    if b.startswith(a):
        return len(a)
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo]; a[:hi + 1] != b[:hi + 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def parse_order(value: str | None) -> tuple[str, int] | None:
    """``<run>/<position>`` from the header (None: absent or malformed)."""
    if not value:
        return None
    run, sep, pos = value.rpartition("/")
    if not sep or not run or not pos.isdigit():
        return None
    return run, int(pos)


class _Run:
    def __init__(self) -> None:
        self.prompts: dict[int, str] = {}  # position -> prompt (the first arrival's)
        self.given_up: set[int] = set()  # positions that never came in time
        self.below = 0  # positions below this are dropped (outside every window)


class LogicalPrefixCache:
    """Per-run prefix caches in logical order (module docstring); thread-safe."""

    def __init__(self, window: int | None = None, wait_s: float = WAIT_S) -> None:
        self.window = window
        self.wait_s = wait_s
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._cond = threading.Condition()

    def lookup(self, run: str, position: int, prompt: str,
               stopping: threading.Event | None = None) -> int:
        """Characters of ``prompt`` cached for the call at ``position`` of ``run``."""
        with self._cond:
            r = self._runs.get(run)
            if r is None:
                r = self._runs[run] = _Run()
                while len(self._runs) > MAX_RUNS:
                    self._runs.popitem(last=False)
            self._runs.move_to_end(run)
            r.prompts.setdefault(position, prompt)
            self._cond.notify_all()
            first = 0 if self.window is None else max(0, position - self.window)
            need = range(max(first, r.below), position)
            deadline = time.monotonic() + self.wait_s
            while True:
                missing = [q for q in need if q not in r.prompts and q not in r.given_up]
                left = deadline - time.monotonic()
                if not missing or left <= 0 or (stopping is not None and stopping.is_set()):
                    r.given_up.update(missing)
                    break
                self._cond.wait(min(left, 0.5))
            earlier = [r.prompts[q] for q in need if q in r.prompts]
            self._trim(r)
        return max((common_prefix(prompt, p) for p in earlier), default=0)

    def _trim(self, r: _Run) -> None:
        """Drop positions no later request's window can reach (bounded memory)."""
        if self.window is None or not r.prompts:
            return
        contiguous = r.below
        while contiguous in r.prompts or contiguous in r.given_up:
            contiguous += 1
        floor = contiguous - self.window - 1
        if floor > r.below:
            for q in range(r.below, floor):
                r.prompts.pop(q, None)
                r.given_up.discard(q)
            r.below = floor


class ArrivalPrefixCache:
    """The arrival-order cache: the longest common prefix with any prompt received
    before, the ``bound`` most recent kept (None: all).  Not locked: the server calls
    :meth:`lookup` under its own lock, in arrival order."""

    def __init__(self, bound: int | None = None) -> None:
        self.bound = bound
        self._sorted: list[str] = []
        self._order: deque[str] = deque()  # insertion order, for eviction

    def lookup(self, prompt: str) -> int:
        """Longest common prefix with any cached prompt, then cache this one.

        The longest common prefix of ``prompt`` with a set of strings is attained at one
        of its two neighbours in sorted order, so a sorted list answers in O(log n)
        comparisons instead of comparing with every earlier prompt.
        """
        cache = self._sorted
        i = bisect.bisect_left(cache, prompt)
        best = 0
        if i > 0:
            best = common_prefix(prompt, cache[i - 1])
        if i < len(cache):
            best = max(best, common_prefix(prompt, cache[i]))
        cache.insert(i, prompt)
        if self.bound is not None:
            self._order.append(prompt)
            while len(self._order) > self.bound:
                old = self._order.popleft()
                del cache[bisect.bisect_left(cache, old)]
        return best


__all__ = ["MAX_RUNS", "WAIT_S", "ArrivalPrefixCache", "LogicalPrefixCache", "common_prefix",
           "parse_order"]
