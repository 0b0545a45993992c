"""A server's ``usage``, checked before anything is charged by it (issue 22, items 3-4).

The FLOPs formula and every FLOPs/token budget read ``usage`` as the server reports it
(paper, Section "Post-hoc FLOPs accounting").  A server that lies there could defeat
the budget: negative token counts *added* budget back (a ``--budget-flops`` run made
1,317 calls and was still under budget), and ``10**30`` raised ``OverflowError`` in the
store and wedged the call.  The rule:

* **Impossible usage is unmeasured.**  A reported usage is *impossible* when a token
  count is not an integer in ``[0, MAX_USAGE_TOKENS]``, when ``cached_tokens`` exceeds
  ``prompt_tokens``, or when ``completion_tokens`` is below what the reply's bytes imply
  (:func:`implied_tokens`).  Such an attempt is treated exactly as one that reported no
  usage -- charged the stated worst case of ``--charge-unanswered`` (llm/flops.py) --
  and its ``attempts.error`` starts with :data:`~basevolve.records.IMPOSSIBLE_USAGE`,
  so the run summary counts it (``usage_impossible``).
* **The bytes set a floor.**  A token of any byte-level tokenizer covers few bytes: on
  average over a whole reply, real tokenizers stay far below :data:`BYTES_PER_TOKEN`
  (16).  So ``ceil(reply bytes / 16)`` completion tokens were certainly generated, and
  no charge of an answered attempt is ever below that.
* **Replies are capped.**  A reply body larger than :func:`reply_cap` bytes
  (``16 * max_tokens + 64 KiB`` unless ``LLMSettings.max_reply_bytes`` says otherwise)
  cannot be an honest answer to a request for ``max_tokens`` tokens: it is refused
  unread past the cap, so a 50 MB reply is neither held in memory nor stored.  A reply
  *text* (content + reasoning) longer than :func:`text_limit` (``16 * max_tokens``
  bytes) is refused too: it implies more tokens than were asked for.  A refused reply
  fails its attempt as ``bad_body`` and is charged the worst case (prompt +
  ``max_tokens``, at most what the budget reserved), so the floor above never exceeds
  ``max_tokens`` for a reply that is accepted and a cost budget stays exact.
* **The request sets a ceiling** (issue 32, item 1).  A server once answered
  ``prompt_tokens = completion_tokens = 2**31 - 1`` to a request for 1,024 tokens and
  took a $1 budget to $4,294.97 in one call.  ``completion_tokens`` above the request's
  ``max_tokens`` cannot be true, nor can ``prompt_tokens`` above what the sent prompt
  can hold: a byte-level tokenizer's token covers at least one byte, so a prompt is at
  most its UTF-8 bytes plus the chat template's markers (:func:`prompt_bound`), and a
  server's own template (a default system prompt) adds at most
  :data:`PROMPT_SLACK_TOKENS` more.  Either is impossible usage, as above.  A cost
  budget then charges such a call exactly what it reserved for it, and never more than
  that for any call (:meth:`basevolve.engine.budget.CostLedger.capped`, every unit).

Pure functions, hand-checkable (tests/llm/test_usage.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from basevolve.records import IMPOSSIBLE_USAGE, Usage

#: No model has a context of 2**31 tokens: a larger count is a lie, not a measurement.
MAX_USAGE_TOKENS = 2**31 - 1
#: Most bytes one generated token may take, on average over a reply (body, JSON escapes
#: included).  Real tokenizers average 3-6 bytes per token on code and prose.
BYTES_PER_TOKEN = 16
#: Room for the JSON around the reply text (ids, usage, role, finish reason).
REPLY_OVERHEAD_BYTES = 64 * 1024
TOKENS_PER_MESSAGE = 16  # role markers and separators of a chat template, per message
TOKENS_PER_PROMPT = 64  # start/end markers and the generation prompt, per request
#: Most tokens a server's own chat template may add beyond :func:`prompt_bound` (a default
#: system prompt) before a reported ``prompt_tokens`` is judged impossible.
PROMPT_SLACK_TOKENS = 4096


def prompt_bound(messages: Sequence[Mapping[str, Any]]) -> int:
    """Upper bound on a chat prompt's tokens: bytes of every content + template markers."""
    size = sum(len(str(m.get("content") or "").encode("utf-8", "surrogatepass"))
               for m in messages)
    return size + TOKENS_PER_MESSAGE * len(messages) + TOKENS_PER_PROMPT


