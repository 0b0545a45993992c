"""Embedded offline backend: Qwen2.5-Coder GGUF run in-process by xllamacpp (issue 3, part 4).

A new user with no server still gets a working mutation operator: ``--model embedded``
(the default when no endpoint is given) loads Qwen2.5-Coder-1.5B-Instruct Q4_K_M into
this process through ``xllamacpp`` (a prebuilt llama.cpp wheel).  The model loads
lazily on the first call and once per process (a module-level cache keyed by weights
and runtime settings), because loading costs seconds and ~2 GB of RAM.

llama.cpp's server core batches requests across ``n_parallel`` slots; its blocking
``handle_chat_completions`` runs in daemon threads (see :func:`in_daemon_thread`) so
several calls are in flight.  Requests are streamed, so a cancelled call (Ctrl-C, a
timeout) stops its generation at its next token, and at exit every request is stopped
and joined before the server is freed -- the order that cannot crash
(:mod:`basevolve.llm.embedded_runtime`, issue 24, item 7).
Calls beyond ``n_parallel`` wait for a slot before their timeout clock starts.

Usage is reported like the HTTP backend: llama.cpp returns an OpenAI ``usage`` with
``prompt_tokens_details.cached_tokens`` (prefix-cache hits of the slot); when that is
missing, ``timings.cache_n`` is used, else 0.  Thinking is disabled
(``chat_template_kwargs.enable_thinking = False``; Qwen2.5-Coder has no thinking mode,
the flag keeps a swapped-in Qwen3 GGUF from producing it).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from basevolve.errors import ConfigError
from basevolve.llm.base import (
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_P,
    AttemptFailure,
    Reply,
    RetryingClient,
)
from basevolve.llm.catalog import ModelSpec
from basevolve.llm.embedded_runtime import (
    import_xllamacpp,
    in_daemon_thread,
    load_server,
    stream_request,
)
from basevolve.llm.openai_backend import parse_chat_body
from basevolve.llm.settings import LLMSettings
from basevolve.llm.weights import WEIGHTS, part_paths
from basevolve.records import AttemptStatus, Completion, Usage


def parse_embedded_response(response: Any) -> Reply:
    """llama.cpp's OpenAI-shaped response (dict or JSON string) -> Reply (first choice)."""
    return parse_embedded_choices(response, 1, max_tokens=0)[0]


def parse_embedded_choices(response: Any, n: int, *, max_tokens: int) -> list[Reply]:
    """The ``n`` choices of one llama.cpp response, each with the usage it caused.

    llama.cpp reports ``usage`` for the *first* choice only.  The prompt was read once
    (the other slots copy its KV state), so later choices are charged their prompt as
    cached; their completion tokens are ``max_tokens`` when cut by the length limit,
    else estimated from their length in characters at the first choice's
    tokens-per-character rate (at least 1, at most ``max_tokens``).  The estimate only
    affects FLOPs of batched siblings, and is documented in docs/running.md.
    """
    if isinstance(response, dict | list):
        body = response
    else:
        try:
            body = json.loads(response)
        except (TypeError, ValueError) as exc:
            raise AttemptFailure(AttemptStatus.BAD_BODY, f"unparseable reply: {exc}") from None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        try:
            code = int(err.get("code") or 500)
        except (TypeError, ValueError):
            code = 500
        raise AttemptFailure(
            AttemptStatus.HTTP_ERROR,
            f"llama.cpp error {code}: {str(err.get('message'))[:300]}",
            retryable=code >= 500,
            http_status=code,
        )
    reply = parse_chat_body(json.dumps(body))
    timings = body.get("timings") if isinstance(body, dict) else None
    usage = reply.usage
    if isinstance(timings, dict) and usage is not None:
        details = (body.get("usage") or {}).get("prompt_tokens_details")
        if not isinstance(details, dict) or details.get("cached_tokens") is None:
            cached = int(timings.get("cache_n") or 0)
            usage = Usage(usage.prompt_tokens, cached, usage.completion_tokens)
    replies = [Reply(reply.text, reply.finish_reason, usage)]
    choices = body.get("choices") if isinstance(body, dict) else None
    if n > 1 and (not isinstance(choices, list) or len(choices) < n):
        raise AttemptFailure(AttemptStatus.EMPTY_CHOICES, f"asked for {n} choices, got "
                             f"{len(choices) if isinstance(choices, list) else 0}")
    rate = (usage.completion_tokens / max(len(reply.text), 1)) if usage else 0.25
    for choice in (choices or [])[1:n]:
        one = parse_chat_body(json.dumps({"choices": [choice]}))
        if one.finish_reason == "length":
            tokens = max_tokens
        else:
            tokens = min(max_tokens, max(1, round(len(one.text) * rate)))
        prompt = usage.prompt_tokens if usage else 0
        replies.append(Reply(one.text, one.finish_reason, Usage(prompt, prompt, tokens)))
    return replies


