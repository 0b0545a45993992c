"""The shipped test server itself (issue 3, part 7): scripting, usage, process mode."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from basevolve.llm import make_client
from basevolve.testing import LLMTestServer

from .conftest import FAST, run


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(
        url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_callable_replies_see_the_body_and_index() -> None:
    def reply(body: dict, index: int) -> str:
        return f"{index}:{body['messages'][-1]['content']}"

    with LLMTestServer(replies=reply) as srv:
        first = _post(srv.base_url, {"messages": [{"role": "user", "content": "a"}]})
        second = _post(srv.base_url, {"messages": [{"role": "user", "content": "b"}]})
    assert first["choices"][0]["message"]["content"] == "0:a"
    assert second["choices"][0]["message"]["content"] == "1:b"


def test_sequence_replies_cycle_and_usage_is_deterministic() -> None:
    with LLMTestServer(replies=["one", "twotwotwo"]) as srv:
        bodies = [
            _post(srv.base_url, {"messages": [{"role": "user", "content": "q" * 40}]})
            for _ in range(3)
        ]
    texts = [b["choices"][0]["message"]["content"] for b in bodies]
    assert texts == ["one", "twotwotwo", "one"]
    assert bodies[0]["usage"]["prompt_tokens"] == 10  # 40 chars // 4
    assert bodies[1]["usage"]["completion_tokens"] == 2  # 9 chars // 4
    # identical prompts: the emulated cache covers all but one token
    assert bodies[2]["usage"]["prompt_tokens_details"]["cached_tokens"] == 9


def test_default_reply_echoes_the_last_code_block() -> None:
    prompt = "Parent:\n```python\ndef f():\n    return 1\n```\nImprove it."
    with LLMTestServer() as srv:
        c = run(
            make_client("qwen3-1.7b", srv.base_url, settings=FAST).complete(
                [{"role": "user", "content": prompt}]
            )
        )
    assert "```python\ndef f():\n    return 1\n" in c.text


def test_process_mode_prints_base_url_and_serves_a_replies_file(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["from file"]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "basevolve.testing.llm_server",
            "--port",
            "0",
            "--latency",
            "0.01",
            "--replies-file",
            str(replies),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        body = _post(url, {"messages": [{"role": "user", "content": "hi"}]})
        assert body["choices"][0]["message"]["content"] == "from file"
        with urllib.request.urlopen(url + "/models", timeout=10) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == "test-model"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_a_raising_reply_function_answers_500_and_is_recorded() -> None:
    def reply(body: dict, index: int) -> str:
        raise KeyError("oops")

    with LLMTestServer(replies=reply) as srv:
        try:
            _post(srv.base_url, {"messages": [{"role": "user", "content": "a"}]})
        except urllib.error.HTTPError as exc:
            status = exc.code
        errors = srv.reply_errors
    assert status == 500
    assert errors == ["KeyError: 'oops'"]


def test_default_reply_echoes_the_parent_not_the_prompt_placeholder() -> None:
    """The OpenEvolve prompt ends with a placeholder block after the parent program; the
    default reply must echo the program so children stay valid (QA: every child of a
    test-server run was 'no usable program')."""
    prompt = ("Parent:\n```python\ndef f():\n    return 1\n```\nRewrite it.\n"
              "```python\n# Your rewritten program here\n```\n")
    with LLMTestServer() as srv:
        c = run(
            make_client("qwen3-1.7b", srv.base_url, settings=FAST).complete(
                [{"role": "user", "content": prompt}]
            )
        )
    assert "def f():\n    return 1\n" in c.text
    assert "Your rewritten program here" not in c.text


def test_common_prefix_matches_a_character_by_character_scan() -> None:
    import random

    from basevolve.testing.prefix_cache import common_prefix as _common_prefix

    def scan(a: str, b: str) -> int:
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        return i

    rng = random.Random(0)
    for _ in range(2000):
        a = "".join(rng.choice("ab") for _ in range(rng.randint(0, 10)))
        b = "".join(rng.choice("ab") for _ in range(rng.randint(0, 10)))
        assert _common_prefix(a, b) == scan(a, b)
