"""Usage policies for :class:`~basevolve.testing.llm_server.LLMTestServer` (its ``usage=``).

Why: the server's default usage (prompt ``len // 4``, reply ``len // 4``) sits far below
what a FLOPs/token budget reserves per call (the prompt's byte bound plus ``max_tokens``,
:mod:`basevolve.engine.budget`).  That slack hid a reservation that forgot the reply
entirely (issue 27, item 4).  :func:`worst_case_usage` removes the slack: every call
costs exactly the worst case the budget reserved for it, so a reservation that is too
small by even one token shows up as a call that cost more than was set aside (and, at
the end of the run, as a budget overrun).
"""

from __future__ import annotations

from typing import Any

from basevolve.engine.budget import static_prompt_bound


def worst_case_usage(body: dict[str, Any], reply: str) -> dict[str, Any]:
    """Usage equal to the budget's own worst case for this request.

    ``prompt_tokens``: :func:`~basevolve.engine.budget.static_prompt_bound` of the
    request's messages (every byte a token, plus the template markers); nothing cached,
    so the FLOPs charge is the whole prompt; ``completion_tokens``: the request's
    ``max_tokens`` (the reply used all of it, whatever its text).  A request without
    ``max_tokens`` is a client bug here, and fails loudly (the server answers 500).
    """
    del reply  # the cost is the worst case, not the text's length
    prompt = static_prompt_bound(body.get("messages") or [])
    out = int(body["max_tokens"])
    return {
        "prompt_tokens": prompt,
        "completion_tokens": out,
        "total_tokens": prompt + out,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


__all__ = ["worst_case_usage"]
