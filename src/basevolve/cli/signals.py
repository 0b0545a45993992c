"""SIGTERM stops a command as Ctrl-C does (issue 37, item 2).

Why: SIGTERM is what ``timeout``, ``docker stop``, SLURM (at the time limit or on
``scancel``) and Kubernetes send before they kill.  Python's default ends the process
at once (exit 143, no message): the run stayed ``running`` in the store, its calls in
flight were never charged, and nothing said how to continue.  Treated as SIGINT, the
engine records the run as ``interrupted``, charges its lost calls
(:mod:`basevolve.engine.lost_calls`), and ``run``/``sweep`` print the command that
continues it, exit 130.

How: the SIGTERM handler does what SIGINT's current handler does -- asyncio's (which
cancels the running loop's main task, so the engine stops cleanly) or Python's
``KeyboardInterrupt``.  The first SIGTERM always interrupts, even when SIGINT is
ignored (a background job started without job control inherits SIGINT ignored); later
ones follow SIGINT's handler, so the embedded model's shutdown, which ignores a second
Ctrl-C while it joins its threads (:mod:`basevolve.llm.embedded_runtime`), ignores a
second SIGTERM too.  A process killed outright (SIGKILL) cannot be caught: readers show
its run as interrupted (:mod:`basevolve.store.liveness`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside: SIGTERM interrupts as SIGINT does (module docstring); the previous
    handler comes back after (the CLI also runs inside tests and notebooks)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set in the main thread
        return
    seen = [False]

    def on_term(signum: int, frame: FrameType | None) -> None:
        first, seen[0] = not seen[0], True
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        elif first:
            raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


__all__ = ["sigterm_as_interrupt"]
