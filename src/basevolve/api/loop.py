"""Running the engine's own event loop from any caller: a script, Jupyter, or a coroutine.

The engine drives its LLM calls and sandbox evaluations on an asyncio loop it creates
(``asyncio.run`` in :mod:`basevolve.engine.runner`).  ``asyncio.run`` refuses to start
inside a thread whose loop is already running -- which is every Jupyter cell (ipykernel
executes cells on its own loop).  So:

* **sync functions** (:func:`basevolve.run`, :func:`basevolve.resume`) run the engine
  in the calling thread when no loop is running there (a script, a plain REPL), and in
  **one worker thread** otherwise (Jupyter); the call blocks until the run ends either
  way.  Interrupting the kernel while it waits stops the run at its next completed call,
  records it as ``interrupted`` (resumable) and re-raises :class:`KeyboardInterrupt`.
* **async functions** (:func:`basevolve.run_async`, :func:`basevolve.resume_async`)
  always run the engine in a worker thread and await it, so the caller's loop stays
  responsive; cancelling the awaiting task stops the run the same way and re-raises
  :class:`asyncio.CancelledError` once the run is recorded as ``interrupted``.

Why a worker thread rather than nesting the engine in the caller's loop: the engine
calls blocking SQLite writes and the task's scorer between awaits; on the notebook's
loop they would stall the kernel, and a second loop in another thread keeps the engine
exactly as the CLI runs it (same code path, same guarantees).

The stop request travels through the progress hook: the engine calls it after every
completed call, and the hook raises :class:`KeyboardInterrupt` there once a stop was
asked for, which the engine records as ``interrupted``.  A user's own progress callback
is called from the thread that runs the engine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
Progress = Callable[[dict[str, Any]], None]
Job = Callable[[Progress], T]


class StopRequested(KeyboardInterrupt):
    """Raised inside the engine's progress hook when the caller asked the run to stop."""


def stop_hook(stop: threading.Event, progress: Progress | None) -> Progress:
    """A progress callback that honours ``stop`` before calling the user's ``progress``."""

    def hook(snapshot: dict[str, Any]) -> None:
        if stop.is_set():
            raise StopRequested("run stopped by the caller")
        if progress is not None:
            progress(snapshot)

    return hook


def loop_running() -> bool:
    """True when this thread is inside a running event loop (Jupyter, a coroutine)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def call_blocking(job: Job[T], progress: Progress | None) -> T:
    """Run ``job(hook)`` to its end, in this thread or, under a running loop, a worker."""
    stop = threading.Event()
    hook = stop_hook(stop, progress)
    if not loop_running():
        return job(hook)
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="basevolve-run")
    try:
        future = pool.submit(job, hook)
        try:
            return _wait(future)
        except KeyboardInterrupt:
            if future.done():  # raised by the run itself: pass it on
                raise
            stop.set()  # the caller was interrupted while waiting: stop the run cleanly
            concurrent.futures.wait([future])
            raise
    finally:
        pool.shutdown(wait=True)


def _wait(future: concurrent.futures.Future[T]) -> T:
    """``future.result()`` in short waits, so an interrupt is seen within 0.25 s.

    Why: a signal only interrupts the main thread's lock wait when the OS delivers it to
    that thread; a simulated or misdelivered one (ipykernel, ``_thread.interrupt_main``)
    would otherwise be seen only when the whole run has ended.
    """
    while True:
        try:
            return future.result(timeout=0.25)
        except TimeoutError:
            if future.done():  # the run itself raised TimeoutError
                raise


async def call_async(job: Job[T], progress: Progress | None) -> T:
    """Await ``job(hook)`` run in a worker thread; cancelling stops the run cleanly."""
    stop = threading.Event()
    hook = stop_hook(stop, progress)
    future = asyncio.get_running_loop().run_in_executor(None, job, hook)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        # Wait for the engine to record the run as interrupted.  Its StopRequested is a
        # KeyboardInterrupt; caught here so it cannot escape into the caller's loop.
        with contextlib.suppress(BaseException):
            await future
        raise
