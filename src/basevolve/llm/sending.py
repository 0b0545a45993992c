"""Whether a call's request has left for its endpoint (issue 37, item 1).

Why: a call is stored ``pending`` before it is sent (write-ahead), but a call may then
wait for its turn -- behind a sweep endpoint's in-flight limit
(:class:`basevolve.sweep.limits.LimitedClient`, local or Ray) or a model's
``max_in_flight`` slots.  When the run stops, only calls that were *sent* and never
answered may be charged under ``--charge-unanswered``
(:mod:`basevolve.engine.lost_calls`); a call still waiting for its turn cost nothing.
Before, every pending call was charged its worst case: an interrupted sweep with
``limit = 4`` charged 14 calls of which 10 were still queued.

How: the engine runs each call in its own asyncio task and, inside it, registers a
callback with :func:`watch_sending` (a :class:`~contextvars.ContextVar`, so it belongs to
that task alone and crosses any number of client wrappers without changing their
signatures).  The call counts as sent from the start; a wrapper that makes it wait calls
:func:`waiting` before it waits and :func:`sending` once it got its turn.  A client
nobody wrapped needs no change.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

#: The running call's callback, ``report(sent)``; None outside an engine call.
_REPORT: ContextVar[Callable[[bool], None] | None] = ContextVar("basevolve_sending",
                                                                default=None)


def watch_sending(report: Callable[[bool], None]) -> None:
    """Inside a call's own task: route its waits to ``report`` and count it as sent
    (``report(True)``) until a wrapper says it waits."""
    _REPORT.set(report)
    report(True)


def waiting() -> None:
    """The running call waits for its turn: not sent (yet)."""
    report = _REPORT.get()
    if report is not None:
        report(False)


def sending() -> None:
    """The running call got its turn: its request goes out now."""
    report = _REPORT.get()
    if report is not None:
        report(True)


class UnsentCalls(set[int]):
    """The engine's calls not sent yet (ids): in the set from :meth:`track` until the
    call's task starts, and again while a wrapper makes it wait for its turn."""

    def track(self, call_id: int, call: Callable[[], Awaitable[T]]) -> Coroutine[Any, Any, T]:
        """``call()`` (a client's ``complete(...)``) reporting into this set; run it as
        its own task.  ``call`` is made only once the task starts: a task cancelled
        before it started leaves no coroutine that was never awaited."""
        self.add(call_id)

        def report(sent: bool) -> None:
            (self.discard if sent else self.add)(call_id)

        async def run() -> T:
            watch_sending(report)
            return await call()

        return run()


__all__ = ["UnsentCalls", "sending", "waiting", "watch_sending"]
