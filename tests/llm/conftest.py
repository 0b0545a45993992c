"""Shared fixtures: a real local OpenAI-compatible server and fast retry settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from basevolve.llm import LLMSettings
from basevolve.testing import LLMTestServer

# Small backoff and deadlines keep fault tests fast; the server is real HTTP.
FAST = LLMSettings(
    max_retries=3,
    backoff_base_s=0.01,
    backoff_cap_s=0.05,
    attempt_timeout_s=5.0,
    call_deadline_s=10.0,
    max_tokens=64,
)


@pytest.fixture
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as srv:
        yield srv


def run(coro):  # tiny helper: tests stay sync, no pytest-asyncio dependency
    import asyncio

    return asyncio.run(coro)
