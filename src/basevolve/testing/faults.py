"""Faults the test server can inject (issue 3, part 7): one per failure mode the client
must survive (retry, record, or stop)."""

from __future__ import annotations

from enum import StrEnum


class Fault(StrEnum):
    """Faults the server can inject into the next requests (issue 3, part 7)."""

    HTTP_500 = "http_500"  # 500 with a JSON error body
    HTTP_429 = "http_429"  # 429 with ``Retry-After: 0``
    HTTP_400 = "http_400"  # 400 bad request (a client must not retry it)
    HTTP_401 = "http_401"  # 401 bad API key (a client must stop, not retry)
    STALL = "stall"  # hold the request (up to ``stall_s``) then drop the connection
    GARBAGE = "garbage"  # 200 with a body that is not JSON
    EMPTY_CHOICES = "empty_choices"  # 200 with ``choices: []``
    TRUNCATED = "truncated"  # 200 whose body is cut mid-way (connection closed early)
    LENGTH = "length"  # a valid reply cut at half its text, ``finish_reason: "length"``
    REDIRECT = "redirect"  # 307 to another URL (a client must not follow it with the key)
    GZIP = "gzip"  # 200 whose valid reply is gzip-compressed although none was asked for


__all__ = ["Fault"]
