"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks (issue 3, part 7).

docs/design.md, style rule 9: LLM code is tested against a real local HTTP server speaking
the OpenAI protocol, never a patched function.  This server answers
``POST /v1/chat/completions`` (``stream=false``) and ``GET /v1/models`` with scripted
replies, reports ``usage`` the way vLLM does (including
``usage.prompt_tokens_details.cached_tokens``), can inject faults into the next N
requests, and records what it received and the peak number of requests in flight.

Usage accounting (deterministic, documented so tests can hand-check FLOPs):

* ``prompt_tokens``: ``len(prompt_text) // 4`` (at least 1), where ``prompt_text`` is
  the concatenation of every message's ``content`` in order; or the fixed
  ``prompt_tokens`` given to the constructor.
* ``cached_tokens``: by default an emulated prefix cache: the longest common prefix (in
  characters) between this request's ``prompt_text`` and any *earlier* request's, ``// 4``,
  capped at ``prompt_tokens - 1`` (vLLM always recomputes at least one token).  The first
  request therefore has 0 cached tokens.  Under concurrency "earlier" means "received
  earlier" (but see :mod:`basevolve.testing.prefix_cache`: a run's own cache in its
  logical order).  A fixed ``cached_tokens`` overrides the emulation.
* ``completion_tokens``: ``len(reply) // 4`` (at least 1), at most the request's
  ``max_tokens`` (an honest server never generates more: issue 32 refuses a count above
  it as impossible), or the fixed value given.
* ``usage``: a callable ``(request_body, reply) -> usage dict`` replaces all of the above
  (e.g. :func:`basevolve.testing.usage.worst_case_usage`).

Each request sleeps ``latency_s`` in its own handler thread, so concurrent requests
overlap (``ThreadingHTTPServer``) and ``peak_in_flight`` shows the client's concurrency.
``latency_jitter`` = j draws each request's sleep uniformly from ``latency_s * [1 - j,
1 + j]`` (``jitter_seed`` seeds the draws, in arrival order), so replies overtake each
other as a real server's do (issue 23: ``--deterministic`` must not depend on it).
A ``latency_model`` (e.g. :class:`basevolve.testing.sim.latency.TokenRateLatency`)
replaces the fixed sleep: the reply is computed first, then the request waits for one
of the model's ``slots`` and holds it for ``latency_model.seconds(usage)``.