def implied_tokens(reply_bytes: int) -> int:
    """Completion tokens a reply of ``reply_bytes`` bytes certainly took (ceil(b / 16))."""
    return -(-max(int(reply_bytes), 0) // BYTES_PER_TOKEN)


def text_limit(max_tokens: int) -> int:
    """Longest reply text (content + reasoning, UTF-8 bytes) that ``max_tokens`` tokens
    can be: a longer one implies more tokens than the request allowed."""
    return BYTES_PER_TOKEN * max(int(max_tokens), 1)


def reply_cap(max_tokens: int, override: int | None = None) -> int:
    """Largest reply body accepted for a request of ``max_tokens`` tokens, in bytes."""
    if override is not None:
        return int(override)
    return text_limit(max_tokens) + REPLY_OVERHEAD_BYTES


def _count(data: dict[str, Any], key: str) -> int:
    """One token count (absent or null: 0, as servers that omit one mean); raises
    ValueError naming it when it cannot be true."""
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)  # 12.0 is a count; 12.5, NaN and Infinity are not
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}={str(value)[:40]!r} is not a token count")
    if not 0 <= value <= MAX_USAGE_TOKENS:
        raise ValueError(f"{key}={str(value)[:40]} is outside 0..{MAX_USAGE_TOKENS}")
    return value


def read_usage(data: Any, reply_bytes: int = 0, *, max_tokens: int | None = None,
               prompt_tokens_max: int | None = None) -> tuple[Usage | None, str | None]:
    """A server's ``usage`` object -> ``(usage, None)``, or ``(None, why)`` when impossible.

    No usage object (absent, null, not an object) is ``(None, None)``: unmeasured, as
    before.  A count the object omits is 0 (then the bytes floor judges an omitted
    ``completion_tokens``).  ``max_tokens`` (the request's) and ``prompt_tokens_max``
    (:func:`prompt_bound` of the sent messages + :data:`PROMPT_SLACK_TOKENS`), when given,
    are the most each count can be.  ``why`` starts with
    :data:`~basevolve.records.IMPOSSIBLE_USAGE` and names the field.
    """
    if not isinstance(data, dict):
        return None, None
    try:
        prompt = _count(data, "prompt_tokens")
        completion = _count(data, "completion_tokens")
        details = data.get("prompt_tokens_details")
        cached = _count(details, "cached_tokens") if isinstance(details, dict) else 0
        if cached > prompt:
            raise ValueError(f"cached_tokens={cached} exceeds prompt_tokens={prompt}")
        if max_tokens is not None and completion > max_tokens:
            raise ValueError(f"completion_tokens={completion} for a request of "
                             f"max_tokens={max_tokens}")
        if prompt_tokens_max is not None and prompt > prompt_tokens_max:
            raise ValueError(f"prompt_tokens={prompt} for a prompt that holds at most "
                             f"{prompt_tokens_max}")
        floor = implied_tokens(reply_bytes)
        if completion < floor:
            raise ValueError(f"completion_tokens={completion} for a reply of {reply_bytes} "
                             f"bytes (at least {floor} tokens)")
    except ValueError as exc:
        return None, f"{IMPOSSIBLE_USAGE} ({exc}); charged as unmeasured"
    return Usage(prompt_tokens=prompt, cached_tokens=cached, completion_tokens=completion), None


__all__ = ["BYTES_PER_TOKEN", "MAX_USAGE_TOKENS", "PROMPT_SLACK_TOKENS", "REPLY_OVERHEAD_BYTES",
           "TOKENS_PER_MESSAGE", "TOKENS_PER_PROMPT", "implied_tokens", "prompt_bound",
           "read_usage", "reply_cap", "text_limit"]
