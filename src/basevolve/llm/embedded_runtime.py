"""The in-process llama.cpp server's life: load, stoppable requests, orderly shutdown.

Why a module of its own (issue 24, item 7): Ctrl-C during an embedded-model run crashed
the process in 2 of 4 tries (``segfault ... in xllamacpp.abi3.so`` after the
"interrupted -- continue with ..." line, exit 139 instead of 130).  At interpreter exit
llama.cpp's threads were still running -- a generation inside a daemon thread, the
server's own loop thread -- while Python and the C++ runtime tore down what they use.
A non-streamed llama.cpp request cannot be stopped (it waits for its result with a
"never stop" predicate, and terminating the server under a waiting request aborts the
process), so the shutdown here happens in an order that cannot crash:

1. **stop its requests**: every generation is a *streamed* request whose callback
   (:class:`Stream`) checks a stop flag at each token; once set, the callback returns
   True, the request returns and llama.cpp cancels its tasks (the slot is freed);
   (``return_progress``: also after each :data:`PROMPT_STEP` prompt tokens read);
2. **join** every thread that is inside llama.cpp (generations and a model load);
3. **free** the servers: xllamacpp's ``Server`` destructor terminates its loop and
   joins its thread, with no request left waiting on it.

:func:`shutdown` runs at interpreter exit (``atexit``, while Python is fully alive and
before daemon threads are frozen).  A call the engine cancels (Ctrl-C, a timeout) sets
its own stop flag at once, so its generation ends at its next token instead of running
on to ``max_tokens`` in the background.  A stop takes effect at the next token or the
next prompt step, whichever comes first.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from basevolve.errors import LLMError
from basevolve.llm.decode_meter import METER
from basevolve.llm.settings import LLMSettings
from basevolve.llm.weights import model_path

_LOCK = threading.Lock()
_SERVERS: dict[tuple[str, int, int, int], Any] = {}
_ACTIVE: set[threading.Thread] = set()  # threads inside llama.cpp (generations, loads)
_ACTIVE_LOCK = threading.Lock()
_PID = os.getpid()  # the process whose servers these are (see shutdown)
_SHUTDOWN = threading.Event()  # set once by shutdown(): every stream stops at its next token
#: Prompt tokens llama.cpp reads per step (its ``n_batch``).  With ``return_progress``
#: every step sends a progress chunk, so a stop takes effect within one step even while a
#: long prompt is read (one 2,048-token step held a Ctrl-C for 25-60 s on a loaded 2-core
#: box).  The step does not change throughput measurably: a 1,248-token prompt on the
#: 0.5B model, 2 threads, interleaved x3 on a busy 2-core box, read in a median 62.6 s
#: (128), 64.7 s (256) and 63.2 s (2,048).
PROMPT_STEP = 128
#: How long :func:`shutdown` waits for the threads inside llama.cpp; a stop takes effect
#: at the next token, so only a prompt being read (seconds to minutes on a slow CPU) or
#: a model being loaded keeps one.  A thread still running then is left with its server
#: (never freed under it), so a stuck runtime cannot turn an exit into a crash.
JOIN_TIMEOUT_S = 900.0


def import_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError:
        raise LLMError(
            "the embedded model needs the xllamacpp runtime; install it with: "
            "pip install 'basevolve[local]'"
        ) from None
    return xllamacpp


async def in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run blocking ``fn(*args)`` in a fresh daemon thread and await its result.

    Why not ``asyncio.to_thread``: a llama.cpp call blocks until its next token at the
    earliest, and the default executor's threads are joined when ``asyncio.run`` ends,
    so Ctrl-C would wait inside the engine; a daemon thread is left to :func:`shutdown`,
    which stops and joins it at exit.  The thread is tracked from start to end.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def work() -> None:
        try:
            try:
                result: Any = fn(*args)
                ok = True
            except BaseException as exc:
                result, ok = exc, False
            try:
                loop.call_soon_threadsafe(deliver, ok, result)
            except RuntimeError:  # the loop is closed: nobody waits for this result
                pass
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE.discard(threading.current_thread())

    thread = threading.Thread(target=work, name="basevolve-llama", daemon=True)
    with _ACTIVE_LOCK:
        if _SHUTDOWN.is_set():
            raise LLMError("the embedded model is shutting down (the process is exiting)")
        _ACTIVE.add(thread)
    try:
        thread.start()
    except BaseException:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(thread)
        raise
    return await future


def threads(settings: LLMSettings) -> int:
    return settings.embedded_threads or max(1, os.cpu_count() or 1)


def load_server(weights: str, settings: LLMSettings) -> Any:
    """The process-wide xllamacpp server for ``weights`` (built on first use)."""
    key = (weights, settings.embedded_n_ctx, settings.embedded_n_parallel, threads(settings))
    with _LOCK:
        if _SHUTDOWN.is_set():
            raise LLMError("the embedded model is shutting down (the process is exiting)")
        server = _SERVERS.get(key)
        if server is not None:
            return server
        x = import_xllamacpp()
        path = model_path(weights)  # joins + verifies the parts once (LLMError if missing)
        params = x.CommonParams()
        params.model.path = str(path)
        params.n_ctx = settings.embedded_n_ctx
        params.n_parallel = settings.embedded_n_parallel
        params.cpuparams.n_threads = key[3]
        params.cpuparams_batch.n_threads = key[3]
        params.warmup = False
        params.n_batch = PROMPT_STEP  # a stop is seen after each step (see PROMPT_STEP)
        params.n_ubatch = min(params.n_ubatch, PROMPT_STEP)
        # One KV pool shared by all slots: without it llama.cpp splits n_ctx evenly, and
        # an evolution prompt (~1.4k tokens) plus a long reply overflows a 1/n slot.
        params.kv_unified = True
        try:
            params.verbosity = -1  # quieten llama.cpp's stderr log
        except (AttributeError, TypeError, ValueError):
            pass
        try:
            server = x.Server(params)
        except Exception as exc:
            raise LLMError(f"could not load the embedded model from {path}: {exc}") from None
        _SERVERS[key] = server
        return server


class Stream:
    """The callback of one streamed request: collects its chunks, stops it on request.

    llama.cpp calls it (holding the GIL) once per chunk: a prompt-reading progress
    chunk, a token delta of choice ``index``, a choice's ``finish_reason``, then that
    choice's ``usage``/``timings``.
    Returning True ends the request (llama.cpp cancels what is left of it).  It never
    raises: a failure here would be turned into a stop by the binding anyway.
    """

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.texts: dict[int, list[str]] = {}
        self.reasoning: dict[int, list[str]] = {}
        self.finish: dict[int, str | None] = {}
        self.usage: dict[int, Any] = {}
        self.timings: dict[int, Any] = {}
        self.error: Any = None
        self.chunks = 0
        self.tokens = 0  # token deltas so far, read by the live line (llm/decode_meter.py)
        self._last = 0

    @property
    def stopped(self) -> bool:
        return self.stop.is_set() or _SHUTDOWN.is_set()

    def __call__(self, chunk: Any) -> bool:
        if self.stopped:
            return True
        try:
            self._take(chunk)
        except Exception:  # a malformed chunk: keep what came; the body says what is missing
            pass
        return self.stopped

    def _take(self, chunk: Any) -> None:
        self.chunks += 1
        if not isinstance(chunk, dict):
            self.error = {"error": {"code": 500, "message": f"unreadable chunk {chunk!r:.200}"}}
            return
        if "error" in chunk or "choices" not in chunk:  # a refused request: one error body
            self.error = chunk if "error" in chunk else {"error": chunk}
            return
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            i = int(choice.get("index") or 0)
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.texts.setdefault(i, []).append(delta["content"])
            thought = delta.get("reasoning_content")
            if isinstance(thought, str):
                self.reasoning.setdefault(i, []).append(thought)
            if delta.get("content") or thought:  # one generated token (issue 24, item 9)
                self.tokens += 1
            self.texts.setdefault(i, [])
            if choice.get("finish_reason"):
                self.finish[i] = choice["finish_reason"]
                self._last = i
        if chunk.get("usage") is not None:  # follows its choice's finishing chunk
            self.usage[self._last] = chunk["usage"]
            self.timings[self._last] = chunk.get("timings")

    def body(self) -> dict[str, Any]:
        """The non-streamed response these chunks add up to (usage of the first choice,
        as llama.cpp reports it for an ``n`` request)."""
        if self.error is not None:
            return self.error
        choices = []
        for i in sorted(self.texts):
            message: dict[str, Any] = {"role": "assistant", "content": "".join(self.texts[i])}
            if self.reasoning.get(i):
                message["reasoning_content"] = "".join(self.reasoning[i])
            choices.append({"index": i, "message": message,
                            "finish_reason": self.finish.get(i)})
        first = min(self.usage) if self.usage else None
        return {"choices": choices,
                "usage": None if first is None else self.usage[first],
                "timings": None if first is None else self.timings.get(first)}


async def stream_request(server: Any, request: dict[str, Any]) -> dict[str, Any]:
    """One streamed chat request in a tracked daemon thread; its assembled body.

    Cancelling the awaiting task (Ctrl-C, an attempt timeout) stops the generation at its
    next token; nobody waits for what it would have returned.
    """
    stream = Stream()
    payload = dict(request, stream=True, stream_options={"include_usage": True},
                   return_progress=True)  # a chunk per prompt step: stoppable while reading
    try:
        with METER.tracking(stream):  # its tokens show on the live line (issue 24, item 9)
            await in_daemon_thread(server.handle_chat_completions, payload, stream)
    except asyncio.CancelledError:
        stream.stop.set()
        raise
    if stream.stopped:
        raise LLMError("the embedded model is shutting down (the process is exiting)")
    return stream.body()


def active() -> int:
    """Threads inside llama.cpp right now (generations and loads)."""
    with _ACTIVE_LOCK:
        return len(_ACTIVE)


def shutdown(timeout_s: float = JOIN_TIMEOUT_S, *, notify: bool = True) -> bool:
    """Stop every request, join the threads inside llama.cpp, then free the servers.

    Returns True when the servers were freed (or none was loaded); False when a thread
    did not finish within ``timeout_s`` (its server is then kept, never freed under it).
    Idempotent; runs at exit.  A second Ctrl-C meanwhile is ignored: interrupting the
    join would bring back the crash it prevents.
    """
    if os.getpid() != _PID:  # a forked child inherits the servers, not their threads:
        return True            # freeing them there would join threads it does not have
    _SHUTDOWN.set()
    with _ACTIVE_LOCK:
        waiting = list(_ACTIVE)
    if waiting:
        _ignore_sigint()
        if notify:
            print(f"basevolve: stopping the embedded model ({len(waiting)} request(s) end at "
                  "their next token) …", file=sys.stderr, flush=True)
        deadline = _monotonic() + timeout_s
        for t in waiting:
            t.join(max(0.0, deadline - _monotonic()))
        if any(t.is_alive() for t in waiting):
            return False
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    del servers  # the last references: each Server's destructor joins its loop thread
    return True


def _monotonic() -> float:
    import time

    return time.monotonic()


def _ignore_sigint() -> None:
    if threading.current_thread() is threading.main_thread():
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main interpreter
            pass


atexit.register(shutdown)

__all__ = ["JOIN_TIMEOUT_S", "Stream", "active", "import_xllamacpp", "in_daemon_thread",
           "load_server", "shutdown", "stream_request", "threads"]
