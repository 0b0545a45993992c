"""Embedded offline model smoke test (issue 3, part 4): runs in CI with the `local` extra."""

from __future__ import annotations

import pytest

from basevolve.llm import LLMSettings, call_flops, make_client

from .conftest import run


@pytest.mark.embedded
def test_embedded_model_completes_offline_with_usage() -> None:
    # Small context and max_tokens: CPU is scarce.  No network is involved: the model
    # runs in this process from the installed weight packages.
    client = make_client(settings=LLMSettings(embedded_n_ctx=1024, max_tokens=8))
    assert client.model_spec.name == "embedded"
    c = run(client.complete([{"role": "user", "content": "Say hello."}], max_tokens=8, seed=1))
    assert c.ok, c.attempts
    assert c.text.strip()
    assert c.usage.prompt_tokens > 5
    assert 1 <= c.usage.completion_tokens <= 8
    assert c.finish_reason in {"stop", "length"}
    assert call_flops(c, client.model_spec.active_params, max_tokens=8) > 0
