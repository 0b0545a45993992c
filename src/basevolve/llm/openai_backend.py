"""OpenAI-compatible backend (vLLM, SGLang, llama.cpp server, OpenAI) — issue 3, part 2.

Uses the official ``openai`` SDK's async client with its own retries switched off
(``max_retries=0``): retries, timeouts and the per-call deadline belong to
:class:`~basevolve.llm.base.RetryingClient` so that every attempt is recorded.  The
request goes through the SDK's generic ``post`` (its typed ``create`` spends ~1 ms of
event-loop CPU per call transforming the messages; see ``_attempt``) and the reply
body is parsed here from the raw text rather than by the SDK, because the fields
FLOPs need (``usage.prompt_tokens_details.cached_tokens``) and the failure modes we
must classify (non-JSON body, empty ``choices``) vary between servers.  The body is
read as a stream and refused past :func:`~basevolve.llm.usage.reply_cap` bytes, and its
``usage`` is checked by :func:`~basevolve.llm.usage.read_usage` (issue 22, items 3-4):
a server can neither flood the store nor undercharge a budget.

The API key is read from an environment variable at construction, handed to the SDK
and nowhere else: it is not an attribute of this object's ``repr``, never enters an
:class:`~basevolve.records.Attempt` (error strings are scrubbed), and is never logged.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any
from urllib.parse import urlparse

import openai

from basevolve.errors import ConfigError, LLMError
from basevolve.llm.base import AttemptFailure, Reply, RetryingClient
from basevolve.llm.catalog import ModelSpec
from basevolve.llm.settings import LLMSettings
from basevolve.llm.usage import read_usage, reply_cap, text_limit
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


def parse_chat_body(text: str) -> Reply:
    """Parse a chat-completion body; raise AttemptFailure for bad or empty ones."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise AttemptFailure(AttemptStatus.BAD_BODY, f"unparseable body: {exc}") from None
    if not isinstance(body, dict):
        raise AttemptFailure(AttemptStatus.BAD_BODY, "body is not a JSON object")
    usage, why = read_usage(body.get("usage"))  # a failed attempt carries no reply text
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
    usage, why = read_usage(body.get("usage"), size)  # the bytes floor the charge
    finish = choices[0].get("finish_reason")
    return Reply(text, finish[:64] if isinstance(finish, str) else None, usage,
                 reply_bytes=size, usage_error=why)


# The HTTP client's errors raised while *opening* the connection (refused, DNS failure,
# TLS handshake failure, connect timeout): no byte of the request reached a server.
_CONNECT_ERRORS = frozenset({"ConnectError", "ConnectTimeout"})


def never_sent(cause: BaseException) -> bool:
    """True when the request provably never reached a server (issue 12, item 2).

    Why by class name: the SDK's HTTP library (``httpx`` or its fork) is its own
    dependency, not ours; both name these classes the same.  Such an attempt costs no
    FLOPs; anything else (a reset or a timeout after the request was sent) may have
    been computed and is charged by ``--charge-unanswered``.
    """
    return any(k.__name__ in _CONNECT_ERRORS for k in type(cause).__mro__)


def _http_library() -> Any:
    """The SDK's HTTP library module: ``httpx``, or its fork ``httpx2`` in newer SDKs.

    Why not import it: it is the SDK's dependency, not ours (see :func:`never_sent`); the
    SDK's default client class names the one it uses.
    """
    for cls in openai.DefaultAsyncHttpxClient.__mro__:
        top = cls.__module__.partition(".")[0]
        if top not in ("openai", "builtins"):
            return sys.modules[top]
    raise RuntimeError("cannot tell the openai SDK's HTTP library")  # pragma: no cover


