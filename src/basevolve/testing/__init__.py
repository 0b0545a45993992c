"""Test helpers shipped with basevolve (issue 3, part 7).

:class:`LLMTestServer` is a real OpenAI-compatible HTTP server on 127.0.0.1 with
scripted replies, vLLM-style usage (cached tokens included), fault injection and
request recording; the project's LLM, engine and CLI tests run against it.

Names are imported lazily so ``python -m basevolve.testing.llm_server`` does not
import the module twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from basevolve.testing.llm_server import Fault, LLMTestServer, default_reply

__all__ = ["Fault", "LLMTestServer", "default_reply"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from basevolve.testing import llm_server

        return getattr(llm_server, name)
    raise AttributeError(f"module 'basevolve.testing' has no attribute {name!r}")