``record=False`` keeps no request bodies (``requests`` stays empty, only the count and
the prefix cache are kept): a simulator serving a whole benchmark answers tens of
thousands of ~20 kB prompts.  ``prefix_cache_prompts`` bounds the emulated prefix cache
to the most recent prompts (a real server's cache is bounded too); None = unbounded.

Run as a process (for SIGKILL/resume tests and benchmarks)::

    python -m basevolve.testing.llm_server --port 0 --latency 0.05 [--replies-file F.json]

prints the base URL (``http://127.0.0.1:PORT/v1``) as its first stdout line and serves
until killed.  ``--replies-file`` holds a JSON list of reply strings (cycled).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from http.server import ThreadingHTTPServer
from typing import Any, Protocol

from basevolve.testing.completion import (
    Prompt,
    chat_completion,
    default_reply,
    prompt_text,
    usage_counts,
)
from basevolve.testing.faults import Fault
from basevolve.testing.handler import make_handler
from basevolve.testing.prefix_cache import ArrivalPrefixCache, LogicalPrefixCache, parse_order

ReplyFn = Callable[[dict[str, Any], int], str]
UsageFn = Callable[[dict[str, Any], str], dict[str, Any]]
#: ``--reply-function`` names -> ``module:function`` of the scripted reply functions
REPLY_FUNCTIONS = {"evolve-block": "basevolve.testing.evolve_block:evolve_block_reply",
                   "island": "basevolve.testing.replies:island_reply",
                   "packing": "basevolve.testing.replies:seeded_packing_reply",
                   "qa": "basevolve.testing.qa_replies:qa_reply"}


class LatencyModel(Protocol):
    """Service time of one request from its usage, and how many run at once."""

    slots: int

    def seconds(self, usage: dict[str, Any]) -> float: ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog (5) drops bursts of connections


class LLMTestServer:
    """Scripted OpenAI-compatible server on 127.0.0.1; use as a context manager.

    ``replies``: a callable ``(request_body, index) -> str``, a sequence of strings
    (cycled), or None for :func:`default_reply`.  ``index`` counts chat requests from 0
    in arrival order (faulted requests included).
    """

    def __init__(
        self,
        replies: ReplyFn | Sequence[str] | None = None,
        *,
        latency_s: float = 0.0,
        prompt_tokens: int | None = None,
        cached_tokens: int | None = None,
        completion_tokens: int | None = None,
        stall_s: float = 60.0,
        port: int = 0,
        host: str = "127.0.0.1",
        latency_model: LatencyModel | None = None,
        record: bool = True,
        prefix_cache_prompts: int | None = None,
        model_ids: Sequence[str] = ("test-model",),
        usage: UsageFn | None = None,
        latency_jitter: float = 0.0,
        jitter_seed: int | None = None,
    ) -> None:
        if isinstance(replies, str):
            replies = [replies]
        if replies is None:
            self._reply: ReplyFn = default_reply
        elif callable(replies):
            self._reply = replies
        else:
            seq = list(replies)
            if not seq:
                raise ValueError("replies must not be an empty sequence")
            self._reply = lambda _body, i: seq[i % len(seq)]
        self.latency_s = float(latency_s)
        if not 0.0 <= latency_jitter <= 1.0:
            raise ValueError(f"latency_jitter must be between 0 and 1, got {latency_jitter}")
        self.latency_jitter = float(latency_jitter)
        self._jitter = random.Random(jitter_seed)
        self.fixed_prompt_tokens = prompt_tokens
        self.fixed_cached_tokens = cached_tokens
        self.fixed_completion_tokens = completion_tokens
        self.usage_fn = usage
        self.stall_s = float(stall_s)
        self.latency_model = latency_model
        self._slots = threading.Semaphore(latency_model.slots) if latency_model else None
        self.record = bool(record)
        self.prefix_cache_prompts = prefix_cache_prompts
        self._arrival = ArrivalPrefixCache(prefix_cache_prompts)  # the emulated prefix cache
        self._logical = LogicalPrefixCache(prefix_cache_prompts)
        self._payloads: dict[int, dict[str, Any]] = {}  # replies computed before the wait
        self.n_requests = 0
        self.connections = 0  # TCP connections accepted (keep-alive reuses one)
        self.model_ids = tuple(model_ids)  # what GET /v1/models lists (empty: answer 404)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._requests: list[dict[str, Any]] = []
        self._faults: list[Fault] = []
        self.reply_errors: list[str] = []  # exceptions raised by a ``replies`` callable
        self._auth: list[str] = []
        self._counter = itertools.count()
        self._in_flight = 0
        self._peak = 0
        self._httpd = _Server((host, port), make_handler(self))
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LLMTestServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()  # wakes stalled handlers
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> LLMTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.05)

    # -- scripting and inspection ------------------------------------------------------
    def inject(self, fault: Fault | str, times: int = 1) -> None:
        """Apply ``fault`` to the next ``times`` chat requests (queued after earlier ones)."""
        fault = Fault(fault)
        if times < 0:
            raise ValueError(f"times must be >= 0, got {times}")
        with self._lock:
            self._faults.extend([fault] * times)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Copies of the JSON bodies of the chat requests received, in arrival order."""
        with self._lock:
            return [json.loads(json.dumps(r)) for r in self._requests]

    @property
    def authorizations(self) -> list[str]:
        """The ``Authorization`` headers received (to check a key was *sent*)."""
        with self._lock:
            return list(self._auth)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        with self._lock:
            return self._peak

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    # -- request handling (called from handler threads, testing/handler.py) ------------
    def connected(self) -> None:
        """A handler accepted a TCP connection (keep-alive reuses one)."""
        with self._lock:
            self.connections += 1

    def stall(self) -> None:
        """Hold a stalled request until ``stall_s`` passes or the server stops."""
        self._stop.wait(self.stall_s)

    def admit(self, body: dict[str, Any], auth: str,
              order: str | None = None) -> tuple[int, Fault | None, Prompt]:
        """Register a chat request: its index, the fault it gets, its prompt and cache."""
        prompt = prompt_text(body)
        place = parse_order(order)
        with self._lock:
            index = next(self._counter)
            self.n_requests += 1
            if self.record:
                self._requests.append(body)
                self._auth.append(auth)
            fault = self._faults.pop(0) if self._faults else None
            cached_chars = 0
            if self.fixed_cached_tokens is None and place is None:  # arrival order
                cached_chars = self._arrival.lookup(prompt)
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
        if self.fixed_cached_tokens is None and place is not None:  # its run's order
            cached_chars = self._logical.lookup(*place, prompt, self._stop)
        return index, fault, Prompt(prompt, cached_chars)

    def delay(self, body: dict[str, Any], index: int, prompt: Prompt) -> bool:
        """Wait as the latency settings say; True when the server is stopping."""
        if self.latency_model is None:
            seconds = self.latency_s
            if self.latency_jitter > 0:
                with self._lock:
                    seconds *= 1.0 + self.latency_jitter * (2.0 * self._jitter.random() - 1.0)
            return seconds > 0 and self._stop.wait(seconds)
        payload = self.completion(body, index, prompt)
        self._payloads[index] = payload
        seconds = max(0.0, float(self.latency_model.seconds(payload["usage"])))
        assert self._slots is not None
        with self._slots:
            return self._stop.wait(seconds) if seconds > 0 else False

    def leave(self) -> None:
        """A request is answered (or dropped): one fewer in flight."""
        with self._lock:
            self._in_flight -= 1

    def completion(self, body: dict[str, Any], index: int, prompt: Prompt) -> dict[str, Any]:
        """The ``chat.completion`` body of request ``index`` (computed once)."""
        ready = self._payloads.pop(index, None)  # computed before a modelled wait
        if ready is not None:
            return ready
        reply = str(self._reply(body, index))
        n = int(body.get("n") or 1)
        limit = body.get("max_tokens")
        usage = (usage_counts(prompt, reply, limit if isinstance(limit, int) else None,
                              prompt_tokens=self.fixed_prompt_tokens,
                              cached_tokens=self.fixed_cached_tokens,
                              completion_tokens=self.fixed_completion_tokens)
                 if self.usage_fn is None
                 else self.usage_fn(body, reply))
        return chat_completion(body, index, reply, usage, n)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m basevolve.testing.llm_server",
        description="Scripted OpenAI-compatible chat server on 127.0.0.1 (for tests/benchmarks).",
    )
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--latency-jitter", type=float, default=0.0, metavar="J",
                        help="each request sleeps latency x U[1-J, 1+J] (0 <= J <= 1)")
    parser.add_argument("--replies-file", help="JSON list of reply strings (cycled)")
    parser.add_argument("--reply-function", choices=sorted(REPLY_FUNCTIONS),
                        help="a named reply function of basevolve.testing.replies instead")
    parser.add_argument("--prompt-tokens", type=int)
    parser.add_argument("--cached-tokens", type=int)
    parser.add_argument("--completion-tokens", type=int)
    args = parser.parse_args(argv)
    replies: list[str] | None = None
    if args.replies_file:
        with open(args.replies_file, encoding="utf-8") as fh:
            replies = json.load(fh)
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            parser.error(f"{args.replies_file} must hold a JSON list of strings")
    chosen: Sequence[str] | ReplyFn | None = replies
    if args.reply_function:
        import importlib

        module, _, name = REPLY_FUNCTIONS[args.reply_function].partition(":")
        chosen = getattr(importlib.import_module(module), name)
    srv = LLMTestServer(
        chosen,
        latency_s=args.latency,
        latency_jitter=args.latency_jitter,
        port=args.port,
        prompt_tokens=args.prompt_tokens,
        cached_tokens=args.cached_tokens,
        completion_tokens=args.completion_tokens,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(srv.base_url, flush=True)
    try:
        srv.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        srv._stop.set()
        srv._httpd.server_close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