async def _read_capped(response: Any, cap: int) -> bytes:
    """The body of a streamed ``response``, refused (AttemptFailure) past ``cap`` bytes.

    Why streamed: reading first and measuring after held a 50 MB reply in memory (and
    stored it twice).  Stops reading at the cap; the connection is then closed.
    """
    lib = _http_library()
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > cap:
                raise AttemptFailure(
                    AttemptStatus.BAD_BODY,
                    f"reply larger than {cap} bytes refused (max_reply_bytes: by default "
                    f"16 bytes per --max-tokens token + 64 KiB)")
            chunks.append(chunk)
    except lib.TimeoutException as exc:
        raise AttemptFailure(AttemptStatus.TIMEOUT, f"{type(exc).__name__}: {exc}") from None
    except lib.TransportError as exc:  # the connection broke mid-body
        raise AttemptFailure(AttemptStatus.CONNECTION_ERROR,
                             f"{type(exc).__name__}: {exc}") from None
    return b"".join(chunks)


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


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
        self._client: openai.AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
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

    def _sdk(self) -> openai.AsyncOpenAI:
        """The SDK client of the running event loop.

        httpx connection pools are bound to the loop that opened them, so a client used
        from a new loop (a second ``asyncio.run``) gets a fresh SDK client.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self._key,
                max_retries=0,
                timeout=self.settings.attempt_timeout_s,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None
        self._loop = None

    async def _attempt(self, payload: dict[str, Any], timeout_s: float) -> Reply:
        max_tokens = int(payload.get("max_tokens") or self.settings.max_tokens)
        cap = reply_cap(max_tokens, self.settings.max_reply_bytes)
        try:
            # The SDK's generic ``post`` with ``cast_to=str`` (documented for endpoints
            # without a typed method) returns the body text.  ``chat.completions.create``
            # would first run its TypedDict transform over every message (~1 ms of
            # event-loop CPU per call, serialised across concurrent calls) only to
            # produce the same JSON; we parse the text ourselves anyway (see above).
            # ``stream=True`` with the HTTP library's Response class: the SDK hands the
            # response over unread, so the body can be refused past the cap.
            response = await self._sdk().post(
                "/chat/completions",
                cast_to=_http_library().Response,
                stream=True,
                stream_cls=None,
                body={
                    "model": self._spec.served_id,
                    "stream": False,
                    **payload,
                    **(self._extra_body or {}),
                },
                # the retry loop's asyncio clock is authoritative; the SDK's is a backstop
                options={"timeout": timeout_s + 1.0},
            )
        except openai.APIConnectionError as exc:  # APITimeoutError is a subclass
            cause = exc.__cause__ or exc
            if never_sent(cause):
                status = AttemptStatus.NOT_SENT
            elif isinstance(exc, openai.APITimeoutError):
                status = AttemptStatus.TIMEOUT
            else:
                status = AttemptStatus.CONNECTION_ERROR
            raise AttemptFailure(status, f"{type(cause).__name__}: {cause}") from None
        except openai.APIStatusError as exc:
            raise self._status_failure(exc) from None
        try:
            body = await _read_capped(response, cap)
        finally:
            await response.aclose()
        # invalid UTF-8 becomes U+FFFD here; an escaped lone surrogate in the JSON is made
        # storable by the Completion record (basevolve.safe_text)
        reply = parse_chat_body(body.decode("utf-8", "replace"))
        if reply.reply_bytes > text_limit(max_tokens):
            raise AttemptFailure(
                AttemptStatus.BAD_BODY,
                f"reply text of {reply.reply_bytes} bytes refused: more than max_tokens="
                f"{max_tokens} tokens can hold (16 bytes each)")
        return reply

    def _status_failure(self, exc: openai.APIStatusError) -> AttemptFailure:
        code = exc.status_code
        if code in _FATAL_STATUSES:
            msg = _FATAL_STATUSES[code].format(
                env=self.api_key_env, model=self._spec.served_id, url=self.base_url
            )
            raise LLMError(f"HTTP {code}: {msg}")
        status = AttemptStatus.RATE_LIMITED if code == 429 else AttemptStatus.HTTP_ERROR
        return AttemptFailure(
            status,
            f"HTTP {code}: {str(exc.message)[:300]}",
            retryable=code >= 500 or code in _RETRY_STATUSES,
            http_status=code,
            retry_after_s=_retry_after(exc.response.headers if exc.response else None),
        )


__all__ = ["OpenAIClient", "never_sent", "parse_chat_body", "parse_usage", "validate_base_url"]
