"""Reasoning blocks are stripped for parsers, kept in the raw record (issue 3, part 3)."""

from __future__ import annotations

from basevolve.llm import make_client, strip_think
from basevolve.testing import LLMTestServer

from .conftest import FAST, run


def test_strip_think_variants() -> None:
    assert strip_think("<think>plan\nmore</think>\nanswer") == "answer"
    assert strip_think("a<think>x</think>b<think>y</think>c") == "abc"
    assert strip_think("reasoning only, template opened it</think> final") == "final"
    assert strip_think("answer <think>cut off mid-thought") == "answer"
    assert strip_think("no reasoning at all") == "no reasoning at all"


def test_client_strips_think_but_keeps_raw_text() -> None:
    raw = "<think>I should echo the code.</think>\n```python\nx = 1\n```"
    with LLMTestServer(replies=[raw]) as srv:
        client = make_client("qwen3-1.7b", srv.base_url, settings=FAST)
        c = run(client.complete([{"role": "user", "content": "go"}]))
    assert c.raw_text == raw
    assert c.text == "```python\nx = 1\n```"
    assert "think" not in c.text
