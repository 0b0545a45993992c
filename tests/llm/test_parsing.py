"""Body parsing shared by the HTTP and embedded backends (pure functions, real payload shapes)."""

from __future__ import annotations

import json

import pytest

from basevolve.llm.base import AttemptFailure
from basevolve.llm.embedded import parse_embedded_response
from basevolve.llm.openai_backend import parse_chat_body, parse_usage
from basevolve.records import AttemptStatus, Usage


def test_vllm_reasoning_field_is_kept_in_raw_text_as_a_think_block() -> None:
    body = {
        "choices": [
            {"message": {"content": "answer", "reasoning_content": "hmm"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
    }
    reply = parse_chat_body(json.dumps(body))
    assert reply.text == "<think>hmm</think>answer"
    assert reply.usage == Usage(9, 0, 4)  # no prompt_tokens_details -> 0 cached


def test_usage_without_numbers_is_treated_as_missing() -> None:
    assert parse_usage(None) is None
    assert parse_usage({"prompt_tokens": "many"}) is None
    assert parse_usage({"prompt_tokens": 5, "prompt_tokens_details": None}) == Usage(5, 0, 0)


def test_llama_cpp_shapes() -> None:
    # captured from xllamacpp 2026.10.11549 (second identical request: prefix cached)
    response = {
        "choices": [
            {"finish_reason": "stop", "index": 0, "message": {"role": "assistant", "content": "Hi"}}
        ],
        "usage": {
            "completion_tokens": 2,
            "prompt_tokens": 35,
            "prompt_tokens_details": {"cached_tokens": 34},
        },
        "timings": {"cache_n": 34, "prompt_n": 1},
    }
    assert parse_embedded_response(response).usage == Usage(35, 34, 2)
    # older builds: no prompt_tokens_details -> fall back to timings.cache_n
    del response["usage"]["prompt_tokens_details"]
    assert parse_embedded_response(json.dumps(response)).usage == Usage(35, 34, 2)


def test_llama_cpp_errors_become_failed_attempts() -> None:
    bad = {
        "error": {"code": 400, "message": "Field 'max_tokens' ...", "type": "invalid_request_error"}
    }
    with pytest.raises(AttemptFailure) as info:
        parse_embedded_response(bad)
    assert (info.value.status, info.value.http_status, info.value.retryable) == (
        AttemptStatus.HTTP_ERROR,
        400,
        False,
    )
    with pytest.raises(AttemptFailure) as info:
        parse_embedded_response("not json")
    assert info.value.status is AttemptStatus.BAD_BODY
