"""Live progress of ``basevolve run`` on stderr (issue 12, item 6).

Why a ticking display: on a CPU an embedded-model call takes a minute or more, and the
engine reports only when something happens (a call is sent, answered or scored).  A
display redrawn from those events alone froze for minutes and looked like a hang, so
both displays keep their own clock and redraw between events:

* on a terminal, a ``rich`` :class:`~rich.live.Live` line, refreshed twice a second;
* otherwise (a log file, CI, a pipe), a plain line at most every ``every_s`` seconds
  from a daemon thread, plus every call-count change, plus the final line — no
  terminal control codes in files.

Both show the same fields: elapsed time, LLM calls in flight, calls done / C (with a
FLOPs or token budget: calls done and the budget spent / its limit), best
score, valid-children rate and FLOPs, taken from :meth:`Engine.snapshot`.

Issue 24, item 9: under CPU load one embedded call takes minutes, and a line whose only
moving part was the clock still looked hung.  While the embedded model decodes, both
lines end with ``decoding R requests: K tokens, X tok/s`` (the tokens the requests in
flight have produced so far, and the rate over the last ten seconds, from
:mod:`basevolve.llm.decode_meter`).  Before the first LLM call the line says what the
run is doing (:meth:`phase`: "evaluating the initial program (10 answering calls)"
while a text task's initial template is scored) instead of "waiting for the first LLM
call", and the plain display writes that line too, every ``every_s`` seconds.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from basevolve.cli.summary_table import score_text
from basevolve.llm.decode_meter import METER, DecodeRate, decode_words
from basevolve.terminal import clean

WAITING = "waiting for the first LLM call"


def progress_line(s: dict[str, Any], elapsed_s: float, decoding: str = "") -> str:
    """One line of progress from an engine snapshot; ``elapsed_s`` is the display's clock,
    ``decoding`` the embedded model's token progress (:func:`decode_words`), if any."""
    rate = "-" if s.get("valid_rate") is None else f"{100 * s['valid_rate']:.0f}%"
    best = s.get("best_score")
    best_text = score_text(best, 4)  # 1e308 as 1e+308, not 309 digits (issue 32)
    minutes, seconds = divmod(int(elapsed_s), 60)
    calls = f"calls {s['calls_completed']}/{s['budget']}"
    kind = s.get("budget_kind")
    if kind in ("flops", "tokens", "usd"):  # a cost budget: spent / limit, not calls/cap
        spent, limit = s["budget_spent"], s["budget_limit"]
        money = (f"${spent:.4g}/${limit:.4g}" if kind == "usd"  # issue 32: was calls 0/1000000
                 else f"{kind} {spent:.3g}/{limit:.3g}")
        calls = f"calls {s['calls_completed']}  {money}"
    return (f"[{clean(s['run_id'])}] {minutes:d}:{seconds:02d}  in flight {s.get('in_flight', 0)}  "
            f"{calls}  best {best_text}  valid {rate}  FLOPs {s['flops']:.3g}"
            + (f"  {decoding}" if decoding else ""))


class _Clock:
    """The latest snapshot and a clock that keeps running between snapshots."""

    def __init__(self) -> None:
        self.snapshot: dict[str, Any] | None = None
        self.phase = WAITING
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._rate = DecodeRate()

    def update(self, s: dict[str, Any]) -> None:
        with self._lock:
            self.snapshot = dict(s)

    def decoding(self) -> str:
        reading = METER.read()
        with self._lock:
            rate = self._rate.update(reading)
        return decode_words(reading, rate)

    def line(self) -> str | None:
        """The run's line, on the display's own clock (issue 37, item 8): the engine's
        ``elapsed_s`` starts after the model was loaded and the initial program scored,
        so a waiting line at 4:11 was followed by a run line at 2:58.  One clock, from
        the moment the command started, runs on through both."""
        with self._lock:
            s = self.snapshot
        if s is None:
            return None
        return progress_line(s, time.monotonic() - self._t0, self.decoding())

    def waiting_line(self) -> str:
        """Before the first snapshot: what the run does, for how long, and any decoding."""
        minutes, seconds = divmod(int(time.monotonic() - self._t0), 60)
        decoding = self.decoding()
        return (f"{clean(self.phase)} … {minutes:d}:{seconds:02d}"
                + (f"  {decoding}" if decoding else ""))


class RichProgress:
    """A live line on a terminal, redrawn by rich's own refresh thread."""

    def __init__(self, console: Console | None = None) -> None:
        self.clock = _Clock()
        self.console = console or Console(stderr=True)
        self.live = Live(self, console=self.console, refresh_per_second=2, transient=False)
        self.live.start()

    def __rich__(self) -> Text:
        return Text(self.clock.line() or self.clock.waiting_line())

    def __call__(self, s: dict[str, Any]) -> None:
        self.clock.update(s)

    def phase(self, text: str) -> None:
        """What the run does before its first LLM call (shown until the first snapshot)."""
        self.clock.phase = text

    def done(self) -> None:
        if self.live.is_started:
            self.live.stop()


class PlainProgress:
    """Plain lines for logs and pipes: on call-count changes and every ``every_s`` seconds."""

    def __init__(self, stream: IO[str] | None = None, every_s: float = 10.0) -> None:
        self.clock = _Clock()
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self._last_done: int | None = None
        self._last_write = time.monotonic()
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._ticker = threading.Thread(target=self._tick, name="basevolve-progress",
                                        daemon=True)
        self._ticker.start()

    def _write(self) -> None:
        line = self.clock.line() or self.clock.waiting_line()
        with self._write_lock:
            self.stream.write(line + "\n")
            self.stream.flush()
            self._last_write = time.monotonic()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            if self.clock.snapshot is None and self.clock.phase == WAITING:
                continue  # nothing said yet (model loading prints its own lines)
            if time.monotonic() - self._last_write >= self.every_s:
                self._write()

    def phase(self, text: str) -> None:
        """What the run does before its first LLM call: written now and every
        ``every_s`` seconds until the first snapshot."""
        self.clock.phase = text
        if self.clock.snapshot is None:
            self._write()

    def __call__(self, s: dict[str, Any]) -> None:
        self.clock.update(s)
        if s["calls_completed"] != self._last_done:
            self._last_done = s["calls_completed"]
            self._write()

    def done(self) -> None:
        """Stop the clock and write the final line once: the last children are scored
        after the last call returns, and their best score changes no call count."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._ticker.join(timeout=2.0)
        if self.clock.snapshot is not None:  # a run that never sent a call: nothing to add
            self._write()


def make_progress(stream: IO[str] | None = None) -> RichProgress | PlainProgress:
    """The live display on a terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    if stream.isatty():
        return RichProgress(Console(file=stream))
    return PlainProgress(stream)


def say(message: str, stream: IO[str] | None = None) -> None:
    """One status line ("loading the embedded model …") on stderr, flushed at once.

    The message may quote a program's error or a model id: it is printed
    :func:`~basevolve.terminal.clean` (one line, no terminal control codes)."""
    out = stream or sys.stderr
    out.write(f"basevolve: {clean(message)}\n")
    out.flush()


__all__ = ["PlainProgress", "RichProgress", "make_progress", "progress_line", "say"]