class EmbeddedClient(RetryingClient):
    """In-process llama.cpp; construction is free, the model loads on the first call."""

    def __init__(self, spec: ModelSpec, settings: LLMSettings | None = None) -> None:
        super().__init__(spec, settings)
        if not spec.weights:
            raise ConfigError(f"model {spec.name!r} has no embedded weights; use --base-url")
        self._weights = spec.weights
        # Fail at construction, not mid-run, when the weights or runtime are missing
        # (cheap: imports the tiny part packages, reads no weights).
        part_paths(WEIGHTS.get(spec.weights))
        if importlib.util.find_spec("xllamacpp") is None:
            import_xllamacpp()
        self._slots: _Slots | None = None
        self._open: dict[str, _Batch] = {}

    async def complete(self, messages: list[dict[str, Any]], *,
                       temperature: float = DEFAULT_TEMPERATURE, top_p: float = DEFAULT_TOP_P,
                       max_tokens: int | None = None, seed: int | None = None) -> Completion:
        """One call; identical prompts issued together share one request (``n`` = their count).

        Batching: the first call of a prompt opens a batch and yields to the event loop
        once, so the calls the engine issued in the same step (greedy's N byte-identical
        siblings) join it, up to ``n_parallel``.  The batch is one llama.cpp request with
        ``n`` = its size, which reads the prompt once (separate parallel requests re-read
        it per slot and were 2.3x slower on 2 cores; one ``n`` request was 1.14x faster than
        sequential ones).  **Seed policy**: the request carries the seed of the batch's
        first call; llama.cpp draws the ``n`` samples from it, so the later calls' own
        seeds are not used.  With ``--max-in-flight 1`` nothing is batched and every call
        is sampled with its own seed.

        Slots are taken *before* the timeout clock starts: llama.cpp would queue surplus
        requests internally, but then their wait would count against the per-attempt
        timeout and a deep queue (many calls in flight on a slow CPU) would time out calls
        that never ran.
        """
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots.loop is not loop:
            self._slots = _Slots(loop, self.settings.embedded_n_parallel)
            self._open = {}
        kwargs = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        key = json.dumps([messages, kwargs], sort_keys=True, default=str)
        batch = self._open.get(key)
        if batch is not None and len(batch.waiters) + 1 < self.settings.embedded_n_parallel:
            waiter: asyncio.Future[Completion] = loop.create_future()
            batch.waiters.append(waiter)
            return await waiter
        batch = _Batch([])
        self._open[key] = batch
        try:
            await asyncio.sleep(0)  # calls issued in this same step join the batch
        finally:
            if self._open.get(key) is batch:
                del self._open[key]
        n = 1 + len(batch.waiters)
        try:
            async with self._slots.take(n):
                results = await self.complete_n(messages, n, seed=seed, **kwargs)
        except BaseException as exc:
            for w in batch.waiters:
                if not w.done():
                    if isinstance(exc, asyncio.CancelledError):
                        w.cancel()
                    else:
                        w.set_exception(exc)
            raise
        for w, completion in zip(batch.waiters, results[1:], strict=True):
            if not w.done():
                w.set_result(completion)
        return results[0]

    async def load(self) -> None:
        """Load (or reuse) the model now, e.g. to keep load time out of a benchmark."""
        await in_daemon_thread(load_server, self._weights, self.settings)

    async def _attempt(self, payload: dict[str, Any], timeout_s: float) -> Reply:
        return (await self._attempt_n(payload, timeout_s))[0]

    async def _attempt_n(self, payload: dict[str, Any], timeout_s: float) -> list[Reply]:
        server = await in_daemon_thread(load_server, self._weights, self.settings)
        request = dict(payload)
        request["chat_template_kwargs"] = {"enable_thinking": False}
        try:  # streamed, so a cancelled call stops at its next token (embedded_runtime)
            response = await stream_request(server, request)
        except Exception as exc:  # the runtime's own failures are retryable attempts
            raise AttemptFailure(AttemptStatus.HTTP_ERROR, f"llama.cpp: {exc}") from None
        return parse_embedded_choices(response, int(payload.get("n", 1)),
                                      max_tokens=int(payload["max_tokens"]))


@dataclass(slots=True)
class _Batch:
    """Calls waiting for the first call of their prompt to send one ``n`` request."""

    waiters: list[asyncio.Future[Completion]]


class _Slots:
    """``n_parallel`` llama.cpp slots; a batch of ``n`` completions takes ``n`` at once.

    Acquiring under one lock keeps two batches from each holding part of what they
    need (no deadlock); slots are released when the request ends.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, total: int) -> None:
        self.loop = loop
        self.free = total
        self.cond = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def take(self, n: int) -> AsyncIterator[None]:
        async with self.cond:
            await self.cond.wait_for(lambda: self.free >= n)
            self.free -= n
        try:
            yield
        finally:
            async with self.cond:
                self.free += n
                self.cond.notify_all()


__all__ = ["EmbeddedClient", "in_daemon_thread", "load_server", "parse_embedded_choices",
           "parse_embedded_response"]
