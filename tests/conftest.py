"""Fixtures shared by every test directory."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest


@pytest.fixture
def sigint_handled() -> Iterator[None]:
    """Catch SIGINT in this process for the test (Python's KeyboardInterrupt handler).

    Why: a shell starts a background job (``cmd &`` without job control) with SIGINT
    *ignored*; pytest then inherits SIG_IGN, ``_thread.interrupt_main`` does nothing and
    every child process inherits the ignore too, so the Ctrl-C tests fail although the
    code is right.  A caught signal is reset to the default at exec, so children started
    during the test get Python's own KeyboardInterrupt handler again.
    """
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
