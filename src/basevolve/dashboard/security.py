"""Who may talk to the dashboard, and what a browser may do with its pages.

* **Token.** With ``--token`` every request must carry it: ``Authorization: Bearer T``,
  or the ``bv_token`` cookie, or ``?token=T`` once (answered with the cookie and a
  redirect to the same URL without the token, so it does not linger in the address bar
  or in the history).  Compared in constant time.  Without ``--token`` the server only
  listens on loopback (enforced by :func:`check_bind`).
* **Host header.** A loopback server without a token only answers requests addressed
  to a loopback name, so a web page on another origin cannot reach it through DNS
  rebinding.
* **Headers.** Every response carries a Content-Security-Policy that allows scripts
  and styles only from the dashboard's own files (no inline script, no ``eval``, no
  other origin), plus ``nosniff``, no framing and no referrer.  Together with the page
  code writing LLM text only through ``textContent`` this makes a stored program like
  ``</script><script>...`` inert text.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from basevolve.errors import ConfigError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                   Awaitable[None]]

COOKIE = "bv_token"
MIN_TOKEN_CHARS = 16
TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~-]+")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def check_bind(host: str, token: str | None) -> str | None:
    """The token to enforce (None = none): refuse a non-loopback bind without one.

    ``--token auto`` generates a random token (printed by the command).
    """
    if token == "auto":
        return secrets.token_urlsafe(24)
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"--token must be at least {MIN_TOKEN_CHARS} characters (got "
                          f"{len(token)}); use a long random string or --token auto")
    if token is not None and not TOKEN_CHARS.fullmatch(token):
        raise ConfigError("--token may contain only letters, digits and - _ . ~ (it travels "
                          "in a URL and a cookie); or use --token auto")
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"--host {host!r} is not a loopback address; anyone who can reach it could read "
            "the store, so a token is required: add --token auto (a random one is printed) "
            "or --token YOUR_SECRET")
    return token


def _host_of(header: str) -> str:
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware: token and Host checks, security headers on every response."""

    def __init__(self, app: ASGIApp, token: str | None, check_host: bool) -> None:
        self.app, self.token, self.check_host = app, token, check_host

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        if self.check_host and not is_loopback(_host_of(headers.get("host", ""))):
            await _plain(send, 403, "this dashboard answers only requests to localhost")
            return
        if self.token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if _matches(query.get("token"), self.token):
                rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
                location = scope.get("path", "/") + (f"?{rest}" if rest else "")
                cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                await _plain(send, 303, "authenticated", [(b"location", location.encode()),
                                                          (b"set-cookie", cookie.encode())])
                return
            if not self._authorised(headers):
                await _plain(send, 401, "missing or wrong token: open the URL the dashboard "
                                        "printed (it carries ?token=...) or send "
                                        "'Authorization: Bearer TOKEN'")
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _authorised(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and _matches(auth[7:].strip(), self.token):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is simply not a token
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and _matches(morsel.value, self.token)


def _matches(given: str | None, token: str | None) -> bool:
    return given is not None and token is not None and hmac.compare_digest(
        given.encode(), token.encode())


async def _plain(send: Any, status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()), *(extra or []), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
