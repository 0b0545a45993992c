"""The OpenAI-protocol client's HTTP transport (issue 23, part 3: ``aiohttp`` instead of the
SDK): what it sends, what it refuses, and that it cleans up after itself.

Every test talks HTTP to the real local server (:class:`basevolve.testing.LLMTestServer`).
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from pathlib import Path

import pytest

from basevolve.llm import LLMSettings, make_client
from basevolve.records import AttemptStatus
from basevolve.testing import Fault, LLMTestServer

from .conftest import FAST, run

MSG = [{"role": "user", "content": "Improve this program."}]
ONE_TRY = LLMSettings(max_retries=0, attempt_timeout_s=5.0, call_deadline_s=10.0, max_tokens=64)


def test_a_redirect_is_a_failed_attempt_and_is_not_followed() -> None:
    """A 307 would re-send the prompt and the bearer key to wherever it points."""
    with LLMTestServer(replies=["fine"]) as srv:
        srv.inject(Fault.REDIRECT)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=ONE_TRY).complete(MSG))
        n = srv.n_requests
    assert not c.ok and n == 1
    a = c.attempts[0]
    assert (a.status, a.http_status) == (AttemptStatus.HTTP_ERROR, 307)


def test_a_compressed_reply_is_not_decompressed() -> None:
    """Nothing asks for compression (Accept-Encoding: identity), so a gzip body is refused
    as it arrives: it cannot inflate past the reply cap in memory."""
    with LLMTestServer(replies=["fine"]) as srv:
        srv.inject(Fault.GZIP)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=FAST).complete(MSG))
    assert c.ok and c.text == "fine"
    assert [a.status for a in c.attempts] == [AttemptStatus.BAD_BODY, AttemptStatus.OK]


def test_the_request_headers_and_body() -> None:
    with LLMTestServer(replies=["fine"]) as srv:
        run(make_client("qwen3-4b", srv.base_url, settings=FAST).complete(MSG, seed=5))
        body = srv.requests[0]
        auth = srv.authorizations[0]
    assert auth == "Bearer EMPTY"  # no key set: local servers accept any
    assert body["model"] == "Qwen/Qwen3-4B" and body["stream"] is False
    assert body["messages"] == MSG and body["seed"] == 5 and body["max_tokens"] == 64


def test_the_server_s_error_message_is_kept_as_data() -> None:
    with LLMTestServer(replies=["fine"]) as srv:
        srv.inject(Fault.HTTP_500)
        c = run(make_client("qwen3-1.7b", srv.base_url, settings=FAST).complete(MSG))
    assert c.ok
    assert c.attempts[0].error == "HTTP 500: injected server error"


def test_a_netrc_entry_for_the_host_changes_nothing(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """aiohttp's ``trust_env`` would read ~/.netrc on every request and refuse its entry
    next to our Authorization header; the client does not use it."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login alice password s3cret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("BASEVOLVE_TEST_KEY", "sk-test-0123456789")
    with LLMTestServer(replies=["fine"]) as srv:
        client = make_client("qwen3-1.7b", srv.base_url, api_key_env="BASEVOLVE_TEST_KEY",
                             settings=ONE_TRY)
        c = run(client.complete(MSG))
        auth = srv.authorizations
    assert c.ok and auth == ["Bearer sk-test-0123456789"]


def test_the_proxy_named_by_the_environment_is_used_unless_no_proxy_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY is honoured as the SDK's client did: the request for an address nothing
    serves goes to the proxy (here the test server, which answers absolute-URI requests);
    NO_PROXY sends it directly, where nothing listens: never sent."""
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with LLMTestServer(replies=["via proxy"]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "example.invalid")
        target = "http://127.0.0.9:9/v1"  # nothing listens here
        c = run(make_client("qwen3-1.7b", target, settings=ONE_TRY).complete(MSG))
        assert c.ok and c.text == "via proxy" and proxy.n_requests == 1
        monkeypatch.setenv("NO_PROXY", "127.0.0.9")
        direct = run(make_client("qwen3-1.7b", target, settings=ONE_TRY).complete(MSG))
        assert proxy.n_requests == 1
    assert not direct.ok and direct.attempts[0].status is AttemptStatus.NOT_SENT


def test_sessions_are_closed_with_their_event_loop() -> None:
    """One client used from several ``asyncio.run`` calls (a session per loop) leaves no
    unclosed session or connector behind; ``aclose`` closes the current one."""
    with LLMTestServer(replies=["fine"]) as srv:
        client = make_client("qwen3-1.7b", srv.base_url, settings=FAST)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                assert run(client.complete(MSG)).ok

            async def used_then_closed() -> bool:
                ok = (await client.complete(MSG)).ok
                await client.aclose()
                return ok

            assert run(used_then_closed())
            gc.collect()
    unclosed = [str(w.message) for w in caught if "Unclosed" in str(w.message)]
    assert unclosed == []


def test_many_calls_share_few_connections() -> None:
    """Keep-alive: 40 calls, at most 8 at once, open at most 8 connections (the server
    counts its handler threads' connections through peak in flight and requests)."""
    async def many(client) -> list[bool]:
        sem = asyncio.Semaphore(8)

        async def one(i: int) -> bool:
            async with sem:
                return (await client.complete(MSG, seed=i)).ok
        return list(await asyncio.gather(*(one(i) for i in range(40))))

    with LLMTestServer(replies=["fine"], latency_s=0.02) as srv:
        client = make_client("qwen3-1.7b", srv.base_url, settings=FAST)
        assert all(run(many(client)))
        assert srv.n_requests == 40 and srv.peak_in_flight <= 8
        assert srv.connections <= 8
