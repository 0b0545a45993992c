"""The embedded model's streamed requests feed the live line's decode meter (issue 24,
item 9), with the real model (the 0.5B answering model: the smallest installed).

While a generation runs, the meter sees one request whose token count grows; when it
ends the request is gone and the meter's total grew by the tokens the reply reports.
"""

from __future__ import annotations

import asyncio

import pytest

from basevolve.llm import LLMSettings, make_client
from basevolve.llm.decode_meter import METER

from .conftest import run


@pytest.mark.embedded
def test_tokens_of_a_call_in_flight_are_counted() -> None:
    client = make_client("embedded-small", settings=LLMSettings(embedded_n_ctx=1024,
                                                                max_tokens=32))
    run(client.load())  # loading is not decoding
    before = METER.read()
    assert before.requests == 0
    seen: list[tuple[int, int]] = []

    async def call_and_watch():
        task = asyncio.ensure_future(client.complete(
            [{"role": "user", "content": "Count from 1 to 40, separated by commas."}],
            max_tokens=32, seed=3))
        while not task.done():
            r = METER.read()
            seen.append((r.requests, r.tokens))
            await asyncio.sleep(0.02)
        return await task

    c = run(call_and_watch())
    assert c.ok, c.attempts
    during = [tokens for requests, tokens in seen if requests == 1]
    assert during, "the request never showed on the meter"
    assert during == sorted(during) and max(during) >= 2  # it grew while decoding
    after = METER.read()
    assert after.requests == 0
    counted = after.total - before.total
    assert c.usage.completion_tokens - 1 <= counted <= c.usage.completion_tokens, (
        counted, c.usage)
