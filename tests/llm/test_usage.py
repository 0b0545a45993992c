"""Usage a server cannot honestly report, and replies too large to be honest (issue 22, 3-4).

Pure rules first (hand-checkable), then each lie told by the real test server over HTTP
to the real client: the attempt's usage is refused (None, marked), it is charged the
worst case as an attempt without usage is, and nothing raises.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from basevolve.llm import LLMSettings, make_client
from basevolve.llm.flops import NoUsagePolicy, call_flops
from basevolve.llm.openai_backend import parse_chat_body
from basevolve.llm.usage import (
    BYTES_PER_TOKEN,
    MAX_USAGE_TOKENS,
    implied_tokens,
    read_usage,
    reply_cap,
    text_limit,
)
from basevolve.records import IMPOSSIBLE_USAGE, AttemptStatus, Usage
from basevolve.testing import LLMTestServer

from .conftest import FAST, run

MSG = [{"role": "user", "content": "Improve this program."}]
P = 1e9
ONE_TRY = dataclasses.replace(FAST, max_retries=0)  # max_tokens = 64


def _usage(prompt=10, completion=5, cached=0):
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def test_possible_usage_is_read_as_reported() -> None:
    assert read_usage(_usage(10, 5, 3), reply_bytes=80) == (Usage(10, 3, 5), None)
    assert read_usage(_usage(10.0, 5.0), 0) == (Usage(10, 0, 5), None)  # integral floats
    assert read_usage({"prompt_tokens": 7, "completion_tokens": 2}, 0) == (Usage(7, 0, 2), None)
    assert read_usage(_usage(MAX_USAGE_TOKENS, 0), 0)[0] == Usage(MAX_USAGE_TOKENS, 0, 0)
    assert read_usage(None) == (None, None)  # no usage: unmeasured, not "impossible"
    assert read_usage("lots") == (None, None)


@pytest.mark.parametrize(("usage", "field"), [
    (_usage(completion=-1000), "completion_tokens=-1000"),
    (_usage(prompt=-1), "prompt_tokens=-1"),
    (_usage(cached=-3), "cached_tokens=-3"),
    (_usage(completion=10**30), "completion_tokens=1000000000000000000000000000000"),
    (_usage(prompt=MAX_USAGE_TOKENS + 1), "outside 0.."),
    (_usage(completion=float("inf")), "completion_tokens='inf'"),
    (_usage(completion=float("nan")), "completion_tokens='nan'"),
    (_usage(completion=2.5), "completion_tokens='2.5'"),
    (_usage(completion="5"), "completion_tokens='5'"),
    (_usage(completion=True), "completion_tokens='True'"),
    (_usage(prompt=10, cached=11), "cached_tokens=11 exceeds prompt_tokens=10"),
    (_usage(completion=5), "completion_tokens=5 for a reply of 1000 bytes"),
])
def test_impossible_usage_is_refused_with_the_field_named(usage, field) -> None:
    got, why = read_usage(usage, reply_bytes=1000)
    assert got is None
    assert why is not None and why.startswith(IMPOSSIBLE_USAGE) and field in why


def test_the_bytes_floor_and_the_caps() -> None:
    assert BYTES_PER_TOKEN == 16
    assert [implied_tokens(b) for b in (0, 1, 16, 17, 1000)] == [0, 1, 1, 2, 63]
    assert text_limit(4096) == 65536
    assert reply_cap(4096) == 65536 + 65536 and reply_cap(4096, override=5000) == 5000
    with pytest.raises(ValueError, match="max_reply_bytes"):
        LLMSettings(max_reply_bytes=10)


def test_a_body_nested_too_deep_is_a_bad_body_not_a_crash() -> None:
    from basevolve.llm.base import AttemptFailure

    with pytest.raises(AttemptFailure) as info:
        parse_chat_body("[" * 100_000 + "]" * 100_000)
    assert info.value.status is AttemptStatus.BAD_BODY


@pytest.mark.parametrize("lie", [
    {"completion_tokens": -100_000},  # used to *add* budget back
    {"completion_tokens": 10**30},  # used to raise OverflowError in the store
    {"prompt_tokens": float("inf")},  # JSON "Infinity": used to raise OverflowError in int()
    {"cached_tokens": -5},
])
def test_a_lying_server_is_charged_the_worst_case_and_marked(lie) -> None:
    with LLMTestServer(replies=["done"], **lie) as srv:
        c = run(make_client("m", srv.base_url, params=P, settings=ONE_TRY).complete(MSG))
    assert c.ok and c.text == "done"
    attempt = c.attempts[-1]
    assert attempt.usage is None and attempt.error.startswith(IMPOSSIBLE_USAGE)
    assert c.usage == Usage()  # nothing the server said is kept as measured
    # the worst case of an attempt without usage: no measured prompt, max_tokens out
    assert call_flops(c, P, max_tokens=64) == 2 * P * 64
    assert call_flops(c, P, max_tokens=64, no_usage=NoUsagePolicy.EXCLUDE) == 2 * P * 1


def test_a_reply_longer_than_its_claimed_tokens_is_charged_at_least_its_bytes() -> None:
    text = "x" * 1000  # 63 tokens at least, claimed 1
    with LLMTestServer(replies=[text], prompt_tokens=20, completion_tokens=1) as srv:
        c = run(make_client("m", srv.base_url, params=P, settings=ONE_TRY).complete(MSG))
    assert c.ok and c.text == text and c.attempts[-1].reply_bytes == 1000
    assert "completion_tokens=1 for a reply of 1000 bytes" in c.attempts[-1].error
    assert call_flops(c, P, max_tokens=64) == 2 * P * 64  # worst case >= 63 implied
    assert call_flops(c, P, max_tokens=64, no_usage=NoUsagePolicy.EXCLUDE) == 2 * P * 63


def test_a_50_mb_reply_is_refused_unread_and_charged_the_worst_case() -> None:
    huge = "y" * (50 << 20)
    with LLMTestServer(replies=[huge], completion_tokens=150) as srv:
        t0 = time.monotonic()
        c = run(make_client("m", srv.base_url, params=P, settings=ONE_TRY).complete(MSG))
        elapsed = time.monotonic() - t0
    assert not c.ok and c.text == "" and c.raw_text == ""
    attempt = c.attempts[-1]
    assert attempt.status is AttemptStatus.BAD_BODY
    assert f"reply larger than {reply_cap(64)} bytes refused" in attempt.error
    assert call_flops(c, P, max_tokens=64) == 2 * P * 64  # not the 150 tokens it claimed
    assert elapsed < 60  # it stopped reading: no 50 MB body was parsed


def test_a_reply_text_longer_than_max_tokens_can_be_is_refused() -> None:
    # under the body cap (64 * 16 + 64 KiB) but more text than 64 tokens can hold
    text = "z" * (text_limit(64) + 1)
    with LLMTestServer(replies=[text], completion_tokens=64) as srv:
        c = run(make_client("m", srv.base_url, params=P, settings=ONE_TRY).complete(MSG))
    assert not c.ok and c.attempts[-1].status is AttemptStatus.BAD_BODY
    assert "more than max_tokens=64 tokens can hold" in c.attempts[-1].error


def test_the_reply_cap_is_overridable_and_a_fitting_reply_is_kept_whole() -> None:
    text = "w" * 900
    with LLMTestServer(replies=[text]) as srv:
        small = dataclasses.replace(ONE_TRY, max_reply_bytes=1024)
        refused = run(make_client("m", srv.base_url, params=P, settings=small).complete(MSG))
        kept = run(make_client("m", srv.base_url, params=P, settings=ONE_TRY).complete(MSG))
    assert not refused.ok and "larger than 1024 bytes" in refused.attempts[-1].error
    assert kept.ok and kept.text == text and kept.usage == Usage(  # 900 // 4, at most 64
        kept.usage.prompt_tokens, kept.usage.cached_tokens, 64)


def test_reply_text_from_the_server_is_made_storable() -> None:
    body = {"choices": [{"message": {"content": "a\ud800b"}, "finish_reason": {"odd": 1}}],
            "usage": _usage(10, 1)}
    with LLMTestServer(replies=["a\ud800b\ud83d\ude00"]) as srv:
        c = run(make_client("m", srv.base_url, params=P, settings=ONE_TRY).complete(MSG))
    assert c.ok and c.text == "a\ufffdb\U0001f600"
    reply = parse_chat_body(json.dumps(body))
    assert reply.finish_reason is None  # not text: dropped, not stored as an object


def test_counts_above_what_the_request_allowed_are_impossible() -> None:
    """Issue 32, item 1: ``completion_tokens`` above ``max_tokens`` and ``prompt_tokens``
    above the sent prompt's bound (+ the template slack) cannot be true."""
    limits = {"max_tokens": 64, "prompt_tokens_max": 500}
    assert read_usage(_usage(500, 64), **limits) == (Usage(500, 0, 64), None)  # at the edge
    for usage, field in [(_usage(500, 65), "completion_tokens=65 for a request of "
                                           "max_tokens=64"),
                         (_usage(501, 64), "prompt_tokens=501 for a prompt that holds at "
                                           "most 500")]:
        got, why = read_usage(usage, **limits)
        assert got is None and why.startswith(IMPOSSIBLE_USAGE) and field in why


@pytest.mark.parametrize("lie", [{"completion_tokens": 65},  # max_tokens is 64
                                 {"prompt_tokens": 2**31 - 1}])
def test_a_server_claiming_more_than_it_was_asked_is_marked(lie) -> None:
    with LLMTestServer(replies=["done"], **lie) as srv:
        c = run(make_client("m", srv.base_url, params=P, settings=ONE_TRY).complete(MSG))
    attempt = c.attempts[-1]
    assert c.ok and attempt.usage is None and attempt.error.startswith(IMPOSSIBLE_USAGE)
    assert call_flops(c, P, max_tokens=64) == 2 * P * 64  # charged as unmeasured
