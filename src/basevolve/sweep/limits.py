"""One in-flight limit per endpoint, shared by every run of a sweep (issue 11, part 2).

Why: a run holds at most N calls in flight, so a grid of sequential runs (T = C, N = 1)
leaves a 16-slot vLLM server almost idle when the runs go one after another.  A sweep
drives many runs at once and routes every call through its endpoint's
:class:`PriorityLimiter`, so the server sees exactly its limit in flight whatever the
runs' N.

Why a priority and not a plain semaphore: with a FIFO queue a sequential run waits
behind the wide runs' bursts on *every* one of its C calls, and the sweep's tail is the
slowest sequential run.  Each run gets a rank (longest critical path first, see
:mod:`basevolve.sweep.plan`); a free slot goes to the waiting call of the best rank, so
a T = C run is delayed at most one service time per call while wide runs fill the rest
(longest-processing-time-first scheduling).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Any, Protocol

from basevolve.llm.base import DEFAULT_TEMPERATURE, DEFAULT_TOP_P
from basevolve.llm.sending import sending, waiting
from basevolve.records import Completion


class Limiter(Protocol):
    """What :class:`LimitedClient` needs: a prioritised slot, then its release."""

    async def acquire(self, priority: int) -> None: ...

    async def release(self) -> None: ...


class PriorityLimiter:
    """At most ``limit`` holders; waiters served lowest ``priority`` first, FIFO within.

    Lives on one asyncio loop.  ``peak`` records the most slots ever held at once (the
    benchmark and tests compare it with the server's own count).
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.limit = limit
        self.in_use = 0
        self.peak = 0
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def acquire(self, priority: int = 0) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._order), fut))
        self._dispatch()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled: give it back
                self._give_back()
            raise

    async def release(self) -> None:
        self._give_back()

    def _give_back(self) -> None:
        self.in_use -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        while self._waiters and self.in_use < self.limit:
            _, _, fut = heapq.heappop(self._waiters)
            if fut.done():  # its waiter was cancelled
                continue
            self.in_use += 1
            self.peak = max(self.peak, self.in_use)
            fut.set_result(None)

    @property
    def waiting(self) -> int:
        return sum(not f.done() for _, _, f in self._waiters)


class LimitedClient:
    """An :class:`~basevolve.llm.LLMClient` whose calls hold a slot of the endpoint.

    Wraps a client shared by many runs; one wrapper per run carries that run's rank.
    The slot covers the whole call including the client's own retries, so the server
    never sees more than the limit.  A call waiting for its slot is not sent
    (:mod:`basevolve.llm.sending`): if the run stops then, it costs nothing.  ``aclose`` is a no-op: the sweep closes the shared
    client once, after every run.
    """

    def __init__(self, inner: Any, limiter: Limiter, priority: int = 0) -> None:
        self.inner, self.limiter, self.priority = inner, limiter, priority

    @property
    def model_spec(self) -> Any:
        return self.inner.model_spec

    async def complete(self, messages: list[dict[str, Any]], *,
                       temperature: float = DEFAULT_TEMPERATURE, top_p: float = DEFAULT_TOP_P,
                       max_tokens: int | None = None, seed: int | None = None) -> Completion:
        waiting()
        await self.limiter.acquire(self.priority)
        sending()
        try:
            return await self.inner.complete(messages, temperature=temperature, top_p=top_p,
                                             max_tokens=max_tokens, seed=seed)
        finally:
            await self.limiter.release()

    async def aclose(self) -> None:
        return None


__all__ = ["LimitedClient", "Limiter", "PriorityLimiter"]
