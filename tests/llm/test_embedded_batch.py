"""Issue 12, item 7: a generation's N identical prompts go to llama.cpp as one ``n = N``
request; usage is attributed so FLOPs count the prompt once; the seed policy holds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from basevolve.llm import LLMSettings
from basevolve.llm.base import Reply
from basevolve.llm.catalog import resolve_model
from basevolve.llm.embedded import EmbeddedClient, parse_embedded_choices
from basevolve.records import Usage

from .conftest import run

MSG = [{"role": "user", "content": "Write one English word."}]

# A real llama.cpp reply to n = 2 (xllamacpp 2026.10.11549): usage covers choice 0 only.
RESPONSE = {
    "choices": [
        {"finish_reason": "stop", "index": 0,
         "message": {"role": "assistant", "content": 'The word that comes to mind is "sun".'}},
        {"finish_reason": "stop", "index": 1,
         "message": {"role": "assistant", "content": 'The word is "sun".'}},
    ],
    "usage": {"completion_tokens": 11, "prompt_tokens": 35, "total_tokens": 46,
              "prompt_tokens_details": {"cached_tokens": 0}},
}


def test_choices_share_the_prompt_and_estimate_sibling_tokens():
    first, second = parse_embedded_choices(RESPONSE, 2, max_tokens=64)
    assert first.usage == Usage(35, 0, 11) and second.text == 'The word is "sun".'
    # the prompt was read once: the sibling's prompt is all cached; 18 chars at 11/37 per char
    assert second.usage == Usage(35, 35, round(18 * 11 / 37))
    cut = {**RESPONSE, "choices": [RESPONSE["choices"][0],
                                   {**RESPONSE["choices"][1], "finish_reason": "length"}]}
    assert parse_embedded_choices(cut, 2, max_tokens=64)[1].usage.completion_tokens == 64


class Recording(EmbeddedClient):
    """The real client; records what each attempt asked for and answers without a model."""

    def __init__(self, n_parallel: int) -> None:
        super().__init__(resolve_model("embedded-small"),
                         LLMSettings(embedded_n_parallel=n_parallel, max_tokens=8))
        self.requests: list[dict[str, Any]] = []

    async def _attempt_n(self, payload: dict[str, Any], timeout_s: float) -> list[Reply]:
        self.requests.append(payload)
        await asyncio.sleep(0.01)
        n = int(payload.get("n", 1))
        return [Reply(f"reply {i} seed {payload.get('seed')}", "stop", Usage(10, 10 * (i > 0), 3))
                for i in range(n)]


def _generation(client: EmbeddedClient, seeds: list[int], messages=MSG) -> list[Any]:
    async def go():
        return await asyncio.gather(*(client.complete(messages, seed=s) for s in seeds))
    return run(go())


@pytest.mark.parametrize(("n_parallel", "sizes"), [(2, [2, 2]), (4, [4]), (3, [3, 1]), (1, [1] * 4)])
def test_identical_prompts_issued_together_share_requests(n_parallel, sizes):
    client = Recording(n_parallel)
    out = _generation(client, [100, 101, 102, 103])
    assert [int(r.get("n", 1)) for r in client.requests] == sizes
    # seed policy: each request carries the seed of its first call
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    assert [r["seed"] for r in client.requests] == [100 + s for s in starts]
    assert all(c.ok for c in out) and len({c.text for c in out}) == 4
    assert all(c.attempts[-1].usage is not None for c in out)


def test_different_prompts_are_not_batched():
    client = Recording(4)
    other = [{"role": "user", "content": "Another prompt."}]

    async def go():
        return await asyncio.gather(client.complete(MSG, seed=1), client.complete(other, seed=2))
    run(go())
    assert sorted(int(r.get("n", 1)) for r in client.requests) == [1, 1]


@pytest.mark.embedded
def test_real_llama_cpp_answers_one_n_request():
    client = EmbeddedClient(resolve_model("embedded-small"),
                            LLMSettings(embedded_n_ctx=1024, embedded_n_parallel=2, max_tokens=6))
    first, second = _generation(client, [7, 8])
    assert first.ok and second.ok, (first.attempts, second.attempts)
    assert first.usage.prompt_tokens > 5 and second.usage.cached_tokens == first.usage.prompt_tokens
    assert 1 <= second.usage.completion_tokens <= 6
