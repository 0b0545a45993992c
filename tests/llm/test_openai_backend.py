"""OpenAI-compatible backend against the real local HTTP server (issue 3, part 2).

No patched functions: every test talks HTTP to ``basevolve.testing.LLMTestServer``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from pathlib import Path

import pytest

from basevolve.errors import ConfigError, LLMError
from basevolve.llm import LLMSettings, call_flops, make_client
from basevolve.llm.flops import NoUsagePolicy
from basevolve.records import AttemptStatus, Usage
from basevolve.testing import Fault, LLMTestServer

from .conftest import FAST, run

MSG = [{"role": "user", "content": "Improve this program."}]


def test_usage_and_cached_tokens_are_parsed_and_flops_follow_the_formula() -> None:
    with LLMTestServer(
        replies=["done"], prompt_tokens=1200, cached_tokens=1000, completion_tokens=300
    ) as srv:
        client = make_client("qwen3-8b", srv.base_url, settings=FAST)
        c = run(client.complete(MSG, seed=7, max_tokens=300))  # 301+ would be impossible
    assert c.ok and c.text == "done" and c.finish_reason == "stop"
    assert c.usage == Usage(prompt_tokens=1200, cached_tokens=1000, completion_tokens=300)
    assert c.model == "Qwen/Qwen3-8B"
    # 2 * 8.19e9 * (1200 - 1000 + 300) = 8.19e12
    assert call_flops(c, client.model_spec.active_params, max_tokens=64) == pytest.approx(8.19e12)


def test_request_carries_paper_sampling_defaults_seed_and_model() -> None:
    with LLMTestServer() as srv:
        client = make_client("my/served-model", srv.base_url, params=2e9, settings=FAST)
        run(client.complete(MSG, seed=11, max_tokens=32))
        body = srv.requests[0]
    assert body["model"] == "my/served-model"
    assert (body["temperature"], body["top_p"], body["seed"], body["max_tokens"]) == (
        0.6,
        0.95,
        11,
        32,
    )
    assert body["messages"] == MSG
    assert not body.get("stream")


def test_emulated_prefix_cache_reports_shared_prefix_of_earlier_requests() -> None:
    prefix = "x" * 400
    with LLMTestServer() as srv:
        client = make_client("qwen3-4b", srv.base_url, settings=FAST)
        first = run(client.complete([{"role": "user", "content": prefix + "A" * 40}]))
        second = run(client.complete([{"role": "user", "content": prefix + "B" * 40}]))
    assert first.usage.cached_tokens == 0
    assert first.usage.prompt_tokens == 110  # 440 chars // 4
    assert second.usage.cached_tokens == 100  # 400 shared chars // 4


@pytest.mark.parametrize(
    ("fault", "status"),
    [
        (Fault.HTTP_500, AttemptStatus.HTTP_ERROR),
        (Fault.HTTP_429, AttemptStatus.RATE_LIMITED),
        (Fault.GARBAGE, AttemptStatus.BAD_BODY),
        (Fault.EMPTY_CHOICES, AttemptStatus.EMPTY_CHOICES),
        (Fault.TRUNCATED, AttemptStatus.CONNECTION_ERROR),
    ],
)
def test_each_fault_is_retried_and_recorded(fault: Fault, status: AttemptStatus) -> None:
    with LLMTestServer(replies=["fine"]) as srv:
        srv.inject(fault, times=2)
        client = make_client("qwen3-1.7b", srv.base_url, settings=FAST)
        c = run(client.complete(MSG))
        n_requests = len(srv.requests)
    assert c.ok and c.text == "fine"
    assert [a.status for a in c.attempts] == [status, status, AttemptStatus.OK]
    assert [a.index for a in c.attempts] == [0, 1, 2]
    assert all(a.error for a in c.attempts[:2])
    assert n_requests == 3
    if fault is Fault.HTTP_500:
        assert c.attempts[0].http_status == 500


def test_exhausted_retries_return_a_failed_completion() -> None:
    with LLMTestServer() as srv:
        srv.inject(Fault.HTTP_500, times=10)
        settings = dataclasses.replace(FAST, max_retries=2)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=settings).complete(MSG))
    assert not c.ok and c.text == ""
    assert [a.status for a in c.attempts] == [AttemptStatus.HTTP_ERROR] * 3
    # worst-case policy charges the failed attempts (no usage) max_tokens each
    assert call_flops(c, 1e9, max_tokens=64) == 3 * 2 * 1e9 * 64


def test_stall_is_cut_by_the_attempt_timeout_then_retried() -> None:
    with LLMTestServer(replies=["after stall"]) as srv:
        srv.inject(Fault.STALL)
        settings = dataclasses.replace(FAST, attempt_timeout_s=0.3, call_deadline_s=5.0)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=settings).complete(MSG))
    assert c.ok and c.text == "after stall"
    assert [a.status for a in c.attempts] == [AttemptStatus.TIMEOUT, AttemptStatus.OK]


def test_stalled_endpoint_never_blocks_past_the_call_deadline() -> None:
    with LLMTestServer() as srv:
        srv.inject(Fault.STALL, times=10)
        settings = dataclasses.replace(FAST, attempt_timeout_s=30.0, call_deadline_s=0.5)
        t0 = time.monotonic()
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=settings).complete(MSG))
        elapsed = time.monotonic() - t0
    assert not c.ok
    assert c.attempts[-1].status is AttemptStatus.DEADLINE
    # the stall would last 60 s; the call gave up near its 0.5 s deadline (generous bound)
    assert elapsed < 10.0


def test_length_cut_reply_is_a_success_with_its_finish_reason() -> None:
    with LLMTestServer(replies=["0123456789"]) as srv:
        srv.inject(Fault.LENGTH)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=FAST).complete(MSG))
    assert c.ok and c.finish_reason == "length" and c.text == "01234"
    assert len(c.attempts) == 1


def test_several_calls_are_in_flight_at_once() -> None:
    async def many(client):
        return await asyncio.gather(*(client.complete(MSG, seed=i) for i in range(6)))

    with LLMTestServer(latency_s=0.3) as srv:
        client = make_client("qwen3-1.7b", srv.base_url, settings=FAST)
        results = run(many(client))
        peak = srv.peak_in_flight
        seeds = sorted(r["seed"] for r in srv.requests)
    assert all(r.ok for r in results)
    assert peak >= 4  # 6 concurrent calls; at least 4 overlapped on a loaded machine
    assert seeds == list(range(6))


def test_api_key_never_appears_in_records_or_logs(
    caplog: pytest.LogCaptureFixture, monkeypatch
) -> None:
    sentinel = "sk-SENTINEL-9f8e7d6c5b4a"
    monkeypatch.setenv("BASEVOLVE_TEST_KEY", sentinel)
    caplog.set_level(logging.DEBUG)
    with LLMTestServer(replies=["ok"]) as srv:
        srv.inject(Fault.HTTP_500)
        srv.inject(Fault.GARBAGE)
        client = make_client(
            "qwen3-1.7b", srv.base_url, api_key_env="BASEVOLVE_TEST_KEY", settings=FAST
        )
        c = run(client.complete(MSG))
        auth = srv.authorizations
    assert auth[-1] == f"Bearer {sentinel}"  # the key was sent ...
    assert c.ok and len(c.attempts) == 3
    # ... but appears nowhere we keep or print
    assert sentinel not in repr(c)
    assert sentinel not in repr(client)
    assert all(sentinel not in repr(a) for a in c.attempts)
    assert caplog.records  # the retries were logged
    assert sentinel not in caplog.text


def test_unknown_model_and_bad_base_url_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown model 'nope/Model-1B'"):
        make_client("nope/Model-1B", "http://127.0.0.1:8000/v1")
    for bad in ("localhost:8000", "ftp://host/v1", "http://", "http://h:99999/v1", ""):
        with pytest.raises(ConfigError, match="malformed base URL"):
            make_client("qwen3-8b", bad)
    with pytest.raises(ConfigError, match="--base-url"):
        make_client("qwen3-8b")  # a served model without an endpoint


def test_unreachable_endpoint_fails_fast_with_connection_errors() -> None:
    with LLMTestServer() as srv:
        url = srv.base_url  # closed on exit: nothing listens there any more
    settings = LLMSettings(max_retries=1, backoff_base_s=0.01, call_deadline_s=5.0)
    c = run(make_client("qwen3-1.7b", url, settings=settings).complete(MSG))
    assert not c.ok
    # refused: the request provably never reached a server (issue 12, item 2) ...
    assert [a.status for a in c.attempts] == [AttemptStatus.NOT_SENT] * 2
    # ... so it costs no FLOPs, whatever the policy for unanswered attempts
    for policy in NoUsagePolicy:
        assert call_flops(c, 1.7e9, max_tokens=4096, no_usage=policy) == 0.0


def test_sent_but_unanswered_attempt_is_charged_by_policy() -> None:
    with LLMTestServer(replies=["after stall"]) as srv:
        srv.inject(Fault.STALL)  # the request arrives, no answer: the attempt times out
        settings = LLMSettings(max_retries=3, backoff_base_s=0.01, attempt_timeout_s=1.0,
                               call_deadline_s=20.0, max_tokens=100)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=settings).complete(MSG))
    assert c.ok and c.attempts[0].status is AttemptStatus.TIMEOUT
    answered = c.attempts[-1].usage
    assert answered is not None
    unanswered = len(c.attempts) - 1  # 1, or more when a loaded machine is slow to connect
    measured = 2 * 1.7e9 * (answered.prompt_tokens - answered.cached_tokens
                            + answered.completion_tokens)
    worst = 2 * 1.7e9 * (answered.prompt_tokens + 100)
    assert call_flops(c, 1.7e9, max_tokens=100) == pytest.approx(measured + unanswered * worst)
    assert call_flops(c, 1.7e9, max_tokens=100,
                      no_usage=NoUsagePolicy.EXCLUDE) == pytest.approx(measured)


def test_bad_request_is_recorded_but_not_retried() -> None:
    with LLMTestServer() as srv:
        srv.inject(Fault.HTTP_400)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=FAST).complete(MSG))
        n_requests = len(srv.requests)
    assert not c.ok and n_requests == 1
    assert (c.attempts[0].status, c.attempts[0].http_status) == (AttemptStatus.HTTP_ERROR, 400)


def test_rejected_key_raises_naming_the_variable_not_the_key(monkeypatch) -> None:
    monkeypatch.setenv("BASEVOLVE_TEST_KEY", "sk-WRONG-0123456789")
    with LLMTestServer() as srv:
        srv.inject(Fault.HTTP_401)
        client = make_client(
            "qwen3-1.7b", srv.base_url, api_key_env="BASEVOLVE_TEST_KEY", settings=FAST
        )
        with pytest.raises(LLMError, match="BASEVOLVE_TEST_KEY") as info:
            run(client.complete(MSG))
    assert "sk-WRONG" not in str(info.value)


def test_thinking_switch_travels_in_the_request_body() -> None:
    # the backend posts the body itself (no SDK transform); extra fields must still arrive
    settings = dataclasses.replace(FAST, enable_thinking=False)
    with LLMTestServer() as srv:
        client = make_client("qwen3-4b", srv.base_url, settings=settings)
        assert run(client.complete(MSG, seed=3)).ok
        body = srv.requests[0]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["messages"] == MSG and body["seed"] == 3


def test_credentials_in_the_base_url_are_refused_without_echoing_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A secret in ``user:password@`` would be stored in the run's config (resume needs the
    URL) and printed in errors; it is refused, and the message never repeats it."""
    with pytest.raises(ConfigError, match="must not carry credentials") as info:
        make_client("qwen3-8b", "http://alice:s3cret-token@127.0.0.1:8000/v1")
    assert "s3cret-token" not in str(info.value)
    from basevolve.cli import main

    store = tmp_path / "s.sqlite"
    code = main(["run", "--task", "circle_packing", "--budget", "2", "--model", "qwen3-8b",
                 "--base-url", "http://bob:s3cret-token@127.0.0.1:9/v1", "--store", str(store)])
    assert code == 2 and not store.exists()
    err = capsys.readouterr().err
    assert "must not carry credentials" in err and "s3cret-token" not in err
