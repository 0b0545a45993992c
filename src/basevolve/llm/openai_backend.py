"""OpenAI-compatible backend (vLLM, SGLang, llama.cpp server, OpenAI) -- issue 3, part 2.

Speaks the chat-completions protocol over ``aiohttp`` (issue 23, part 3).  Why not the
``openai`` SDK it used before: the SDK's request path (its option building, then
``httpx``/``httpcore`` in pure Python over ``anyio``) cost ~1.5 ms of event-loop CPU per
call, against ~0.3 ms for ``aiohttp``'s C-accelerated HTTP/1.1 client on the same box
(benchmarks/README.md, "The LLM slot freed when the reply arrives").  On 2 cores, 16
replies of a wave are processed one after the other on the loop, so that CPU delayed
every next request and kept the server below saturation.  We only ever used the SDK's
generic ``post`` anyway: retries, timeouts and the per-call deadline belong to
:class:`~basevolve.llm.base.RetryingClient` so that every attempt is recorded, and the
reply body is parsed here from the raw text, because the fields FLOPs need
(``usage.prompt_tokens_details.cached_tokens``) and the failure modes we must classify
(non-JSON body, empty ``choices``) vary between servers.  The body is read as a stream
and refused past :func:`~basevolve.llm.usage.reply_cap` bytes, and its ``usage`` is
checked by :func:`~basevolve.llm.usage.read_usage` (issue 22, items 3-4): a server can
neither flood the store nor undercharge a budget.  Replies are asked for uncompressed
(``Accept-Encoding: identity``) and never decompressed, so a compressed body cannot grow
past the cap in memory; redirects are not followed (a 3xx is a failed attempt).

The API key is read from an environment variable at construction and sent as a bearer
token; it is not an attribute of this object's ``repr``, never enters an
:class:`~basevolve.records.Attempt` (error strings are scrubbed), and is never logged.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import urlparse

import aiohttp

from basevolve import __version__
from basevolve.errors import ConfigError, LLMError
from basevolve.llm.base import ERROR_CHARS, AttemptFailure, Reply, RetryingClient
from basevolve.llm.call_order import CALL_HEADER, CALL_ORDER
from basevolve.llm.catalog import ModelSpec
from basevolve.llm.settings import LLMSettings
from basevolve.llm.usage import (
    PROMPT_SLACK_TOKENS,
    prompt_bound,
    read_usage,
    reply_cap,
    text_limit,
)
from basevolve.records import AttemptStatus, Usage

# Statuses a retry can fix (the SDK's own retry set plus every 5xx).
_RETRY_STATUSES = frozenset({408, 409, 429})
# Statuses that mean the configuration is wrong: fail the run, do not burn the budget.
_FATAL_STATUSES = {
    401: "the server rejected the API key (check the variable {env})",
    403: "the server refused access (check the API key in {env})",
    404: "the server does not serve model {model!r} at {url} (check --model and --base-url)",
}


def validate_base_url(base_url: str) -> str:
    """Return ``base_url`` without a trailing slash, or raise ConfigError naming the fix."""
    hint = "expected something like http://127.0.0.1:8000/v1"
    if not isinstance(base_url, str) or not base_url.strip():
        raise ConfigError(f"malformed base URL {base_url!r}; {hint}")
    url = base_url.strip()
    try:
        parsed = urlparse(url)
        port = parsed.port  # raises ValueError on a bad port
    except ValueError:
        raise ConfigError(f"malformed base URL {base_url!r} (bad port); {hint}") from None
    if parsed.username is not None or parsed.password is not None:
        # Never echo the URL: it holds a secret.  Credentials in the URL would also end
        # up in the run store's config (resume needs the URL), so refuse them.
        raise ConfigError(
            "the base URL must not carry credentials (user:password@host); put the API "
            "key in the environment variable named by --api-key-env (default "
            "OPENAI_API_KEY), which is sent as a bearer token and never stored"
        )
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"malformed base URL {base_url!r}; {hint}")
    if port == 0 or any(c.isspace() for c in url):
        raise ConfigError(f"malformed base URL {base_url!r}; {hint}")
    return url.rstrip("/")


def parse_usage(data: Any, reply_bytes: int = 0) -> Usage | None:
    """vLLM-style ``usage`` -> Usage; None when absent or impossible
    (:func:`basevolve.llm.usage.read_usage` says why)."""
    return read_usage(data, reply_bytes)[0]


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))  # a lone surrogate counts 3 bytes


def parse_chat_body(text: str, max_tokens: int | None = None,
                    prompt_tokens_max: int | None = None) -> Reply:
    """Parse a chat-completion body; raise AttemptFailure for bad or empty ones.

    ``max_tokens`` / ``prompt_tokens_max``: the most tokens the request allowed, above
    which a reported count is impossible (:func:`~basevolve.llm.usage.read_usage`)."""
    limits = {"max_tokens": max_tokens, "prompt_tokens_max": prompt_tokens_max}
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise AttemptFailure(AttemptStatus.BAD_BODY, f"unparseable body: {exc}") from None
    if not isinstance(body, dict):
        raise AttemptFailure(AttemptStatus.BAD_BODY, "body is not a JSON object")
    usage, why = read_usage(body.get("usage"), **limits)  # a failed attempt: no reply text
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise AttemptFailure(AttemptStatus.EMPTY_CHOICES, "reply has no choices", usage=usage,
                             usage_error=why)
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise AttemptFailure(AttemptStatus.BAD_BODY, "first choice has no message", usage=usage,
                             usage_error=why)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise AttemptFailure(AttemptStatus.BAD_BODY, "message content is not text", usage=usage,
                             usage_error=why)
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    text = content or ""
    size = _utf8_len(text)
    if isinstance(reasoning, str) and reasoning:
        # vLLM's reasoning parser splits thinking out; keep it in raw_text as Qwen3 emits it.
        text = f"<think>{reasoning}</think>{text}"
        size += _utf8_len(reasoning)
    usage, why = read_usage(body.get("usage"), size, **limits)  # the bytes floor the charge
    finish = choices[0].get("finish_reason")
    return Reply(text, finish[:64] if isinstance(finish, str) else None, usage,
                 reply_bytes=size, usage_error=why)


def never_sent(cause: BaseException) -> bool:
    """True when the request provably never reached a server (issue 12, item 2).

    ``aiohttp`` raises :class:`aiohttp.ClientConnectorError` (refused, DNS or TLS failure)
    and :class:`aiohttp.ConnectionTimeoutError` only while *opening* the connection, so no
    byte of the request was sent.  Such an attempt costs no FLOPs; anything else (a reset
    or a timeout after the request was sent) may have been computed and is charged by
    ``--charge-unanswered``.
    """
    return isinstance(cause, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)


async def _read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes:
    """The body of ``response``, refused (AttemptFailure) past ``cap`` bytes.

    Why streamed: reading first and measuring after held a 50 MB reply in memory (and
    stored it twice).  Stops reading at the cap; the connection is then closed.
    """
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > cap:
            raise AttemptFailure(
                AttemptStatus.BAD_BODY,
                f"reply larger than {cap} bytes refused (max_reply_bytes: by default "
                f"16 bytes per --max-tokens token + 64 KiB)")
        chunks.append(chunk)
    return b"".join(chunks)


def _env_proxy(url: str) -> str | None:
    """The proxy that ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` name for ``url``, as the
    SDK's HTTP client honoured them; None for a direct connection."""
    parsed = urlparse(url)
    if urllib.request.proxy_bypass_environment(parsed.hostname or ""):
        return None
    return urllib.request.getproxies_environment().get(parsed.scheme)


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _error_message(body: bytes) -> str:
    """The server's words for a failed status: ``error.message`` of a JSON body (as
    OpenAI and vLLM send it), else the body's text.  Data, cut by the caller."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text.strip() or "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    return text.strip()


async def _closed_with_loop(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Closes ``session`` when its event loop shuts down.

    Why: an ``aiohttp`` session must be closed on its own loop, and a client outlives
    the loop of each ``asyncio.run`` that used it.  ``asyncio.run`` finalises every
    suspended async generator (``loop.shutdown_asyncgens``) before it closes the loop,
    which runs this ``finally`` there.
    """
    try:
        yield
    finally:
        await session.close()


class OpenAIClient(RetryingClient):
    """An OpenAI-compatible chat endpoint."""

    def __init__(
        self,
        spec: ModelSpec,
        base_url: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        settings: LLMSettings | None = None,
    ) -> None:
        super().__init__(spec, settings)
        self.base_url = validate_base_url(base_url)
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env) or ""
        self._secrets = tuple(s for s in (key,) if len(s) >= 4)
        self._key = key or "EMPTY"  # local servers (vLLM) accept any key
        self._http: aiohttp.ClientSession | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._url = f"{self.base_url}/chat/completions"
        self._proxy = _env_proxy(self.base_url)
        extra: dict[str, Any] = {}
        if self.settings.enable_thinking is not None:
            extra["chat_template_kwargs"] = {"enable_thinking": self.settings.enable_thinking}
        self._extra_body = extra or None

    def __repr__(self) -> str:
        return f"OpenAIClient(model={self._spec.served_id!r}, base_url={self.base_url!r})"

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    async def _session(self) -> aiohttp.ClientSession:
        """The HTTP session of the running event loop.

        Connection pools are bound to the loop that opened them, so a client used from a
        new loop (a second ``asyncio.run``) gets a fresh session; the old one was closed
        when its loop shut down (:func:`_closed_with_loop`).
        """
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            self._http = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self._key}",
                         "Content-Type": "application/json",
                         "Accept": "application/json",
                         "Accept-Encoding": "identity",
                         "User-Agent": f"basevolve/{__version__}"},
                # no pool cap: the engine's semaphores bound the calls in flight
                connector=aiohttp.TCPConnector(limit=0),
                auto_decompress=False,
                # not aiohttp's trust_env: it reads ~/.netrc in a thread on every request
                # (and refuses a netrc entry next to our Authorization header); the proxy
                # comes from the environment once, in __init__
                trust_env=False,
            )
            self._closer = _closed_with_loop(self._http)
            await self._closer.__anext__()
            self._loop = loop
        return self._http

    async def aclose(self) -> None:
        if self._closer is not None and self._loop is asyncio.get_running_loop():
            await self._closer.aclose()  # closes the session
        self._http = None
        self._closer = None
        self._loop = None

    async def _attempt(self, payload: dict[str, Any], timeout_s: float) -> Reply:
        max_tokens = int(payload.get("max_tokens") or self.settings.max_tokens)
        cap = reply_cap(max_tokens, self.settings.max_reply_bytes)
        body = json.dumps({"model": self._spec.served_id, "stream": False, **payload,
                           **(self._extra_body or {})}).encode()
        session = await self._session()
        order = CALL_ORDER.get()  # its place in its run (issue 34), when the engine set it
        try:
            # the retry loop's asyncio clock is authoritative; this one is a backstop
            async with session.post(self._url, data=body, allow_redirects=False,
                                    proxy=self._proxy,
                                    headers=None if order is None else {CALL_HEADER: order},
                                    timeout=aiohttp.ClientTimeout(total=timeout_s + 1.0)
                                    ) as response:
                if not 200 <= response.status < 300:
                    raise await self._status_failure(response, cap)
                raw = await _read_capped(response, cap)
        except AttemptFailure:
            raise
        except (aiohttp.ClientError, TimeoutError) as exc:
            if never_sent(exc):
                status = AttemptStatus.NOT_SENT
            elif isinstance(exc, TimeoutError):
                status = AttemptStatus.TIMEOUT
            else:  # refused mid-way: reset, disconnected, truncated body
                status = AttemptStatus.CONNECTION_ERROR
            raise AttemptFailure(status, f"{type(exc).__name__}: {exc}") from None
        # invalid UTF-8 becomes U+FFFD here; an escaped lone surrogate in the JSON is made
        # storable by the Completion record (basevolve.safe_text)
        reply = parse_chat_body(raw.decode("utf-8", "replace"), max_tokens,
                                prompt_bound(payload.get("messages") or ())
                                + PROMPT_SLACK_TOKENS)
        if reply.reply_bytes > text_limit(max_tokens):
            raise AttemptFailure(
                AttemptStatus.BAD_BODY,
                f"reply text of {reply.reply_bytes} bytes refused: more than max_tokens="
                f"{max_tokens} tokens can hold (16 bytes each)")
        return reply

    async def _status_failure(self, response: aiohttp.ClientResponse,
                              cap: int) -> AttemptFailure:
        code = response.status
        if code in _FATAL_STATUSES:
            msg = _FATAL_STATUSES[code].format(
                env=self.api_key_env, model=self._spec.served_id, url=self.base_url
            )
            raise LLMError(f"HTTP {code}: {msg}")
        try:
            detail = _error_message(await _read_capped(response, min(cap, 64 * 1024)))
        except AttemptFailure:
            detail = "(error body over 64 KiB, not read)"
        status = AttemptStatus.RATE_LIMITED if code == 429 else AttemptStatus.HTTP_ERROR
        return AttemptFailure(
            status,
            f"HTTP {code}: {detail[:ERROR_CHARS - 20]}",  # the whole reason, capped
            retryable=code >= 500 or code in _RETRY_STATUSES,
            http_status=code,
            retry_after_s=_retry_after(response.headers),
        )


__all__ = ["OpenAIClient", "never_sent", "parse_chat_body", "parse_usage", "validate_base_url"]
