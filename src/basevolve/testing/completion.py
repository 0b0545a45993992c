"""What the test server answers: the default reply, the usage it reports, the body.

:class:`~basevolve.testing.llm_server.LLMTestServer` admits, delays and counts requests;
this module holds what an answer consists of, as its docstring's usage accounting says:
``prompt_tokens`` = ``len(prompt_text) // 4`` (at least 1), ``cached_tokens`` the cached
characters ``// 4`` capped at ``prompt_tokens - 1``, ``completion_tokens`` =
``len(reply) // 4`` (at least 1) capped at the request's ``max_tokens``, each replaced by
a fixed value when one is given.
"""

from __future__ import annotations

import re
import time
from typing import Any, NamedTuple

_CODE_BLOCK = re.compile(r"```(?:python)?\n(.*?)```", re.DOTALL)


class Prompt(NamedTuple):
    """A request's prompt text and how many of its characters the cache holds."""

    text: str
    cached_chars: int


def content_text(content: Any) -> str:
    """A message's ``content`` as text (a string, or OpenAI content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def prompt_text(body: dict[str, Any]) -> str:
    """Every message's content in order: what ``prompt_tokens`` and the cache measure."""
    return "".join(content_text(m.get("content")) for m in body.get("messages") or [])


def default_reply(body: dict[str, Any], index: int) -> str:
    """A valid reply: the last Python code block of the prompt that holds code, echoed.

    Echoing the parent keeps programs valid, so engine tests exercise the whole loop
    (parse, sandbox, score) without a real model.  Blocks of comments only are skipped:
    the OpenEvolve prompt ends with a placeholder block (``# Your rewritten program
    here``) after the parent program, and echoing it made every child invalid.
    Without a code block: a short text.
    """
    text = "\n".join(content_text(m.get("content")) for m in body.get("messages") or [])
    blocks = _CODE_BLOCK.findall(text)
    if blocks:
        code = [b for b in blocks if any(
            ln.strip() and not ln.lstrip().startswith("#") for ln in b.splitlines())]
        block = (code or blocks)[-1]
        return f"Here is the program.\n```python\n{block.rstrip()}\n# reply {index}\n```\n"
    return f"OK (reply {index})"


def usage_counts(prompt: Prompt, reply: str, max_tokens: int | None = None, *,
                 prompt_tokens: int | None = None, cached_tokens: int | None = None,
                 completion_tokens: int | None = None) -> dict[str, Any]:
    """The ``usage`` the server reports (module docstring; the fixed values override)."""
    pt = prompt_tokens
    if pt is None:
        pt = max(1, len(prompt.text) // 4)
    ct = cached_tokens
    if ct is None:
        ct = max(0, min(prompt.cached_chars // 4, pt - 1))
    out = completion_tokens
    if out is None:
        out = max(1, min(len(reply) // 4, max_tokens or len(reply)))
    return {
        "prompt_tokens": pt,
        "completion_tokens": out,
        "total_tokens": pt + out,
        "prompt_tokens_details": {"cached_tokens": ct},
    }


def chat_completion(body: dict[str, Any], index: int, reply: str, usage: dict[str, Any],
                    n: int = 1) -> dict[str, Any]:
    """A ``chat.completion`` body: ``reply`` in each of ``n`` choices, and ``usage``."""
    return {
        "id": f"chatcmpl-test-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "test-model")),
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
                "logprobs": None,
            }
            for i in range(n)
        ],
        "usage": usage,
    }


__all__ = ["Prompt", "chat_completion", "content_text", "default_reply", "prompt_text",
           "usage_counts"]
