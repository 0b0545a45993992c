"""Tokens the embedded model has generated, for calls still in flight (issue 24, item 9).

Why: on a loaded CPU one embedded call takes minutes, and the live line ticked without
showing any progress inside a call, so a working run looked hung.  The in-process
llama.cpp requests are streamed (:mod:`basevolve.llm.embedded_runtime`): each chunk is
one token of one choice.  The runtime registers every request's stream here while it
runs; :data:`METER` then answers, at any moment and from any thread, how many requests
are decoding, how many tokens they have produced so far, and how many tokens have been
produced in all (for a decode rate).  Mutation calls and a text task's answering calls
share the process, so both are counted.

A stream is any object with an integer ``tokens`` attribute or property that only grows;
the meter reads it and never changes it.  Light on purpose: no xllamacpp import, so the
live display can ask even when no embedded model is used (the answer is then zeros).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class DecodeReading:
    """One look at the meter."""

    requests: int  #: streamed requests decoding now
    tokens: int  #: tokens those requests have produced so far
    total: int  #: tokens produced by every request since the process started
    at: float  #: time.monotonic() of the reading


class DecodeMeter:
    """Process-wide registry of streamed requests in flight (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, Any] = {}
        self._finished = 0  # tokens of requests that have ended

    @contextmanager
    def tracking(self, stream: Any) -> Iterator[Any]:
        """Count ``stream``'s tokens while the block runs (a request from send to end)."""
        with self._lock:
            self._live[id(stream)] = stream
        try:
            yield stream
        finally:
            with self._lock:
                self._live.pop(id(stream), None)
                self._finished += _tokens(stream)

    def read(self) -> DecodeReading:
        with self._lock:
            live = list(self._live.values())
            finished = self._finished
        now = sum(_tokens(s) for s in live)
        return DecodeReading(len(live), now, finished + now, time.monotonic())


def _tokens(stream: Any) -> int:
    try:
        return max(0, int(stream.tokens))
    except Exception:  # a stream being written while read: count it next time
        return 0


class DecodeRate:
    """Tokens per second over the last ``window_s`` seconds, from successive readings.

    The display calls :meth:`update` at each redraw; the rate is the growth of
    ``total`` between the oldest kept reading and the newest (None until two readings
    at least ``min_span_s`` apart exist).
    """

    def __init__(self, window_s: float = 10.0, min_span_s: float = 1.0) -> None:
        self.window_s = window_s
        self.min_span_s = min_span_s
        self._samples: deque[tuple[float, int]] = deque()

    def update(self, reading: DecodeReading) -> float | None:
        self._samples.append((reading.at, reading.total))
        while len(self._samples) > 2 and reading.at - self._samples[1][0] >= self.window_s:
            self._samples.popleft()
        t0, n0 = self._samples[0]
        span = reading.at - t0
        if span < self.min_span_s:
            return None
        return max(0, reading.total - n0) / span


def decode_words(reading: DecodeReading, rate: float | None) -> str:
    """``decoding 2 requests: 137 tokens, 4.1 tok/s``; empty when nothing decodes."""
    if reading.requests == 0:
        return ""
    per_s = "" if rate is None else f", {rate:.1f} tok/s"
    plural = "s" if reading.requests != 1 else ""
    return f"decoding {reading.requests} request{plural}: {reading.tokens} tokens{per_s}"


#: The process's meter; :mod:`basevolve.llm.embedded_runtime` registers its streams.
METER = DecodeMeter()

__all__ = ["METER", "DecodeMeter", "DecodeRate", "DecodeReading", "decode_words"]
