"""Frozen records that flow between the layers (docs/design.md, style rule 5).

Records are immutable plain data; states are enums.  They are what the store persists
and what the analysis reads back, so every field is JSON-friendly (numbers, strings,
tuples, dicts of those).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from basevolve.safe_text import utf8_safe


def _storable(record: Any, *fields: str) -> None:
    """Make the named text fields of a frozen record storable (:mod:`basevolve.safe_text`).

    Why in the records: these are where text from outside (a reply, a server's error,
    a program's output or exception) enters the engine, so prompts, budgets, the store
    and the terminal downstream never meet a lone surrogate.
    """
    for name in fields:
        value = getattr(record, name)
        if isinstance(value, str):
            clean = utf8_safe(value)
            if clean is not value:
                object.__setattr__(record, name, clean)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one LLM attempt, as the server reports it (OpenAI ``usage``).

    ``cached_tokens`` comes from ``usage.prompt_tokens_details.cached_tokens`` (vLLM sends
    it when prefix caching is on) and is 0 when the server does not report it.
    """

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.cached_tokens + other.cached_tokens,
            self.completion_tokens + other.completion_tokens,
        )


class AttemptStatus(StrEnum):
    OK = "ok"
    HTTP_ERROR = "http_error"  # 5xx or other non-retryable status
    RATE_LIMITED = "rate_limited"  # 429
    TIMEOUT = "timeout"  # per-attempt timeout
    CONNECTION_ERROR = "connection_error"  # sent (or maybe sent), then the connection broke
    NOT_SENT = "not_sent"  # provably never reached a server: refused, DNS, TLS, connect timeout
    BAD_BODY = "bad_body"  # unparseable body
    EMPTY_CHOICES = "empty_choices"
    DEADLINE = "deadline"  # the overall per-call deadline cut the attempt


#: How ``Attempt.error`` starts when the server's usage was impossible and refused
#: (:mod:`basevolve.llm.usage`); the run summary counts such attempts (``usage_impossible``).
IMPOSSIBLE_USAGE = "impossible usage"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One HTTP (or in-process) attempt of an LLM call; retries produce several."""

    index: int
    status: AttemptStatus
    latency_s: float
    usage: Usage | None = None  # None when the server returned no usage
    error: str | None = None
    http_status: int | None = None
    # bytes of the reply text (content + reasoning) an answered attempt carried: a floor
    # on the tokens it is charged when its usage is missing or impossible (llm/usage.py)
    reply_bytes: int = 0

    def __post_init__(self) -> None:
        _storable(self, "error")


@dataclass(frozen=True, slots=True)
class Completion:
    """Result of ``LLMClient.complete``.

    ``text`` has reasoning blocks (``<think>...</think>``) stripped and is what parsers
    see; ``raw_text`` is the reply exactly as received, kept for the record.
    ``usage`` is the usage of the successful attempt; FLOPs are charged over all
    ``attempts`` (paper, Appendix "Effective FLOPs").
    """

    text: str
    raw_text: str
    finish_reason: str | None
    usage: Usage
    latency_s: float
    attempts: tuple[Attempt, ...]
    model: str = ""

    def __post_init__(self) -> None:
        _storable(self, "text", "raw_text", "finish_reason", "model")

    @property
    def ok(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].status is AttemptStatus.OK


class Isolation(StrEnum):
    """How strongly a program was isolated; recorded in every evaluation."""

    BWRAP = "bwrap"  # bubblewrap namespaces + private tmpfs + rlimits (+ uid drop as root)
    RLIMITS = "rlimits"  # fork + new session + rlimits (+ uid drop if root), no namespaces
    NONE = "none"  # in-process; only for trusted code (benchmarks)
    TEXT = "text"  # nothing executed: a text artifact scored by an answering LLM (issue 15)


class Trust(StrEnum):
    """Where a program's score was computed, relative to the program (issue 21).

    Recorded with every evaluation and in the run summary, because it says how far a
    score can be believed: a program can only influence a score through its data when
    the scorer runs outside the sandbox; an evaluator that runs *inside* it, next to
    the program (an OpenEvolve task directory), can be tampered with by the program.
    """

    SCORER = "trusted-scorer"  # program returns data; the task's scorer runs in basevolve
    EVALUATOR = "trusted-evaluator"  # an evaluator in basevolve calls the sandboxed program
    IN_SANDBOX = "evaluator-in-sandbox"  # the task's evaluator runs beside the program
    NOT_RUN = "not-executed"  # a text artifact: nothing is executed (issue 15)


class ExecStatus(StrEnum):
    OK = "ok"
    ERROR = "error"  # the program raised, or its entry function is missing
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # killed by a signal / exited without a result
    BAD_OUTPUT = "bad_output"  # returned something that is not plain data


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What the untrusted side hands back: plain data only.

    ``value`` is built by the trusted parent from JSON / ``.npy`` bytes: nested lists,
    tuples, dicts with str keys, numbers, strings, None and ``numpy.ndarray`` of
    numeric dtype.  Never an object the program constructed.
    """

    status: ExecStatus
    value: Any = None
    error: str | None = None
    stdout: str = ""
    stderr: str = ""
    isolation: Isolation = Isolation.BWRAP
    seconds: float = 0.0

    def __post_init__(self) -> None:
        _storable(self, "error", "stdout", "stderr")


@dataclass(frozen=True, slots=True)
class CallResult:
    """One call of a sandboxed program's function by a trusted evaluator (issue 21).

    Like :class:`ExecResult`, only plain data: ``value`` is rebuilt by the trusted parent
    from JSON / ``.npy`` bytes; an exception the function raised comes back as ``error``
    (``"ValueError: ..."``, its traceback in ``stderr``), never as an object.
    ``wall_s`` and ``cpu_s`` are measured by the sandbox worker, outside the program's
    process (:mod:`basevolve.sandbox.session`), so a program that patches ``time`` or
    ``resource`` cannot change them.  ``stdout``/``stderr`` are what the program printed
    during this call (capped).
    """

    fn: str
    status: ExecStatus
    value: Any = None
    error: str | None = None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    isolation: Isolation = Isolation.BWRAP

    def __post_init__(self) -> None:
        _storable(self, "error", "stdout", "stderr")

    @property
    def ok(self) -> bool:
        """True when the function returned a plain-data value (``status`` is ``ok``)."""
        return self.status is ExecStatus.OK


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A trusted score of one program.

    ``score`` is the normalised fitness (1.0 = best published construction) under the
    reference tolerance (1e-6); ``strict_score`` the same with tolerance 0.  An invalid
    program scores 0 with ``error`` stating why.
    """

    score: float
    valid: bool
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    strict_score: float = 0.0
    strict_valid: bool = False
    isolation: Isolation = Isolation.BWRAP
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    # Evaluation cost of a text task (issue 15): the answering LLM's calls, one dict per
    # request (tokens, FLOPs, latency, cache hit, answer), and their sums.  Not charged
    # to C unless the run says --count-eval-calls.
    eval_calls: tuple[dict[str, Any], ...] = ()
    eval_flops: float = 0.0
    eval_tokens: int = 0
    # Evaluator feedback (issue 21; OpenEvolve's "artifacts"): short texts such as failing
    # cases or the evaluator's notes, stored and shown to the LLM with --feedback artifacts.
    artifacts: dict[str, str] = field(default_factory=dict)
    trust: Trust = Trust.SCORER

    def __post_init__(self) -> None:
        _storable(self, "error", "stdout", "stderr")
