"""The one async LLM protocol and the retry/deadline loop shared by all backends.

Issue 3, parts 1-3.  Every backend answers
``await complete(messages, *, temperature, top_p, max_tokens, seed) -> Completion``
(paper defaults: temperature 0.6, top-p 0.95).  A backend only implements one
*attempt*; :class:`RetryingClient` owns what must be identical everywhere:

* bounded retries with exponential backoff on retryable failures (429, 5xx,
  connection errors, timeouts, unparseable bodies, empty choices);
* a per-attempt timeout **and** an overall deadline per call, so a stalled endpoint
  can never block a run indefinitely;
* every attempt recorded (status, error, usage) so FLOPs can be charged over all of
  them (paper, Appendix "Effective FLOPs");
* reasoning blocks (``<think>...</think>``, Qwen3 thinking mode) stripped from
  ``text`` before any parser sees it, ``raw_text`` kept verbatim.

A call that exhausts its retries or its deadline *returns* a failed
:class:`~basevolve.records.Completion` (``ok`` is False) instead of raising: the engine
records it and decides about the budget (``CallPolicy``).  Only mistakes that no retry
can fix (bad credentials, unknown model on the server) raise :class:`LLMError`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from basevolve.errors import LLMError
from basevolve.llm.catalog import ModelSpec
from basevolve.llm.settings import LLMSettings
from basevolve.records import Attempt, AttemptStatus, Completion, Usage

log = logging.getLogger("basevolve.llm")

#: Sampling defaults of the paper (Section "Experiment Setup"), shared by the protocol
#: and its implementation so the two signatures cannot drift apart.
DEFAULT_TEMPERATURE = 0.6
DEFAULT_TOP_P = 0.95
# An attempt's error as stored and shown on the terminal: the server's whole reason up to
# this many characters (issue 37, item 5: a retry warning cut the reason at 120)
ERROR_CHARS = 500

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def strip_think(text: str) -> str:
    """Remove reasoning blocks so parsers only see the answer.

    Handles closed ``<think>...</think>`` blocks, a dangling ``</think>`` (templates
    that open the block inside the prompt: everything before it is reasoning) and an
    unclosed ``<think>`` (generation cut inside the reasoning: nothing after it is an
    answer).
    """
    out = _THINK_BLOCK.sub("", text)
    if "</think>" in out:
        out = out.rsplit("</think>", 1)[1]
    if "<think>" in out:
        out = out.split("<think>", 1)[0]
    return out.strip()


@runtime_checkable
class LLMClient(Protocol):
    """What the engine and CLI use; all backends implement it."""

    @property
    def model_spec(self) -> ModelSpec: ...

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float = DEFAULT_TEMPERATURE,
        top_p: float = DEFAULT_TOP_P,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Reply:
    """What one successful attempt produced (before think-stripping)."""

    text: str
    finish_reason: str | None
    usage: Usage | None
    reply_bytes: int = 0  # bytes of the reply text (content + reasoning): a charge floor
    usage_error: str | None = None  # why the server's usage was refused (llm/usage.py)


class AttemptFailure(Exception):
    """One attempt failed; ``retryable`` says whether another attempt may help."""

    def __init__(
        self,
        status: AttemptStatus,
        error: str,
        *,
        retryable: bool = True,
        http_status: int | None = None,
        retry_after_s: float | None = None,
        usage: Usage | None = None,
        usage_error: str | None = None,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.retryable = retryable
        self.http_status = http_status
        self.retry_after_s = retry_after_s
        self.usage = usage
        self.usage_error = usage_error


class RetryingClient:
    """Base class: the retry/deadline loop around a backend's single ``_attempt``."""

    def __init__(self, spec: ModelSpec, settings: LLMSettings | None = None) -> None:
        self._spec = spec
        self.settings = settings or LLMSettings()

    @property
    def model_spec(self) -> ModelSpec:
        return self._spec

    def __repr__(self) -> str:  # never shows credentials
        return f"{type(self).__name__}(model={self._spec.name!r})"

    async def _attempt(self, payload: dict[str, Any], timeout_s: float) -> Reply:
        raise NotImplementedError

    def _redact(self, text: str) -> str:
        """Hook for backends holding secrets: scrub them from error strings."""
        return text

    async def aclose(self) -> None:
        return None

    async def _attempt_n(self, payload: dict[str, Any], timeout_s: float) -> list[Reply]:
        """One attempt that asks for ``payload["n"]`` completions (default: exactly one).

        Backends that can sample several completions of one prompt in one request
        override this (the embedded backend, see ``EmbeddedClient``).
        """
        if int(payload.get("n", 1)) != 1:
            raise LLMError(f"{type(self).__name__} sends one completion per request")
        return [await self._attempt(payload, timeout_s)]

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float = DEFAULT_TEMPERATURE,
        top_p: float = DEFAULT_TOP_P,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion:
        return (await self.complete_n(messages, 1, temperature=temperature, top_p=top_p,
                                      max_tokens=max_tokens, seed=seed))[0]

    async def complete_n(
        self,
        messages: list[dict[str, Any]],
        n: int,
        *,
        temperature: float = DEFAULT_TEMPERATURE,
        top_p: float = DEFAULT_TOP_P,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> list[Completion]:
        """``n`` completions of one prompt from one request per attempt (``n = 1``: a call).

        Each returned Completion carries the batch's attempts: the failed ones (shared,
        usage unknown) and the answered one with that completion's own usage.
        """
        if not isinstance(messages, list) or not messages:
            raise LLMError(
                f"messages must be a non-empty list of chat messages, got {messages!r:.80}"
            )
        s = self.settings
        payload: dict[str, Any] = {
            "messages": messages,
            "temperature": float(temperature),
            "top_p": float(top_p),
            "max_tokens": int(max_tokens or s.max_tokens),
        }
        if n != 1:
            payload["n"] = int(n)
        if seed is not None:
            payload["seed"] = int(seed)
        start = time.monotonic()
        deadline = start + s.call_deadline_s
        attempts: list[Attempt] = []
        for index in range(s.max_retries + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            per_attempt = min(s.attempt_timeout_s, remaining)
            deadline_binds = remaining < s.attempt_timeout_s
            t0 = time.monotonic()
            try:
                replies = await asyncio.wait_for(self._attempt_n(payload, per_attempt),
                                                 per_attempt)
                if len(replies) != n:
                    raise AttemptFailure(AttemptStatus.EMPTY_CHOICES,
                                         f"asked for {n} completions, got {len(replies)}")
            except AttemptFailure as exc:
                failure = exc
                if failure.status is AttemptStatus.TIMEOUT and deadline_binds:
                    failure.status = AttemptStatus.DEADLINE
            except TimeoutError:
                status = AttemptStatus.DEADLINE if deadline_binds else AttemptStatus.TIMEOUT
                failure = AttemptFailure(status, f"no reply within {per_attempt:.3g} s")
            else:
                latency = time.monotonic() - t0
                return [
                    Completion(
                        text=strip_think(reply.text),
                        raw_text=reply.text,
                        finish_reason=reply.finish_reason,
                        usage=reply.usage or Usage(),
                        latency_s=time.monotonic() - start,
                        attempts=(*attempts, Attempt(index, AttemptStatus.OK, latency,
                                                     reply.usage, reply.usage_error,
                                                     reply_bytes=reply.reply_bytes)),
                        model=self._spec.served_id,
                    )
                    for reply in replies
                ]
            error = self._redact(failure.error)[:ERROR_CHARS]
            if failure.usage_error:  # first, so the summary can count it (llm/usage.py)
                error = f"{failure.usage_error}; {error}"[:ERROR_CHARS]
            attempts.append(
                Attempt(
                    index,
                    failure.status,
                    time.monotonic() - t0,
                    failure.usage,
                    error,
                    failure.http_status,
                )
            )
            if not failure.retryable or index == s.max_retries:
                break
            wait = s.backoff_s(index)
            if failure.retry_after_s is not None:
                wait = min(max(failure.retry_after_s, 0.0), s.backoff_cap_s)
            if time.monotonic() + wait >= deadline:
                break
            log.warning(
                "LLM attempt %d failed (%s: %s); retrying in %.2f s",
                index,
                failure.status.value,
                error,  # the server's whole reason, capped at ERROR_CHARS (issue 37, item 5)
                wait,
            )
            await asyncio.sleep(wait)
        failed = Completion(
            text="",
            raw_text="",
            finish_reason=None,
            usage=Usage(),
            latency_s=time.monotonic() - start,
            attempts=tuple(attempts),
            model=self._spec.served_id,
        )
        return [failed] * n


__all__ = [
    "DEFAULT_TEMPERATURE",
    "DEFAULT_TOP_P",
    "ERROR_CHARS",
    "AttemptFailure",
    "LLMClient",
    "Reply",
    "RetryingClient",
    "strip_think",
]
